// The module system and the shared building blocks: names, modes, state, gradcheck.
#include <xtgrad/nn/checkpoint.hpp>
#include <xtgrad/nn/init.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include "tests/io/io_test_util.hpp"
#include "tests/test_util.hpp"

#include <cmath>
#include <filesystem>

TEST_SUITE_BEGIN("nn");

using namespace xtgrad;
using namespace xtgrad::nn;
using test::rnd;
using V = std::vector<Tensor>;

namespace {
// A two-level model, to check dotted names and ordering.
struct Block : Module {
    std::shared_ptr<Linear> proj = register_module("proj", std::make_shared<Linear>(4, 3));
    std::shared_ptr<LayerNorm> norm = register_module("norm", std::make_shared<LayerNorm>(3));
    std::shared_ptr<Dropout> drop = register_module("drop", std::make_shared<Dropout>(0.5f));
    Tensor forward(const Tensor& x) const { return drop->forward(norm->forward(proj->forward(x))); }
};
struct Model : Module {
    Tensor scale = register_parameter("scale", Tensor::ones({3}));
    Tensor table = register_buffer("table", Tensor::zeros({2, 2}));
    std::shared_ptr<ModuleList<Block>> blocks = register_module("blocks", std::make_shared<ModuleList<Block>>());
    Model() {
        blocks->push_back(std::make_shared<Block>());
        blocks->push_back(std::make_shared<Block>());
    }
};

std::vector<std::string> names(const NamedTensors& v) {
    std::vector<std::string> out;
    for (auto& [n, t] : v) out.push_back(n);
    return out;
}
}  // namespace

TEST_CASE("modules: dotted names in torch's order, on the tensors too") {
    Model m;
    const std::vector<std::string> expected = {"scale",
                                               "blocks.0.proj.weight", "blocks.0.proj.bias", "blocks.0.norm.weight",
                                               "blocks.0.norm.bias", "blocks.1.proj.weight", "blocks.1.proj.bias",
                                               "blocks.1.norm.weight", "blocks.1.norm.bias"};
    CHECK(names(m.named_parameters()) == expected);
    CHECK(names(m.named_buffers()) == std::vector<std::string>{"table"});
    CHECK(names(m.state_dict()).size() == expected.size() + 1);
    CHECK(m.blocks->operator[](1).proj->weight.name() == "blocks.1.proj.weight");
    CHECK(m.num_parameters() == 3 + 2 * (12 + 3 + 3 + 3));
    // a child's own state_dict uses names relative to it, as torch
    CHECK(names(m.blocks->operator[](0).state_dict())[0] == "proj.weight");
}

TEST_CASE("modules: train/eval propagate to children; zero_grad clears every gradient") {
    Model m;
    m.eval();
    CHECK_FALSE(m.blocks->operator[](1).drop->is_training());
    m.train();
    CHECK(m.blocks->operator[](0).drop->is_training());
    Tensor x = rnd({2, 4}, 1);
    sum(m.blocks->operator[](0).forward(x)).backward();
    CHECK(m.blocks->operator[](0).proj->weight.has_grad());
    m.zero_grad();
    for (const Tensor& p : m.parameters()) CHECK_FALSE(p.has_grad());
}

TEST_CASE("modules: load_state_dict lists every missing, unexpected and mismatched key") {
    Model a, b;
    NamedTensors state = a.state_dict();
    b.load_state_dict(state);
    CHECK(test::max_abs_diff(b.blocks->operator[](1).proj->weight.data(), a.blocks->operator[](1).proj->weight.data()) == 0.f);
    state.erase(std::find_if(state.begin(), state.end(), [](auto& e) { return e.first == "blocks.0.proj.weight"; }));
    state.emplace_back("blocks.2.proj.weight", Tensor::zeros({3, 4}));  // unexpected
    state[0].second = Tensor::zeros({4});                            // scale: (4) vs (3)
    test::expect_error([&] { b.load_state_dict(state); },
                      {"missing keys (1)", "blocks.0.proj.weight", "unexpected keys (1)", "blocks.2.proj.weight",
                       "shape mismatches (1)", "scale: checkpoint (4) vs module (3)"});
    state[0].second = Tensor::ones({3});
    CHECK_NOTHROW(b.load_state_dict(state, /*strict=*/false));
}

