#include <xtgrad/autograd/func.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/format.hpp>
#include <xtgrad/autograd/forward_ad.hpp>
#include <xtgrad/autograd/grad.hpp>
#include <xtgrad/autograd/grad_mode.hpp>
#include <xtgrad/autograd/ops.hpp>

#include <unistd.h>

#include <unordered_set>
#include <utility>

namespace xtgrad::func {

namespace {

// A Jacobian or Hessian is built whole: its columns, then the stacked result, twice its size. One
// that cannot fit in this machine's memory is refused before the first column is taken, not after
// minutes of filling memory.
void check_fits(std::size_t in_numel, std::size_t out_numel, const char* who, const char* what) {
    std::size_t elements = 0;
    const bool overflow = __builtin_mul_overflow(in_numel, out_numel, &elements);
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const double memory = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
    const double bytes = 2.0 * sizeof(float) * static_cast<double>(in_numel) * static_cast<double>(out_numel);
    if (memory > 0 && (overflow || bytes > memory))
        fail("func::{}: the {} would have {} output elements by {} input elements: {:.3g} GB to build as float32, "
             "more than this machine's {:.3g} GB of memory; take products with it instead (func::vjp, func::jvp, "
             "func::hvp)", who, what, out_numel, in_numel, bytes / 1e9, memory / 1e9);
}

std::size_t total_numel(const std::vector<Tensor>& xs) {
    std::size_t n = 0;
    for (const Tensor& x : xs) n += x.numel();
    return n;
}

// The inputs as f sees them, a tensor per slot, so that a tensor given twice has a derivative per
// slot (as torch.func): an input that requires grad behind a node of its own (an outer transform's
// graph, or the caller's, goes on through it), any other as a new leaf sharing its values.
//
// While a forward transform runs f, the new leaves of the reverse transforms inside it are kept
// here: results whose graph reaches only them (func::jvp(func::grad(f)) of plain inputs) are
// recorded through leaves no caller holds, so the forward transform returns them detached.
thread_local std::vector<Tensor>* inner_leaves = nullptr;

struct Primals {
    std::vector<Tensor> x;
    std::unordered_set<const TensorImpl*> slots;  // the x's autograd parts
    bool dual = false;  // an input carries a forward-mode tangent (an outer func::jvp's)
};
Primals primals_of(const std::vector<Tensor>& given, const char* who) {
    if (given.empty()) fail("func::{}: no inputs given", who);
    Primals p;
    for (std::size_t i = 0; i < given.size(); ++i) {
        if (!given[i].defined()) fail("func::{}: input {} is undefined", who, i);
        const Shape s = given[i].shape();
        p.x.push_back(given[i].requires_grad() ? reshape(given[i], std::vector<long>(s.begin(), s.end()))
                                               : given[i].detach().requires_grad_(true));
        if (!given[i].requires_grad() && inner_leaves != nullptr) inner_leaves->push_back(p.x.back());
        // a dual input stays dual (reshape's jvp rule did it; a new leaf is given the tangent), so
        // f's derivatives carry tangents: forward-over-reverse, as func::jvp(func::grad(f))
        if (detail::has_tangent(given[i])) {
            if (!given[i].requires_grad()) detail::set_tangent(p.x.back(), detail::tangent_of(given[i]));
            p.dual = true;
        }
        p.slots.insert(p.x.back().impl());
    }
    return p;
}

// Whether the graph of ys reaches a leaf that requires grad besides the slots.
bool reaches_leaf_besides(const std::vector<Tensor>& ys, const std::unordered_set<const TensorImpl*>& slots) {
    std::vector<const TensorImpl*> stack;
    std::unordered_set<const TensorImpl*> seen;
    for (const Tensor& y : ys)
        if (y.defined() && y.requires_grad()) stack.push_back(y.impl());
    while (!stack.empty()) {
        const TensorImpl* t = stack.back();
        stack.pop_back();
        if (!seen.insert(t).second) continue;
        const bool slot = slots.count(t) != 0;
        if (!t->grad_fn) {
            if (!slot && t->requires_grad) return true;
            continue;
        }
        for (const ImplPtr& in : t->grad_fn->inputs())
            if (in && in->requires_grad) stack.push_back(in.get());
    }
    return false;
}

// Whether f's results reach a tensor that requires grad besides the slots: an input that requires
// grad, or one f captured (a model's weights, an outer transform's variable). Then the results are
// recorded, so that derivatives through them are right; else they are constants. Always true for
// dual inputs (Primals::dual).
bool reaches_outside(const std::vector<Tensor>& ys, const Primals& p) {
    if (p.dual) return true;  // recorded: only derivatives taken in ops carry the inputs' tangents
    return reaches_leaf_besides(ys, p.slots);
}

// The transforms record with grad mode on (EnableGradGuard), inside a NoGradGuard too: they need their graph.
Tensor call(const Fn& f, const std::vector<Tensor>& x, const char* who) {
    Tensor y = f(x);
    if (!y.defined()) fail("func::{}: the function returned an undefined tensor", who);
    return y;
}

// Σ seeds[k] · d ys[k] / d x, one per input (zeros where nothing depends on it). Recorded
// (create_graph) unless `constant`: then detached, no graph kept.
Grads gradients(const std::vector<Tensor>& ys, const std::vector<Tensor>& x, const std::vector<Tensor>& seeds,
                bool constant) {
    std::vector<Tensor> outs, used;
    for (std::size_t k = 0; k < ys.size(); ++k)
        if (ys[k].requires_grad()) {
            outs.push_back(ys[k]);
            used.push_back(seeds[k]);
        }
    Grads g(x.size());
    if (!outs.empty())
        g = xtgrad::grad(outs, x, used, GradOptions().create_graph(!constant).retain_graph(true).allow_unused(true));
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (!g[i].defined()) g[i] = Tensor::zeros(x[i].shape());
        if (constant) g[i] = g[i].detach();
    }
    return g;
}

Tensor detached_if(const Tensor& t, bool constant) { return constant ? t.detach() : t; }

void check_like(const std::vector<Tensor>& tangents, const std::vector<Tensor>& primals, const char* who) {
    if (primals.empty()) fail("func::{}: no inputs given", who);
    for (std::size_t i = 0; i < primals.size(); ++i)
        if (!primals[i].defined()) fail("func::{}: input {} is undefined", who, i);
    if (tangents.size() != primals.size())
        fail("func::{}: {} tangents for {} inputs (one per input, shaped like it)", who, tangents.size(), primals.size());
    for (std::size_t i = 0; i < primals.size(); ++i) {
        if (!tangents[i].defined()) fail("func::{}: tangent {} is undefined", who, i);
        if (tangents[i].shape() != primals[i].shape())
            fail("func::{}: tangent {} has shape {} but input {} has shape {}", who, i, shape_str(tangents[i].shape()), i,
                 shape_str(primals[i].shape()));
    }
}

void check_one_element(const Tensor& y, const char* who) {
    if (y.numel() != 1)
        fail("func::{}: the function must return one element (a loss), got shape {}", who, shape_str(y.shape()));
}

// e_k: zeros of `shape` with a 1 at flat position k
Tensor unit(const Shape& shape, std::size_t k) {
    Tensor e = Tensor::zeros(shape);
    e.mutable_ptr()[k] = 1.f;
    return e;
}

Shape joined(const Shape& a, const Shape& b) {
    Shape s = a;
    s.insert(s.end(), b.begin(), b.end());
    return s;
}

// rows[k] (each of shape `inner`) stacked to (outer..., inner...)
Tensor stacked(const std::vector<Tensor>& rows, const Shape& outer, const Shape& inner) {
    std::vector<Tensor> flat;
    for (const Tensor& r : rows) flat.push_back(reshape(r, {1, -1}));
    const Shape s = joined(outer, inner);
    const Tensor all = flat.empty() ? Tensor::zeros(s) : cat(flat, 0);
    return reshape(all, std::vector<long>(s.begin(), s.end()));
}

// J · tangents at y = f(x): g(u) = Jᵀu is linear in u, and its gradient in u along the tangents is J · tangents
Tensor jvp_at(const Primals& p, const Tensor& y, const std::vector<Tensor>& tangents, bool record) {
    if (!y.requires_grad()) return Tensor::zeros(y.shape());
    const Tensor u = Tensor::zeros(y.shape(), true);
    const Grads g = gradients({y}, p.x, {u}, false);
    return gradients(g, {u}, tangents, !record)[0];
}

}  // namespace

