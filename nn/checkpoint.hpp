// Checkpoints: a module's state_dict in the safetensors format (a JSON header and raw
// little-endian float32 data — PyTorch's safe format, nothing executes on load), under the
// tutorial's PyTorch names, so a checkpoint moves between xtgrad and PyTorch
// (docs/checkpoints.md shows the Python side).
#pragma once

#include "nn/module.hpp"

#include <map>
#include <string>

namespace xtgrad::nn {

// Written to a temporary file and renamed into place: a crash never leaves a half-written file.
void save(const Module& module, const std::string& path, const std::map<std::string, std::string>& metadata = {});

// strict: the file's names must be exactly the module's. Either way shapes must match, and
// an error lists every missing key, unexpected key and shape mismatch. Returns the metadata.
std::map<std::string, std::string> load(Module& module, const std::string& path, bool strict = true);

}  // namespace xtgrad::nn
