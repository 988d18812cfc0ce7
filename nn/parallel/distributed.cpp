#include "nn/parallel/distributed.hpp"

#include "autograd/error.hpp"
#include "autograd/node.hpp"
#include "autograd/post_accumulate_hooks.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
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

// Rank 0's tensor values to every process, after checking that every process has the same
// tensors (a different model on one rank would otherwise corrupt or hang the broadcasts).
void broadcast_from_rank0(const NamedTensors& tensors) {
    std::vector<std::uint64_t> sizes{tensors.size()};
    for (const auto& [name, t] : tensors) sizes.push_back(t.numel());
    std::vector<std::uint64_t> root = sizes;
    std::uint64_t count = root.size();
    distributed::broadcast(&count, sizeof count, 0, "DistributedDataParallel: broadcast of the parameter count");
    root.resize(count);
    distributed::broadcast(root.data(), count * sizeof(std::uint64_t), 0,
                           "DistributedDataParallel: broadcast of the parameter sizes");
    if (root != sizes)
        fail("DistributedDataParallel: rank {} has {} parameters and buffers ({} values) but rank 0 has {} "
             "(every process must build the same model)", distributed::get_rank(), tensors.size(),
             [&] { std::uint64_t n = 0; for (std::size_t i = 1; i < sizes.size(); ++i) n += sizes[i]; return n; }(),
             root.empty() ? 0 : root[0]);
    for (const auto& [name, t] : tensors) {
        Tensor v = t;
        distributed::broadcast(v.mutable_ptr(), v.numel() * sizeof(float), 0, "DistributedDataParallel: broadcast of the parameters");
    }
}

}  // namespace

std::vector<Tensor> output_tensors(const Tensor& t) { return {t}; }

Reducer::Reducer(const Module& module, const DDPOptions& options) : find_unused_(options.find_unused_parameters) {
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
    stats_.buckets = buckets_.size();
}

void Reducer::install_hooks() {
    const std::weak_ptr<Reducer> self = weak_from_this();
    for (std::size_t i = 0; i < params_.size(); ++i)
        register_post_accumulate_grad_hook(params_[i], [self, i](TensorImpl&) {
            if (const auto r = self.lock()) r->on_gradient(i);
        });
}

std::vector<std::string> Reducer::unready_names() const {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < params_.size(); ++i)
        if (!ready_[i]) names.push_back(params_[i].name().empty() ? fmt::format("#{}", i) : params_[i].name());
    return names;
}

void Reducer::prepare_for_forward() {
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
    if (phase_ != Phase::reducing) return;
    if (ready_[param])
        fail("DistributedDataParallel: parameter '{}' received a second gradient in one step (two backward "
             "passes after one forward? use no_sync() to accumulate)", params_[param].name());
    ++gradients_seen_;
    mark_ready(param);
}

void Reducer::mark_ready(std::size_t param) {
    const auto t0 = Clock::now();
    Bucket& b = buckets_[bucket_of_[param]];
    float* slot = b.buffer.data() + offset_of_[param];
    const std::size_t n = params_[param].numel();
    const float scale = 1.f / static_cast<float>(distributed::get_world_size());
    if (params_[param].has_grad()) {
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
    for (std::size_t k = 0; k < next_launch_; ++k) buckets_[k].work.is_completed();
    stats_.hook_seconds += seconds_since(t0);
    if (next_launch_ == buckets_.size()) finalize();
}

// In index order only: every process must start the same collectives in the same order.
void Reducer::launch_ready_buckets() {
    while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) {
        Bucket& b = buckets_[next_launch_];
        b.work = distributed::all_reduce_async(b.buffer.data(), b.buffer.size(),
                                               "DistributedDataParallel: gradient allreduce");
        ++next_launch_;
    }
}

void Reducer::finalize() {
    const auto t0 = Clock::now();
    for (Bucket& b : buckets_) {
        b.work.wait();
        for (std::size_t k = 0; k < b.params.size(); ++k) {
            Tensor& p = params_[b.params[k]];
            const float* slot = b.buffer.data() + b.offsets[k];
            const std::size_t n = p.numel();
            if (!p.has_grad()) {  // unused here (find_unused_parameters): a gradient only if another rank had one
                if (std::all_of(slot, slot + n, [](float v) { return v == 0.f; })) continue;
                p.impl()->grad = std::make_shared<Array>(empty_array(p.shape()));
            }
            std::copy(slot, slot + n, p.grad_array().data());
        }
    }
    phase_ = Phase::idle;
    stats_.wait_seconds += seconds_since(t0);
    ++stats_.steps;
}

}  // namespace detail

}  // namespace xtgrad::nn::parallel