std::function<Grads(const std::vector<Tensor>&)> grad(Fn f) {
    return [f = std::move(f)](const std::vector<Tensor>& inputs) {
        const EnableGradGuard on;
        const Primals p = primals_of(inputs, "grad");
        const Tensor y = call(f, p.x, "grad");
        check_one_element(y, "grad");
        return gradients({y}, p.x, {Tensor::ones(y.shape())}, !reaches_outside({y}, p));
    };
}

std::pair<Tensor, std::function<Grads(const Tensor&)>> vjp(const Fn& f, const std::vector<Tensor>& primals) {
    const EnableGradGuard on;
    Primals p = primals_of(primals, "vjp");
    Tensor y = call(f, p.x, "vjp");
    const bool record = reaches_outside({y}, p);
    auto back = [p, y, record](const Tensor& cotangent) {
        const EnableGradGuard on;
        if (!cotangent.defined() || cotangent.shape() != y.shape())
            fail("func::vjp: the cotangent has shape {} but the output has shape {}",
                 cotangent.defined() ? shape_str(cotangent.shape()) : std::string("(undefined)"), shape_str(y.shape()));
        return gradients({y}, p.x, {cotangent}, !(record || cotangent.requires_grad()));
    };
    return {detached_if(y, !record), back};
}

std::pair<Tensor, Tensor> jvp_by_double_backward(const Fn& f, const std::vector<Tensor>& primals,
                                                 const std::vector<Tensor>& tangents) {
    const EnableGradGuard on;
    check_like(tangents, primals, "jvp");
    const Primals p = primals_of(primals, "jvp");
    const Tensor y = call(f, p.x, "jvp");
    bool record = reaches_outside({y}, p);
    for (const Tensor& t : tangents) record = record || t.requires_grad();
    return {detached_if(y, !record), jvp_at(p, y, tangents, record)};
}

