// The element types a matrix product's operands can be rounded to (gemm_ld(DType, ...),
// gemm/blas.hpp), and bfloat16's rounding. autocast::Scope (autograd/autocast.hpp) chooses
// bf16 for the products of the ops created in its scope.
#pragma once

#include <bit>
#include <cstdint>

namespace xtgrad {

// The element type a matrix product's operands are rounded to before multiplying.
enum class DType {
    fp32,  // IEEE single: no rounding (the default)
    bf16,  // bfloat16: fp32's 8 exponent bits, 7 stored mantissa bits (8 significant)
};

inline const char* dtype_name(DType dtype) { return dtype == DType::bf16 ? "bf16" : "fp32"; }

// x rounded to bfloat16's 16 bits (the float's upper half): to nearest, ties to even; NaN stays
// a (quiet) NaN, ±Inf stay, values past bf16's largest finite round to ±Inf. Branch-free (the
// NaN case is a select), so the conversion loops over a whole operand vectorise.
inline std::uint16_t to_bf16_bits(float x) {
    const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    // adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; a carry into the
    // exponent is the correct result (up to the next binade, or to Inf)
    const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const std::uint32_t quiet_nan = (u >> 16) | 0x40u;  // a NaN whose payload is all in the low half stays NaN
    return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

// The float a bf16 value stands for.
inline float from_bf16_bits(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t{bits} << 16); }

// x rounded to the nearest bfloat16, as a float (the operands' values in a bf16 product).
inline float round_to_bf16(float x) { return from_bf16_bits(to_bf16_bits(x)); }

}  // namespace xtgrad
