// Printing: fmt::print("{}", t) shows a tensor as PyTorch's repr does —
//   tensor([[ 0.1000, -2.0000],
//           [ 3.5000,  4.0000]], shape=(2,2), grad_fn=<MatmulBackward>)
// Large tensors are abbreviated with "..." (the first and last 3 entries of each dim).
#pragma once

#include <xtgrad/autograd/tensor.hpp>

#include <fmt/format.h>

#include <iosfwd>
#include <string>

namespace xtgrad {

std::string to_string(const Tensor& t);
std::string to_string(const Array& a);  // the values only
std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace xtgrad

template <>
struct fmt::formatter<xtgrad::Tensor> : fmt::formatter<std::string> {
    template <class Ctx>
    auto format(const xtgrad::Tensor& t, Ctx& ctx) const {
        return fmt::formatter<std::string>::format(xtgrad::to_string(t), ctx);
    }
};
