#include <xtgrad/nn/tutorial_c/make_batch.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/utf8_text.hpp>

#include <sstream>
#include <string_view>
#include <unordered_map>

namespace xtgrad::nn::tutorial_c {

const Sentences& sentences() {
    static const Sentences s = {"I like the 2022 Beijing Winter Games", "S 我 爱 2022 北京 冬 奥会", "我 爱 2022 北京 冬 奥会 E"};
    return s;
}

Vocab input_vocab(Vocabularies which) {
    if (which == Vocabularies::lesson)
        return {{"I", 0}, {"like", 1}, {"the", 2}, {"2022", 3}, {"Beijing", 4}, {"Winter", 4}, {"Games", 4}};
    return {{"P", 0}, {"I", 1}, {"like", 2}, {"the", 3}, {"2022", 4}, {"Beijing", 5}, {"Winter", 6}, {"Games", 7}};
}

Vocab output_vocab(Vocabularies which) {
    if (which == Vocabularies::lesson)
        return {{"我", 0}, {"爱", 1}, {"2022", 2}, {"北京", 3}, {"冬", 4}, {"奥会", 5}, {"S", 6}, {"E", 7}};
    return {{"P", 0}, {"我", 1}, {"爱", 2}, {"2022", 3}, {"北京", 4}, {"冬", 5}, {"奥会", 6}, {"S", 7}, {"E", 8}};
}

namespace {

// check_vocab for the function `who`
void check_words(const Vocab& vocab, const char* who, const char* what) {
    std::unordered_map<std::string_view, std::size_t> first;  // word -> its first position
    first.reserve(vocab.size());
    for (std::size_t i = 0; i < vocab.size(); ++i) {
        const auto [at, inserted] = first.try_emplace(vocab[i].first, i);
        if (!inserted)
            fail("tutorial_c::{}: {} gives the word '{}' twice, at positions {} (id {}) and {} (id {}): a word has one id",
                 who, what, escaped_for_message(vocab[i].first), at->second, vocab[at->second].second, i, vocab[i].second);
    }
}

}  // namespace

void check_vocab(const Vocab& vocab, const char* what) { check_words(vocab, "check_vocab", what); }

std::vector<std::string> number_dict(const Vocab& vocab) {
    check_words(vocab, "number_dict", "the vocab");
    std::vector<std::string> words;
    for (const auto& [word, id] : vocab) words.push_back(word);
    return words;
}

namespace {

std::int64_t find_word(const Vocab& vocab, const std::string& word, const char* what, const char* who) {
    for (const auto& [w, id] : vocab)
        if (w == word) return id;
    fail("tutorial_c::{}: '{}' is not in {} ({} words)", who, word, what, vocab.size());
}

}  // namespace

std::int64_t lookup(const Vocab& vocab, const std::string& word, const char* what) {
    check_words(vocab, "lookup", what);
    return find_word(vocab, word, what, "lookup");
}

std::vector<std::string> split(const std::string& sentence) {
    std::istringstream in(sentence);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

namespace {

// [[vocab[n] for n in sentence.split()]] -> (1, L)
Ids row(const std::string& sentence, const Vocab& vocab, const char* what) {
    const std::vector<std::string> words = split(sentence);
    Ids ids = Ids::from_shape({1, words.size()});
    for (std::size_t i = 0; i < words.size(); ++i) ids(0, i) = find_word(vocab, words[i], what, "make_batch");
    return ids;
}

}  // namespace

Batch make_batch(const Sentences& s, const Vocab& input_vocab, const Vocab& output_vocab) {
    check_words(input_vocab, "make_batch", "input_vocab");
    check_words(output_vocab, "make_batch", "output_vocab");
    return {row(s[0], input_vocab, "input_vocab (sentences[0])"), row(s[1], output_vocab, "output_vocab (sentences[1])"),
            row(s[2], output_vocab, "output_vocab (sentences[2])")};
}

}  // namespace xtgrad::nn::tutorial_c
