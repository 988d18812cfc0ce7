// The vector kernels for the build's -march (xsimd's best architecture for it: AVX2 + FMA
// for the default x86-64-v3).
#include <xtgrad/simd/vector_kernels_impl.hpp>

namespace xtgrad::vec::detail {

const KernelTable& baseline_kernels() { return Kernels<xsimd::default_arch>::table; }

}  // namespace xtgrad::vec::detail
