// Attention maps that tell the truth (nn/attention_map.hpp) and tutorial C's showgraph
// (nn/tutorial_c/showgraph.hpp): fixed 0..1 colours, values in the cells, a colour bar, the
// SVG and the terminal view on one scale, "nearly uniform" said where it is.
#include "tests/io/io_test_util.hpp"
#include "tests/test_util.hpp"

#include <xtgrad/autograd/utf8_text.hpp>
#include <xtgrad/nn/tutorial_c/showgraph.hpp>

#include <algorithm>
#include <regex>

#include <xtensor/xstrided_view.hpp>
#include <xtensor/xview.hpp>

TEST_SUITE_BEGIN("nn");

using namespace xtgrad;
using nn::AttentionMap;
using nn::AttentionScale;

namespace {

std::size_t occurrences(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

AttentionMap map_of(Array w, AttentionScale scale = AttentionScale::probability) {
    AttentionMap m;
    m.weights = std::move(w);
    for (std::size_t r = 0; r < m.weights.shape()[0]; ++r) m.query_words.push_back(fmt::format("q{}", r));
    for (std::size_t c = 0; c < m.weights.shape()[1]; ++c) m.key_words.push_back(fmt::format("k{}", c));
    m.title = "test map";
    m.scale = scale;
    return m;
}

// The fill colours of the cells (rects with a <title> value), in order.
std::vector<std::string> cell_fills(const std::string& svg) {
    std::vector<std::string> fills;
    const std::regex cell(R"svg(fill="(#[0-9a-f]{6})"><title>)svg");
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), cell); it != std::sregex_iterator(); ++it)
        fills.push_back((*it)[1]);
    return fills;
}

// The largest difference of one colour channel (0..255) between any two cells: how much
// structure the eye can see.
int colour_spread(const std::vector<std::string>& fills) {
    int spread = 0;
    for (int channel = 0; channel < 3; ++channel) {
        int lo = 255, hi = 0;
        for (const std::string& f : fills) {
            const int v = std::stoi(f.substr(1 + 2 * channel, 2), nullptr, 16);
            lo = std::min(lo, v), hi = std::max(hi, v);
        }
        spread = std::max(spread, hi - lo);
    }
    return spread;
}

// A 3x7 map that is 1/7 everywhere, give or take 0.005: the README's old showcase.
Array nearly_uniform_map() {
    Array w = xt::ones<float>({3, 7}) / 7.f;
    w(0, 0) += 0.004f, w(0, 1) -= 0.004f, w(2, 6) += 0.003f, w(2, 5) -= 0.003f;
    return w;
}

}  // namespace

TEST_CASE("attention maps: a nearly uniform map is drawn flat on the 0..1 scale and said to be nearly uniform") {
    test::TempDir dir;
    const AttentionMap m = map_of(nearly_uniform_map());
    CHECK(m.nearly_uniform());
    nn::write_attention_svg(dir.file("m.svg"), m);
    const std::string svg = test::read_bytes(dir.file("m.svg"));
    const std::vector<std::string> fills = cell_fills(svg);
    REQUIRE(fills.size() == 21);
    CHECK(colour_spread(fills) <= 6);  // 0.139..0.147: one shade of dark, to the eye
    CHECK(svg.find("colour scale 0..1 (probabilities); nearly uniform") != std::string::npos);
    CHECK(svg.find(">0.14</text>") != std::string::npos);  // the values are in the cells
    CHECK(svg.find(">1.00</text>") != std::string::npos);  // the colour bar's top label
    const std::string text = nn::attention_text(m);
    CHECK(text.find("░") == std::string::npos);  // every cell in the lowest fifth: blank shades
    CHECK(text.find("nearly uniform") != std::string::npos);
}

TEST_CASE("attention maps: --scale auto stretches the same map, and says so") {
    test::TempDir dir;
    const AttentionMap m = map_of(nearly_uniform_map(), AttentionScale::auto_range);
    nn::write_attention_svg(dir.file("m.svg"), m);
    const std::string svg = test::read_bytes(dir.file("m.svg"));
    const std::vector<std::string> fills = cell_fills(svg);
    CHECK(colour_spread(fills) >= 150);  // stretched: from dark to yellow, it looks structured
    CHECK(svg.find("stretched to this map's 0.139..0.147 (auto)") != std::string::npos);
    CHECK(nn::attention_text(m).find("(auto)") != std::string::npos);
}

