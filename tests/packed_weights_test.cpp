// Inference's packed weights (autograd/packed_weights.hpp): under bf16 autocast and NoGradGuard a
// parameter's Linear forward reads W from the backend's packed copy, kept per version and block;
// its values are the product on W's bf16 copy's (summed in the packed layout's order), the same
// for any thread count; a forward with grad mode on drops the copies.
#include "tests/speed_switch_scope.hpp"
#include "tests/autocast_util.hpp"

#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/packed_weights.hpp>
#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/dtype.hpp>
#include <xtgrad/gemm/gemm_backend.hpp>
#include <xtgrad/simd/cpu_model.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using autocast_test::Bf16Here;
using test::max_abs_diff;
using test::rnd;

namespace {

// The switch set for a scope, the copies dropped on both ends.
struct PackedWeightsSet : test::SpeedSwitchScope {
    explicit PackedWeightsSet(bool on)
        : SpeedSwitchScope(detail::kInferenceWeightsPackedSwitch, on, detail::drop_packed_weights) {}
};

// x (2, 160, 512) · W (384, 512)ᵀ: 320 × 384 × 512, the backend's bf16 product
constexpr std::size_t kRows = 320, kIn = 512, kOut = 384;

bool backend_packs() {
    const std::vector<std::uint16_t> w(kOut * kIn, to_bf16_bits(0.5f));
    return pack_bf16_weight(static_cast<int>(kRows), static_cast<int>(kOut), static_cast<int>(kIn), w.data()) != nullptr;
}

// linear(x, w, b) under bf16 autocast and NoGradGuard, the switch as given
Tensor inference(const Tensor& x, const Tensor& w, const Tensor& b, bool packed) {
    const PackedWeightsSet set(packed);
    const autocast::Scope bf16(DType::bf16);
    const NoGradGuard no_grad;
    return linear(x, w, b);
}

}  // namespace

TEST_CASE("the packed weights' default: on oneDNN where it runs AMX or the CPU is a Zen 4 or 5, the CPUs measured") {
    // XTGRAD_INFERENCE_WEIGHTS_PACKED is unset in the suite's environment
    const bool onednn = std::string(gemm_backend_name()) == "onednn";
    const bool measured_faster = onednn && (std::string(gemm_backend_kernel()) == "avx512_core_amx" ||
                                            cpu_model().is_amd_zen4() || cpu_model().is_amd(26));
    CHECK(detail::kInferenceWeightsPackedSwitch.unset_means() == measured_faster);
    CHECK(inference_weights_packed() == measured_faster);
    if (std::string(gemm_backend_name()) != "onednn") {  // OpenBLAS has no packed layout: never on
        const PackedWeightsSet on(true);
        CHECK_FALSE(inference_weights_packed());
        CHECK_FALSE(backend_packs());
    }
}

TEST_CASE("under bf16 autocast and NoGradGuard a parameter's Linear reads a packed copy kept per version") {
    const Bf16Here here;
    if (!here) return;
    if (!backend_packs()) {  // no packed layout here: the forward reads W's bf16 copy, and keeps nothing
        const Tensor x = rnd({2, kRows / 2, kIn}, 1), w(rnd({kOut, kIn}, 2).data(), true), b(rnd({kOut}, 3).data(), true);
        CHECK(max_abs_diff(inference(x, w, b, true).data(), inference(x, w, b, false).data()) == 0.f);
        CHECK(detail::packed_weight_counts().packed == 0);
        return;
    }
    const Tensor x = rnd({2, kRows / 2, kIn}, 1), b(rnd({kOut}, 3).data(), true);
    Tensor w(rnd({kOut, kIn}, 2).data(), true);
    const Tensor stored = inference(x, w, b, false);
    const PackedWeightsSet on(true);
    const autocast::Scope bf16(DType::bf16);
    {
        const NoGradGuard no_grad;
        const Tensor y1 = linear(x, w, b), y2 = linear(x, w, b);
        CHECK(y1.shape() == Shape{2, kRows / 2, kOut});
        CHECK(max_abs_diff(y1.data(), stored.data()) < 1e-4f);  // the same bf16 products, summed in another order
        CHECK(max_abs_diff(y2.data(), y1.data()) == 0.f);
        CHECK(detail::packed_weight_counts().packed == 1);  // the second forward reused the first's copy
        CHECK(detail::packed_weight_counts().hits == 1);
        CHECK(detail::packed_weight_counts().held == 1);

        w.mutable_data() *= 2.f;  // an in-place write: the next forward packs the new values
        const Tensor y3 = linear(x, w, b);
        CHECK(detail::packed_weight_counts().packed == 2);
        CHECK(detail::packed_weight_counts().held == 1);  // the old version's copy is gone
        Array expected = stored.data() - xt::broadcast(b.data(), stored.data().shape());
        expected = 2.f * expected + xt::broadcast(b.data(), expected.shape());
        CHECK(max_abs_diff(y3.data(), expected) < 2e-4f);

        const Tensor input(rnd({kOut, kIn}, 4).data(), false);  // not a parameter: no copy
        (void)linear(x, input);
        CHECK(detail::packed_weight_counts().packed == 2);
    }
    (void)linear(x, w, b);  // grad mode on (training): the copies go
    CHECK(detail::packed_weight_counts().held == 0);
}

