#include <xtgrad/autograd/broadcast.hpp>

#include <xtgrad/autograd/array_allocator.hpp>
#include <xtgrad/autograd/error.hpp>

#include <xtgrad/autograd/reduce_kernels.hpp>

#include <algorithm>
#include <new>

namespace xtgrad {

std::vector<std::size_t> broadcast_strides(const Shape& from, std::size_t rank) {
    std::vector<std::size_t> stride(rank, 0);
    const std::size_t lead = rank - from.size();
    for (std::size_t i = rank, s = 1; i-- > lead;) {
        const std::size_t d = from[i - lead];
        stride[i] = d == 1 ? 0 : s;
        s *= d;
    }
    return stride;
}

std::vector<std::size_t> strided_offsets(const Shape& to, std::size_t axes, const std::vector<std::size_t>& strides,
                                         const char* op) {
    std::size_t total = 1;
    for (std::size_t i = 0; i < axes; ++i)
        if (__builtin_mul_overflow(total, to[i], &total) || total > memory::kMaxArrayBytes / sizeof(std::size_t))
            fail("{}: the batch dims of {} make more slices than their offsets fit in memory", op, shape_str(to));
    std::vector<std::size_t> offsets;
    try {
        offsets.resize(total);
    } catch (const std::bad_alloc&) {
        fail("{}: the {} slices of shape {} have offsets the system cannot allocate ({} bytes)", op, total,
             shape_str(to), total * sizeof(std::size_t));
    }
    std::vector<std::size_t> idx(axes, 0);
    for (std::size_t& off : offsets) {
        off = 0;
        for (std::size_t i = 0; i < axes; ++i) off += idx[i] * strides[i];
        for (std::size_t i = axes; i-- > 0;) {  // odometer
            if (++idx[i] < to[i]) break;
            idx[i] = 0;
        }
    }
    return offsets;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
    const std::size_t n = std::max(a.size(), b.size());
    Shape out(n);
    for (std::size_t i = 0; i < n; ++i) {
        // i counts from the right
        const std::size_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
        const std::size_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
        if (da != db && da != 1 && db != 1)
            fail("{}: shapes {} and {} do not broadcast: dimension {} from the right is {} vs {}",
                 op, shape_str(a), shape_str(b), i, da, db);
        out[n - 1 - i] = da == 1 ? db : da;
    }
    return out;
}

bool broadcasts_to(const Shape& from, const Shape& to) {
    if (from.size() > to.size()) return false;
    const std::size_t lead = to.size() - from.size();
    for (std::size_t i = 0; i < from.size(); ++i)
        if (from[i] != 1 && from[i] != to[lead + i]) return false;
    return true;
}

Array sum_to_shape(const Array& g, const Shape& target) {
    const Shape gs = shape_of(g);
    if (gs == target) return g;
    const std::size_t lead = gs.size() - target.size();
    // Sum the leading extra axes and every axis where the target has 1, in one pass.
    std::vector<std::size_t> axes;
    for (std::size_t i = 0; i < gs.size(); ++i)
        if (i < lead || (target[i - lead] == 1 && gs[i] != 1)) axes.push_back(i);
    Array reduced = sum_keepdim(g, axes);
    reduced.reshape(target);
    return reduced;
}

}  // namespace xtgrad
