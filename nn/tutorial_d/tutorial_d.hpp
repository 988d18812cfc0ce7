// Tutorial D, "Transformer源代码解释之PyTorch篇": a re-derivation of torch.nn's Transformer
// modules, with torch's names and semantics (docs/tutorial_d.md maps each class of the
// tutorial to its file here and lists where the tutorial's code is wrong).
#pragma once

#include <xtgrad/nn/tutorial_d/attention_mask.hpp>
#include <xtgrad/nn/tutorial_d/clone.hpp>
#include <xtgrad/nn/tutorial_d/decoder.hpp>
#include <xtgrad/nn/tutorial_d/decoder_layer.hpp>
#include <xtgrad/nn/tutorial_d/encoder_decoder_base.hpp>
#include <xtgrad/nn/tutorial_d/encoder.hpp>
#include <xtgrad/nn/tutorial_d/encoder_layer.hpp>
#include <xtgrad/nn/tutorial_d/functional.hpp>
#include <xtgrad/nn/tutorial_d/layer_options.hpp>
#include <xtgrad/nn/tutorial_d/multihead_attention.hpp>
#include <xtgrad/nn/tutorial_d/positional_encoding.hpp>
#include <xtgrad/nn/tutorial_d/scaled_dot_product_attention.hpp>
#include <xtgrad/nn/tutorial_d/transformer.hpp>