TEST_CASE("checkpoints: safetensors round trip, strict errors, no half-written file") {
    namespace fs = std::filesystem;
    const test::TempDir tmp;  // a folder of its own: two runs of the suite at once never share it
    const fs::path& dir = tmp.path();
    const std::string path = (dir / "model.safetensors").string();
    Model a, b;
    save(a, path, {{"epoch", "3"}});
    std::map<std::string, std::string> meta = load(b, path);
    CHECK(meta.at("epoch") == "3");
    CHECK(test::max_abs_diff(a.blocks->operator[](0).norm->bias.data(), b.blocks->operator[](0).norm->bias.data()) == 0.f);
    Linear small(4, 3), other(4, 2);
    const std::string lin_path = (dir / "linear.safetensors").string();
    save(small, lin_path);
    test::expect_error([&] { load(other, lin_path); }, {"linear.safetensors", "shape mismatches (2)", "weight: checkpoint (3,4) vs module (2,4)"});
    test::expect_error([&] { load(other, path); }, {"missing keys (2)", "unexpected keys"});
    // a save into a missing folder throws and leaves nothing behind
    test::expect_error([&] { save(a, (dir / "missing" / "m.safetensors").string()); }, {"missing"});
    CHECK_FALSE(fs::exists(dir / "missing"));
    for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().extension() == ".safetensors");  // no temporaries
}

TEST_CASE("building blocks pass gradcheck") {
    Linear lin(4, 3);
    CHECK(gradcheck([&](const V& x) { return lin.forward(x[0]); }, {rnd({2, 5, 4}, 1), lin.weight, lin.bias}));
    Conv1d conv(3, 2, 3, 1);
    CHECK(gradcheck([&](const V& x) { return conv.forward(x[0]); }, {rnd({2, 3, 5}, 2), conv.weight, conv.bias}));
    LayerNorm ln(5);
    ln.weight.mutable_data() = rnd({5}, 3).data();
    CHECK(gradcheck([&](const V& x) { return ln.forward(x[0]); }, {rnd({3, 5}, 4), ln.weight, ln.bias}));
    LayerNormUnbiased lnu(5);
    CHECK(gradcheck([&](const V& x) { return lnu.forward(x[0]); }, {rnd({3, 5}, 5), lnu.gamma, lnu.beta}));
    Embedding emb(6, 3);
    Ids ids = {{1, 5, 1}};
    CHECK(gradcheck([&](const V&) { return emb.forward(ids); }, {emb.weight}));
    GELU g;
    ReLU r;
    Softmax s(-1);
    Tensor x = rnd({2, 3}, 6);
    CHECK(gradcheck([&](const V& v) { return s.forward(g.forward(v[0])) + r.forward(v[0] + 3.f); }, {x}));
}

TEST_CASE("the tutorial-A LayerNorm is not torch's: unbiased std, eps on the std") {
    Tensor x = Tensor::from_vector({1, 2, 3, 4}, {1, 4});
    LayerNormUnbiased a(4);
    LayerNorm t(4);
    // std (unbiased) = sqrt(5/3) = 1.29099; torch: sqrt(var 1.25 + 1e-5)
    CHECK(a.forward(x).data()(0, 0) == doctest::Approx(-1.5 / (std::sqrt(5.0 / 3.0) + 1e-6)));
    CHECK(t.forward(x).data()(0, 0) == doctest::Approx(-1.5 / std::sqrt(1.25 + 1e-5)));
}

TEST_CASE("default initialisation follows torch's bounds") {
    manual_seed(0);
    Linear lin(100, 50);
    const float bound = 1.f / 10.f;
    float mx = 0;
    for (float v : lin.weight.data()) mx = std::max(mx, std::abs(v));
    CHECK(mx <= bound);
    CHECK(mx > 0.9f * bound);
    Embedding emb(10, 4, 2);
    for (std::size_t j = 0; j < 4; ++j) CHECK(emb.weight.data()(2, j) == 0.f);
    Tensor w = Tensor::zeros({30, 20});
    init::xavier_uniform_(w);
    for (float v : w.data()) CHECK(std::abs(v) <= std::sqrt(6.f / 50.f));
    auto frozen = Embedding::from_pretrained(Tensor::ones({3, 2}));
    CHECK_FALSE(frozen->weight.requires_grad());
}

