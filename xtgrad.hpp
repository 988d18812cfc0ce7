// The whole public API in one include: installed as <xtgrad/xtgrad.hpp>.
// Tensor and ops, autograd and the learning tools, nn building blocks and the four tutorials'
// modules, optimizers and schedules, checkpoints. What this header reaches is exactly what
// `meson install` installs (tools/public_headers.py); the other headers are internal.
#pragma once

// The tensor, its ops and autograd.
#include "autograd/anomaly.hpp"
#include "autograd/autocast.hpp"
#include "autograd/cpu_isa.hpp"
#include "autograd/gemm_profile.hpp"
#include "autograd/debug.hpp"
#include "autograd/engine.hpp"
#include "autograd/error.hpp"
#include "autograd/format.hpp"
#include "autograd/grad_mode.hpp"
#include "autograd/gradcheck.hpp"
#include "autograd/graphviz.hpp"
#include "autograd/make_result.hpp"
#include "autograd/npy.hpp"
#include "autograd/ops.hpp"
#include "autograd/parallel.hpp"
#include "autograd/random.hpp"
#include "autograd/tensor.hpp"
#include "autograd/trace_table.hpp"

// nn: modules, building blocks, initialisation, checkpoints.
#include "nn/attention.hpp"
#include "nn/attention_map.hpp"
#include "nn/checkpoint.hpp"
#include "nn/init.hpp"
#include "nn/layers.hpp"
#include "nn/module.hpp"
#include "nn/safetensors.hpp"

// The four tutorials' modules, each in its namespace (xtgrad::nn::tutorial_a ... _d).
#include "nn/tutorial_a/tutorial_a.hpp"
#include "nn/tutorial_b/tutorial_b.hpp"
#include "nn/tutorial_c/tutorial_c.hpp"
#include "nn/tutorial_d/tutorial_d.hpp"

// Optimizers and learning-rate schedules.
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"

// The run report: one self-contained HTML page per training run.
#include "report/run_report.hpp"
