// Tutorial D (nn/tutorial_d, torch.nn's Transformer): every mask form (bool, float, 2-D, 3-D, key padding, causal)
// behaves as docs/tutorial_d.md says.
#include "tests/nn/tutorial_d_util.hpp"

#include <atomic>
#include <thread>

TEST_SUITE_BEGIN("tutorial_d");

using namespace xtgrad;
using namespace xtgrad::test::tutorial_d;
using test::expect_error;
using test::rnd;

TEST_CASE("tutorial D: masks behave as documented: bool true = masked, float added, key padding per batch item") {
    MultiheadAttention m(8, 2);
    randomize(m, 4);
    const std::size_t L = 4, S = 5, N = 2;
    Tensor q = rnd({L, N, 8}, 16), k = rnd({S, N, 8}, 17), v = rnd({S, N, 8}, 18);
    const auto weights_per_head = [&](const AttentionMask& kpm, const AttentionMask& attn) {
        return m.forward(q, k, v, kpm, true, attn, /*average_attn_weights=*/false).attn_output_weights;  // (N, h, L, S)
    };

    SUBCASE("a boolean mask equals the float mask with -inf at its true entries") {
        Mask b = xt::zeros<bool>({L, S});
        b(0, 1) = b(2, 4) = b(3, 0) = true;
        Array f = xt::zeros<float>({L, S});
        f(0, 1) = f(2, 4) = f(3, 0) = -kInf;
        const auto with_bool = m.forward(q, k, v, {}, true, b);
        const auto with_float = m.forward(q, k, v, {}, true, Tensor(f));
        CHECK(test::max_abs_diff(with_bool.attn_output.data(), with_float.attn_output.data()) == 0.f);
        CHECK(with_bool.attn_output_weights.data()(1, 2, 4) == 0.f);  // (N, L, S): masked for every item
        CHECK(with_bool.attn_output_weights.data()(0, 0, 1) == 0.f);
    }
    SUBCASE("a float mask is added to the scores: a constant per row changes nothing") {
        Array shift = xt::zeros<float>({L, S});
        for (std::size_t i = 0; i < L; ++i)
            for (std::size_t j = 0; j < S; ++j) shift(i, j) = static_cast<float>(i) * 3.f;
        const Tensor plain = m.forward(q, k, v).attn_output;
        const Tensor shifted = m.forward(q, k, v, {}, true, Tensor(shift)).attn_output;
        CHECK(test::max_abs_diff(plain.data(), shifted.data()) < 1e-5f);
        Array bias = xt::zeros<float>({L, S});
        bias(1, 3) = 2.f;  // a finite bias raises that key's weight
        CHECK(m.forward(q, k, v, {}, true, Tensor(bias)).attn_output_weights.data()(0, 1, 3) >
              m.forward(q, k, v).attn_output_weights.data()(0, 1, 3));
    }
    SUBCASE("a 3-D mask has one (L, S) block per batch item and head, row n·h + head") {
        Mask b = xt::zeros<bool>({N * 2, L, S});
        b(1 * 2 + 1, 2, 3) = true;  // batch item 1, head 1, query 2, key 3
        const Tensor w = weights_per_head({}, b);
        CHECK(w.data()(1, 1, 2, 3) == 0.f);
        CHECK(w.data()(1, 0, 2, 3) > 0.f);  // the other head of the same item
        CHECK(w.data()(0, 1, 2, 3) > 0.f);  // the same head of the other item
    }
    SUBCASE("key_padding_mask hides keys of its batch item from every query and head") {
        const Mask pad = padding_mask(N, S, 3);  // item 0: keys 3 and 4 are padding
        const Tensor w = weights_per_head(pad, {});
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t i = 0; i < L; ++i) {
                CHECK(w.data()(0, h, i, 3) == 0.f);
                CHECK(w.data()(0, h, i, 4) == 0.f);
                CHECK(w.data()(1, h, i, 4) > 0.f);
            }
        // the padded values do not reach the output
        Tensor v2 = Tensor(v.data());
        for (std::size_t e = 0; e < 8; ++e) v2.mutable_data()(4, 0, e) += 100.f;
        const Tensor a = m.forward(q, k, v, pad).attn_output, b = m.forward(q, k, v2, pad).attn_output;
        CHECK(test::max_abs_diff(a.data(), b.data()) < 1e-5f);
    }
    SUBCASE("key padding is OR-ed into a bool mask and written as -inf into a float one") {
        const Mask pad = padding_mask(N, S, 4);
        Mask b = xt::zeros<bool>({L, S});
        b(0, 0) = true;
        Array f = xt::zeros<float>({L, S});
        f(0, 0) = -kInf;
        const Tensor wb = weights_per_head(pad, b), wf = weights_per_head(pad, Tensor(f));
        CHECK(test::max_abs_diff(wb.data(), wf.data()) == 0.f);
        CHECK(wb.data()(0, 1, 0, 0) == 0.f);  // from attn_mask
        CHECK(wb.data()(0, 1, 2, 4) == 0.f);  // from key_padding_mask
        CHECK(wb.data()(1, 1, 2, 4) > 0.f);
        const AttentionMask merged = AttentionMask(b).merged_with(AttentionMask(pad).reshaped({N, 1, 1, S}));
        CHECK(merged.is_bool());
        CHECK(merged.shape() == Shape{N, 1, L, S});
        const AttentionMask merged_float = AttentionMask(Tensor(f)).merged_with(AttentionMask(pad).reshaped({N, 1, 1, S}));
        CHECK(!merged_float.is_bool());
        CHECK(merged_float.additive().data()(0, 0, 1, 4) == -kInf);
    }
    SUBCASE("the weights are averaged over heads unless asked otherwise") {
        const Tensor per_head = weights_per_head({}, {});
        const Tensor averaged = m.forward(q, k, v).attn_output_weights;
        CHECK(per_head.shape() == Shape{N, 2, L, S});
        CHECK(averaged.shape() == Shape{N, L, S});
        CHECK(averaged.data()(1, 2, 3) ==
              doctest::Approx((per_head.data()(1, 0, 2, 3) + per_head.data()(1, 1, 2, 3)) / 2));
        CHECK(!m.forward(q, k, v, {}, /*need_weights=*/false).attn_output_weights.defined());
    }
    SUBCASE("a query row with every key masked by -inf is an Error (torch gives NaN)") {
        Mask all = xt::zeros<bool>({L, S});
        for (std::size_t j = 0; j < S; ++j) all(1, j) = true;
        expect_error([&] { m.forward(q, k, v, {}, true, all); }, {"softmax", "entirely -inf"});
    }
}

