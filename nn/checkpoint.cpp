#include "nn/checkpoint.hpp"

#include "autograd/error.hpp"
#include "nn/safetensors.hpp"

namespace xtgrad::nn {

void save(const Module& module, const std::string& path, const std::map<std::string, std::string>& metadata) {
    NamedArrays arrays;
    for (const auto& [name, t] : module.state_dict()) arrays.emplace_back(name, t.data());
    std::map<std::string, std::string> meta = metadata;
    meta.emplace("format", "pt");  // what PyTorch's safetensors loader expects
    save_safetensors(path, arrays, meta);
}

std::map<std::string, std::string> load(Module& module, const std::string& path, bool strict) {
    SafetensorsFile file = load_safetensors(path);
    NamedTensors state;
    for (auto& [name, a] : file.tensors) state.emplace_back(name, Tensor(std::move(a)));
    try {
        module.load_state_dict(state, strict);
    } catch (const Error& e) {
        fail("load '{}': {}", path, e.what());
    }
    return file.metadata;
}

}  // namespace xtgrad::nn