TEST_CASE("attention maps: the SVG and the terminal view put every cell on the same scale") {
    // A peaked map: each value's fifth of the scale decides both its text shade and its colour.
    Array w = {{0.9f, 0.05f, 0.05f}, {0.3f, 0.5f, 0.2f}, {0.f, 0.f, 1.f}};
    const AttentionMap m = map_of(w);
    CHECK_FALSE(m.nearly_uniform());
    const std::string text = nn::attention_text(m);
    CHECK(text.find("q0 │██    │") != std::string::npos);
    CHECK(text.find("q1 │░░▒▒░░│") != std::string::npos);
    CHECK(text.find("q2 │    ██│") != std::string::npos);
    test::TempDir dir;
    nn::write_attention_svg(dir.file("m.svg"), m);
    const std::vector<std::string> fills = cell_fills(test::read_bytes(dir.file("m.svg")));
    REQUIRE(fills.size() == 9);
    CHECK(fills[8] == "#fde725");  // 1.0: viridis' yellow end, whatever the other values
    CHECK(fills[6] == "#440154");  // 0.0: its dark end
}

TEST_CASE("attention maps: axis titles, and masked cells drawn apart from weights of 0") {
    Array w = {{1.f, 0.f, 0.f}, {0.4f, 0.6f, 0.f}, {0.2f, 0.3f, 0.5f}};
    AttentionMap m = map_of(w);
    m.masked = Mask{{false, true, true}, {false, false, true}, {false, false, false}};  // causal
    m.query_axis = "queries: target words";
    m.key_axis = "keys: source words";
    test::TempDir dir;
    nn::write_attention_svg(dir.file("m.svg"), m);
    const std::string svg = test::read_bytes(dir.file("m.svg"));
    CHECK(svg.find(R"(class="axis-title")") != std::string::npos);
    CHECK(svg.find(">queries: target words</text>") != std::string::npos);
    CHECK(svg.find(">keys: source words</text>") != std::string::npos);
    // Three masked cells, hatched with their own pattern and an ×: never a viridis colour and a value.
    const std::regex masked_cell(R"svg(<rect class="masked"[^>]*fill="url\(#masked\)"><title>masked \(0\.0000\)</title></rect>)svg");
    CHECK(std::distance(std::sregex_iterator(svg.begin(), svg.end(), masked_cell), std::sregex_iterator()) == 3);
    CHECK(svg.find(R"(<pattern id="masked")") != std::string::npos);
    CHECK(cell_fills(svg).size() == 6);  // only the attended cells get a colour
    CHECK(svg.find("× masked (hidden by the model's mask)") != std::string::npos);
    const std::string text = nn::attention_text(m);
    CHECK(text.find("q0 │██××××│") != std::string::npos);
    CHECK(text.find("q1 │▒▒▓▓××│") != std::string::npos);
    CHECK(text.find("queries: target words") != std::string::npos);
    CHECK(text.find("keys: source words: k0 k1 k2") != std::string::npos);
    // A masked weight of 0 is not attention spread evenly: rows 0 and 1 are judged on their
    // attended cells only.
    AttentionMap even = map_of(Array{{0.5f, 0.5f, 0.f}, {1.f / 3, 1.f / 3, 1.f / 3}});
    even.masked = Mask{{false, false, true}, {false, false, false}};
    CHECK(even.nearly_uniform());
    // A mask of the wrong shape is an error naming both shapes.
    m.masked = Mask{{false, true}};
    test::expect_error([&] { nn::write_attention_svg(dir.file("bad.svg"), m); },
                       {"write_attention_svg", "mask", "(1,2)", "(3,3)"});
}

TEST_CASE("attention maps: labels of raw bytes and control characters stay well-formed XML and plain text") {
    AttentionMap m = map_of(Array{{1.f, 0.f}, {0.5f, 0.5f}});
    m.query_words = {"\xff\x1b[2J", "it's"};
    m.key_words = {"北京\xEF\xBF\xBE", "a\x01<b>\xEF\xBF\xBF"};
    m.title = "t\xc3";
    test::TempDir dir;
    nn::write_attention_svg(dir.file("m.svg"), m);
    const std::string svg = test::read_bytes(dir.file("m.svg"));
    CHECK(valid_utf8(svg) == svg);  // every byte sequence well-formed
    CHECK(std::none_of(svg.begin(), svg.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t';  // XML 1.0 forbids the rest of C0
    }));
    CHECK(svg.find("\xEF\xBF\xBD[2J") != std::string::npos);  // 0xff and ESC each as U+FFFD
    CHECK(svg.find(">it's</text>") != std::string::npos);
    CHECK(svg.find("北京\xEF\xBF\xBD<") != std::string::npos);  // U+FFFE and U+FFFF, not XML characters, too
    CHECK(svg.find("a\xEF\xBF\xBD&lt;b&gt;\xEF\xBF\xBD") != std::string::npos);
    CHECK(svg.find("\xEF\xBF\xBE") == std::string::npos);
    CHECK(svg.find("\xEF\xBF\xBF") == std::string::npos);
    const std::string text = nn::attention_text(m);
    CHECK(text.find('\x1b') == std::string::npos);  // no escape sequence reaches the terminal
    CHECK(text.find("\\xff\\x1b[2J") != std::string::npos);
    CHECK(text.find("a\\x01<b>") != std::string::npos);
}

TEST_CASE("attention maps: is_masked outside the mask is an Error, not a read past it") {
    AttentionMap m = map_of(Array{{1.f, 0.f}, {0.5f, 0.5f}});
    CHECK_FALSE(m.is_masked(50, 50));  // no mask: nothing is masked
    m.masked = Mask{{false, true}, {false, false}};
    CHECK(m.is_masked(0, 1));
    test::expect_error([&] { m.is_masked(50, 50); }, {"AttentionMap::is_masked", "(50, 50)", "(2,2)"});
    test::expect_error([&] { m.is_masked(0, 2); }, {"AttentionMap::is_masked", "(0, 2)"});
}

TEST_CASE("attention maps: select_attention_map reads tutorial A's, B/C/D's and D's averaged layouts") {
    // Every value names its place: batch b, head h, query i, key j -> b·1000 + h·100 + i·10 + j.
    const std::size_t B = 2, H = 3, L = 2;
    Array per_head = empty_array({B, H, L, L});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < L; ++i)
                for (std::size_t j = 0; j < L; ++j) per_head(b, h, i, j) = static_cast<float>(b * 1000 + h * 100 + i * 10 + j);
    const std::vector<std::string> words = {"a", "b"};
    const nn::AttentionMap d = nn::select_attention_map(Tensor(per_head), 0, 1, 2, words, words, {}, "test");
    CHECK(d.weights(1, 0) == 1210.f);
    // Tutorial A: (B·heads, L, L), row b·heads + head.
    const Tensor flat(xt::eval(xt::reshape_view(per_head, {B * H, L, L})));
    const nn::AttentionMap a = nn::select_attention_map(flat, H, 1, 2, words, words, {}, "test");
    CHECK(a.weights == d.weights);
    // Tutorial D's averaged weights: (B, L, L); a (B, L, L) mask gives the batch element's.
    const Tensor averaged(xt::eval(xt::view(per_head, xt::all(), 0, xt::all(), xt::all())));
    const Mask masks = Mask{{{false, true}, {false, false}}, {{false, false}, {true, false}}};
    const nn::AttentionMap avg = nn::select_attention_map(averaged, 0, 1, 0, words, words, masks, "test");
    CHECK(avg.weights(0, 1) == 1001.f);
    CHECK(avg.masked == Mask{{false, false}, {true, false}});
    test::expect_error([&] { nn::select_attention_map(flat, H, 2, 0, words, words, {}, "reverse"); },
                       {"reverse", "batch element 2", "(6,2,2)", "hold 2"});
    test::expect_error([&] { nn::select_attention_map(Tensor(per_head), 0, 0, 3, words, words, {}, "reverse"); },
                       {"reverse", "head 3", "3 heads"});
    test::expect_error([&] { nn::select_attention_map(flat, 4, 0, 0, words, words, {}, "reverse"); },
                       {"reverse", "6 rows", "batches of 4 heads"});
    const Mask one_cell = xt::zeros<bool>({1, 1});
    test::expect_error([&] { nn::select_attention_map(averaged, 0, 0, 0, words, words, one_cell, "reverse"); },
                       {"reverse", "mask of shape (1,1)", "(2, 2)"});
}