std::function<Grads(const std::vector<Tensor>&)> jacrev(Fn f) {
    return [f = std::move(f)](const std::vector<Tensor>& inputs) {
        const EnableGradGuard on;
        const Primals p = primals_of(inputs, "jacrev");
        const Tensor y = call(f, p.x, "jacrev");
        check_fits(total_numel(p.x), y.numel(), "jacrev", "Jacobian");
        const bool record = reaches_outside({y}, p);
        std::vector<std::vector<Tensor>> rows(p.x.size());
        for (std::size_t k = 0; k < y.numel(); ++k) {
            const Grads g = gradients({y}, p.x, {unit(y.shape(), k)}, !record);
            for (std::size_t i = 0; i < p.x.size(); ++i) rows[i].push_back(g[i]);
        }
        Grads jac;
        for (std::size_t i = 0; i < p.x.size(); ++i) jac.push_back(stacked(rows[i], y.shape(), p.x[i].shape()));
        return jac;
    };
}

namespace {
// columns[k] = J e_k (each output-shaped) stacked to (output..., input...)
Tensor jacobian_of_columns(const std::vector<Tensor>& columns, const Shape& input, const Shape& output) {
    const Tensor by_input = stacked(columns, input, output);  // (input..., output...)
    std::vector<int> order;
    const int ni = static_cast<int>(input.size()), no = static_cast<int>(output.size());
    for (int d = 0; d < no; ++d) order.push_back(ni + d);
    for (int d = 0; d < ni; ++d) order.push_back(d);
    return order.empty() ? by_input : permute(by_input, order);
}

// Collects the inner reverse transforms' new leaves while a forward transform runs f.
struct InnerLeavesScope {
    std::vector<Tensor> leaves;
    std::vector<Tensor>* outer = std::exchange(inner_leaves, &leaves);
    InnerLeavesScope() = default;
    InnerLeavesScope(const InnerLeavesScope&) = delete;
    InnerLeavesScope& operator=(const InnerLeavesScope&) = delete;
    ~InnerLeavesScope() { inner_leaves = outer; }
};

// J · tangents in forward mode: f once on dual inputs (an undefined tangent: that input plain)
std::pair<Tensor, Tensor> forward_jvp(const Fn& f, const std::vector<Tensor>& primals,
                                      const std::vector<Tensor>& tangents, const char* who) {
    if (forward_ad::dual_level_active())
        fail("func::{}: called inside a dual level; nested forward mode is not supported (use "
             "func::jvp_by_double_backward there)", who);
    forward_ad::DualLevel level;
    std::vector<Tensor> x;
    for (std::size_t i = 0; i < primals.size(); ++i) {
        if (!primals[i].defined()) fail("func::{}: input {} is undefined", who, i);
        x.push_back(tangents[i].defined() ? forward_ad::make_dual(primals[i], tangents[i]) : primals[i]);
    }
    InnerLeavesScope scope;
    const Tensor y = call(f, x, who);
    forward_ad::UnpackedDual out = forward_ad::unpack_dual(y);
    if (!out.tangent.defined()) out.tangent = Tensor::zeros(y.shape());  // f does not depend on the inputs
    std::unordered_set<const TensorImpl*> inner;
    for (const Tensor& leaf : scope.leaves) inner.insert(leaf.impl());
    if (!scope.leaves.empty() && !reaches_leaf_besides({out.primal, out.tangent}, inner))
        return {out.primal.detach(), out.tangent.detach()};
    return {out.primal, out.tangent};
}
}  // namespace

