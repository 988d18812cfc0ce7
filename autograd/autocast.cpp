#include <xtgrad/autograd/autocast.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/gemm_backend.hpp>
#include <xtgrad/simd/cpu_model.hpp>
#include <xtgrad/simd/cpu_peak.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace xtgrad {

namespace detail {

namespace {
bool is(const char* a, const char* b) { return std::strcmp(a, b) == 0; }
// oneDNN's ISAs with bf16 dot products of their own (vdpbf16ps, AMX tiles); on avx512_core and
// avx512_core_vnni it emulates them, and below avx512_core (2.6) it has no bf16 matmul at all.
bool native_bf16_isa(const char* isa) { return is(isa, "avx512_core_bf16") || is(isa, "avx512_core_amx"); }
bool emulated_bf16_isa(const char* isa) { return is(isa, "avx512_core") || is(isa, "avx512_core_vnni"); }
// " (ONEDNN_MAX_CPU_ISA=X)" where the variable caps oneDNN, for the messages
std::string isa_cap(const Bf16Cpu& cpu) {
    return cpu.max_isa ? fmt::format(" (ONEDNN_MAX_CPU_ISA={})", std::string(cpu.max_isa).substr(0, 40)) : "";
}
}  // namespace

// Decided from the ISA oneDNN will use (which ONEDNN_MAX_CPU_ISA can set below the CPU's), not
// from cpuid: a capped oneDNN emulates bf16, or has no bf16 product, whatever the CPU has.
autocast::Bf16Speed bf16_speed(const Bf16Cpu& cpu) {
    using autocast::Bf16Speed;
    if (!is(cpu.backend, "onednn")) return Bf16Speed::unavailable;
    if (is(cpu.kernel, "avx512_core_amx")) return Bf16Speed::faster;
    if (!native_bf16_isa(cpu.kernel)) return emulated_bf16_isa(cpu.kernel) ? Bf16Speed::slower : Bf16Speed::unavailable;
    return bf16_dot_products_pay(cpu) ? Bf16Speed::faster : Bf16Speed::slower;
}

bool bf16_dot_products_pay(const Bf16Cpu& cpu) {
    return cpu.avx512_bf16 && (cpu.dot_rate_known || cpu.bf16_dot_gflops >= kBf16MinSpeedup * cpu.fp32_fma_gflops);
}

std::string bf16_slow_reason(const Bf16Cpu& cpu) {
    constexpr const char* kWayOut =
        "run without autocast (fp32), or call autocast::allow_slower_bf16(true) to run bf16 anyway";
    switch (bf16_speed(cpu)) {
        case autocast::Bf16Speed::faster: return "";
        case autocast::Bf16Speed::unavailable:
            if (!is(cpu.backend, "onednn"))
                return cpu.onednn_built
                           ? fmt::format("the GEMM backend is {} (XTGRAD_GEMM_BACKEND={}), which has no bf16 matrix "
                                         "product; unset XTGRAD_GEMM_BACKEND (oneDNN) to use autocast(bf16)",
                                         cpu.backend, cpu.backend)
                           : fmt::format("this build's GEMM backend is {}, which has no bf16 matrix product; build "
                                         "with -Dgemm=onednn (the default) to use autocast(bf16)",
                                         cpu.backend);
            return fmt::format("oneDNN runs its {} kernels here{}, and has no bf16 matrix product below avx512_core; "
                               "run without autocast (fp32){}",
                               cpu.kernel, isa_cap(cpu), cpu.max_isa ? ", or raise or unset ONEDNN_MAX_CPU_ISA" : "");
        case autocast::Bf16Speed::slower: break;
    }
    if (!native_bf16_isa(cpu.kernel) && cpu.avx512_bf16)
        return fmt::format("oneDNN runs its {} kernels here{}, below this CPU's AVX512-BF16: it would emulate the bf16 "
                           "dot products, slower than fp32; {}{}",
                           cpu.kernel, isa_cap(cpu), kWayOut, cpu.max_isa ? " (or raise or unset ONEDNN_MAX_CPU_ISA)" : "");
    if (!cpu.avx512_bf16)
        return fmt::format("this CPU has no AVX512-BF16 instructions (nor AMX; oneDNN runs its {} kernels{}): oneDNN "
                           "would emulate the bf16 dot products, slower than fp32; {}",
                           cpu.kernel, isa_cap(cpu), kWayOut);
    return fmt::format("this CPU's bf16 dot products (AVX512-BF16's vdpbf16ps; oneDNN finds no AMX here) run at "
                       "{:.0f} GFLOP/s per core and its fp32 FMAs at {:.0f}: bf16 products would be {} fp32 (they "
                       "pay from {}x the fp32 rate); {}",
                       cpu.bf16_dot_gflops, cpu.fp32_fma_gflops,
                       cpu.bf16_dot_gflops < cpu.fp32_fma_gflops ? "slower than" : "no faster than", kBf16MinSpeedup,
                       kWayOut);
}

}  // namespace detail