TEST_CASE("showgraph: tutorial C's choice (last layer, head 0, first sentence) and its errors") {
    // Two layers of (B=2, h=2, Lq=2, Lk=3) weights; layer 1, head 0, sentence 0 is recognisable.
    std::vector<Tensor> attns;
    for (int layer = 0; layer < 2; ++layer) {
        Array w = xt::ones<float>({2, 2, 2, 3}) / 3.f;
        if (layer == 1) w(0, 0, 1, 2) = 0.9f, w(0, 0, 1, 0) = 0.05f, w(0, 0, 1, 1) = 0.05f;
        attns.emplace_back(w);
    }
    const std::vector<std::string> x = {"I", "like", "games"}, y = {"S", "我"};
    const AttentionMap m = nn::tutorial_c::attention_map(attns, x, y);
    CHECK(m.weights(1, 2) == doctest::Approx(0.9f));
    CHECK(m.key_words == x);
    CHECK(m.query_words == y);
    CHECK(m.title == "layer 1, head 0");
    // Options one field at a time (designated initializers would have to name every field under -Wextra).
    const auto options = [](int layer, std::size_t head, std::size_t batch) {
        nn::tutorial_c::ShowgraphOptions o;
        o.layer = layer, o.head = head, o.batch = batch;
        return o;
    };
    test::TempDir dir;
    nn::tutorial_c::showgraph(attns, x, y, dir.file("g.svg"), options(0, 0, 0));
    CHECK(test::read_bytes(dir.file("g.svg")).find("nearly uniform") != std::string::npos);
    test::expect_error([&] { nn::tutorial_c::attention_map(attns, x, y, options(2, 0, 0)); }, {"showgraph", "layer 2", "2 layers"});
    test::expect_error([&] { nn::tutorial_c::attention_map(attns, x, y, options(-1, 5, 0)); }, {"showgraph", "head 5", "2 heads"});
    test::expect_error([&] { nn::tutorial_c::attention_map(attns, x, y, options(-1, 0, 2)); }, {"showgraph", "sentence 2"});
    test::expect_error([&] { nn::tutorial_c::attention_map(attns, {"I"}, y); }, {"showgraph", "(2,3)", "1 key words"});
}

