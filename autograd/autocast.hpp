// Mixed precision, as torch.autocast("cpu", dtype=torch.bfloat16): inside an autocast::Scope the
// matrix products of matmul, matmul_nt, linear, linear_rows, conv1d and the fused attention
// nodes round their operands to bfloat16 and accumulate in fp32 (oneDNN's bf16 matmul, on the
// CPU's AVX512-BF16 dot-product instructions or AMX tiles). Everything else —
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

#include <memory>
#include <string>

namespace xtgrad {

namespace detail {
struct AutocastThread;  // the scopes open on one thread (autograd/autocast.cpp)
}

namespace autocast {

// Whether bf16 products pay here (bf16_speed). They need oneDNN (the default GEMM backend) and
// pay where the CPU's bf16 dot products beat its fp32 FMAs: AMX tiles, or AVX512-BF16's
// vdpbf16ps at twice the fp32 rate (AMD Zen 4 and 5, Intel Cooper Lake). Some CPUs have the
// instruction at half that rate and no AMX (a Sapphire or Emerald Rapids Xeon in a VM that hides
// AMX: bf16 products 1.7x slower than fp32), so the rate is measured, once per process, in ~3 ms
// (simd/cpu_peak.hpp), wherever oneDNN uses avx512_core_bf16. Decided from the ISA oneDNN uses
// (ONEDNN_MAX_CPU_ISA can cap it below the CPU's), not from cpuid.
enum class Bf16Speed {
    faster,       // AMX, or bf16 dot products measured at >= kBf16MinSpeedup x the fp32 FMA rate
    slower,       // products run, slower than fp32: oneDNN at avx512_core(_vnni) emulates the dot
                  // products, or they measured under kBf16MinSpeedup x the fp32 rate
    unavailable,  // no bf16 product: the OpenBLAS backend, or oneDNN below avx512_core
};
Bf16Speed bf16_speed();
const char* bf16_speed_name(Bf16Speed speed);  // "faster", "slower", "unavailable"

// Where bf16 is slower than fp32, Scope(DType::bf16) and gemm(DType::bf16) throw Error (never
// silently slow) unless the program allows it: allow_slower_bf16(true) runs them anyway, to check
// a model's numerics under bf16 on such a machine or to measure how much slower they are
// (xtgrad_bench --allow-slower-bf16). Process-wide; `unavailable` still throws.
void allow_slower_bf16(bool allow);
bool slower_bf16_allowed();

// RAII: the products created on this thread until the scope ends round their operands to
// `dtype` (bf16), then the previous setting returns. enabled = false makes a scope that turns
// autocast off (torch's autocast(enabled=False), for a region that must stay fp32).
// Scope(DType::bf16) throws Error unless bf16 products run here now (bf16_unsupported_reason is
// empty). DType::fp32 is the same as enabled = false.
//
// Scopes end innermost first. One that ends while a scope opened after it on its thread is still
// open (two heap-held scopes released in the order they were made) leaves the setting to that
// inner scope, which on ending restores what came before both: once all are gone the setting is
// the one before the first, whatever the order. It prints one line on stderr saying so (a
// destructor cannot throw). A scope that ends on another thread than the one that opened it
// leaves the ending thread's setting alone and ends on its own thread as if ended there (in or
// out of order), when that thread next reads the setting (a product, dtype(), a scope); it says
// so on stderr too.
class Scope {
public:
    explicit Scope(DType dtype, bool enabled = true);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

private:
    DType dtype_;  // this scope's setting
    // The scopes open on the thread that opened this one, shared with that thread, so that this
    // one can end from any thread without touching freed memory (autograd/autocast.cpp).
    std::shared_ptr<detail::AutocastThread> thread_;
};

// The operand type of the products created now on this thread: fp32 outside any scope.
DType dtype();
bool is_enabled();  // dtype() != DType::fp32

// True where this CPU's AVX512-BF16 dot products (vdpbf16ps) measure at >= kBf16MinSpeedup x
// its fp32 FMAs (measured once per process with bf16_speed's rates, AMX or not): where xtgrad's
// own bf16 kernel (small_gemm_bf16, gemm/small_gemm.hpp) beats its fp32 kernels.
bool bf16_dot_products_pay();

// Empty when Scope(DType::bf16) runs here now (bf16 is faster, or slower and allowed); else why
// not: the message Scope's Error carries, which names the measured rates where they decided.
std::string bf16_unsupported_reason();

}  // namespace autocast

namespace detail {
// What decides bf16_speed, so that tests can check the decisions and messages of the machines
// they do not run on.
struct Bf16Cpu {
    const char* backend = "onednn";  // gemm_backend_name()
    bool onednn_built = true;        // the build has oneDNN, which XTGRAD_GEMM_BACKEND can choose
    const char* kernel = "";         // gemm_backend_kernel(): the ISA oneDNN uses, "avx512_core_amx" with AMX
    const char* max_isa = nullptr;   // ONEDNN_MAX_CPU_ISA when set: what caps `kernel`
    bool avx512_bf16 = false;        // the CPU has AVX512-BF16 (cpuid; oneDNN may be capped below it)
    double bf16_dot_gflops = 0;      // one core's vdpbf16ps rate, measured (0: not measured)
    double fp32_fma_gflops = 0;      // and its AVX-512 fp32 FMA rate
    bool dot_rate_known = false;     // a CPU whose vdpbf16ps ceiling_bench measured at ~2x its FMAs
                                     // (AMD family 25 and 26): not timed at start-up
};
// bf16 products also convert their operands, so the dot products must beat fp32 by this much.
inline constexpr double kBf16MinSpeedup = 1.25;
autocast::Bf16Speed bf16_speed(const Bf16Cpu& cpu);
bool bf16_dot_products_pay(const Bf16Cpu& cpu);  // AVX512-BF16, known or measured at >= kBf16MinSpeedup x fp32
// Why bf16 is not faster on `cpu` (empty where it is).
std::string bf16_slow_reason(const Bf16Cpu& cpu);
}  // namespace detail

}  // namespace xtgrad