TEST_CASE("building blocks reject inputs that do not fit, naming the module") {
    Model m;
    test::expect_error([&] { m.blocks->operator[](1).norm->forward(rnd({2, 4})); }, {"LayerNorm 'blocks.1.norm'", "(2,4)", "3"});
    test::expect_error([] { Embedding(3, 2, 5); }, {"Embedding", "padding_idx 5"});
    test::expect_error([] { Dropout(-0.1f); }, {"Dropout", "-0.1"});
}

namespace {
// Weight tying: one tensor registered under two names, and one child registered twice.
struct TiedModel : Module {
    Tensor w = register_parameter("w", Tensor::ones({2, 2}));
    Tensor w_tied = register_parameter("w_tied", w);
    std::shared_ptr<Linear> lin = std::make_shared<Linear>(2, 2);
    TiedModel() {
        register_module("first", lin);
        register_module("second", lin);
    }
};
std::vector<std::string> keys_of(const NamedTensors& list) {
    std::vector<std::string> keys;
    for (const auto& [name, t] : list) keys.push_back(name);
    return keys;
}
}  // namespace

TEST_CASE("tied parameters: listed once by parameters(), under every name by state_dict") {
    TiedModel m;
    CHECK(m.parameters().size() == 3);
    CHECK(m.num_parameters() == 4 + 4 + 2);
    CHECK(keys_of(m.named_parameters()) == std::vector<std::string>{"w", "first.weight", "first.bias"});
    const std::vector<std::string> all{"w", "w_tied", "first.weight", "first.bias", "second.weight", "second.bias"};
    CHECK(keys_of(m.state_dict()) == all);
    m.w.set_name("renamed");  // names are for traces: the keys come from the registration tree
    m.lin->weight.set_name("x");
    CHECK(keys_of(m.state_dict()) == all);
}

TEST_CASE("tied parameters: an optimizer given the same tensor twice throws; save and load keep the tie") {
    TiedModel a, b;
    test::expect_error([&] { optim::SGD({a.w, a.w_tied}, optim::SGDOptions(0.1)); }, {"optimizer", "given twice", "(2,2)"});
    CHECK_NOTHROW(optim::SGD(a.parameters(), optim::SGDOptions(0.1)));
    a.w.mutable_data().fill(3.f);
    b.load_state_dict(a.state_dict());
    CHECK(b.w.impl() == b.w_tied.impl());
    CHECK(b.w_tied.data()(1, 1) == 3.f);
    const test::TempDir tmp;
    const std::string path = tmp.file("tied.safetensors");
    a.lin->weight.mutable_data().fill(5.f);
    save(a, path);
    TiedModel c;
    load(c, path);
    CHECK(c.w.impl() == c.w_tied.impl());
    CHECK(c.w.data()(0, 1) == 3.f);
    CHECK(c.lin->weight.data()(0, 0) == 5.f);
}

TEST_CASE("zero-sized Linear layers are valid and empty, as in PyTorch") {
    // Linear(0, 3): the weight (3, 0) holds nothing, kaiming_uniform_ is a no-op and the bias
    // bound is 0, so y = bias for every row; Linear(3, 0) maps any row to nothing.
    nn::Linear from_nothing(0, 3);
    CHECK(from_nothing.weight.shape() == Shape{3, 0});
    for (float b : from_nothing.bias.data()) CHECK(b == 0.f);
    from_nothing.bias.mutable_data() = Array{1.f, 2.f, 3.f};
    Tensor x = Tensor::zeros({2, 0}, true);
    Tensor y = from_nothing.forward(x);
    REQUIRE(y.shape() == Shape{2, 3});
    CHECK(y.data()(1, 2) == 3.f);
    sum(y).backward();
    CHECK(from_nothing.bias.grad_array()(0) == 2.f);  // two rows
    CHECK(from_nothing.weight.grad_array().shape() == std::vector<std::size_t>{3, 0});
    CHECK(x.grad_array().shape() == std::vector<std::size_t>{2, 0});

    nn::Linear to_nothing(3, 0);
    Tensor z = to_nothing.forward(test::rnd({4, 3}, 1));
    CHECK(z.shape() == Shape{4, 0});
}

