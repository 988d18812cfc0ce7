#include <xtgrad/nn/parallel/distributed.hpp>

#include <xtgrad/nn/parallel/agreement.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/post_accumulate_hooks.hpp>

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <unordered_set>

namespace xtgrad::nn::parallel {

std::vector<std::vector<std::size_t>> compute_bucket_assignment_by_size(const std::vector<std::size_t>& bytes,
                                                                         std::size_t first_cap_bytes,
                                                                         std::size_t cap_bytes) {
    std::vector<std::vector<std::size_t>> buckets;
    std::vector<std::size_t> current;
    std::size_t size = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        current.push_back(i);
        size += bytes[i];
        if (size >= (buckets.empty() ? first_cap_bytes : cap_bytes)) {
            buckets.push_back(std::move(current));
            current.clear();
            size = 0;
        }
    }
    if (!current.empty()) buckets.push_back(std::move(current));
    return buckets;
}

namespace detail {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Checks that every process built the same model (names, shapes, frozen parameters), then
// gives every process rank 0's values. A difference on any rank is an Error on every rank,
// naming the ranks that differ and how, so that no process goes on to collectives the others
// never join (wrong gradients, MPI_ERR_TRUNCATE or a hang).
void broadcast_from_rank0(const NamedTensors& tensors) {
    agree(difference_from_rank0(tensors), "DistributedDataParallel",
          "differ from rank 0 (every process must build the same model)");
    for (const auto& [name, t] : tensors) {
        Tensor v = t;
        distributed::broadcast(v.mutable_ptr(), v.numel() * sizeof(float), 0, "DistributedDataParallel: broadcast of the parameters");
    }
}

}  // namespace

std::vector<Tensor> output_tensors(const Tensor& t) { return {t}; }

Reducer::Reducer(const Module& module, const DDPOptions& options)
    : weight_(1.0 / distributed::get_world_size()), find_unused_(options.find_unused_parameters) {
    if (!(options.bucket_cap_mb > 0) || !(options.first_bucket_cap_mb > 0))
        fail("DistributedDataParallel: bucket caps must be positive, got bucket_cap_mb {} and first_bucket_cap_mb {}",
             options.bucket_cap_mb, options.first_bucket_cap_mb);
    broadcast_from_rank0(module.state_dict());
    for (const Tensor& p : module.parameters())
        if (p.requires_grad()) params_.push_back(p);
    if (params_.empty()) fail("DistributedDataParallel: the module has no parameter that requires grad");

    // Backward produces gradients roughly in reverse registration order: buckets follow it.
    std::vector<std::size_t> bytes;
    for (std::size_t k = params_.size(); k-- > 0;) bytes.push_back(params_[k].numel() * sizeof(float));
    const auto mb = [](double m) { return static_cast<std::size_t>(m * 1024 * 1024); };
    assignment_ = compute_bucket_assignment_by_size(bytes, mb(options.first_bucket_cap_mb), mb(options.bucket_cap_mb));
    bucket_of_.resize(params_.size());
    offset_of_.resize(params_.size());
    for (std::vector<std::size_t>& members : assignment_) {
        Bucket b;
        std::size_t offset = 0;
        for (std::size_t& i : members) {
            i = params_.size() - 1 - i;  // back to registration order
            bucket_of_[i] = buckets_.size();
            offset_of_[i] = offset;
            b.params.push_back(i);
            b.offsets.push_back(offset);
            offset += params_[i].numel();
        }
        b.buffer.resize(offset);
        buckets_.push_back(std::move(b));
    }
    ready_.assign(params_.size(), false);
    averaged_.resize(params_.size());
    stats_.buckets = buckets_.size();
}

void Reducer::set_gradient_weight(double weight) {
    if (!(weight >= 0 && weight <= 1))
        fail("DistributedDataParallel::set_gradient_weight: the weight must be in [0, 1], got {}", weight);
    weight_ = weight;
}

