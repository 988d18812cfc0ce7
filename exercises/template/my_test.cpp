// A test of your own against the installed xtgrad: doctest's main, your module, and gradcheck of
// its input and every parameter. Copy this file anywhere, then build and run it:
//
//   g++ -std=c++20 -g my_test.cpp -o my_test $(pkg-config --cflags --libs xtgrad) -Wl,-rpath,$(pkg-config --variable=libdir xtgrad) && ./my_test
//
// (exercises/README.md, "Your own test"; pkg-config must find xtgrad: PKG_CONFIG_PATH).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <xtgrad/xtgrad.hpp>

using namespace xtgrad;

namespace {

// Your module. tanh, not relu: gradcheck's finite differences need a smooth function (at a
// kink the two one-sided slopes differ).
struct MLP : nn::Module {
    std::shared_ptr<nn::Linear> fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 4));
    std::shared_ptr<nn::Linear> fc2 = register_module("fc2", std::make_shared<nn::Linear>(4, 2));
    Tensor forward(const Tensor& x) const { return fc2->forward(tanh(fc1->forward(x))); }
};

}  // namespace

TEST_CASE("MLP: gradcheck of the input and of every parameter") {
    manual_seed(0);
    MLP model;
    Generator gen(1);
    Tensor x = randn({5, 3}, gen, /*requires_grad=*/true);
    // Tensors are handles: the parameters in this list are the module's own, so gradcheck's
    // nudges reach the model.forward call below. It leaves every .grad as it found it.
    std::vector<Tensor> inputs{x};
    for (const Tensor& p : model.parameters()) inputs.push_back(p);
    const GradcheckResult r = gradcheck([&](const std::vector<Tensor>& v) { return model.forward(v[0]); }, inputs);
    CHECK_MESSAGE(r.passed, r.message());
    CHECK(r.checked == x.numel() + model.num_parameters());
}
