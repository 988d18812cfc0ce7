// Module's registration names (nn/module.hpp), as torch checks them: one non-empty key without
// '.', naming one parameter, buffer or child. A refused registration leaves the module as it was.
#include "tests/test_util.hpp"

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/layers.hpp>

#include <memory>
#include <string>

TEST_SUITE_BEGIN("nn");

using namespace xtgrad;

namespace {

// Registers one more name of each kind on request, after a parameter "weight", a buffer "mean"
// and a child "fc".
class Registering : public nn::Module {
public:
    Registering() {
        register_parameter("weight", Tensor::zeros({2}));
        register_buffer("mean", Tensor::zeros({2}));
        register_module("fc", std::make_shared<nn::Linear>(2, 2));
    }
    void parameter(const std::string& name) { register_parameter(name, Tensor::ones({3})); }
    void buffer(const std::string& name) { register_buffer(name, Tensor::ones({3})); }
    void child(const std::string& name) { register_module(name, std::make_shared<nn::Linear>(3, 3)); }
};

std::vector<std::string> keys(const nn::Module& m) {
    std::vector<std::string> out;
    for (const auto& [name, t] : m.state_dict()) out.push_back(name);
    for (const auto& [name, c] : m.named_children()) out.push_back(name + "/");
    return out;
}

}  // namespace

TEST_CASE("Module: a name registered twice, with a '.', or empty is refused, and nothing changes") {
    Registering m;
    const std::vector<std::string> before = keys(m);
    CHECK(before == std::vector<std::string>{"weight", "mean", "fc.weight", "fc.bias", "fc/"});
    // strict load_state_dict used to fill only the first of two "weight"s, silently
    CHECK_THROWS_WITH_AS(m.parameter("weight"), "Module: cannot register parameter 'weight': a parameter of that name exists", Error);
    CHECK_THROWS_WITH_AS(m.buffer("weight"), "Module: cannot register buffer 'weight': a parameter of that name exists", Error);
    CHECK_THROWS_WITH_AS(m.parameter("mean"), "Module: cannot register parameter 'mean': a buffer of that name exists", Error);
    CHECK_THROWS_WITH_AS(m.child("weight"), "Module: cannot register child module 'weight': a parameter of that name exists", Error);
    CHECK_THROWS_WITH_AS(m.parameter("fc"), "Module: cannot register parameter 'fc': a child module of that name exists", Error);
    CHECK_THROWS_WITH_AS(m.child("fc"), "Module: cannot register child module 'fc': a child module of that name exists", Error);
    // "fc.weight" beside the child "fc" would be a second tensor under the key fc.weight
    CHECK_THROWS_WITH_AS(m.parameter("fc.weight"),
                         "Module: parameter name 'fc.weight' must not contain '.' (register it in the child module it belongs to)",
                         Error);
    CHECK_THROWS_WITH_AS(m.buffer("a.b"), doctest::Contains("buffer name 'a.b' must not contain '.'"), Error);
    CHECK_THROWS_WITH_AS(m.child("x.y"), doctest::Contains("child module name 'x.y' must not contain '.'"), Error);
    CHECK_THROWS_WITH_AS(m.parameter(""), "Module: a parameter name must not be empty", Error);
    CHECK(keys(m) == before);
    // fresh names still register
    m.parameter("scale");
    m.buffer("count");
    m.child("out");
    CHECK(keys(m).size() == before.size() + 5);  // scale, count, out.weight, out.bias, out/
}

TEST_SUITE_END();
