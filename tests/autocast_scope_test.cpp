// Where autocast runs (autograd/autocast.hpp): the scope's per-thread state, the refusal where
// bf16 would be slower than fp32 or is unavailable (the decision and its messages for the CPUs
// measured, and this machine's own), and allow_slower_bf16. The products themselves:
// tests/autocast_test.cpp.
#include "tests/autocast_util.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/gemm_backend.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include <unistd.h>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using namespace xtgrad::autocast_test;

TEST_CASE("autocast::Scope sets bf16 for its thread, nests and restores") {
    const Bf16Here here;
    if (!here) return;  // asserted the refusal
    CHECK(autocast::dtype() == DType::fp32);
    {
        const autocast::Scope outer(DType::bf16);
        CHECK(autocast::dtype() == DType::bf16);
        CHECK(autocast::is_enabled());
        DType other_thread = DType::bf16;
        std::thread([&] { other_thread = autocast::dtype(); }).join();
        CHECK(other_thread == DType::fp32);  // per thread, as torch's
        {
            const autocast::Scope off(DType::bf16, /*enabled=*/false);
            CHECK(autocast::dtype() == DType::fp32);
        }
        CHECK(autocast::dtype() == DType::bf16);
    }
    CHECK(autocast::dtype() == DType::fp32);
    CHECK(std::string(dtype_name(DType::bf16)) == "bf16");
}

namespace {
// What the code under test prints on stderr (fd 2) while the object lives.
class StderrCapture {
public:
    StderrCapture() : file_(std::tmpfile()), saved_(::dup(2)) {
        REQUIRE(file_ != nullptr);
        std::fflush(stderr);
        REQUIRE(::dup2(::fileno(file_), 2) == 2);
    }
    ~StderrCapture() {
        restore();
        std::fclose(file_);
    }
    StderrCapture(const StderrCapture&) = delete;
    StderrCapture& operator=(const StderrCapture&) = delete;
    std::string text() {
        restore();
        std::rewind(file_);
        std::string out;
        for (int c; (c = std::fgetc(file_)) != EOF;) out += static_cast<char>(c);
        return out;
    }

private:
    void restore() {
        if (saved_ < 0) return;
        std::fflush(stderr);
        ::dup2(saved_, 2);
        ::close(saved_);
        saved_ = -1;
    }
    std::FILE* file_;
    int saved_;
};
}  // namespace

TEST_CASE("autocast::Scope ended out of order: bf16 is off once both are gone, and a one-line warning names it") {
    const Bf16Here here;
    if (!here) return;  // asserted the refusal
    REQUIRE(autocast::dtype() == DType::fp32);
    {
        // bf16, then an fp32 scope inside it; the outer one released first (heap-held scopes)
        auto outer = std::make_unique<autocast::Scope>(DType::bf16);
        auto inner = std::make_unique<autocast::Scope>(DType::fp32);
        StderrCapture err;
        outer.reset();
        CHECK(autocast::dtype() == DType::fp32);  // the inner scope still open keeps its setting
        inner.reset();
        CHECK(autocast::dtype() == DType::fp32);  // it used to be bf16 here, with no scope left
        const std::string said = err.text();
        CHECK_MESSAGE(said == "xtgrad: warning: autocast::Scope(bf16) ended before the Scope(fp32) opened inside it; "
                              "autocast stays fp32 until that one ends, then returns to fp32\n", said);
    }
    {
        // three deep, the middle one first: the others restore as if it had never been opened
        auto a = std::make_unique<autocast::Scope>(DType::bf16);
        auto b = std::make_unique<autocast::Scope>(DType::fp32);
        auto c = std::make_unique<autocast::Scope>(DType::bf16);
        StderrCapture err;
        b.reset();
        CHECK(autocast::dtype() == DType::bf16);
        c.reset();
        CHECK(autocast::dtype() == DType::bf16);  // a's
        a.reset();
        CHECK(autocast::dtype() == DType::fp32);
        CHECK(err.text().find("Scope(fp32) ended before the Scope(bf16) opened inside it") != std::string::npos);
    }
    {
        StderrCapture err;  // in order: nothing said
        {
            const autocast::Scope a(DType::bf16);
            const autocast::Scope b(DType::fp32);
        }
        CHECK(autocast::dtype() == DType::fp32);
        CHECK(err.text().empty());
    }
}

