// Tutorial B, "Build your own Transformer" (a PyTorch walk-through): every class of the
// tutorial under its own name (docs/tutorial_b.md maps each class to its file here).
#pragma once

#include <xtgrad/nn/tutorial_b/decoder_layer.hpp>
#include <xtgrad/nn/tutorial_b/encoder_layer.hpp>
#include <xtgrad/nn/tutorial_b/masks.hpp>
#include <xtgrad/nn/tutorial_b/multi_head_attention.hpp>
#include <xtgrad/nn/tutorial_b/position_wise_feed_forward.hpp>
#include <xtgrad/nn/tutorial_b/positional_encoding.hpp>
#include <xtgrad/nn/tutorial_b/transformer.hpp>
