// A parity fixture's meta.json checked before a runner reads it (tools/parity/fixture_meta.hpp):
// every committed one passes; each malformed field is one Error naming it (docs/reliability.md,
// "A parity fixture's meta.json"); fuzz/fixture_meta_fuzzer.cpp tries arbitrary bytes.
#include <xtgrad/autograd/error.hpp>
#include "tools/parity/fixture.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>

TEST_SUITE_BEGIN("nn");

using namespace xtgrad::parity;
namespace fs = std::filesystem;

namespace {

std::string meta_error_of(const std::string& text) {
    try {
        (void)parse_fixture_meta(text, "case/meta.json");
    } catch (const xtgrad::Error& e) {
        return e.what();
    }
    return "";
}

// An optimizer case's meta with `optimizer` (a JSON object's text) as its optimizer block.
std::string optimizer_meta(const std::string& optimizer) {
    return R"({"kind": "optimizer", "optimizer": )" + optimizer + "}";
}
const std::string kAdamMeta = R"({"class": "torch.optim.Adam", "hyper": {"lr": 0.001, "betas": [0.9, 0.999], "eps": 1e-8},
    "steps": 2, "lr_per_step": [0.001, 0.001], "params": [{"name": "weight"}], "state_keys": ["exp_avg"],
    "step_count_after_step": {"weight": [1, 2]}})";

// A list of 2^20 zeros: with the list itself, one value past the bound.
std::string meta_of_many_values() {
    std::string s = "[0";
    for (int i = 1; i < (1 << 20); ++i) s += ",0";
    return s + "]";
}

}  // namespace

TEST_CASE("parity meta.json: every committed fixture's passes the check") {
    std::size_t n = 0;
    for (const char* suite : {"/small", "/rng", "/higher_order", "/autocast"})
        for (const auto& e : fs::directory_iterator(std::string(XTGRAD_FIXTURE_DIR) + suite))
            if (fs::exists(e.path() / "meta.json")) {
                INFO(e.path().string());
                CHECK_NOTHROW((void)read_fixture_meta(e.path().string()));
                ++n;
            }
    CHECK(n >= 100);
    CHECK(meta_error_of(optimizer_meta(kAdamMeta)).empty());
}