TEST_CASE("init on a weight with a zero dim draws nothing; a NaN mean is refused, the weight unchanged") {
    // fan_in / fan_out once divided numel by out · in: a (0, 3) weight was a division by zero (SIGFPE)
    for (const Shape& shape : {Shape{0, 3}, Shape{3, 0}, Shape{0, 0}, Shape{2, 0, 5}}) {
        Tensor w = Tensor::zeros(shape);
        CHECK_NOTHROW(init::xavier_uniform_(w));
        CHECK_NOTHROW(init::xavier_normal_(w));
        CHECK_NOTHROW(init::kaiming_uniform_(w, 0.0));
    }
    Tensor conv = Tensor::zeros({4, 2, 3});  // (out, in, kernel): fans 2·3 and 4·3, as torch
    CHECK(init::fans(conv) == std::pair<std::size_t, std::size_t>{6, 12});
    Tensor w = Tensor::ones({2, 2});
    test::expect_error([&] { init::normal_(w, std::nan(""), 1.0); }, {"normal_", "mean nan and std 1"});
    test::expect_error([&] { init::normal_(w, 0.0, INFINITY); }, {"normal_", "std inf"});
    for (float v : w.data()) CHECK(v == 1.f);
}

TEST_CASE("modules refuse what they cannot hold or index, naming it") {
    // sizes no process can address: an Error naming the shape, not std::bad_alloc
    test::expect_error([] { Linear(std::size_t{1} << 40, std::size_t{1} << 20); }, {"more elements than fit in memory"});
    test::expect_error([] { Embedding(std::size_t{1} << 40, std::size_t{1} << 20); }, {"more elements than fit in memory"});
    test::expect_error([] { Tensor::zeros({std::size_t{1} << 40, std::size_t{1} << 20}); },
                       {"(1099511627776,1048576)", "more elements than fit in memory"});
    Model m;
    test::expect_error([&] { m.blocks->operator[](2); }, {"ModuleList 'blocks'", "index 2", "2 modules"});
}

TEST_CASE("load_state_dict: a key given twice is refused and nothing is loaded") {
    Model m;
    NamedTensors state = m.state_dict();
    state.emplace_back("scale", Tensor::full({3}, 2.f));
    state.emplace_back("scale", Tensor::full({3}, 5.f));
    for (bool strict : {true, false})
        test::expect_error([&] { m.load_state_dict(state, strict); }, {"keys given more than once (1)", "scale"});
    for (float v : m.scale.data()) CHECK(v == 1.f);
}

TEST_CASE("layer norm: an eps set after construction is checked when it is used") {
    LayerNorm ln(3);
    LayerNormUnbiased unbiased(3);
    const Tensor x = rnd({2, 3});
    for (float eps : {-1.f, std::nanf(""), INFINITY}) {
        ln.eps = eps;
        test::expect_error([&] { ln.forward(x); }, {"LayerNorm", "eps must be a finite number >= 0"});
        unbiased.epsilon = eps;
        test::expect_error([&] { unbiased.forward(x); }, {"LayerNormUnbiased", "epsilon must be a finite number >= 0"});
    }
}

namespace {
struct OpenModel : Model {
    using Module::register_module;  // registration from outside, as a program building a tree would
};
}  // namespace

TEST_CASE("a module registered inside itself is refused, and nothing is registered") {
    // a cycle made every walk of the tree endless: 4.6 GB and std::bad_alloc after 20 s
    auto a = std::make_shared<OpenModel>();
    const std::size_t children = a->named_children().size();
    test::expect_error([&] { a->register_module("me", a); }, {"child module 'me' would contain the module itself"});
    auto b = std::make_shared<OpenModel>();
    a->register_module("b", b);
    test::expect_error([&] { b->register_module("a", a); }, {"'a' would contain the module itself (a cycle)"});
    CHECK(a->named_children().size() == children + 1);
    CHECK(b->named_children().size() == children);
    CHECK_NOTHROW(a->register_module("b_again", b));  // one child shared twice is no cycle (weight tying)
}

TEST_CASE("init: a gain or slope that is not finite, or a negative gain, is named as such") {
    Tensor w = Tensor::zeros({3, 2});
    test::expect_error([&] { init::xavier_uniform_(w, std::nan("")); }, {"xavier_uniform_: gain must be a finite number >= 0, got nan"});
    test::expect_error([&] { init::xavier_normal_(w, -1.0); }, {"xavier_normal_: gain must be a finite number >= 0, got -1"});
    test::expect_error([&] { init::kaiming_uniform_(w, INFINITY); }, {"kaiming_uniform_: the slope a must be finite"});
    for (float v : w.data()) CHECK(v == 0.f);
}

TEST_SUITE_END();