std::pair<Tensor, Tensor> jvp(const Fn& f, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents) {
    check_like(tangents, primals, "jvp");
    return forward_jvp(f, primals, tangents, "jvp");
}

std::function<Grads(const std::vector<Tensor>&)> jacfwd(Fn f) {
    return [f = std::move(f)](const std::vector<Tensor>& inputs) {
        if (inputs.empty()) fail("func::jacfwd: no inputs given");
        Grads jac;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            if (!inputs[i].defined()) fail("func::jacfwd: input {} is undefined", i);
            std::vector<Tensor> columns, tangents(inputs.size());  // J e_k for each element k of input i
            Shape out_shape;
            for (std::size_t k = 0; k < inputs[i].numel(); ++k) {
                tangents[i] = unit(inputs[i].shape(), k);
                columns.push_back(forward_jvp(f, inputs, tangents, "jacfwd").second);
                out_shape = columns.back().shape();
                if (k == 0) check_fits(inputs[i].numel(), columns.back().numel(), "jacfwd", "Jacobian");
            }
            if (columns.empty()) out_shape = call(f, inputs, "jacfwd").shape();  // an empty input: (output..., 0...)
            jac.push_back(jacobian_of_columns(columns, inputs[i].shape(), out_shape));
        }
        return jac;
    };
}

std::function<Grads(const std::vector<Tensor>&)> jacfwd_by_double_backward(Fn f) {
    return [f = std::move(f)](const std::vector<Tensor>& inputs) {
        const EnableGradGuard on;
        const Primals p = primals_of(inputs, "jacfwd");
        const Tensor y = call(f, p.x, "jacfwd");
        check_fits(total_numel(p.x), y.numel(), "jacfwd", "Jacobian");
        const bool record = reaches_outside({y}, p);
        Grads jac;
        for (std::size_t i = 0; i < p.x.size(); ++i) {
            std::vector<Tensor> columns;  // J e_k for each element k of input i
            for (std::size_t k = 0; k < p.x[i].numel(); ++k) {
                std::vector<Tensor> tangents;
                for (std::size_t j = 0; j < p.x.size(); ++j)
                    tangents.push_back(j == i ? unit(p.x[j].shape(), k) : Tensor::zeros(p.x[j].shape()));
                columns.push_back(jvp_at(p, y, tangents, record));
            }
            jac.push_back(jacobian_of_columns(columns, p.x[i].shape(), y.shape()));
        }
        return jac;
    };
}

std::function<std::vector<Grads>(const std::vector<Tensor>&)> hessian(Fn f) {
    return [f = std::move(f)](const std::vector<Tensor>& inputs) {
        const EnableGradGuard on;
        const Primals p = primals_of(inputs, "hessian");
        const Tensor y = call(f, p.x, "hessian");
        check_one_element(y, "hessian");
        check_fits(total_numel(p.x), total_numel(p.x), "hessian", "Hessian");  // blocks (i, j): (Σ numel)² in all
        const bool record = reaches_outside({y}, p);
        const Grads g = gradients({y}, p.x, {Tensor::ones(y.shape())}, false);
        std::vector<Grads> h(p.x.size());
        for (std::size_t i = 0; i < p.x.size(); ++i) {
            std::vector<std::vector<Tensor>> rows(p.x.size());  // rows[j][k]: d g_i[k] / d x_j
            for (std::size_t k = 0; k < p.x[i].numel(); ++k) {
                const Grads d = gradients({g[i]}, p.x, {unit(g[i].shape(), k)}, !record);
                for (std::size_t j = 0; j < p.x.size(); ++j) rows[j].push_back(d[j]);
            }
            for (std::size_t j = 0; j < p.x.size(); ++j) h[i].push_back(stacked(rows[j], p.x[i].shape(), p.x[j].shape()));
        }
        return h;
    };
}

std::pair<Tensor, Grads> hvp(const Fn& f, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents) {
    const EnableGradGuard on;
    check_like(tangents, primals, "hvp");
    const Primals p = primals_of(primals, "hvp");
    const Tensor y = call(f, p.x, "hvp");
    check_one_element(y, "hvp");
    bool record = reaches_outside({y}, p);
    for (const Tensor& t : tangents) record = record || t.requires_grad();
    const Grads g = gradients({y}, p.x, {Tensor::ones(y.shape())}, false);
    return {detached_if(y, !record), gradients(g, p.x, tangents, !record)};
}

}  // namespace xtgrad::func
