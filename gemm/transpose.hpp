// Out-of-place matrix transposes for gemm/blas.cpp's reoriented products: a product the backend
// runs slowly in one orientation is run in the other, with one operand or the result transposed.
// Internal: the library's sources and the tests include this header.
#pragma once

namespace xtgrad::detail {

// dst (cols, rows), row stride ld_dst = src (rows, cols)ᵀ, src's row stride ld_src. Serial (the
// caller splits big ones over the pool by row ranges of src).
void transpose(const float* src, int rows, int cols, int ld_src, float* dst, int ld_dst);

// The same split over xtgrad's pool by row ranges of src (a weight transposed once: gemm/blas.cpp's
// narrow products, autograd/transposed_weights.cpp).
void transpose_on_pool(const float* src, int rows, int cols, int ld_src, float* dst, int ld_dst);

// C (rows, cols), row stride ldc = Tᵀ + beta · C, T (cols, rows) with row stride ldt. beta = 0
// writes C without reading it (a fresh gradient's NaN-filled memory stays out), as GEMM does.
void add_transposed(const float* T, int rows, int cols, int ldt, float beta, float* C, int ldc);

}  // namespace xtgrad::detail