TEST_CASE("parity meta.json: malformed fields are Errors naming the field") {
    const struct {
        std::string what, text, says;
    } cases[] = {
        {"not JSON", "{\"case\": ", "case/meta.json is not valid JSON"},
        {"a list at the top", "[1, 2]", "the top level must be an object, not [1,2]"},
        {"nested 40 deep", std::string(40, '[') + std::string(40, ']'), "nests lists and objects more than 32 deep"},
        {"module a number", R"({"module": 3})", "module must be a string, not 3"},
        {"config nested", R"({"config": {"d_model": [512]}})", "config.d_model must be a number, string, true, false or null"},
        {"a parameter name with a slash", R"({"params": [{"name": "../../etc/passwd"}]})",
         "params[0].name must be a file key (1 to 200 of A-Z a-z 0-9 . _ -), not \"../../etc/passwd\""},
        {"an empty input name", R"({"inputs": [{"name": ""}]})", "inputs[0].name must be a file key"},
        {"an input without a name", R"({"inputs": [{"shape": [2]}]})", "inputs[0] must be an object with a name"},
        {"differentiable a string", R"({"inputs": [{"name": "x", "differentiable": "yes"}]})",
         "inputs[0].differentiable must be true or false"},
        {"a gradient key with a NUL", "{\"grads\": {\"params\": [\"w\\u0000.npy\"]}}", "grads.params[0] must be a file key"},
        {"a files key with a space", R"({"files": {"a b": {}}})", "files key \"a b\" must be a file key"},
        {"a files entry a string", R"({"files": {"x": "float32"}})", "files.x must be an object"},
        {"a tolerance a string", R"({"suggested_tolerance": {"rtol": "1e-4"}})",
         "suggested_tolerance.rtol must be a finite number >= 0, not \"1e-4\""},
        {"a negative tolerance", R"({"suggested_tolerance": {"atol": -1}})", "suggested_tolerance.atol must be a finite number >= 0"},
        {"a seed below zero", R"({"kind": "init", "seed": -1})", "seed must be a whole number from 0 to"},
        {"an init case without a seed", R"({"kind": "init"})", "seed is missing (a whole number)"},
        {"ulps a float", R"({"ulps": {"param.w": 0.5}})", "ulps.param.w must be a whole number from 0 to 2147483647"},
        {"a train case without training", R"({"kind": "train"})", "training is missing (an object)"},
        {"training steps 10^18", R"({"kind": "train", "training": {"hyper": {"lr": 1e-4, "betas": [0.9, 0.98], "eps": 1e-9},
          "loss_args": {}, "steps": 1000000000000000000}})",
         "training.steps must be a whole number from 1 to 100000, not 1000000000000000000"},
        {"training losses fewer than its steps", R"({"kind": "train", "training": {"hyper": {"lr": 1e-4, "betas": [0.9, 0.98],
          "eps": 1e-9}, "loss_args": {}, "steps": 5, "losses": [2.3, 2.2]}})",
         "training.losses has 2 entries for 5 steps"},
        {"training betas of three", R"({"kind": "train", "training": {"hyper": {"lr": 1e-4, "betas": [0.9, 0.98, 1], "eps": 1e-9}}})",
         "training.hyper.betas must be a list of two numbers"},
        {"an optimizer's steps negative", optimizer_meta(R"({"class": "torch.optim.Adam", "hyper": {"lr": 0.1}, "steps": -1})"),
         "optimizer.steps must be a whole number from 1 to 100000, not -1"},
        {"an optimizer of no steps (nothing compared)", optimizer_meta(R"({"class": "torch.optim.Adam", "hyper": {"lr": 0.1},
          "steps": 0})"),
         "optimizer.steps must be a whole number from 1 to 100000, not 0"},
        {"a kind of no runner", R"({"kind": "bogus"})", "kind must be one of module, optimizer, train, init, train_log, not \"bogus\""},
        {"a key with a newline and an escape sequence", "{\"ulps\": {\"\\u001b[2Jx\\n\": -3}}",
         "ulps.\"\\u001b[2Jx\\n\" must be a whole number from 0 to 2147483647, not -3"},
        {"lr_per_step shorter than steps",
         optimizer_meta(R"({"class": "torch.optim.Adam", "hyper": {"lr": 0.1}, "steps": 3, "lr_per_step": [0.1]})"),
         "optimizer.lr_per_step has 1 entries for 3 steps"},
        {"a step count list too short", optimizer_meta(R"({"class": "torch.optim.Adam", "hyper": {"lr": 0.1}, "steps": 2,
          "lr_per_step": [0.1, 0.1], "params": [{"name": "w"}], "step_count_after_step": {"w": [1]}})"),
         "optimizer.step_count_after_step.w has 1 entries for 2 steps"},
        {"an optimizer's lr a string", optimizer_meta(R"({"class": "torch.optim.Adam", "hyper": {"lr": "fast"}})"),
         "optimizer.hyper.lr must be a finite number, not \"fast\""},
        {"relu_kinks a list", R"({"relu_kinks": [1]})", "relu_kinks must be an object with a count and an allowance object"},
        {"a relu_kinks allowance below zero", R"({"relu_kinks": {"count": 1, "allowance": {"grad.param.w": -0.5}}})",
         "relu_kinks allowance of grad.param.w must be a finite number >= 0, not -0.5"},
        {"2^20 + 1 values", meta_of_many_values(),
         "holds more than 1048576 values"},
    };
    for (const auto& c : cases) {
        INFO(c.what);
        const std::string message = meta_error_of(c.text);
        CHECK_MESSAGE(message.find(c.says) != std::string::npos, message);
        CHECK_MESSAGE(message.find("case/meta.json") != std::string::npos, message);
    }
}

TEST_CASE("parity meta.json: a file key is A-Z a-z 0-9 . _ -, 1 to 200 of them") {
    CHECK(is_fixture_key("grad.param.encoder_layers.0.self_attn.W_q.weight"));
    CHECK(is_fixture_key(std::string(200, 'a')));
    CHECK_FALSE(is_fixture_key(std::string(201, 'a')));
    CHECK_FALSE(is_fixture_key(""));
    CHECK_FALSE(is_fixture_key("a/b"));
    CHECK_FALSE(is_fixture_key("\xc3\xa9"));
}

