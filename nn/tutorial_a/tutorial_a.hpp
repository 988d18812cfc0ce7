// Tutorial A ("Transformer的PyTorch实现"), every module: include this one header.
// docs/tutorial_a.md sets each notebook class beside its xtgrad file and lists the errata.
#pragma once

#include <xtgrad/nn/tutorial_a/decoder.hpp>
#include <xtgrad/nn/tutorial_a/decoder_layer.hpp>
#include <xtgrad/nn/tutorial_a/encoder.hpp>
#include <xtgrad/nn/tutorial_a/encoder_layer.hpp>
#include <xtgrad/nn/tutorial_a/masks.hpp>
#include <xtgrad/nn/tutorial_a/multi_head_attention.hpp>
#include <xtgrad/nn/tutorial_a/layer_options.hpp>
#include <xtgrad/nn/tutorial_a/options.hpp>
#include <xtgrad/nn/tutorial_a/positional_encoding.hpp>
#include <xtgrad/nn/tutorial_a/positional_wise_feed_forward.hpp>
#include <xtgrad/nn/tutorial_a/scaled_dot_product_attention.hpp>
#include <xtgrad/nn/tutorial_a/transformer.hpp>
