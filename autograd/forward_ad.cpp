#include <xtgrad/autograd/forward_ad.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/format.hpp>
#include <xtgrad/autograd/ops.hpp>
#include <xtgrad/autograd/ops/common.hpp>

#include <algorithm>
#include <atomic>
#include <memory>

namespace xtgrad {

thread_local std::uint64_t detail::forward_level = 0;

namespace {
std::atomic<std::uint64_t> next_level{1};
// The autograd parts given a tangent at the active level, cleared when it ends: a tangent may
// hold its tensor's graph (exp's tangent t · y has y as an edge), a cycle only this breaks.
thread_local std::vector<std::weak_ptr<TensorImpl>> with_tangents;
thread_local std::size_t prune_at = 1024;

// Adds t to with_tangents. The entries of tensors already gone are dropped whenever the list has
// doubled since the last pass: an expired weak_ptr still holds its tensor's block (make_shared),
// so a long loop of ops inside one level grew without bound (~640 B per op).
void remember(const std::shared_ptr<TensorImpl>& t) {
    if (with_tangents.size() >= prune_at) {
        std::erase_if(with_tangents, [](const std::weak_ptr<TensorImpl>& w) { return w.expired(); });
        prune_at = std::max<std::size_t>(1024, 2 * with_tangents.size());
    }
    with_tangents.push_back(t);
}

bool at_level(const TensorImpl& impl) { return impl.tangent_level != 0 && impl.tangent_level == detail::forward_level; }

// A new handle on t's values without t's tangent: a new leaf, or an identity node when t is in a
// reverse-mode graph (so gradients still reach t), computed with the level suspended.
Tensor plain_handle(const Tensor& t) {
    if (!records_graph({t})) return t.detach();
    detail::ForwardSuspended off;
    const Shape s = t.shape();
    return reshape(t, std::vector<long>(s.begin(), s.end()));
}
}  // namespace

namespace forward_ad {

DualLevel::DualLevel() {
    if (detail::forward_level != 0)
        fail("forward_ad::DualLevel: dual level {} is still active on this thread; nested dual levels are not "
             "supported (end the first one before making another)",
             detail::forward_level);
    id_ = next_level++;
    detail::forward_level = id_;
}

DualLevel::~DualLevel() {
    for (const std::weak_ptr<TensorImpl>& w : with_tangents)
        if (const std::shared_ptr<TensorImpl> impl = w.lock(); impl && impl->tangent_level == id_) {
            impl->tangent.reset();
            impl->tangent_missing.clear();
            impl->tangent_level = 0;
        }
    with_tangents.clear();
    prune_at = 1024;
    // a level ended on a thread other than its own (moved there on the heap) leaves that thread's
    // level alone
    if (detail::forward_level == id_) detail::forward_level = 0;
}

bool dual_level_active() { return detail::forward_active(); }

Tensor make_dual(const Tensor& primal, const Tensor& tangent) {
    if (!detail::forward_active())
        fail("make_dual: no dual level is active (make a forward_ad::DualLevel first)");
    detail::require_defined(primal, "make_dual", "the primal");
    detail::require_defined(tangent, "make_dual", "the tangent");
    if (primal.shape() != tangent.shape())
        fail("make_dual: the tangent has shape {} but the primal has shape {}", shape_str(tangent.shape()),
             shape_str(primal.shape()));
    if (detail::has_tangent(primal))
        fail("make_dual: the primal (shape {}) already carries a tangent at this dual level", shape_str(primal.shape()));
    Tensor dual = plain_handle(primal);
    detail::set_tangent(dual, tangent);
    return dual;
}

UnpackedDual unpack_dual(const Tensor& t) {
    detail::require_defined(t, "unpack_dual", "the tensor");
    if (!detail::has_tangent(t)) return {t, Tensor()};
    Tensor tangent = detail::tangent_of(t);  // an Error if t's op had no jvp rule
    return {plain_handle(t), std::move(tangent)};
}

}  // namespace forward_ad

namespace detail {

void set_tangent(const Tensor& t, Tensor tangent) {
    TensorImpl& impl = *t.impl();
    impl.tangent = std::make_shared<const Tensor>(std::move(tangent));
    impl.tangent_missing.clear();
    impl.tangent_level = forward_level;
    remember(t.impl_ptr());
}

bool has_tangent(const Tensor& t) { return t.defined() && at_level(*t.impl()); }

Tensor tangent_of(const Tensor& t) {
    if (!has_tangent(t)) return Tensor();
    const TensorImpl& impl = *t.impl();
    if (!impl.tangent_missing.empty())
        fail("forward AD: {} has no jvp rule, and a tangent reached it (its output, shape {}, has no tangent)",
             impl.tangent_missing, shape_str(t.shape()));
    return *impl.tangent;
}

void mark_missing_jvp(const Tensor& result, const char* op, const std::vector<Tensor>& inputs) {
    for (const Tensor& in : inputs)
        if (has_tangent(in)) {
            TensorImpl& impl = *result.impl();
            impl.tangent.reset();
            impl.tangent_missing = op;
            impl.tangent_level = forward_level;
            remember(result.impl_ptr());
            return;
        }
}

Tensor apply_jvp(Tensor result, const std::vector<const Tensor*>& inputs, const JvpRule& rule) {
    Tangents t;
    bool any = false;
    for (const Tensor* in : inputs) {
        t.t.push_back(in != nullptr ? tangent_of(*in) : Tensor());
        any = any || t.t.back().defined();
    }
    if (!any) return result;
    Tensor tangent;
    {
        ForwardSuspended off;
        tangent = rule(t);
        if (tangent.defined() && tangent.shape() != result.shape()) tangent = expand(tangent, result.shape());
    }
    const char* op = result.grad_fn() ? result.grad_fn()->op().c_str() : "an op";
    if (!tangent.defined()) fail("forward AD: the jvp rule of {} returned no tangent", op);
    set_tangent(result, std::move(tangent));
    return result;
}

Tensor add_terms(const Tensor& x, const Tensor& y) {
    if (!x.defined()) return y;
    if (!y.defined()) return x;
    return add(x, y);
}

}  // namespace detail

}  // namespace xtgrad