void Reducer::install_hooks() {
    for (const Tensor& p : params_)
        if (has_post_accumulate_grad_hook(p, hook_owner::optimizer_in_backward))
            fail("DistributedDataParallel: parameter '{}' steps in backward (an optim::OptimizerInBackward), which would "
                 "update it from this process's own gradient before the average exists; destroy the "
                 "OptimizerInBackward and step after backward", p.name());
    const std::weak_ptr<Reducer> self = weak_from_this();
    for (std::size_t i = 0; i < params_.size(); ++i)
        register_post_accumulate_grad_hook(
            params_[i], [self, i](TensorImpl&) {
                if (const auto r = self.lock()) r->on_gradient(i);
            },
            {.owner = hook_owner::ddp});
}

std::vector<std::string> Reducer::unready_names() const {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < params_.size(); ++i)
        if (!ready_[i]) names.push_back(params_[i].name().empty() ? fmt::format("#{}", i) : params_[i].name());
    return names;
}

void Reducer::prepare_for_forward() {
    if (phase_ == Phase::reduced) phase_ = Phase::idle;
    if (phase_ == Phase::reducing && gradients_seen_ > 0)
        fail("DistributedDataParallel: the previous backward did not produce gradients for {} of {} parameters "
             "({}), so their buckets were never averaged; every parameter must take part in the loss, or "
             "construct with find_unused_parameters = true", params_.size() - ready_count_, params_.size(),
             fmt::join(unready_names(), ", "));
}

void Reducer::prepare_for_backward(const std::vector<Tensor>& outputs) {
    if (!sync_) {
        phase_ = Phase::skip;
        return;
    }
    for (const Tensor& p : params_)
        if (!p.requires_grad())
            fail("DistributedDataParallel: parameter '{}' was frozen (requires_grad false) after the wrapper was "
                 "built; freeze parameters before constructing DistributedDataParallel, the same in every process",
                 p.name());
    phase_ = Phase::reducing;
    std::fill(ready_.begin(), ready_.end(), false);
    ready_count_ = gradients_seen_ = 0;
    next_launch_ = 0;
    for (Bucket& b : buckets_) b.pending = b.params.size();

    // Which parameters can the outputs' gradients reach? (A walk over grad_fn -> inputs.)
    std::unordered_set<const TensorImpl*> reached;
    std::vector<const TensorImpl*> stack;
    for (const Tensor& out : outputs)
        if (out.defined()) stack.push_back(out.impl());
    while (!stack.empty()) {
        const TensorImpl* t = stack.back();
        stack.pop_back();
        if (!reached.insert(t).second || !t->grad_fn) continue;
        for (const ImplPtr& in : t->grad_fn->inputs())
            if (in && in->requires_grad) stack.push_back(in.get());
    }
    std::vector<std::size_t> unused;
    for (std::size_t i = 0; i < params_.size(); ++i)
        if (!reached.contains(params_[i].impl())) unused.push_back(i);
    if (unused.empty()) return;
    if (!find_unused_) {
        std::vector<std::string> names;
        for (std::size_t i : unused) names.push_back(params_[i].name());
        phase_ = Phase::idle;
        fail("DistributedDataParallel: the forward's output does not depend on {} parameter(s) ({}); their "
             "gradients would never be averaged. Construct with find_unused_parameters = true, or freeze them "
             "(requires_grad false) before wrapping", unused.size(), fmt::join(names, ", "));
    }
    for (std::size_t i : unused) mark_ready(i);  // zeros in their bucket slots
}

void Reducer::on_gradient(std::size_t param) {
    // A backward not armed by ddp.forward (no_sync, or the module called directly) stays local, as torch.
    // But one that adds into a gradient this reducer averaged (a second backward after one
    // ddp.forward, without zero_grad) would mix in a gradient the other processes never see:
    // torch lets it pass and the replicas drift apart; here it is refused.
    const bool onto_averaged = phase_ == Phase::reduced && params_[param].impl()->grad &&
                               params_[param].impl()->grad == averaged_[param].lock();
    if (onto_averaged || (phase_ == Phase::reducing && ready_[param]))
        fail("DistributedDataParallel: parameter '{}' received a second gradient after one forward (two backward "
             "passes after one ddp.forward? the first one's gradients were already averaged; use no_sync() to "
             "accumulate, or call ddp.forward again)", params_[param].name());
    if (phase_ != Phase::reducing) return;
    if (ready_[param])
        fail("DistributedDataParallel: parameter '{}' received a second gradient in one step (two backward "
             "passes after one forward? use no_sync() to accumulate)", params_[param].name());
    ++gradients_seen_;
    mark_ready(param);
}

