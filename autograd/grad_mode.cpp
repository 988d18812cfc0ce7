// Grad mode and the module scope (autograd/grad_mode.hpp), thread-local like PyTorch's; and
// the module context that fail() adds to an Error raised inside a module (autograd/error.hpp).
#include <xtgrad/autograd/grad_mode.hpp>

#include <xtgrad/autograd/error.hpp>

#include <string>

namespace xtgrad {

namespace {
thread_local bool grad_enabled = true;
thread_local const char* module_path = "";
}  // namespace

bool is_grad_enabled() { return grad_enabled; }
void set_grad_enabled(bool enabled) { grad_enabled = enabled; }

const char* current_module_path() { return module_path; }

std::string detail::with_module_context(std::string message) {
    if (*module_path == '\0' || message.find(module_path) != std::string::npos) return message;
    return message + " (in module '" + module_path + "')";
}

// A module that is not registered in a parent (path "", e.g. tutorial C's inline
// ScaledDotProductAttention) keeps the enclosing path: its ops still belong to that layer.
ModuleScope::ModuleScope(const char* path) : previous_(module_path) {
    if (path != nullptr && *path != '\0') module_path = path;
}
ModuleScope::~ModuleScope() { module_path = previous_; }

}  // namespace xtgrad