TEST_CASE("parity meta.json: a missing, fifo or folder meta.json is an Error, never a wait") {
    const fs::path dir = fs::temp_directory_path() / ("xtgrad_parity_meta_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const auto message = [&] {
        try {
            (void)read_fixture_meta(dir.string());
        } catch (const xtgrad::Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK(message().find("no meta.json in '" + dir.string() + "'") != std::string::npos);
    REQUIRE(::mkfifo((dir / "meta.json").c_str(), 0600) == 0);
    CHECK(message().find("not a regular file") != std::string::npos);
    fs::remove(dir / "meta.json");
    fs::create_directory(dir / "meta.json");
    CHECK(message().find("not a regular file") != std::string::npos);
    fs::remove(dir / "meta.json");
    fs::remove_all(dir);
}

// The config's values are read by each runner as it needs them: a value of another type or out of
// range is an Error naming the file and config.KEY, never a fallback, a cut fraction or a division by 0.
TEST_CASE("parity meta.json: config values of the wrong type or range are Errors naming config.KEY") {
    const fs::path dir = fs::temp_directory_path() / ("xtgrad_parity_config_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "meta.json") << R"({"module": "ffn_linear", "config": {"d_model": 2.5, "n_heads": 0, "bias": "no",
        "pe": 3, "eps": "tiny", "padding_idx": 1e300, "d_ff": -1, "ignore_index": -100, "norm_first": null}})";
    const Fixture f(dir.string());
    const std::string at = dir.string() + "/meta.json: config.";
    const auto says = [&](const std::function<void()>& read, const std::string& what) {
        try {
            read();
        } catch (const xtgrad::Error& e) {
            CHECK_MESSAGE(std::string(e.what()).find(at + what) != std::string::npos, e.what());
            return;
        }
        FAIL("no Error for config.", what);
    };
    says([&] { (void)f.cfg_int("d_model"); }, "d_model must be a whole number from 0 to 2147483647, not 2.5");
    says([&] { (void)f.cfg_int("n_heads", 1); }, "n_heads must be a whole number from 1 to 2147483647, not 0");
    says([&] { (void)f.cfg_int("d_ff"); }, "d_ff must be a whole number from 0 to 2147483647, not -1");
    says([&] { (void)f.cfg_int("padding_idx", INT_MIN); }, "padding_idx must be a whole number from -2147483648");
    says([&] { (void)f.cfg_int("num_layers"); }, "num_layers is missing (a whole number)");
    says([&] { (void)f.cfg_bool("bias", true); }, "bias must be true or false, not \"no\"");
    says([&] { (void)f.cfg_str("pe", "sinusoid"); }, "pe must be a string, not 3");
    says([&] { (void)f.cfg_float("eps"); }, "eps must be a finite number, not \"tiny\"");
    CHECK(f.cfg_int("ignore_index", INT_MIN) == -100);
    CHECK(f.cfg_float("d_model") == 2.5);
    CHECK(f.cfg_bool("norm_first", true));  // null: the fallback
    CHECK(f.cfg_str("activation", "relu") == "relu");
    fs::remove_all(dir);
}

// Found by an attack on the tool (docs/reliability.md): n_heads 0 divided by zero (SIGFPE) building
// tutorial C's layers; a training case of more steps than its losses ran 100 000 steps.
TEST_CASE("parity meta.json: a case that would divide by zero or outrun its losses is an Error, nothing run") {
    const fs::path root = fs::temp_directory_path() / ("xtgrad_parity_cases_" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    const auto edited = [&](const char* name, const std::function<void(json&)>& change) {
        const fs::path dir = root / name;
        fs::copy(std::string(XTGRAD_FIXTURE_DIR) + "/small/" + name, dir, fs::copy_options::recursive);
        json meta = json::parse(std::ifstream(dir / "meta.json"));
        change(meta);
        std::ofstream(dir / "meta.json") << meta.dump();
        return run_fixture(dir.string());
    };
    Outcome o = edited("encoder_layer_c", [](json& m) { m["config"]["n_heads"] = 0; });
    CHECK_MESSAGE(o.error.find("config.n_heads must be a whole number from 1") != std::string::npos, o.error);
    o = edited("train_transformer_b", [](json& m) {
        m["training"]["steps"] = 100000;
        m["training"].erase("losses");
    });
    CHECK_MESSAGE(o.error.find("training.steps is 100000 but losses.npy holds 3 losses") != std::string::npos, o.error);
    o = edited("linear", [](json& m) { m["module"] = "adam"; });  // a runner that reads meta.optimizer
    CHECK_MESSAGE(o.error.find("linear/meta.json: a field the runner for \"adam\" reads is missing or of another type") !=
                      std::string::npos,
                  o.error);
    fs::remove_all(root);
}

TEST_CASE("parity meta.json: a suite folder's unreadable entries are no cases, never an exception") {
    const fs::path root = fs::temp_directory_path() / ("xtgrad_parity_suite_" + std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    fs::create_directory_symlink("loop", root / "loop");  // a symbolic link to itself
    fs::copy(std::string(XTGRAD_FIXTURE_DIR) + "/small/linear", root / "linear", fs::copy_options::recursive);
    CHECK(case_dirs(root.string()) == std::vector<std::string>{(root / "linear").string()});
    fs::remove_all(root);
}
