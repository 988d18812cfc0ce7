// A --module option that names no module of the model (a typo, tutorial D's dotted names on
// tutorial B's model) did nothing and exited 0: a usage error naming the path and the modules
// where it stops, for the examples that take one (graph, activations).
#pragma once

#include <xtgrad/nn/module.hpp>

#include <string>

namespace xtgrad::examples {

// Returns when `path` is empty (the whole model) or names a module of `model`; otherwise exits 2
// (cli::usage_error) with "--module 'P' names no module of the model; its modules are: a, b" or
// "... the modules under 'a.b' are: ...", the deepest part of the path that exists.
void check_module_path(const nn::Module& model, const std::string& path);

}  // namespace xtgrad::examples
