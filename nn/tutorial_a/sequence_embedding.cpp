#include <xtgrad/nn/tutorial_a/sequence_embedding.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/tutorial_a/checks.hpp>

#include <algorithm>

namespace xtgrad::nn::tutorial_a {

// inputs (B, L), inputs_len (B) -> (B, L, d)
Tensor embed_sequence(const Module& owner, const char* type, const Embedding& seq_embedding,
                      const PositionalEncoding& pos_embedding, const Ids& inputs, const Ids& inputs_len) {
    check::ids(owner, type, "inputs", inputs, seq_embedding.weight.size(0));
    if (check::lengths(owner, type, "inputs_len", inputs_len) != inputs.shape(0))
        module_error(owner, type, fmt::format("inputs_len {} must hold one length per sequence of inputs {}",
                                              shape_str(inputs_len.shape()), shape_str(inputs.shape())));
    std::int64_t longest = 0;
    for (std::int64_t len : inputs_len) longest = std::max(longest, len);
    if (longest != static_cast<std::int64_t>(inputs.shape(1)))
        module_error(owner, type,
                     fmt::format("the longest of inputs_len is {} but inputs {} are padded to length {}: "
                                 "the positions would not line up with the tokens",
                                 longest, shape_str(inputs.shape()), inputs.shape(1)));
    return seq_embedding.forward(inputs) + pos_embedding.forward(inputs_len);
}

}  // namespace xtgrad::nn::tutorial_a
