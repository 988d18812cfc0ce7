// A GEMM operand's pointer moved to a block or row tile: null stays null. An empty operand (a dim
// of 0) may hold no storage at all, and null plus a nonzero offset is undefined behaviour even
// where nothing is read (Clang's UBSan reports it). The attention's blocks
// (autograd/ops/attention_blocks.hpp) and the small GEMM's tiles (gemm/small_gemm_impl.hpp) both
// move operands this way.
#pragma once

#include <cstddef>

namespace xtgrad::detail {

// static: each translation unit keeps its own copy, so a file compiled for AVX-512
// (small_gemm_avx512.cpp) never hands its copy to the baseline code through the linker
template <class T>
static T* offset_or_null(T* p, std::ptrdiff_t offset) {
    return p ? p + offset : p;
}

}  // namespace xtgrad::detail
