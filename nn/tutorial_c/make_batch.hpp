// Tutorial C, "4. 代码实现": the corpus (`sentences`), the vocabularies (`input_vocab`,
// `output_vocab`, `number_dict`) and `make_batch`, which turns the sentences into the id
// tensors the model reads.
//
//   input_batch  = [[input_vocab[n]  for n in sentences[0].split()]]    (1, Ls)  encoder input
//   output_batch = [[output_vocab[n] for n in sentences[1].split()]]    (1, Lt)  decoder input 'S ...'
//   target_batch = [[output_vocab[n] for n in sentences[2].split()]]    (1, Lt)  target '... E'
//
// The lesson reads its vocabularies as globals; here they are arguments. A vocabulary is a
// python dict: words in insertion order, each with its id (two words may share one, as in the
// lesson). Errata (docs/tutorial_c.md): the lesson's dicts map 'I' and '我' to 0, the id the
// masks treat as PAD, and 'Beijing', 'Winter', 'Games' all to 4; Vocabularies::fixed (the
// default) is the intent, PAD = 0 and one id per word; Vocabularies::lesson is the lesson's.
#pragma once

#include <xtgrad/autograd/array.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xtgrad::nn::tutorial_c {

// A python dict word -> id, in insertion order; len(vocab) is vocab.size().
using Vocab = std::vector<std::pair<std::string, std::int64_t>>;

// sentences[0] source, sentences[1] decoder input ('S' first), sentences[2] target ('E' last).
using Sentences = std::array<std::string, 3>;

enum class Vocabularies {
    fixed,   // intent: source P I like the 2022 Beijing Winter Games = 0..7; target P 我 爱 2022 北京 冬 奥会 S E = 0..8
    lesson,  // as written: {'I': 0, 'like': 1, 'the': 2, '2022': 3, 'Beijing': 4, 'Winter': 4, 'Games': 4},
             //             {'我': 0, '爱': 1, '2022': 2, '北京': 3, '冬': 4, '奥会': 5, 'S': 6, 'E': 7}
};

// 'I like the 2022 Beijing Winter Games', 'S 我 爱 2022 北京 冬 奥会', '我 爱 2022 北京 冬 奥会 E'
const Sentences& sentences();
Vocab input_vocab(Vocabularies which = Vocabularies::fixed);
Vocab output_vocab(Vocabularies which = Vocabularies::fixed);

// An Error naming `what`, the word and both positions if a word comes twice: a python dict
// literal would keep the last id, a scan the first. number_dict, lookup and make_batch check it.
void check_vocab(const Vocab& vocab, const char* what = "vocab");

// number_dict = {i: w for i, w in enumerate(output_vocab)}: the i-th word of the dict. It
// inverts the vocabulary only when the ids are 0, 1, 2, ... in insertion order (both of ours).
std::vector<std::string> number_dict(const Vocab& vocab);

// vocab[word], or an Error naming the word and `what` (python's KeyError).
std::int64_t lookup(const Vocab& vocab, const std::string& word, const char* what = "vocab");

// sentence.split(): the words between single or repeated spaces.
std::vector<std::string> split(const std::string& sentence);

struct Batch {
    Ids enc_inputs;    // (1, Ls)  input_batch
    Ids dec_inputs;    // (1, Lt)  output_batch
    Ids target_batch;  // (1, Lt)  view(-1) it for cross_entropy
};

// The lesson's make_batch(sentences), with the vocabularies as arguments. Throws an Error
// naming the word and the sentence when a word is not in its vocabulary.
Batch make_batch(const Sentences& sentences, const Vocab& input_vocab, const Vocab& output_vocab);

}  // namespace xtgrad::nn::tutorial_c
