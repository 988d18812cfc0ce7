// Same seed, same numbers as PyTorch 1.13 on the CPU: the committed fixtures under
// tests/fixtures/rng (tools/make_rng_fixtures.py) against xtgrad's generator, init and dropout.
#include <xtgrad/io/npy.hpp>
#include "tests/test_util.hpp"
#include "tools/parity/fixture.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <locale>
#include <random>
#include <sstream>
#include <string>

TEST_SUITE_BEGIN("engine");

using namespace xtgrad;

namespace {

const std::string kRoot = XTGRAD_FIXTURE_DIR "/rng";
constexpr std::uint64_t kSeeds[] = {0, 1, 1234};

std::string folder(const std::string& name, std::uint64_t seed) { return kRoot + "/" + name + "__seed" + std::to_string(seed); }

Array filled(const Shape& shape, const std::function<void(float*, std::size_t)>& fill) {
    Array a = empty_array(shape);
    fill(a.data(), a.size());
    return a;
}

// The draws of make_rng_fixtures.py's distributions(), in its order, named as its files.
struct Draw {
    const char* file;
    std::function<Array()> floats;  // or
    std::function<Ids()> ids;
    long ulps = 0;                  // torch's AVX2 normal fill (random/random.hpp)
};

std::vector<Draw> draws() {
    Generator& g = default_generator();
    auto uniform = [&g](Shape s, double lo, double hi) {
        return [&g, s, lo, hi] { return filled(s, [&](float* d, std::size_t n) { fill_uniform(d, n, lo, hi, g); }); };
    };
    auto normal = [&g](Shape s, double mean, double stddev) {
        return [&g, s, mean, stddev] { return filled(s, [&](float* d, std::size_t n) { fill_normal(d, n, mean, stddev, g); }); };
    };
    auto ones_dropout = [&g](Shape s, float p) { return [&g, s, p] { return dropout(Tensor::ones(s), p, true, g).data(); }; };
    return {
        {"00_uniform_37_m0.3_0.7", uniform({37}, -0.3, 0.7), {}},
        {"01_randn_5", [&g] { return randn({5}, g).data(); }, {}},
        {"02_randn_3", [&g] { return randn({3}, g).data(); }, {}},
        {"03_randn_37", [&g] { return randn({37}, g).data(); }, {}, 4},
        {"04_randn_64", [&g] { return randn({64}, g).data(); }, {}, 4},
        {"05_normal_48_0.5_2", normal({48}, 0.5, 2.0), {}, 4},
        {"06_normal_7_0.5_2", normal({7}, 0.5, 2.0), {}},
        {"07_randint_1_5000_4x9", {}, [&g] { return randint({4, 9}, 1, 5000, g); }},
        {"08_randint_0_2p40_6", {}, [&g] { return randint({6}, 0, std::int64_t{1} << 40, g); }},
        {"09_rand_10", [&g] { return rand({10}, g).data(); }, {}},
        {"10_dropout_0.1_3x40", ones_dropout({3, 40}, 0.1f), {}},
        {"11_dropout_0.5_50", ones_dropout({50}, 0.5f), {}},
        {"12_randn_500", [&g] { return randn({500}, g).data(); }, {}, 4},
    };
}

}  // namespace

TEST_CASE("random: each distribution draws torch's numbers for the same seed") {
    for (const std::uint64_t seed : kSeeds) {
        const std::string dir = folder("distributions", seed);
        manual_seed(seed);
        parity::Report report;
        for (const Draw& d : draws()) {
            const std::string path = dir + "/" + d.file + ".npy";
            if (d.ids) report.compare_exact(d.file, d.ids(), load_npy_ids(path));
            else report.compare_ulps(d.file, d.floats(), load_npy_float(path), d.ulps);
        }
        INFO("seed ", seed, "\n", report.summary());
        CHECK(report.rows().size() == draws().size());
        CHECK(report.passed());
    }
}