TEST_CASE("autocast::Scope ended on another thread: the opening thread's setting returns there, nothing freed is read") {
    const Bf16Here here;
    if (!here) return;  // asserted the refusal
    REQUIRE(autocast::dtype() == DType::fp32);
    {
        // opened here, ended on another thread: that thread is unchanged, this one fp32 again
        auto a = std::make_unique<autocast::Scope>(DType::bf16);
        StderrCapture err;
        DType there = DType::bf16;
        std::thread([&] {
            a.reset();
            there = autocast::dtype();
        }).join();
        CHECK(there == DType::fp32);
        CHECK(autocast::dtype() == DType::fp32);  // it stayed bf16 for good, the list holding the freed scope
        CHECK_MESSAGE(err.text() == "xtgrad: warning: an autocast::Scope(bf16) ended on another thread than the one "
                                    "that opened it; this thread's setting is unchanged, and the opening thread's "
                                    "returns as if the scope had ended there, when it next reads it\n",
                      err.text());
        // a scope opened on a thread that has exited since, ended here (this used to crash, walking
        // this thread's list through the freed scope above)
        std::unique_ptr<autocast::Scope> b;
        std::thread([&] { b = std::make_unique<autocast::Scope>(DType::bf16); }).join();
        b.reset();
        CHECK(autocast::dtype() == DType::fp32);
        {
            const autocast::Scope c(DType::bf16);  // and scopes here work as before
            CHECK(autocast::dtype() == DType::bf16);
        }
        CHECK(autocast::dtype() == DType::fp32);
    }
    {
        // out of order and elsewhere: the inner scope keeps its setting until it ends
        StderrCapture err;
        auto outer = std::make_unique<autocast::Scope>(DType::bf16);
        auto inner = std::make_unique<autocast::Scope>(DType::fp32);
        std::thread([&] { outer.reset(); }).join();
        CHECK(autocast::dtype() == DType::fp32);
        inner.reset();
        CHECK(autocast::dtype() == DType::fp32);  // not outer's bf16: it has ended
        auto again = std::make_unique<autocast::Scope>(DType::bf16);
        auto inside = std::make_unique<autocast::Scope>(DType::fp32);
        std::thread([&] { inside.reset(); }).join();
        CHECK(autocast::dtype() == DType::bf16);  // the inner one ended: back to again's
        again.reset();
        CHECK(autocast::dtype() == DType::fp32);
        CHECK(err.text().find("ended before") == std::string::npos);  // no out-of-order warning for ended ones
    }
}

