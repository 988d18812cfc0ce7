// Exercise 08's grader: your decoding against the model's own (nn::tutorial_c::Transformer's
// forward and greedy_decode), on small models with random weights, where the two disagree.
#include "exercise.hpp"
#include "diagnose.hpp"

#include <algorithm>
#include <exception>

using namespace xtgrad;
namespace tc = xtgrad::nn::tutorial_c;

TEST_SUITE_BEGIN("08_greedy_decoding");

namespace {

constexpr std::int64_t kStart = 7, kEnd = 8;  // tutorial C's 'S' and 'E'

struct Model {
    explicit Model(std::uint64_t seed) : seeded((manual_seed(seed), 0)) { model.eval(); }
    int seeded;
    tc::Transformer model{tc::Config().d_model(16).d_ff(32).d_k(8).d_v(8).n_layers(2).n_heads(2)};
};

const Ids kEnc{{1, 2, 3, 4, 5, 6, 7}};        // 'I like the 2022 Beijing Winter Games'
const Ids kDec{{7, 1, 2, 3, 4, 5, 6}};        // 'S 我 爱 2022 北京 冬 奥会'

std::string words_str(const std::vector<std::int64_t>& w) { return fmt::format("[{}]", fmt::join(w, ", ")); }

bool starts_with(const std::vector<std::int64_t>& w, const std::vector<std::int64_t>& prefix) {
    return w.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), w.begin());
}

// The usual slips of a greedy loop, told from the words it returned ("" when none matches).
std::string greedy_slip(const std::vector<std::int64_t>& mine, const std::vector<std::int64_t>& expected,
                        std::size_t max_words) {
    if (!mine.empty() && mine[0] == kStart && std::vector<std::int64_t>(mine.begin() + 1, mine.end()) == expected)
        return "; your words begin with start_id: it is the decoder's first input, not a decoded word: return the "
               "appended words only";
    if (mine.size() + 1 == expected.size() && starts_with(expected, mine))
        return "; one word short: the loop stops before it appends the last word (max_words words are returned, or the "
               "words up to end_id, end_id included)";
    if (mine.size() > expected.size() && starts_with(mine, expected))
        return mine.size() > max_words ? fmt::format("; {} words where max_words is {}: count the appended words", mine.size(), max_words)
                                       : "; you went on after end_id: stop once it is appended";
    if (!mine.empty() && mine.size() == expected.size() && mine.back() != expected.back() &&
        std::count(mine.begin(), mine.end(), mine[0]) == static_cast<long>(mine.size()))
        return "; every word the same: is the last position's argmax taken of the words so far, fed back each step?";
    return "";
}

}  // namespace

TEST_CASE("08_greedy_decoding: teacher forcing reads the argmax of every position of one forward") {
    for (std::uint64_t seed : {0, 1, 2}) {
        Model m(seed);
        const Ids want = argmax(m.model.forward(kEnc, kDec).logits, -1);
        const std::vector<std::int64_t> expected(want.begin(), want.end());
        const std::vector<std::int64_t> mine = ex08::teacher_forced(m.model, kEnc, kDec);
        if (mine != expected)
            FAIL(fmt::format("teacher_forced, model of seed {}: you returned {}, the argmax of each of the {} positions "
                             "is {}", seed, words_str(mine), expected.size(), words_str(expected)));
    }
}

TEST_CASE("08_greedy_decoding: greedy decoding feeds each word back, step by step") {
    for (std::uint64_t seed : {0, 1, 2}) {
        Model m(seed);
        const Ids ref = m.model.greedy_decode(kEnc, kStart, kEnd, 7);
        std::vector<std::int64_t> expected;
        for (std::int64_t w : ref) {
            expected.push_back(w);
            if (w == kEnd) break;
        }
        std::vector<std::int64_t> mine;
        grading::set_context(fmt::format("greedy, model of seed {}", seed));
        try {
            mine = ex08::greedy(m.model, kEnc, kStart, kEnd, 7);
        } catch (const std::exception& e) {
            FAIL(fmt::format("greedy, model of seed {}: threw: {}", seed, e.what()));
        }
        if (mine == expected) continue;
        std::size_t step = 0;
        while (step < mine.size() && step < expected.size() && mine[step] == expected[step]) ++step;
        FAIL(fmt::format("greedy, model of seed {}: you returned {}, the model decodes {}: they part at word {} "
                         "(after [{}{}]){}", seed, words_str(mine), words_str(expected), step, kStart,
                         step ? ", " + fmt::format("{}", fmt::join(expected.begin(), expected.begin() + static_cast<long>(step), ", ")) : "",
                         greedy_slip(mine, expected, 7)));
    }
}

TEST_CASE("08_greedy_decoding: where the two part, and why") {
    // With the reference words fed in, every position is right or wrong on its own; greedily, one
    // wrong word is fed back and every later position sees it. Find a model where they differ.
    bool differ = false;
    for (std::uint64_t seed : {0, 1, 2}) {
        Model m(seed);
        const std::vector<std::int64_t> forced = ex08::teacher_forced(m.model, kEnc, kDec);
        const std::vector<std::int64_t> greedy = ex08::greedy(m.model, kEnc, kStart, kEnd, 7);
        if (forced.empty() || greedy.empty()) {
            GRADE(forced.empty() ? "teacher_forced returned no words: write it first" : "greedy returned no words: write it first");
            return;
        }
        // Both start from 'S' alone: the first word is the same.
        if (forced[0] != greedy[0]) {
            GRADE(fmt::format("seed {}: the first word differs ({} teacher-forced, {} greedy), yet both come from the "
                              "decoder input [S] alone", seed, forced[0], greedy[0]));
            return;
        }
        differ = differ || std::vector<std::int64_t>(forced.begin(), forced.begin() + static_cast<long>(std::min(forced.size(), greedy.size()))) !=
                               std::vector<std::int64_t>(greedy.begin(), greedy.begin() + static_cast<long>(std::min(forced.size(), greedy.size())));
    }
    GRADE(differ ? "" : "teacher forcing and greedy decoding agree on every model: feed the model's own words back");
}

TEST_SUITE_END();