TEST_CASE("random: Generator basics: mt19937 seeding, random64, the cached normal, manual_seed resets it") {
    Generator g(5489);
    std::mt19937 ref(5489);  // torch's engine is the standard mt19937 on the seed's low 32 bits
    CHECK(g.random() == ref());
    const std::uint64_t hi = ref(), lo = ref();
    CHECK(g.random64() == ((hi << 32) | lo));
    Generator wide((std::uint64_t{7} << 32) | 5489);
    CHECK(wide.random() == std::mt19937(5489)());

    Generator a(3), b(3);
    const double first = a.normal_double();
    a.seed(3);  // forgets the cached sine half
    CHECK(a.normal_double() == first);
    (void)b.normal_double();  // two double uniforms: four 32-bit draws
    (void)b.normal_double();  // the cached half: no draw
    std::mt19937 four(3);
    four.discard(4);
    CHECK(b.random() == four());
}

TEST_CASE("random: bad arguments are errors naming the call") {
    Generator g(0);
    float x[4];
    test::expect_error([&] { fill_uniform(x, 4, 1.0, 0.0, g); }, {"uniform_", "from <= to"});
    test::expect_error([&] { fill_normal(x, 4, 0.0, -1.0, g); }, {"normal_", "std"});
    std::uint8_t m[4];
    test::expect_error([&] { fill_bernoulli(m, 4, 1.5, g); }, {"bernoulli_", "1.5"});
    test::expect_error([&] { randint({2}, 5, 5, g); }, {"randint", "[5, 5)"});
    // bounds whose draws could only be inf or NaN (to - from overflows float), as torch refuses them
    for (const std::pair<double, double>& bounds : {std::pair{-3e38, 3e38}, std::pair{-std::numeric_limits<double>::infinity(), 0.0},
                                                   std::pair{0.0, 1e300}, std::pair{std::nan(""), 1.0}})
        test::expect_error([&] { fill_uniform(x, 4, bounds.first, bounds.second, g); }, {"uniform_", "finite from <= to"});
    CHECK_NOTHROW(fill_uniform(x, 4, -1.7e38, 1.7e38, g));
    test::expect_error([&] { fill_normal(x, 4, std::nan(""), 1.0, g); }, {"normal_", "mean nan"});
    test::expect_error([&] { fill_normal(x, 4, 0.0, INFINITY, g); }, {"normal_", "std inf"});
    // a shape whose count wraps a size_t: once ids of that shape over no storage, read past by the mask builders
    test::expect_error([&] { randint({std::size_t{1} << 40, std::size_t{1} << 24}, 1, 5, g); },
                       {"randint", "(1099511627776,16777216)"});
}

TEST_CASE("random: a state whose cached normal is not finite is refused, the generator unchanged") {
    Generator g(3);
    (void)g.normal_double();  // leaves the pair's second normal cached
    std::vector<std::uint8_t> state = g.state();
    std::string text(state.begin(), state.end());
    // the cached normal is the second field: its double's bits in decimal; NaN's bits
    std::istringstream in(text);
    std::string check, seed, cached;
    in >> check >> seed >> cached;
    REQUIRE(cached != "-");
    const std::string nan_bits = std::to_string(std::bit_cast<std::uint64_t>(std::nan("")));
    text.replace(text.find(cached), cached.size(), nan_bits);
    Generator h(5);
    const std::vector<std::uint8_t> before = h.state();
    test::expect_error([&] { h.set_state(std::vector<std::uint8_t>(text.begin(), text.end())); },
                       {"Generator::set_state", "not a generator state"});
    CHECK(h.state() == before);
}