TEST_CASE("autocast(bf16) refuses a build or CPU where bf16 would be slow, with the reason") {
    detail::Bf16Cpu zen5;  // AVX512-BF16 at twice the fp32 rate (ceiling_bench on a Zen 5)
    zen5.kernel = "avx512_core_bf16";
    zen5.avx512_bf16 = true;
    zen5.bf16_dot_gflops = 473;
    zen5.fp32_fma_gflops = 259;
    CHECK(detail::bf16_speed(zen5) == autocast::Bf16Speed::faster);
    CHECK(detail::bf16_slow_reason(zen5).empty());

    detail::Bf16Cpu known = zen5;  // a Zen 4 or 5: its rates known from ceiling_bench, not timed
    known.bf16_dot_gflops = 0;
    known.fp32_fma_gflops = 0;
    known.dot_rate_known = true;
    CHECK(detail::bf16_speed(known) == autocast::Bf16Speed::faster);
    CHECK(detail::bf16_dot_products_pay(known));
    known.kernel = "avx512_core";  // oneDNN capped below its AVX512-BF16 still emulates
    CHECK(detail::bf16_speed(known) == autocast::Bf16Speed::slower);
    known.kernel = "avx512_core_bf16";
    known.avx512_bf16 = false;
    CHECK(detail::bf16_speed(known) == autocast::Bf16Speed::slower);
    CHECK_FALSE(detail::bf16_dot_products_pay(known));

    detail::Bf16Cpu amx = zen5;  // oneDNN found AMX: its tiles, whatever vdpbf16ps's rate
    amx.kernel = "avx512_core_amx";
    amx.bf16_dot_gflops = 87;
    amx.fp32_fma_gflops = 180;
    CHECK(detail::bf16_speed(amx) == autocast::Bf16Speed::faster);

    detail::Bf16Cpu half = zen5;  // AVX512-BF16 at half the fp32 rate, no AMX (an Emerald Rapids VM)
    half.bf16_dot_gflops = 87;
    half.fp32_fma_gflops = 180;
    CHECK(detail::bf16_speed(half) == autocast::Bf16Speed::slower);
    const std::string measured = detail::bf16_slow_reason(half);
    for (const char* part : {"vdpbf16ps", "no AMX", "87 GFLOP/s per core", "fp32 FMAs at 180", "slower than fp32",
                             "1.25x", "allow_slower_bf16(true)"})
        CHECK_MESSAGE(measured.find(part) != std::string::npos, measured);

    detail::Bf16Cpu even = half;  // faster, but not by enough to pay for the conversions
    even.bf16_dot_gflops = 200;
    CHECK(detail::bf16_speed(even) == autocast::Bf16Speed::slower);
    CHECK(detail::bf16_slow_reason(even).find("no faster than fp32") != std::string::npos);
    even.bf16_dot_gflops = 225;  // exactly 1.25x
    CHECK(detail::bf16_speed(even) == autocast::Bf16Speed::faster);

    detail::Bf16Cpu no_isa;
    no_isa.kernel = "avx512_core";
    CHECK(detail::bf16_speed(no_isa) == autocast::Bf16Speed::slower);
    const std::string emulated = detail::bf16_slow_reason(no_isa);
    CHECK(emulated.find("no AVX512-BF16") != std::string::npos);
    CHECK(emulated.find("slower than fp32") != std::string::npos);

    // The ISA oneDNN will use decides, not cpuid: ONEDNN_MAX_CPU_ISA can cap it below the CPU's.
    detail::Bf16Cpu capped = zen5;  // AVX512-BF16 measured fast, oneDNN held at avx512_core: emulated bf16
    capped.kernel = "avx512_core";
    capped.max_isa = "AVX512_CORE";
    CHECK(detail::bf16_speed(capped) == autocast::Bf16Speed::slower);
    const std::string emulating = detail::bf16_slow_reason(capped);
    for (const char* part : {"oneDNN runs its avx512_core kernels", "ONEDNN_MAX_CPU_ISA=AVX512_CORE", "emulate",
                             "slower than fp32", "allow_slower_bf16(true)"})
        CHECK_MESSAGE(emulating.find(part) != std::string::npos, emulating);
    capped.kernel = "avx512_core_vnni";
    CHECK(detail::bf16_speed(capped) == autocast::Bf16Speed::slower);
    for (const char* isa : {"avx2", "avx2_vnni", "older than avx2"}) {  // no bf16 matmul at all (oneDNN 2.6)
        capped.kernel = isa;
        capped.max_isa = "AVX2";
        CHECK(detail::bf16_speed(capped) == autocast::Bf16Speed::unavailable);
        const std::string none = detail::bf16_slow_reason(capped);
        for (const std::string& part : {fmt::format("oneDNN runs its {} kernels", isa), std::string("ONEDNN_MAX_CPU_ISA=AVX2"),
                                       std::string("no bf16 matrix product below avx512_core")})
            CHECK_MESSAGE(none.find(part) != std::string::npos, none);
    }
    capped.max_isa = nullptr;  // an AVX2 CPU, nothing capped: unavailable too, not "slower" and then a oneDNN error
    capped.avx512_bf16 = false;
    CHECK(detail::bf16_speed(capped) == autocast::Bf16Speed::unavailable);
    CHECK(detail::bf16_slow_reason(capped).find("ONEDNN_MAX_CPU_ISA") == std::string::npos);

    detail::Bf16Cpu openblas = zen5;
    openblas.backend = "openblas";
    CHECK(detail::bf16_speed(openblas) == autocast::Bf16Speed::unavailable);
    const std::string chosen = detail::bf16_slow_reason(openblas);  // XTGRAD_GEMM_BACKEND=openblas
    CHECK(chosen.find("XTGRAD_GEMM_BACKEND=openblas") != std::string::npos);
    CHECK(chosen.find("unset XTGRAD_GEMM_BACKEND") != std::string::npos);
    openblas.onednn_built = false;  // a -Dgemm=openblas build
    const std::string built = detail::bf16_slow_reason(openblas);
    CHECK(built.find("openblas") != std::string::npos);
    CHECK(built.find("-Dgemm=onednn") != std::string::npos);

    if (std::string(gemm_backend_name()) == "openblas") {
        CHECK(autocast::bf16_speed() == autocast::Bf16Speed::unavailable);
        test::expect_error([] { autocast::Scope s(DType::bf16); },
                           {"autocast(bf16)", xtgrad::detail::onednn_built() ? "XTGRAD_GEMM_BACKEND" : "-Dgemm=onednn"});
    }
    const autocast::Scope fp32(DType::fp32);  // always allowed: it turns autocast off
    CHECK(autocast::dtype() == DType::fp32);
    const Bf16Here here;  // asserts the refusal where bf16 is not faster, then allows slower bf16
    if (here) {
        float a = 1.f, b = 2.f, c = 0.f;
        gemm(DType::bf16, false, false, 1, 1, 1, 1.f, &a, &b, 0.f, &c);
        CHECK(c == 2.f);
    }
}

TEST_CASE("allow_slower_bf16 lets bf16 run where it is slower, never where it is unavailable") {
    REQUIRE(!autocast::slower_bf16_allowed());
    const autocast::Bf16Speed speed = autocast::bf16_speed();
    CAPTURE(autocast::bf16_speed_name(speed));
    autocast::allow_slower_bf16(true);
    const bool allowed_runs = autocast::bf16_unsupported_reason().empty();
    bool scope_ran = false;
    try {
        const autocast::Scope s(DType::bf16);
        scope_ran = autocast::dtype() == DType::bf16;
    } catch (const Error&) {
    }
    autocast::allow_slower_bf16(false);
    CHECK(!autocast::slower_bf16_allowed());
    CHECK(allowed_runs == (speed != autocast::Bf16Speed::unavailable));
    CHECK(scope_ran == allowed_runs);
    // and once disallowed, a slower CPU refuses again (a faster one never did)
    CHECK(autocast::bf16_unsupported_reason().empty() == (speed == autocast::Bf16Speed::faster));
    CHECK(std::string(autocast::bf16_speed_name(autocast::Bf16Speed::slower)) == "slower");
}

TEST_SUITE_END();