// The scopes open on one thread, the innermost last. The thread holds it, and so does each of its
// scopes: one that ends on another thread marks itself ended here (under the mutex; it never
// reads the owner's thread-locals) and the owner ends it at its next read of the setting, so no
// thread ever follows a pointer to a scope that is gone. Only the owner changes its setting.
namespace detail {
struct AutocastThread {
    struct Open {
        const autocast::Scope* scope;  // which scope (compared, never read)
        DType dtype;                   // its setting
        DType previous;                // the setting to restore when it ends
        bool ended_elsewhere;          // ended on another thread: the owner ends it
    };
    std::mutex m;                      // guards open
    std::vector<Open> open;
    std::atomic<bool> pending{false};  // some scope of open ended on another thread
};
}  // namespace detail

namespace autocast {

namespace {
thread_local DType current = DType::fp32;
thread_local std::shared_ptr<detail::AutocastThread> this_thread_scopes;  // made by the thread's first scope

// The thread's own: ends open[k] (on this thread, under the lock). The innermost restores the
// setting it found; one that ends out of order hands what it found to the scope opened just
// inside it, so that once every scope is gone the setting is the one before the first (the
// inner scope keeps its own until it ends).
void end_open(detail::AutocastThread& t, std::size_t k) {
    if (k + 1 == t.open.size()) {
        current = t.open[k].previous;
    } else {
        t.open[k + 1].previous = t.open[k].previous;
    }
    t.open.erase(t.open.begin() + static_cast<std::ptrdiff_t>(k));
}

// On the owner: ends the scopes that ended on other threads, innermost first.
void end_those_ended_elsewhere(detail::AutocastThread& t) {
    const std::lock_guard<std::mutex> lock(t.m);
    t.pending.store(false, std::memory_order_relaxed);
    for (std::size_t k = t.open.size(); k-- > 0;)
        if (t.open[k].ended_elsewhere) end_open(t, k);
}

void catch_up() {
    if (detail::AutocastThread* t = this_thread_scopes.get(); t != nullptr && t->pending.load(std::memory_order_acquire))
        end_those_ended_elsewhere(*t);
}
std::atomic<bool> slower_allowed{false};

// This process's CPU and build, the dot-product rates measured once (~3 ms) where they decide:
// three rounds, alternating, the best of each (a preempted round does not count). Not on the CPUs
// whose rates ceiling_bench measured (vdpbf16ps ~2x the FMAs: Zen 4 234 against 117 GFLOP/s, Zen 5
// 372-473 against 198-259): on a Zen 5 guest whose core other tenants share, the timing read under
// 1.25x in 1 of 8 benchmark processes, and autocast refused bf16 there.
const detail::Bf16Cpu& this_cpu() {
    static const detail::Bf16Cpu cpu = [] {
        detail::Bf16Cpu c;
        c.backend = gemm_backend_name();
        c.onednn_built = xtgrad::detail::onednn_built();
        c.kernel = gemm_backend_kernel();
        static const std::string max_isa = std::getenv("ONEDNN_MAX_CPU_ISA") ? std::getenv("ONEDNN_MAX_CPU_ISA") : "";
        if (!max_isa.empty()) c.max_isa = max_isa.c_str();
        __builtin_cpu_init();
        c.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
        c.dot_rate_known = cpu_model().is_amd(25) || cpu_model().is_amd(26);
        if (std::strcmp(c.backend, "onednn") == 0 && detail::native_bf16_isa(c.kernel) && c.avx512_bf16 &&
            !c.dot_rate_known) {
            constexpr long kSteps = 100'000;  // 1.2 M instructions per probe
            for (int round = 0; round < 3; ++round) {
                c.fp32_fma_gflops = std::max(c.fp32_fma_gflops, fma_peak_avx512_gflops(kSteps));
                c.bf16_dot_gflops = std::max(c.bf16_dot_gflops, bf16_dot_peak_gflops(kSteps));
            }
        }
        return c;
    }();
    return cpu;
}
}  // namespace

Bf16Speed bf16_speed() { return detail::bf16_speed(this_cpu()); }
bool bf16_dot_products_pay() { return detail::bf16_dot_products_pay(this_cpu()); }

const char* bf16_speed_name(Bf16Speed speed) {
    switch (speed) {
        case Bf16Speed::faster: return "faster";
        case Bf16Speed::slower: return "slower";
        case Bf16Speed::unavailable: return "unavailable";
    }
    return "?";
}

void allow_slower_bf16(bool allow) { slower_allowed.store(allow); }
bool slower_bf16_allowed() { return slower_allowed.load(); }

std::string bf16_unsupported_reason() {
    const Bf16Speed speed = bf16_speed();
    if (speed == Bf16Speed::faster || (speed == Bf16Speed::slower && slower_bf16_allowed())) return "";
    return detail::bf16_slow_reason(this_cpu());
}

Scope::Scope(DType dtype, bool enabled) : dtype_(enabled ? dtype : DType::fp32) {
    if (dtype_ == DType::bf16) {
        if (const std::string reason = bf16_unsupported_reason(); !reason.empty()) fail("autocast(bf16): {}", reason);
    }
    if (!this_thread_scopes) this_thread_scopes = std::make_shared<detail::AutocastThread>();
    catch_up();
    thread_ = this_thread_scopes;
    const std::lock_guard<std::mutex> lock(thread_->m);
    thread_->open.push_back({this, dtype_, current, false});
    current = dtype_;
}

Scope::~Scope() {
    detail::AutocastThread& t = *thread_;
    const bool own_thread = &t == this_thread_scopes.get();
    if (own_thread) catch_up();  // so that an inner scope ended elsewhere is not named below
    const std::lock_guard<std::mutex> lock(t.m);
    std::size_t k = t.open.size();
    while (k-- > 0 && t.open[k].scope != this) {
    }
    if (k >= t.open.size()) return;  // not listed: cannot happen (each constructor lists its scope)
    if (!own_thread) {
        t.open[k].ended_elsewhere = true;
        t.pending.store(true, std::memory_order_release);
        std::fprintf(stderr, "xtgrad: warning: an autocast::Scope(%s) ended on another thread than the one that "
                             "opened it; this thread's setting is unchanged, and the opening thread's returns as if "
                             "the scope had ended there, when it next reads it\n", dtype_name(dtype_));
        return;
    }
    if (k + 1 != t.open.size()) {
        std::fprintf(stderr, "xtgrad: warning: autocast::Scope(%s) ended before the Scope(%s) opened inside it; autocast "
                             "stays %s until that one ends, then returns to %s\n",
                     dtype_name(dtype_), dtype_name(t.open[k + 1].dtype), dtype_name(current),
                     dtype_name(t.open[k].previous));
    }
    end_open(t, k);
}

DType dtype() {
    catch_up();
    return current;
}
bool is_enabled() { return dtype() != DType::fp32; }

}  // namespace autocast

}  // namespace xtgrad
