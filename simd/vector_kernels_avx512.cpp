// The vector kernels for AVX-512. meson compiles this one file with -march=x86-64-v4; nothing
// here runs unless cpu_isa.cpp found AVX-512 on the CPU.
#include <xtgrad/simd/vector_kernels_impl.hpp>

#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "vector_kernels_avx512.cpp must be compiled with -march=x86-64-v4 (meson does)"
#endif

namespace xtgrad::vec::detail {

const KernelTable& avx512_kernels() { return Kernels<xsimd::avx512bw>::table; }

}  // namespace xtgrad::vec::detail
