// attention_context_heads (autograd/ops/attention_context.cpp): the attention core on q, k, v with
// the heads packed along the last dim, against split_heads, attention_context and merge_heads
// (bit for bit, values and gradients, with masks and dropout, on 1 and 2 threads and under
// autocast), a gradcheck, and bad input.
#include <xtgrad/gemm/small_gemm.hpp>
#include <xtgrad/nn/attention.hpp>
#include "tests/autocast_util.hpp"
#include "tests/ops/attention_util.hpp"
#include "tests/test_util.hpp"

#include <limits>
#include <string>
#include <tuple>
#include <vector>

TEST_SUITE_BEGIN("ops");

using namespace xtgrad;
using test::kInf;
using test::rnd;
using test::some_masked;

namespace {

struct Packed {
    std::size_t heads;
    Tensor q, k, v, additive;  // q (B, Lq, H·dk), k (B, Lk, H·dk), v (B, Lk, H·dv), additive (Lq, Lk)
    Mask masked;
};

Packed make(std::size_t B, std::size_t H, std::size_t Lq, std::size_t Lk, std::size_t dk, std::size_t dv,
            std::uint64_t seed) {
    return {H, rnd({B, Lq, H * dk}, seed), rnd({B, Lk, H * dk}, seed + 1), rnd({B, Lk, H * dv}, seed + 2),
            rnd({Lq, Lk}, seed + 3, 0.5f), some_masked(B, Lq, Lk)};
}

// Context and the gradients of q, k, v and the additive mask, with dropout (a fixed seed) and both
// masks: through attention_context_heads, or split_heads -> attention_context -> merge_heads.
std::vector<Array> run(const Packed& c, bool packed) {
    for (const Tensor* t : {&c.q, &c.k, &c.v, &c.additive}) Tensor(*t).zero_grad();
    Generator gen(42);
    const Tensor context =
        packed ? attention_context_heads(c.q, c.k, c.v, c.heads, 0.35f, &c.masked, -kInf, c.additive, 0.3f, true, gen)
               : nn::merge_heads(attention_context(nn::split_heads(c.q, c.heads), nn::split_heads(c.k, c.heads),
                                                   nn::split_heads(c.v, c.heads), 0.35f, &c.masked, -kInf, c.additive,
                                                   0.3f, true, gen));
    sum(context * rnd(context.shape(), 7)).backward();
    return {context.data(), c.q.grad_array(), c.k.grad_array(), c.v.grad_array(), c.additive.grad_array()};
}

std::string differences(const std::vector<Array>& a, const std::vector<Array>& b) {
    const char* names[] = {"context", "dq", "dk", "dv", "d additive"};
    std::string diff;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i])) diff += (diff.empty() ? "" : ", ") + std::string(names[i]);
    return diff;
}

}  // namespace

TEST_CASE("attention_context_heads: gradcheck with masks, an additive mask and dropout") {
    const Mask masked = some_masked(2, 3, 5);
    const auto f = [&](const std::vector<Tensor>& x) {
        Generator g(9);  // the same dropout mask at every evaluation
        return attention_context_heads(x[0], x[1], x[2], 2, 0.5f, &masked, -kInf, x[3], 0.3f, true, g);
    };
    CHECK(gradcheck(f, {rnd({2, 3, 4}, 1), rnd({2, 5, 4}, 2), rnd({2, 5, 6}, 3), rnd({3, 5}, 4)}));
}

TEST_CASE("attention_context_heads equals split_heads, attention_context and merge_heads bit for bit") {
    // dv != dk; on 1 and 2 threads; one head (nothing to split) too
    for (const auto& setting : {std::pair<std::size_t, int>{3, 1}, {3, 2}, {1, 1}}) {
        const std::size_t H = setting.first;  // not bindings: CAPTURE's lambda takes them
        const int threads = setting.second;
        CAPTURE(H);
        CAPTURE(threads);
        set_num_threads(threads);
        const Packed c = make(2, H, 6, 7, 4, 5, 10);
        const std::vector<Array> packed = run(c, true), split = run(c, false);
        set_num_threads(1);
        CHECK(differences(packed, split) == "");
        CHECK(packed[0].shape() == std::vector<std::size_t>{2, 6, H * 5});
        CHECK(packed[1].size() == c.q.data().size());  // the gradients were computed, not both empty
        CHECK(packed[4].size() == 6 * 7);
    }
}