TEST_CASE("random: set_state refuses an all-zero Mersenne Twister state and bytes after a state, the generator unchanged") {
    const auto bytes = [](const std::string& text) { return std::vector<std::uint8_t>(text.begin(), text.end()); };
    // seed, cached normal, the 624 words, the position: `word0` first, the rest 0
    const auto state_text = [](const std::string& word0) {
        std::string text = "7 - " + word0;
        for (int i = 1; i < 624; ++i) text += " 0";
        return text + " 624";
    };
    Generator g(5);
    (void)g.normal_double();  // a cached normal: the refused calls must keep it too
    const std::vector<std::uint8_t> before = g.state();
    // all zero, or only word 0's low 31 bits (the twist reads its top bit alone): zeros for ever
    for (const char* word0 : {"0", "2147483647"}) {
        CAPTURE(word0);
        test::expect_error([&] { g.set_state(bytes(state_text(word0))); },
                           {"Generator::set_state", "Mersenne Twister state is all zero", "would be 0"});
        CHECK(g.state() == before);
    }
    // word 0's top bit alone is a state (std::seed_seq's own fix for an all-zero seed)
    Generator top(1);
    top.set_state(bytes(state_text("2147483648")));
    std::uint32_t any = 0;
    for (int i = 0; i < 1000; ++i) any |= top.random();
    CHECK(any != 0);
    // a state with bytes after it: a space, a second state, a NUL
    const std::string text(before.begin(), before.end());
    const std::string tails[] = {" ", " " + text, std::string(1, '\0')};
    for (const std::string& tail : tails) {
        CAPTURE(tail.size());
        const std::string trailing = fmt::format("{} trailing bytes after its end at byte {}", tail.size(), text.size());
        test::expect_error([&] { g.set_state(bytes(text + tail)); }, {"Generator::set_state", trailing.c_str()});
        CHECK(g.state() == before);
    }
    g.set_state(before);  // the state itself still loads
    CHECK(g.state() == before);
}

