// Axis sums as a plain loop. xtensor 0.24.3's reducers are a trap (lazy reducers that keep dimensions
// return garbage; the immediate one crashed reducing to 0-d), so xtgrad reduces here.
#pragma once

#include <xtgrad/autograd/array.hpp>

namespace xtgrad {

// Sums x over `axes` (sorted, unique, each < x.dimension()); the result keeps the reduced
// axes with size 1 (keepdim shape). Reshape it to drop them.
Array sum_keepdim(const Array& x, const std::vector<std::size_t>& axes);

}  // namespace xtgrad
