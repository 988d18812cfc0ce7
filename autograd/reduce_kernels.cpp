#include <xtgrad/autograd/reduce_kernels.hpp>

#include <algorithm>

namespace xtgrad {

// Walks x in row-major order with an odometer over all but the last axis; the output
// offset moves with stride 0 along reduced axes. The innermost loop is a contiguous
// add (or a row sum when the last axis is reduced), which the compiler vectorises.
Array sum_keepdim(const Array& x, const std::vector<std::size_t>& axes) {
    const Shape in = shape_of(x);
    const std::size_t nd = in.size();
    Shape out_shape = in;
    std::vector<bool> reduced(nd, false);
    for (std::size_t a : axes) {
        reduced[a] = true;
        out_shape[a] = 1;
    }
    Array out = empty_array(out_shape);
    std::fill(out.begin(), out.end(), 0.f);
    if (x.size() == 0) return out;
    if (nd == 0) {
        out.data()[0] = x.data()[0];
        return out;
    }
    // output strides (row-major over out_shape), 0 on reduced axes
    std::vector<std::size_t> ostride(nd, 0);
    for (std::size_t i = nd, s = 1; i-- > 0;) {
        ostride[i] = reduced[i] ? 0 : s;
        s *= out_shape[i];
    }
    const std::size_t inner = in[nd - 1];
    const bool last_reduced = reduced[nd - 1];
    std::vector<std::size_t> idx(nd, 0);
    const float* src = x.data();
    float* dst = out.data();
    std::size_t o = 0;  // output offset of the current row
    for (std::size_t row = 0, rows = x.size() / inner; row < rows; ++row, src += inner) {
        if (last_reduced) {
            float s = 0.f;
            for (std::size_t k = 0; k < inner; ++k) s += src[k];
            dst[o] += s;
        } else {
            for (std::size_t k = 0; k < inner; ++k) dst[o + k] += src[k];
        }
        // advance the odometer over axes nd-2 .. 0
        for (std::size_t d = nd - 1; d-- > 0;) {
            ++idx[d];
            o += ostride[d];
            if (idx[d] < in[d]) break;
            o -= ostride[d] * in[d];
            idx[d] = 0;
        }
    }
    return out;
}

}  // namespace xtgrad