TEST_CASE("random: set_state reads its fields strictly and refuses a state cut or changed, naming the field") {
    const auto bytes = [](const std::string& text) { return std::vector<std::uint8_t>(text.begin(), text.end()); };
    Generator g(11);
    (void)g.normal_double();
    const std::vector<std::uint8_t> before = g.state();
    const std::string text(before.begin(), before.end());
    REQUIRE(text.starts_with("check:"));
    const std::string fields = text.substr(text.find(' ') + 1);  // an earlier build's state: no check
    // without its check the fields still load (states saved before the check existed)
    Generator old(1);
    old.set_state(bytes(fields));
    CHECK(old.random() == Generator(g).random());
    // cut by its last byte (position 624 read as 62 before), a byte changed, two fields swapped: the check
    Generator moved(11);
    for (int i = 0; i < 50; ++i) (void)moved.random();  // position 50: cut, 5
    const std::vector<std::uint8_t> moved_state = moved.state();
    std::string cut(moved_state.begin(), moved_state.end());
    cut.pop_back();
    std::string changed = text;
    changed[text.size() / 2] = changed[text.size() / 2] == '1' ? '2' : '1';
    for (const std::string& bad : {cut, changed}) {
        test::expect_error([&] { g.set_state(bytes(bad)); }, {"Generator::set_state", "its check", "cut or changed"});
        CHECK(g.state() == before);
    }
    // fields that are not plain numbers in range, named: a sign, a word past 2^32, a position past 624, two spaces
    const std::size_t word0 = fields.find(' ', fields.find(' ') + 1) + 1;  // the first Mersenne Twister word
    const auto with_word0 = [&](const std::string& w) {
        return fields.substr(0, word0) + w + fields.substr(fields.find(' ', word0));
    };
    test::expect_error([&] { g.set_state(bytes(with_word0("-1"))); },
                       {"field 3 (Mersenne Twister word 0 of 624) is '-1'", "from 0 to 4294967295"});
    test::expect_error([&] { g.set_state(bytes(with_word0("4294967296"))); }, {"field 3", "'4294967296'"});
    test::expect_error([&] { g.set_state(bytes(with_word0("+7"))); }, {"field 3", "'+7'"});
    test::expect_error([&] { g.set_state(bytes(with_word0(" 7"))); }, {"field 3", "''"});
    const std::string last_word_to_end = fields.substr(0, fields.rfind(' ') + 1);
    test::expect_error([&] { g.set_state(bytes(last_word_to_end + "625")); },
                       {"field 627 (the position in the words) is '625'", "from 0 to 624"});
    test::expect_error([&] { g.set_state(bytes("7 - 1 2 3")); }, {"it ends after 5 of its 627 fields"});
    test::expect_error([&] { g.set_state(bytes("check:12 7 - 1")); }, {"check field is not 'check:' and 16 hex digits"});
    test::expect_error([&] { g.set_state(bytes("")); }, {"0 bytes", "field 1 (the seed) is ''"});
    // a long field is quoted cut, and says so: 100 000 digits never read as the whole value
    test::expect_error([&] { g.set_state(bytes(std::string(100'000, '1'))); },
                       {"field 1 (the seed) is '1111111111111111111111111111111111111111... (100000 bytes in all)'"});
    CHECK(g.state() == before);
}

TEST_CASE("random: a generator's state is plain digits whatever the global locale, and loads back") {
    // a locale that groups thousands ("123,456"): state() once wrote the seed and words so, and
    // set_state refused its own output (a checkpoint saved, then not resumed)
    struct Grouping : std::numpunct<char> {
        char do_thousands_sep() const override { return ','; }
        std::string do_grouping() const override { return "\3"; }
    };
    struct Restore {
        std::locale previous = std::locale::global(std::locale(std::locale::classic(), new Grouping));
        ~Restore() { std::locale::global(previous); }
    } restore;
    Generator g(123456), h(1);
    (void)g.normal_double();
    const std::vector<std::uint8_t> state = g.state();
    CHECK(std::find(state.begin(), state.end(), std::uint8_t{','}) == state.end());
    h.set_state(state);
    CHECK(h.state() == state);
    CHECK(h.normal_double() == g.normal_double());
}

TEST_CASE("random: the raw-pointer fills refuse a null pointer with elements to fill, drawing nothing") {
    Generator g(2), untouched(2);
    test::expect_error([&] { fill_uniform(nullptr, 4, 0.0, 1.0, g); }, {"fill_uniform", "null pointer", "4 floats"});
    test::expect_error([&] { fill_normal(nullptr, 20, 0.0, 1.0, g); }, {"fill_normal", "null pointer", "20 floats"});
    test::expect_error([&] { fill_bernoulli(nullptr, 3, 0.5, g); }, {"fill_bernoulli", "null pointer", "3 bytes"});
    CHECK(g.state() == untouched.state());
    // nothing to fill: any pointer, no draw
    CHECK_NOTHROW(fill_uniform(nullptr, 0, 0.0, 1.0, g));
    CHECK_NOTHROW(fill_normal(nullptr, 0, 0.0, 1.0, g));
    CHECK_NOTHROW(fill_bernoulli(nullptr, 0, 0.5, g));
    CHECK(g.state() == untouched.state());
}

TEST_CASE("random: dropout at p = 1 and p = 0 draws nothing, as torch") {
    Generator g(9), untouched(9);
    CHECK(dropout(Tensor::ones({8}), 1.f, true, g).data() == Tensor::zeros({8}).data());
    (void)dropout(Tensor::ones({8}), 0.f, true, g);
    CHECK(g.random() == untouched.random());
}

// kind "init" (12 folders) and "train_log" (3), through the parity tool's checks.
TEST_CASE("random: torch's initial weights of tutorials A-D, and tutorial B's dropout run's losses, for the same seed") {
    std::size_t init = 0, train = 0;
    for (const std::string& dir : parity::case_dirs(kRoot)) {
        const parity::Outcome o = parity::run_fixture(dir);
        INFO(dir, "\n", o.error, "\n", o.report.summary());
        CHECK(o.supported);
        CHECK(o.passed());
        (dir.find("/init_") != std::string::npos ? init : train) += 1;
    }
    CHECK(init == 12);  // tutorials A, B, C, D x seeds 0, 1, 1234
    CHECK(train == 3);  // tutorial B's run at seeds 0, 1, 1234: 10 losses each within 1e-4
}

TEST_SUITE_END();
