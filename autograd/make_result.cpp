#include <xtgrad/autograd/make_result.hpp>

#include <xtgrad/autograd/anomaly.hpp>
#include <xtgrad/autograd/grad_mode.hpp>

#include <utility>

namespace xtgrad {

bool records_graph(const std::vector<Tensor>& inputs) {
    if (!is_grad_enabled()) return false;
    for (const Tensor& t : inputs)
        if (t.defined() && t.requires_grad()) return true;
    return false;
}

Tensor make_result(Array out, const char* op, const std::vector<Tensor>& inputs, std::vector<SavedRecord> saved,
                   Node::BackwardFn backward, SourceLocation where) {
    return attach_grad_fn(Tensor(std::move(out)), op, inputs, std::move(saved), std::move(backward), where);
}

Tensor attach_grad_fn(Tensor result, const char* op, const std::vector<Tensor>& inputs,
                      std::vector<SavedRecord> saved, Node::BackwardFn backward, SourceLocation where) {
    if (anomaly_detection_enabled()) detail::check_forward_anomaly(result.data(), op, inputs, where);
    if (!records_graph(inputs)) return result;
    std::vector<ImplPtr> edges;
    edges.reserve(inputs.size());
    for (const Tensor& t : inputs) edges.push_back(t.graph_ptr());  // the slot, not the values
    TensorImpl& out = *result.impl();
    out.shape_at_creation = out.shape();
    out.leaf_values.reset();  // the graph holds the autograd part only; handles and closures the values
    out.requires_grad = true;
    out.grad_fn = std::make_shared<Node>(op, std::move(edges), std::move(saved), std::move(backward), where);
    return result;
}

}  // namespace xtgrad
