// Mixed precision, as torch.autocast("cpu", dtype=torch.bfloat16): inside an autocast::Scope the
// matrix products of matmul, matmul_nt, linear, linear_rows, conv1d and the fused attention
// nodes round their operands to bfloat16 and accumulate in fp32 (oneDNN's bf16 matmul, on the
// CPU's AVX512-BF16 dot-product instructions: twice the FMA rate of fp32). Everything else —
// softmax, layer norm, the losses, elementwise ops, Adam — runs in fp32, as do the values every
// op returns and keeps: weights and gradients stay fp32 ("master weights"), as in torch.
//
//   {
//       xtgrad::autocast::Scope bf16(xtgrad::DType::bf16);  // throws Error where bf16 is not fast
//       Tensor loss = cross_entropy(model.forward(x), target);
//   }
//   loss.backward();   // the products' backward GEMMs run in bf16 too (decided at forward)
//
// A node records the precision its forward ran in and its backward uses the same, wherever
// backward is called (torch's backward of a bf16 op is a bf16 op). Autocast state is per thread,
// as torch's. What differs from torch: a product's result is kept in fp32 (torch returns a bf16
// tensor), so the ops after it (residual adds, ReLU, dropout) run in fp32 instead of bf16 —
// more precise, and a bf16 product's output rounding is not a step of the computation here.
//
// Products where bf16 would not be faster — small ones (small_gemm's) and those with a side
// under 8 rows (a 7-token sentence) — run in fp32 (bf16_product_in_fp32, gemm/blas.hpp). Each
// weight is converted to bf16 once per version (autograd/bf16_weights.hpp).
//
// DType and the bf16 rounding are in gemm/dtype.hpp. docs/autocast.md has the op lists, the
// tolerances the tests use and the measured speed.
#pragma once

#include <xtgrad/gemm/dtype.hpp>

#include <string>

namespace xtgrad {

namespace autocast {

// RAII: the products created on this thread until the scope ends round their operands to
// `dtype` (bf16), then the previous setting returns. enabled = false makes a scope that turns
// autocast off (torch's autocast(enabled=False), for a region that must stay fp32).
// Scope(DType::bf16) throws Error when this build or CPU would run bf16 products slower than
// fp32: the OpenBLAS backend (no bf16 GEMM), or a CPU without AVX512-BF16 (oneDNN would emulate
// the bf16 dot products). DType::fp32 is the same as enabled = false.
class Scope {
public:
    explicit Scope(DType dtype, bool enabled = true);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

private:
    DType previous_;
};

// The operand type of the products created now on this thread: fp32 outside any scope.
DType dtype();
bool is_enabled();  // dtype() != DType::fp32

// Empty when bf16 products run fast here; else why not (the message Scope's Error carries).
std::string bf16_unsupported_reason();

}  // namespace autocast

namespace detail {
// bf16_unsupported_reason's decision for a given backend name and CPU, so that tests can check
// the messages of the machines they do not run on.
std::string bf16_unsupported_reason(const char* backend, bool cpu_has_avx512_bf16);
}  // namespace detail

}  // namespace xtgrad
