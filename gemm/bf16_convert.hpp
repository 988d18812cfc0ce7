// fp32 -> bf16 conversion of a row, the one loop every bf16 product's operands go through
// (convert_to_bf16, gemm/blas.hpp). Internal: blas_bf16.cpp and small_gemm's files include it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xtgrad::detail {

// dst[i] = to_bf16_bits(src[i]) for i < n (gemm/dtype.hpp: to nearest, ties to even, NaN stays
// NaN), with one difference on CPUs with AVX512-BF16, where the row goes through
// vcvtne2ps2bf16 (32 floats per instruction instead of ~1 per cycle): that instruction flushes
// denormal inputs (|x| < 2^-126, 1.2e-38) to ±0, as oneDNN's and torch's conversions on those
// CPUs do. xtgrad's models never hold values there; the test names the difference.
void bf16_row(const float* src, std::size_t n, std::uint16_t* dst);

// True when bf16_row takes the AVX512-BF16 path on this CPU.
bool bf16_row_uses_avx512_bf16();

}  // namespace xtgrad::detail