TEST_CASE("linear_rows reads a packed copy per block of the weight (a packed in-projection)") {
    const Bf16Here here;
    if (!here || !backend_packs()) return;
    const Tensor x = rnd({kRows, kIn}, 5), w(rnd({3 * kOut, kIn}, 6).data(), true), b(rnd({3 * kOut}, 7).data(), true);
    const std::size_t firsts[] = {0, kOut, 2 * kOut};
    std::vector<Tensor> stored;
    for (std::size_t first : firsts) {
        const PackedWeightsSet off(false);
        const autocast::Scope bf16(DType::bf16);
        const NoGradGuard no_grad;
        stored.push_back(linear_rows(x, w, b, first, kOut));
    }
    const PackedWeightsSet on(true);
    const autocast::Scope bf16(DType::bf16);
    const NoGradGuard no_grad;
    for (std::size_t i = 0; i < 3; ++i) {
        CAPTURE(firsts[i]);
        const Tensor packed = linear_rows(x, w, b, firsts[i], kOut);
        CHECK(packed.shape() == Shape{kRows, kOut});
        CHECK(max_abs_diff(packed.data(), stored[i].data()) < 1e-4f);
    }
    CHECK(detail::packed_weight_counts().packed == 3);
    (void)linear_rows(x, w, b, kOut, kOut);
    CHECK(detail::packed_weight_counts().packed == 3);  // the block's copy reused
    CHECK(detail::packed_weight_counts().held == 1);   // one weight
}

TEST_CASE("a packed product gives the same bits on one thread and on two") {
    const Bf16Here here;
    if (!here || !backend_packs()) return;
    const Tensor x = rnd({kRows, 2048}, 8), w(rnd({kIn, 2048}, 9).data(), true);  // K = 2048
    const auto run = [&](int threads) {
        set_num_threads(threads);
        const PackedWeightsSet on(true);
        const autocast::Scope bf16(DType::bf16);
        const NoGradGuard no_grad;
        return linear(x, w);
    };
    const Tensor one = run(1), two = run(2);
    set_num_threads(1);
    CHECK(max_abs_diff(one.data(), two.data()) == 0.f);
}

TEST_CASE("gemm_bias_packed_weight on rows its layout was not made for: the packed product or W's, the same values") {
    const Bf16Here here;
    if (!here || !backend_packs()) return;
    // N = 64: oneDNN's layout for 7 rows differs from its layout for 160 (packed_weights.hpp)
    constexpr int M = 160, N = 64, K = 512;
    std::vector<std::uint16_t> x16(M * K), w16(N * K);
    const Array xs = rnd({M, K}, 10).data(), ws = rnd({N, K}, 11).data(), bias = rnd({N}, 12).data();
    for (std::size_t i = 0; i < x16.size(); ++i) x16[i] = to_bf16_bits(xs.data()[i]);
    for (std::size_t i = 0; i < w16.size(); ++i) w16[i] = to_bf16_bits(ws.data()[i]);
    const auto packed = pack_bf16_weight(7, N, K, w16.data());
    REQUIRE(packed);
    std::vector<float> on_packed(M * N, -1.f), on_w(M * N, -2.f);
    gemm_bias_packed_weight(M, N, K, x16.data(), w16.data(), packed.get(), bias.data(), on_packed.data());
    gemm_bias(DType::bf16, false, true, M, N, K, xs.data(), x16.data(), ws.data(), w16.data(), bias.data(), on_w.data());
    float worst = 0.f;
    for (std::size_t i = 0; i < on_w.size(); ++i) worst = std::max(worst, std::abs(on_packed[i] - on_w[i]));
    CHECK(worst < 1e-4f);
}

TEST_CASE("gemm_bias_packed_weight refuses null operands and empty sizes by name, writing nothing") {
    std::uint16_t a = 0, b = 0;
    float c = 7.f;
    const int dummy = 0;
    test::expect_error([&] { gemm_bias_packed_weight(1, 1, 1, nullptr, &b, &dummy, nullptr, &c); },
                       {"gemm_bias_packed_weight", "x16 null"});
    test::expect_error([&] { gemm_bias_packed_weight(1, 1, 1, &a, &b, nullptr, nullptr, &c); },
                       {"gemm_bias_packed_weight", "packed null"});
    test::expect_error([&] { gemm_bias_packed_weight(0, 1, 1, &a, &b, &dummy, nullptr, &c); },
                       {"gemm_bias_packed_weight", "(0, 1, 1)"});
    CHECK(c == 7.f);
}

