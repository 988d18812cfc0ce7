// The SIMD batch the hand-written GEMM kernels (small_gemm.cpp, skinny_gemm.cpp) are written in,
// and L, the floats it holds (8 with AVX2): one definition, so both files can share a translation
// unit (meson's unity build) and never disagree on the width.
#pragma once

#include <xsimd/xsimd.hpp>

namespace xtgrad::simd {

using Batch = xsimd::batch<float>;
inline constexpr int L = static_cast<int>(Batch::size);

}  // namespace xtgrad::simd