TEST_CASE("tutorial D: a uint8 attn_mask is taken as bool with torch 1.13's deprecation warning; a uint8 key_padding_mask is refused") {
    MultiheadAttention m(8, 2);
    randomize(m, 4);
    const std::size_t L = 4, S = 5, N = 2;
    Tensor q = rnd({L, N, 8}, 16), k = rnd({S, N, 8}, 17), v = rnd({S, N, 8}, 18);
    std::vector<std::string> warnings;
    const WarningHandler previous = set_warning_handler([&](const std::string& w) { warnings.push_back(w); });
    ByteMask bytes = xt::zeros<std::uint8_t>({L, S});
    bytes(0, 1) = 1, bytes(2, 4) = 255, bytes(3, 0) = 7;  // any nonzero byte masks, as torch's .to(torch.bool)
    Mask b = xt::zeros<bool>({L, S});
    b(0, 1) = b(2, 4) = b(3, 0) = true;
    const auto with_bytes = m.forward(q, k, v, {}, true, bytes, false);
    const auto with_bool = m.forward(q, k, v, {}, true, b, false);
    CHECK(test::max_abs_diff(with_bytes.attn_output.data(), with_bool.attn_output.data()) == 0.f);
    CHECK(test::max_abs_diff(with_bytes.attn_output_weights.data(), with_bool.attn_output_weights.data()) == 0.f);
    CHECK(with_bytes.attn_output_weights.data()(1, 1, 2, 4) == 0.f);
    REQUIRE(warnings.size() == 1);  // the bool call warns nothing
    CHECK(warnings[0] == "Byte tensor for attn_mask in nn.MultiheadAttention is deprecated. Use bool tensor instead.");
    // Through the layers too: an encoder layer's src_mask reaches the same check.
    TransformerEncoderLayer layer(TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.f));
    layer.eval();
    ByteMask square = xt::zeros<std::uint8_t>({L, L});
    square(0, 3) = 1;
    Mask square_bool = xt::zeros<bool>({L, L});
    square_bool(0, 3) = true;
    CHECK(test::max_abs_diff(layer.forward(q, square).data(), layer.forward(q, square_bool).data()) == 0.f);
    CHECK(warnings.size() == 2);
    // torch 1.13 refuses a uint8 key_padding_mask (it converted it before 1.12, as the tutorial shows).
    ByteMask padding = xt::zeros<std::uint8_t>({N, S});
    expect_error([&] { m.forward(q, k, v, padding); },
                 {"only bool and floating types of key_padding_mask are supported", "uint8", "(2,5)"});
    set_warning_handler(previous);
}