void Reducer::mark_ready(std::size_t param) {
    const auto t0 = Clock::now();
    if (ready_count_ == 0) step_start_ = t0;
    Bucket& b = buckets_[bucket_of_[param]];
    float* slot = b.buffer.data() + offset_of_[param];
    const std::size_t n = params_[param].numel();
    const float scale = static_cast<float>(weight_);
    if (params_[param].has_grad()) {
        check_gradient_shape(param);
        const float* g = params_[param].grad_array().data();
        for (std::size_t k = 0; k < n; ++k) slot[k] = g[k] * scale;
    } else {
        std::fill(slot, slot + n, 0.f);
    }
    ready_[param] = true;
    ++ready_count_;
    --b.pending;
    launch_ready_buckets();
    // MPI moves a non-blocking collective along only inside MPI calls: poll the ones in flight.
    for (std::size_t k = 0; k < next_launch_; ++k)
        if (buckets_[k].work.is_completed() && !buckets_[k].finished) {
            buckets_[k].finished = true;
            buckets_[k].timing.finish = seconds_since(step_start_);
        }
    stats_.hook_seconds += seconds_since(t0);
    if (next_launch_ == buckets_.size()) finalize();
}

// A gradient set through grad_array() or by a hook may have another shape than its parameter:
// copying it into (or out of) the bucket would read or write past it.
void Reducer::check_gradient_shape(std::size_t param) const {
    const Tensor& p = params_[param];
    const Array& g = p.grad_array();
    if (shape_of(g) != p.shape())
        fail("DistributedDataParallel: the gradient of parameter '{}' has shape {}, the parameter has shape {} (a "
             "gradient set through grad_array() or a hook must keep the parameter's shape)", p.name(),
             shape_str(shape_of(g)), shape_str(p.shape()));
}

// In index order only: every process must start the same collectives in the same order.
void Reducer::launch_ready_buckets() {
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
        Bucket& b = buckets_[next_launch_];
        b.finished = false;
        b.timing = {.bytes = b.buffer.size() * sizeof(float), .launch = seconds_since(step_start_)};
        b.work = distributed::all_reduce_async(b.buffer.data(), b.buffer.size(),
                                               "DistributedDataParallel: gradient allreduce");
        ++next_launch_;
    }
}

void Reducer::finalize() {
    const auto t0 = Clock::now();
    stats_.last_backward_end = seconds_since(step_start_);
    stats_.last_step.clear();
    for (Bucket& b : buckets_) {
        const auto w0 = Clock::now();
        b.work.wait();
        b.timing.wait = seconds_since(w0);
        if (!b.finished) b.timing.finish = seconds_since(step_start_);
        stats_.last_step.push_back(b.timing);
        for (std::size_t k = 0; k < b.params.size(); ++k) {
            Tensor& p = params_[b.params[k]];
            const float* slot = b.buffer.data() + b.offsets[k];
            const std::size_t n = p.numel();
            if (!p.has_grad()) {  // unused here (find_unused_parameters): a gradient only if another rank had one
                if (std::all_of(slot, slot + n, [](float v) { return v == 0.f; })) continue;
                p.impl()->grad = std::make_shared<Array>(empty_array(p.shape()));
            }
            check_gradient_shape(b.params[k]);
            std::copy(slot, slot + n, p.grad_array().data());
            averaged_[b.params[k]] = p.impl()->grad;
        }
    }
    phase_ = Phase::reduced;
    stats_.wait_seconds += seconds_since(t0);
    ++stats_.steps;
}

}  // namespace detail

double hidden_fraction(const ReducerStats& stats) {
    double total = 0, hidden = 0;
    for (const BucketTiming& b : stats.last_step) {
        total += b.finish - b.launch;
        hidden += std::max(0.0, std::min(b.finish, stats.last_backward_end) - b.launch);
    }
    return total > 0 ? hidden / total : 0;
}

}  // namespace xtgrad::nn::parallel
