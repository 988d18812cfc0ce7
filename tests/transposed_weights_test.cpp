// Inference's transposed weights (autograd/transposed_weights.hpp): under NoGradGuard a
// parameter's Linear forward runs on Wᵀ kept per version where gemm says it pays
// (nt_faster_as_nn); its values are W as stored's, the copy is made once per version, and a
// forward with grad mode on drops the copies.
#include "tests/speed_switch_scope.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/autograd/transposed_weights.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/small_gemm.hpp>
#include <xtgrad/simd/cpu_model.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <string>
#include <thread>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::max_abs_diff;
using test::rnd;

namespace {

// The switch set for a scope, the copies dropped on both ends.
struct TransposedWeightsSet : test::SpeedSwitchScope {
    explicit TransposedWeightsSet(bool on)
        : SpeedSwitchScope(detail::kInferenceWeightsTransposedSwitch, on, detail::drop_transposed_weights) {}
};

// x (3, 100, 96) · W (160, 96)ᵀ: 300 × 160 × 96, a product for the backend (neither small nor skinny)
constexpr std::size_t kRows = 300, kIn = 96, kOut = 160;

}  // namespace

TEST_CASE("nt_faster_as_nn: the backend's products only, oneDNN's, where the switch is on") {
    const TransposedWeightsSet on(true);
    CHECK(nt_faster_as_nn(kRows, kOut, kIn) == (std::string(gemm_backend_name()) == "onednn"));
    CHECK_FALSE(nt_faster_as_nn(16, 512, 512));    // a skinny side: the skinny kernels read W as stored
    CHECK_FALSE(nt_faster_as_nn(512, 16, 512));
    // small_gemm's (a medium block: on AVX-512 only, so not under XTGRAD_ISA=baseline)
    CHECK(nt_faster_as_nn(40, 40, 64) == (!small_gemm_takes(40, 40, 64) && std::string(gemm_backend_name()) == "onednn"));
    detail::set_speed_switch(detail::kInferenceWeightsTransposedSwitch, false);
    CHECK_FALSE(nt_faster_as_nn(kRows, kOut, kIn));
}

TEST_CASE("under NoGradGuard a parameter's Linear reads Wᵀ kept per version, to W as stored's values") {
    if (std::string(gemm_backend_name()) != "onednn") return;  // OpenBLAS runs both at one speed: no copy
    const TransposedWeightsSet on(true);
    const Tensor x = rnd({3, kRows / 3, kIn}, 1), b(rnd({kOut}, 3).data(), true);
    Tensor w(rnd({kOut, kIn}, 2).data(), true);
    const Tensor trained = linear(x, w, b);  // grad mode on: W as stored, no copy
    CHECK(detail::transposed_weight_counts().held == 0);
    {
        const NoGradGuard no_grad;
        const Tensor y1 = linear(x, w, b), y2 = linear(x, w, b);
        CHECK(max_abs_diff(y1.data(), trained.data()) < 1e-4f);
        CHECK(max_abs_diff(y2.data(), y1.data()) == 0.f);
        const auto counts = detail::transposed_weight_counts();
        CHECK(counts.transposes == 1);  // the second forward reused the first's copy
        CHECK(counts.hits == 1);
        CHECK(counts.held == 1);

        w.mutable_data() *= 2.f;  // an in-place write (an optimizer step): the next forward transposes again
        const Tensor y3 = linear(x, w, b);
        CHECK(detail::transposed_weight_counts().transposes == 2);
        CHECK(detail::transposed_weight_counts().held == 1);  // the old version's copy is gone
        Array expected = trained.data();
        expected -= xt::broadcast(b.data(), expected.shape());
        expected = 2.f * expected + xt::broadcast(b.data(), expected.shape());
        CHECK(max_abs_diff(y3.data(), expected) < 1e-4f);

        const Tensor input(rnd({kOut, kIn}, 4).data(), false);  // not a parameter: no copy
        (void)linear(x, input);
        CHECK(detail::transposed_weight_counts().held == 1);
        CHECK(detail::transposed_weight_counts().transposes == 2);
    }
    (void)linear(x, w, b);  // training again: the copies go
    CHECK(detail::transposed_weight_counts().held == 0);
}

TEST_CASE("linear_rows under NoGradGuard reads its block of the transposed copy (a packed in-projection)") {
    if (std::string(gemm_backend_name()) != "onednn") return;
    const Tensor x = rnd({kRows, kIn}, 5), w(rnd({3 * kOut, kIn}, 6).data(), true), b(rnd({3 * kOut}, 7).data(), true);
    for (std::size_t first : {std::size_t{0}, kOut, 2 * kOut}) {
        CAPTURE(first);
        const Tensor stored = [&] {
            const TransposedWeightsSet off(false);
            const NoGradGuard no_grad;
            return linear_rows(x, w, b, first, kOut);
        }();
        const TransposedWeightsSet on(true);
        const NoGradGuard no_grad;
        const Tensor transposed = linear_rows(x, w, b, first, kOut);
        CHECK(detail::transposed_weight_counts().transposes == 1);
        CHECK(transposed.shape() == Shape{kRows, kOut});
        CHECK(max_abs_diff(transposed.data(), stored.data()) < 1e-4f);
    }
}

TEST_CASE("the inference switch's default follows the CPU: on for AMD families 25 and 26 and Intel family 6, where measured") {
    // XTGRAD_INFERENCE_WEIGHTS_TRANSPOSED is unset in the suite's environment
    CHECK(detail::kInferenceWeightsTransposedSwitch.unset_means() ==
          (cpu_model().is_amd_zen4() || cpu_model().is_amd(26) || cpu_model().is_intel(6)));
}

TEST_CASE("a transposed copy goes with its weight, not at the next forward") {
    if (std::string(gemm_backend_name()) != "onednn") return;
    const TransposedWeightsSet on(true);
    const NoGradGuard no_grad;
    const Tensor x = rnd({kRows, kIn}, 8);
    {
        const Tensor w(rnd({kOut, kIn}, 9).data(), true);
        (void)linear(x, w);
        CHECK(detail::transposed_weight_counts().held == 1);
    }
    // the copy lived in the weight's values (TensorValues::kept_copies): nothing holds it now
    CHECK(detail::transposed_weight_counts().held == 0);
}

TEST_CASE("a copy made on the pool while the pool's jobs ask for copies too does not deadlock") {
    if (std::string(gemm_backend_name()) != "onednn") return;
    // The copy was made under the cache's lock, on the pool: a thread holding the pool whose job
    // asked for a copy waited for that lock while the lock's holder waited for the pool.
    const TransposedWeightsSet on(true);
    set_num_threads(2);
    const Tensor x = rnd({64, 512}, 10);
    std::thread direct([&] {
        const NoGradGuard no_grad;
        for (int i = 0; i < 40; ++i) (void)linear(x, Tensor(rnd({512, 512}, 100 + i).data(), true));
    });
    for (int i = 0; i < 40; ++i)
        parallel_for(2, 1, [&](std::size_t, std::size_t) {
            const NoGradGuard no_grad;
            (void)linear(x, Tensor(rnd({512, 512}, 200 + i).data(), true));
        });
    direct.join();
    set_num_threads(1);
    CHECK(detail::transposed_weight_counts().held == 0);  // every weight died with its copy
}