TEST_CASE("tutorial D: a warning handler that throws stops forward with an Error naming the handler") {
    MultiheadAttention m(8, 2);
    randomize(m, 4);
    const std::size_t L = 4, S = 5, N = 2;
    Tensor q = rnd({L, N, 8}, 16), k = rnd({S, N, 8}, 17), v = rnd({S, N, 8}, 18);
    ByteMask bytes = xt::zeros<std::uint8_t>({L, S});
    bytes(0, 1) = 1;
    struct Restore {
        WarningHandler previous;
        ~Restore() { set_warning_handler(std::move(previous)); }
    } restore{set_warning_handler([](const std::string&) { throw std::runtime_error("no warnings here"); })};
    const char* named = "tutorial_d::set_warning_handler's handler, given the warning 'Byte tensor for attn_mask";
    CHECK_THROWS_WITH_AS(m.forward(q, k, v, {}, true, bytes), doctest::Contains(named), Error);
    CHECK_THROWS_WITH_AS(m.forward(q, k, v, {}, true, bytes), doctest::Contains("threw: no warnings here"), Error);
    set_warning_handler([](const std::string&) { throw 7; });
    CHECK_THROWS_WITH_AS(m.forward(q, k, v, {}, true, bytes), doctest::Contains("threw a non-standard exception"), Error);
    // an Error of the handler's own passes as it is
    set_warning_handler([](const std::string&) { fail("my policy: no byte masks"); });
    CHECK_THROWS_WITH_AS(m.forward(q, k, v, {}, true, bytes), doctest::Contains("my policy: no byte masks"), Error);
    // the module is as it was: with a handler that does not throw, the same call runs and equals the bool mask's
    set_warning_handler([](const std::string&) {});
    Mask b = xt::zeros<bool>({L, S});
    b(0, 1) = true;
    CHECK(test::max_abs_diff(m.forward(q, k, v, {}, true, bytes).attn_output.data(),
                             m.forward(q, k, v, {}, true, b).attn_output.data()) == 0.f);
}

TEST_CASE("tutorial D: a warning handler that runs forward again gets its own warnings the default way, not recursively") {
    MultiheadAttention m(8, 2);
    randomize(m, 4);
    Tensor q = rnd({4, 2, 8}, 16), k = rnd({5, 2, 8}, 17), v = rnd({5, 2, 8}, 18);
    ByteMask bytes = xt::zeros<std::uint8_t>({4, 5});
    bytes(0, 1) = 1;
    int calls = 0;
    Tensor inner;
    // the handler looks at what the byte mask gives, by running forward with it (which warns again):
    // that overflowed the stack, each warning calling the handler
    struct Restore {
        WarningHandler previous;
        ~Restore() { set_warning_handler(std::move(previous)); }
    } restore{set_warning_handler([&](const std::string&) {
        ++calls;
        inner = m.forward(q, k, v, {}, true, bytes).attn_output;
    })};
    const Tensor outer = m.forward(q, k, v, {}, true, bytes).attn_output;
    CHECK(calls == 1);
    CHECK(test::max_abs_diff(outer.data(), inner.data()) == 0.f);
    // the handler gets the next call's warning again: the guard is only while it runs
    (void)m.forward(q, k, v, {}, true, bytes);
    CHECK(calls == 2);
}

TEST_CASE("tutorial D: a warning handler set while other threads warn: no race on the handler") {
    // the handler was one unguarded std::function: replacing it while another thread copied it
    // corrupted the heap (std::length_error, "free(): unaligned chunk")
    struct Restore {
        WarningHandler previous = set_warning_handler([](const std::string&) {});
        ~Restore() { set_warning_handler(std::move(previous)); }
    } restore;
    std::atomic<long> calls{0};
    std::atomic<bool> stop{false};
    std::thread setter([&] {
        for (int i = 0; i < 20000; ++i) {
            const std::string capture(64 + i % 50, 'a');  // a capture on the heap: a torn copy shows
            set_warning_handler([capture, &calls](const std::string&) { calls += capture.size() >= 64 ? 1 : 1000000; });
        }
        stop = true;
    });
    long warned = 0;
    while (!stop) {
        xtgrad::nn::tutorial_d::warn("a warning while the handler changes");
        ++warned;
    }
    setter.join();
    CHECK(calls.load() <= warned);  // every call reached a whole handler; none was torn
}

TEST_CASE("tutorial D: generate_square_subsequent_mask is 0 on and below the diagonal, -inf above") {
    const Tensor m = Transformer::generate_square_subsequent_mask(4);
    REQUIRE(m.shape() == Shape{4, 4});
    for (std::size_t i = 0; i < 4; ++i)
        for (std::size_t j = 0; j < 4; ++j) CHECK(m.data()(i, j) == (j <= i ? 0.f : -kInf));
    CHECK(!m.requires_grad());
}

TEST_CASE("tutorial D: AttentionMask::reshaped to another element count is an Error for every kind of mask") {
    const nn::tutorial_d::AttentionMask as_bool(Mask::from_shape({2, 3}));
    const nn::tutorial_d::AttentionMask as_float(Tensor::zeros({2, 3}));
    // the bool mask let xtensor's std::runtime_error through
    expect_error([&] { (void)as_bool.reshaped({4, 2}); }, {"AttentionMask::reshaped", "(4,2)", "(2,3)"});
    expect_error([&] { (void)as_float.reshaped({4, 2}); }, {"reshape", "(4,2)"});
    CHECK_NOTHROW((void)as_bool.reshaped({3, 2}));
}

TEST_SUITE_END();
