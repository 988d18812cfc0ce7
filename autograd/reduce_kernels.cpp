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
    if (!last_reduced && std::all_of(reduced.begin(), reduced.end() - 1, [](bool r) { return r; })) {
        add_column_sums(x.data(), x.size() / inner, inner, 0, inner, out.data());  // a bias's gradient
        return out;
    }
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

void add_column_sums(const float* y, std::size_t rows, std::size_t cols, std::size_t j0, std::size_t j1, float* d) {
    float* __restrict out = d;
    std::size_t i = 0;
    for (; i + 8 <= rows; i += 8) {
        const float* __restrict r = y + i * cols;
        const std::size_t c = cols;
        for (std::size_t j = j0; j < j1; ++j)  // left to right: ((out + r0) + r1) + ..., as row by row
            out[j] = out[j] + r[j] + r[c + j] + r[2 * c + j] + r[3 * c + j] + r[4 * c + j] + r[5 * c + j] +
                     r[6 * c + j] + r[7 * c + j];
    }
    for (; i < rows; ++i) {
        const float* __restrict r = y + i * cols;
        for (std::size_t j = j0; j < j1; ++j) out[j] += r[j];
    }
}

}  // namespace xtgrad