TEST_CASE("attention_context_heads under autocast equals the split path bit for bit, small and bf16 blocks") {
    const autocast_test::Bf16Here here;
    if (!here) return;
    // 130 tokens: past small_gemm's shapes, so the blocks' products run in bf16 on strided rows
    // (medium blocks: small_gemm_bf16 packs the rows either way; where it takes none, under
    // XTGRAD_ISA=baseline, oneDNN's kernels for strided and packed rows sum in other orders)
    for (std::size_t L : {6, 130}) {
        CAPTURE(L);
        const int side = static_cast<int>(L);
        if (!small_gemm_takes(side, side, 16)) continue;
        const Packed c = make(1, 2, L, L, 16, 16, 30);
        const autocast::Scope bf16(DType::bf16);
        CHECK(differences(run(c, true), run(c, false)) == "");
    }
}

TEST_CASE("attention_context_heads: bad shapes, head counts and masks are Errors naming the op and the shapes") {
    const Tensor q = rnd({2, 3, 4}), k = rnd({2, 5, 4}), v = rnd({2, 5, 6});
    const auto context = [&](const Tensor& qq, const Tensor& kk, const Tensor& vv, std::size_t heads,
                             const Mask* m = nullptr, float p = 0.f) {
        return attention_context_heads(qq, kk, vv, heads, 1.f, m, 0.f, Tensor(), p, true, default_generator());
    };
    test::expect_error([&] { context(rnd({2, 1, 3, 4}), k, v, 2); }, {"attention_context_heads", "(2,1,3,4)", "(batch, len, heads·d)"});
    test::expect_error([&] { context(q, rnd({3, 5, 4}), v, 2); }, {"attention_context_heads", "(3,5,4)", "one batch"});
    test::expect_error([&] { context(q, k, v, 3); }, {"attention_context_heads", "divisible by 3 heads"});
    test::expect_error([&] { context(q, k, v, 0); }, {"attention_context_heads", "divisible by 0 heads"});
    test::expect_error([&] { context(q, rnd({2, 5, 6}), v, 2); }, {"attention_context_heads", "(2,3,4)", "(2,5,6)", "heads·d_k"});
    test::expect_error([&] { context(q, k, rnd({2, 4, 6}), 2); }, {"attention_context_heads", "(2,5,4)", "(2,4,6)", "length"});
    test::expect_error([&] { context(q, k, v, 2, nullptr, 1.5f); }, {"attention_context_heads", "1.5"});
    const Mask wrong = Mask::from_shape({2, 1, 4, 5});
    test::expect_error([&] { context(q, k, v, 2, &wrong); }, {"attention_context_heads", "(2,1,4,5)", "(2,2,3,5)"});
}

TEST_CASE("attention_context_heads: empty batches, zero-length sequences and no keys") {
    // q (B, Lq, 2·4), k (B, Lk, 2·4), v (B, Lk, 2·3); 2 heads
    for (const auto& sizes : {std::tuple<std::size_t, std::size_t, std::size_t>{0, 3, 5}, {1, 0, 5}, {1, 2, 0}}) {
        const std::size_t B = std::get<0>(sizes), Lq = std::get<1>(sizes), Lk = std::get<2>(sizes);  // CAPTURE takes them
        CAPTURE(B);
        CAPTURE(Lq);
        CAPTURE(Lk);
        const Tensor q = rnd({B, Lq, 8}), k = rnd({B, Lk, 8}, 1), v = rnd({B, Lk, 6}, 2);
        Generator g(1);
        const Tensor y = attention_context_heads(q, k, v, 2, 0.5f, nullptr, 0.f, Tensor(), 0.2f, true, g);
        CHECK(y.shape() == Shape{B, Lq, 6});
        CHECK(y.data() == xt::zeros<float>({B, Lq, std::size_t{6}}));  // no queries, or no keys to attend to
        sum(y).backward();
        CHECK(q.grad_array() == xt::zeros<float>(q.shape()));
        CHECK(v.grad_array() == xt::zeros<float>(v.shape()));
    }
}

TEST_SUITE_END();
