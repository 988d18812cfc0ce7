// Guesses for a name that matched nothing (a break filter's op or module path): the nearest name
// that did occur, letters compared without case, as " Did you mean 'X'?" for a message. Internal:
// autograd/debug.cpp's note on a filter that stopped nowhere.
#pragma once

#include <cstddef>
#include <set>
#include <string>

namespace xtgrad::detail {

// Edit distance between a and b, letters compared without case (a misspelt op differs by a letter
// or its case: SoftMaxBackward, softmaxbackward).
std::size_t name_distance(const std::string& a, const std::string& b);

// For an op: the op that ran nearest to `wanted` (within a third of its letters), else the op
// named as its backward ("Softmax", "softmax" -> 'SoftmaxBackward'); "" when none is near.
std::string guessed_op(const std::string& wanted, const std::set<std::string>& ops);

// For a module path: the path in `paths` nearest to `wanted`, else the whole path of a module of
// `modules` whose path ends in it ("fc1" -> 'block.fc1'); "" when none is near.
std::string guessed_module(const std::string& wanted, const std::set<std::string>& paths,
                           const std::set<std::string>& modules);

// "a, b, c" or, past at_most, "a, b, ... (N in all)".
std::string listed(const std::set<std::string>& names, std::size_t at_most);

}  // namespace xtgrad::detail