TEST_CASE("a packed copy goes with its weight, and copies asked for on the pool's jobs do not deadlock") {
    const Bf16Here here;
    if (!here || !backend_packs()) return;
    const PackedWeightsSet on(true);
    {
        const autocast::Scope bf16(DType::bf16);
        const NoGradGuard no_grad;
        const Tensor w(rnd({kOut, kIn}, 13).data(), true);
        (void)linear(rnd({kRows, kIn}, 14), w);
        CHECK(detail::packed_weight_counts().held == 1);
    }
    CHECK(detail::packed_weight_counts().held == 0);  // it lived in the weight's values
    set_num_threads(2);
    const Tensor x = rnd({64, 512}, 15);
    std::thread direct([&] {
        const autocast::Scope bf16(DType::bf16);
        const NoGradGuard no_grad;
        for (int i = 0; i < 20; ++i) (void)linear(x, Tensor(rnd({512, 512}, 100 + i).data(), true));
    });
    for (int i = 0; i < 20; ++i)
        parallel_for(2, 1, [&](std::size_t, std::size_t) {
            const autocast::Scope bf16(DType::bf16);
            const NoGradGuard no_grad;
            (void)linear(x, Tensor(rnd({512, 512}, 200 + i).data(), true));
        });
    direct.join();
    set_num_threads(1);
    CHECK(detail::packed_weight_counts().held == 0);
}

TEST_CASE("a bf16 copy read before a write packs its own values, never left under the new version") {
    // Found by a no-context attack: a thread's forward read the bf16 copy, another wrote the
    // weight, and the packing came after: the old values were kept as the new version's, and every
    // later inference read them (32-37 of 100 tries).
    const Bf16Here here;
    if (!here || !backend_packs()) return;
    const Tensor x = rnd({kRows, kIn}, 16);
    Tensor w(rnd({kOut, kIn}, 17).data(), true);
    const PackedWeightsSet on(true);
    const autocast::Scope bf16(DType::bf16);
    const NoGradGuard no_grad;
    const autocast::Bf16Copy old_copy = autocast::bf16_weight(w);
    w.mutable_data() *= 3.f;  // the write, between the other thread's bf16 copy and its packing
    CHECK(detail::packed_bf16_weight(w, old_copy, 0, kOut, static_cast<int>(kRows)) != nullptr);
    const Tensor packed = linear(x, w);  // the new version's bf16 copy
    const Tensor stored = [&] {
        const PackedWeightsSet off(false);
        return linear(x, w);
    }();
    CHECK(max_abs_diff(packed.data(), stored.data()) < 1e-4f);
}

TEST_CASE("a block sliding along a weight's rows packs at most twice the weight, then runs unpacked") {
    // Found by a no-context attack: one packed copy per offset, 390 MB for a 4 MB weight
    const Bf16Here here;
    if (!here || !backend_packs()) return;
    const Tensor x = rnd({kRows, kIn}, 18), w(rnd({kOut, kIn}, 19).data(), true);
    const PackedWeightsSet on(true);
    const autocast::Scope bf16(DType::bf16);
    const NoGradGuard no_grad;
    constexpr std::size_t count = kOut / 4;
    for (std::size_t first = 0; first + count <= kOut; first += 8) {
        const Tensor packed = linear_rows(x, w, Tensor(), first, count);
        const Tensor stored = [&] {
            const PackedWeightsSet off(false);
            return linear_rows(x, w, Tensor(), first, count);
        }();
        CHECK(max_abs_diff(packed.data(), stored.data()) < 1e-4f);
    }
    CHECK(detail::packed_weight_counts().packed == 0);  // the inner scopes dropped them: counted again below
    for (std::size_t first = 0; first + count <= kOut; first += 8) (void)linear_rows(x, w, Tensor(), first, count);
    CHECK(detail::packed_weight_counts().packed == 8);  // 8 blocks of a quarter: twice the weight
}

TEST_CASE("gemm_bias_packed_weight where the backend has no packed products or bf16 is refused: an Error naming why") {
    // Found by a no-context attack: on OpenBLAS it called a null function pointer
    std::uint16_t a = 0, b = 0;
    float c = 7.f;
    const int not_packed = 0;
    if (!detail::active_backend().gemm_bf16_packed) {
        test::expect_error([&] { gemm_bias_packed_weight(1, 1, 1, &a, &b, &not_packed, nullptr, &c); },
                           {"gemm_bias_packed_weight: the ", " backend has no packed bf16 products"});
        CHECK(pack_bf16_weight(1, 1, 1, &b) == nullptr);
    } else if (const std::string reason = autocast::bf16_unsupported_reason(); !reason.empty()) {
        test::expect_error([&] { gemm_bias_packed_weight(1, 1, 1, &a, &b, &not_packed, nullptr, &c); },
                           {"gemm_bias_packed_weight: ", reason.c_str()});
        CHECK(pack_bf16_weight(1, 1, 1, &b) == nullptr);
    } else {
        CHECK(pack_bf16_weight(1, 1, 1, &b) != nullptr);  // bf16 runs here: both work (the cases above)
    }
    CHECK(c == 7.f);
}