TEST_CASE("showgraph: query and key axis titles, and the model's mask drawn as masked cells") {
    std::vector<Tensor> attns;
    Array w = xt::ones<float>({2, 2, 2, 3}) / 3.f;
    w(1, 0, 0, 2) = 0.f;  // sentence 1: key 'games' is PAD, hidden from both queries
    w(1, 0, 1, 2) = 0.f;
    w(1, 0, 0, 0) = w(1, 0, 0, 1) = w(1, 0, 1, 0) = w(1, 0, 1, 1) = 0.5f;
    attns.emplace_back(w);
    const std::vector<std::string> x = {"I", "like", "PAD"}, y = {"S", "我"};
    nn::tutorial_c::ShowgraphOptions o;
    o.batch = 1;
    CHECK(nn::tutorial_c::attention_map(attns, x, y, o).query_axis == "queries: target words (y)");  // the defaults
    CHECK(nn::tutorial_c::attention_map(attns, x, y, o).key_axis == "keys: source words (x)");
    CHECK_FALSE(nn::tutorial_c::attention_map(attns, x, y, o).has_mask());
    // the model's (B, Lq, Lk) mask: the map takes the chosen sentence's
    Mask pad = xt::zeros<bool>({2, 2, 3});
    pad(1, 0, 2) = pad(1, 1, 2) = true;
    o.masked = pad;
    o.query_axis = "queries: decoder inputs";
    o.key_axis = "keys: source words (PAD masked)";
    test::TempDir dir;
    const AttentionMap m = nn::tutorial_c::showgraph(attns, x, y, dir.file("pad.svg"), o);
    CHECK(m.is_masked(0, 2));
    CHECK(m.is_masked(1, 2));
    CHECK_FALSE(m.is_masked(0, 0));
    const std::string svg = test::read_bytes(dir.file("pad.svg"));
    CHECK(occurrences(svg, "class=\"masked\"") == 2);
    CHECK(occurrences(svg, "class=\"axis-title\"") == 2);
    CHECK(svg.find("queries: decoder inputs") != std::string::npos);
    CHECK(svg.find("keys: source words (PAD masked)") != std::string::npos);
    // an (Lq, Lk) mask as it is, and masks that do not fit
    o.masked = Mask{{false, false, true}, {false, false, true}};
    CHECK(nn::tutorial_c::attention_map(attns, x, y, o).is_masked(1, 2));
    o.masked = xt::zeros<bool>({3, 2, 3});
    test::expect_error([&] { nn::tutorial_c::attention_map(attns, x, y, o); }, {"showgraph", "mask of shape (3,2,3)", "(2,2,2,3)"});
    o.masked = xt::zeros<bool>({2, 2});
    test::expect_error([&] { nn::tutorial_c::attention_map(attns, x, y, o); }, {"showgraph", "mask", "(2,2)"});
}

TEST_SUITE_END();
