// GradOut: the one contract by which a backward kernel writes an input's gradient.
//
// During a backward pass every input has one gradient buffer (TensorImpl::incoming) that all
// its consumers write into. The first consumer to write finds no buffer: Node::grad_out() makes
// one WITHOUT zeroing it (`fresh`), and the kernel must overwrite every element. A later
// consumer finds the running sum and must add to it. GradOut carries that one bit and applies
// it, so a kernel is written once:
//
//   elementwise / row kernels   dx.write([&](float* d, auto store) { for (...) store(d[i], v); });
//                               `store` is Assign (d = v) or Add (d += v), chosen once per call,
//                               not per element, so both loops vectorise.
//   GEMMs                       gemm(..., dx.beta(), dx.data())     beta 0 overwrites, 1 adds
//   scatter-adds (embedding,    float* d = dx.zeroed();  d[j] += ...  a scatter must read what it
//   column sums, col2im)        adds to, so a fresh buffer is zeroed first (only then: a running
//                               sum is added to as it is)
//   a whole gradient array      Node::accumulate(i, g): moved in when fresh (no copy), added
//                               otherwise; a broadcast gradient is summed back to the input's shape
//
// Why not llm.c's "backward always accumulates" (every buffer zeroed, every kernel +=)? It is
// simpler, but zeroing every intermediate's gradient is one more full-size pass per tensor per
// step, and the first write is by far the common case (a tensor with one consumer). The explicit
// overwrite-or-add policy keeps those passes away and costs one branch per kernel call.
#pragma once

#include <algorithm>
#include <cstddef>

namespace xtgrad {

struct Assign {  // the first write into a fresh buffer
    void operator()(float& dst, float v) const { dst = v; }
};
struct Add {  // a later write into a running sum
    void operator()(float& dst, float v) const { dst += v; }
};

class GradOut {
public:
    GradOut() = default;  // no gradient wanted: false, kernels skip the work
    GradOut(float* data, std::size_t size, bool fresh) : data_(data), size_(size), fresh_(fresh) {}
    // For kernels called outside a graph (tests, benchmarks).
    static GradOut overwrite(float* data, std::size_t size) { return {data, size, true}; }
    static GradOut add_into(float* data, std::size_t size) { return {data, size, false}; }

    explicit operator bool() const { return data_ != nullptr; }
    float* data() const { return data_; }
    std::size_t size() const { return size_; }
    bool fresh() const { return fresh_; }     // true: the buffer holds garbage; the first write overwrites
    float beta() const { return fresh_ ? 0.f : 1.f; }  // GEMM's beta for this buffer

    // Runs body(data, store) with store = Assign for a fresh buffer, Add for a running sum.
    template <class Body>
    void write(Body&& body) const {
        if (fresh_)
            body(data_, Assign{});
        else
            body(data_, Add{});
    }

    // The elements [offset, offset + n) alone, for a kernel that writes only those (linear_rows:
    // the row block of a packed weight's gradient). A fresh buffer gets zeros everywhere else
    // first, so the whole buffer is written once the part is.
    GradOut part(std::size_t offset, std::size_t n) const {
        if (fresh_) {
            std::fill(data_, data_ + offset, 0.f);
            std::fill(data_ + offset + n, data_ + size_, 0.f);
        }
        return {data_ + offset, n, fresh_};
    }

    // The buffer, ready to be added into (scatter-adds): zero-filled if fresh. Afterwards the
    // buffer counts as a running sum.
    float* zeroed() {
        if (fresh_) std::fill(data_, data_ + size_, 0.f);
        fresh_ = false;
        return data_;
    }

private:
    float* data_ = nullptr;
    std::size_t size_ = 0;
    bool fresh_ = false;
};

}  // namespace xtgrad
