// The whole public API in one include: installed as <xtgrad/xtgrad.hpp>.
// Tensor and ops, autograd and the learning tools, nn building blocks and the four tutorials'
// modules, data-parallel training, optimizers and schedules, checkpoints, files, the run report.
// What this header reaches is exactly what `meson install` installs (tools/public_headers.py);
// docs/api.md says which of those headers are the API and which are installed only because an
// API header includes them.
#pragma once

// The tensor, its ops and autograd.
#include <xtgrad/autograd/anomaly.hpp>
#include <xtgrad/autograd/autocast.hpp>
#include <xtgrad/autograd/debug.hpp>
#include <xtgrad/autograd/engine.hpp>
#include <xtgrad/autograd/environment.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/format.hpp>
#include <xtgrad/autograd/forward_ad.hpp>
#include <xtgrad/autograd/func.hpp>
#include <xtgrad/autograd/grad.hpp>
#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/gradcheck.hpp>
#include <xtgrad/autograd/graphviz.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/tensor.hpp>
#include <xtgrad/autograd/trace_table.hpp>

// The machine: threads, the CPU's vector width, the GEMM profile, the generator.
#include <xtgrad/gemm/gemm_profile.hpp>
#include <xtgrad/random/random.hpp>
#include <xtgrad/simd/cpu_isa.hpp>
#include <xtgrad/threads/parallel.hpp>

// Files: npy arrays and safetensors state dicts.
#include <xtgrad/io/npy.hpp>
#include <xtgrad/io/safetensors.hpp>

// nn: modules, building blocks, initialisation, checkpoints, data-parallel training.
#include <xtgrad/nn/attention.hpp>
#include <xtgrad/nn/attention_map.hpp>
#include <xtgrad/nn/checkpoint.hpp>
#include <xtgrad/nn/init.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/parallel/distributed.hpp>
#include <xtgrad/nn/parallel/distributed_sampler.hpp>
#include <xtgrad/nn/parallel/zero_optimizer.hpp>

// The four tutorials' modules, each in its namespace (xtgrad::nn::tutorial_a ... _d).
#include <xtgrad/nn/tutorial_a/tutorial_a.hpp>
#include <xtgrad/nn/tutorial_b/tutorial_b.hpp>
#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>
#include <xtgrad/nn/tutorial_d/tutorial_d.hpp>

// Optimizers and learning-rate schedules.
#include <xtgrad/optim/in_backward.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/optim/schedule.hpp>

// The run report: one self-contained HTML page per training run.
#include <xtgrad/report/run_report.hpp>
