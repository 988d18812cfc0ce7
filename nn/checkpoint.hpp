// Checkpoints: a module's state_dict in the safetensors format (a JSON header and raw
// little-endian float32 data — PyTorch's safe format, nothing executes on load), under the
// tutorial's PyTorch names, so a checkpoint moves between xtgrad and PyTorch
// (docs/checkpoints.md shows the Python side).
//
// Two kinds of file, one format:
//   model-only  the state_dict alone (nn::save; what PyTorch writes with safetensors)
//   run         the model's state_dict under the same names, plus what it takes to continue the
//               run exactly (nn::save_run): the optimizer's state under "optimizer.state.<i>.*"
//               (PyTorch's optimizer.state_dict() names), and in the metadata "xtgrad.run" =
//               "1", the epoch, the optimizer's param_groups, the schedule's state and the
//               generators' states (hex). docs/checkpoints.md lists every entry.
#pragma once

#include <xtgrad/random/random.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/optim/optimizer.hpp>
#include <xtgrad/optim/schedule.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace xtgrad::nn {

// Written to a temporary file and renamed into place: a crash never leaves a half-written file.
void save(const Module& module, const std::string& path, const std::map<std::string, std::string>& metadata = {});

// strict: the file's names must be exactly the module's. Either way shapes must match, and
// an error lists the missing keys, unexpected keys and shape mismatches (the first 10 of each).
// Returns the metadata.
// A run file loads too: its run state (optimizer entries) is ignored.
std::map<std::string, std::string> load(Module& module, const std::string& path, bool strict = true);

// What a training run holds besides the model. Pointers the program does not use stay null.
struct RunState {
    optim::Optimizer* optimizer = nullptr;
    optim::LRScheduler* schedule = nullptr;
    std::vector<std::pair<std::string, Generator*>> generators;  // by name, e.g. {"default", &default_generator()}
    long epoch = 0;                                              // epochs (or steps) done
};

// A run checkpoint, atomically (a crash leaves the previous file whole). What load_run would
// refuse is an Error before anything is written: a negative epoch, a null or twice-named
// generator, epochs done without optimizer state, metadata setting "xtgrad.run", or (with an
// optimizer) a model entry under "optimizer.state.", where the optimizer's entries go.
void save_run(const std::string& path, const Module& module, const RunState& run,
              const std::map<std::string, std::string>& metadata = {});

// Loads the model (strict), then, if the file is a run checkpoint, the run state into `run`:
// optimizer, schedule, every generator named in `run` (the file must hold each one) and the
// epoch. A model-only file (one PyTorch wrote, a --save-init file) loads the model alone and
// leaves `run` as it is; the result says which. All or nothing: a file that does not fit is
// an Error naming the file and the entry, and the model, the optimizer, the schedule, the
// generators and the epoch then keep their previous values. Every metadata field is read
// through one bounded, type-checked path (nn/run_fields.hpp): JSON nesting is limited before
// parsing, the optimizer's hyperparameters must be present, typed and in range (eps >= 0, ...),
// and a parameter's optimizer state must be complete (no silently zeroed Adam moments).
struct LoadedRun {
    bool has_run_state = false;
    std::map<std::string, std::string> metadata;
};
LoadedRun load_run(const std::string& path, Module& module, RunState& run);

}  // namespace xtgrad::nn
