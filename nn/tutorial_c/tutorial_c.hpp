// Tutorial C, lesson "3-6 Transformer" (the Winter Games translation): every class and
// function of the lesson under its own name (docs/tutorial_c.md maps each one to its file
// here and lists where the lesson's code is wrong).
#pragma once

#include <xtgrad/nn/tutorial_c/config.hpp>
#include <xtgrad/nn/tutorial_c/decoder.hpp>
#include <xtgrad/nn/tutorial_c/decoder_layer.hpp>
#include <xtgrad/nn/tutorial_c/encoder.hpp>
#include <xtgrad/nn/tutorial_c/encoder_layer.hpp>
#include <xtgrad/nn/tutorial_c/make_batch.hpp>
#include <xtgrad/nn/tutorial_c/masks.hpp>
#include <xtgrad/nn/tutorial_c/multi_head_attention.hpp>
#include <xtgrad/nn/tutorial_c/poswise_feed_forward_net.hpp>
#include <xtgrad/nn/tutorial_c/positions.hpp>
#include <xtgrad/nn/tutorial_c/scaled_dot_product_attention.hpp>
#include <xtgrad/nn/tutorial_c/showgraph.hpp>
#include <xtgrad/nn/tutorial_c/sinusoid_table.hpp>
#include <xtgrad/nn/tutorial_c/transformer.hpp>
