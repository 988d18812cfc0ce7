#include <xtgrad/nn/parallel/distributed.hpp>

#include <xtgrad/nn/parallel/agreement.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/node.hpp>
#include <xtgrad/autograd/post_accumulate_hooks.hpp>

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
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

// Options every process must share: other bucket caps cut other buckets, so the allreduces
// would pair buffers of different sizes (wrong gradients on one rank, MPI_ERR_TRUNCATE on the
// other); another find_unused_parameters lets one rank refuse a forward the others reduce.
std::string options_text(const DDPOptions& o) {
    return fmt::format("bucket_cap_mb {}, first_bucket_cap_mb {}, find_unused_parameters {}", o.bucket_cap_mb,
                       o.first_bucket_cap_mb, o.find_unused_parameters);
}

// Checks the options and that every process built the same model (names, shapes, frozen
// parameters) with the same options, then gives every process rank 0's values. A problem on any
// rank is an Error on every rank, naming the ranks and how, so that no process goes on to
// collectives the others never join (wrong gradients, MPI_ERR_TRUNCATE or a timeout).
void check_and_broadcast(const NamedTensors& tensors, const DDPOptions& options) {
    std::string bad;
    if (!(options.bucket_cap_mb > 0) || !(options.first_bucket_cap_mb > 0))
        bad = fmt::format("DistributedDataParallel: bucket caps must be positive, got bucket_cap_mb {} and "
                          "first_bucket_cap_mb {}", options.bucket_cap_mb, options.first_bucket_cap_mb);
    agree(bad, "DistributedDataParallel", "refused the options");
    std::string differs = difference_from_rank0(tensors);
    const std::string options_differ = difference_from_rank0(options_text(options), "DDPOptions");
    if (differs.empty()) differs = options_differ;
    agree(differs, "DistributedDataParallel",
          "differ from rank 0 (every process must build the same model, with the same options)");
    for (const auto& [name, t] : tensors) {
        Tensor v = t;
        distributed::broadcast(v.mutable_ptr(), v.numel() * sizeof(float), 0, "DistributedDataParallel: broadcast of the parameters");
    }
}

// A cap in bytes; one past every size (inf, 1e30 MB) is "no cap", not an out-of-range cast.
std::size_t cap_bytes(double mb) {
    const double bytes = mb * 1024 * 1024;
    return bytes >= 0x1p64 ? SIZE_MAX : static_cast<std::size_t>(bytes);
}

}  // namespace

std::vector<Tensor> output_tensors(const Tensor& t) { return {t}; }

Reducer::Reducer(const Module& module, const DDPOptions& options)
    : weight_(1.0 / distributed::get_world_size()), find_unused_(options.find_unused_parameters) {
    check_and_broadcast(module.state_dict(), options);
    for (const Tensor& p : module.parameters())
        if (p.requires_grad()) params_.push_back(p);
    if (params_.empty()) fail("DistributedDataParallel: the module has no parameter that requires grad");

    // Backward produces gradients roughly in reverse registration order: buckets follow it.
    std::vector<std::size_t> bytes;
    for (std::size_t k = params_.size(); k-- > 0;) bytes.push_back(params_[k].numel() * sizeof(float));
    assignment_ = compute_bucket_assignment_by_size(bytes, cap_bytes(options.first_bucket_cap_mb),
                                                    cap_bytes(options.bucket_cap_mb));
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
    // The last bucket also carries every process's verdicts: its gradient weight and its count of
    // unused parameters (one float each per rank).
    weights_at_ = buckets_.back().buffer.size();
    buckets_.back().buffer.resize(weights_at_ + 2 * static_cast<std::size_t>(distributed::get_world_size()));
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
    unused_names_.clear();
    for (std::size_t i = 0; i < params_.size(); ++i)
        if (!reached.contains(params_[i].impl())) unused.push_back(i);
    if (unused.empty()) return;
    if (!find_unused_) {
        for (std::size_t i : unused) unused_names_.push_back(params_[i].name());
        // Alone, refuse now. With peers, a refusal here alone would leave them waiting for this rank's
        // buckets until the timeout: send zeros instead, and every rank refuses after the reduction.
        if (distributed::get_world_size() == 1) {
            phase_ = Phase::idle;
            fail("DistributedDataParallel: {}", unused_problem());
        }
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
        if (next_launch_ + 1 == buckets_.size()) put_verdicts(b);
        b.finished = false;
        b.timing = {.bytes = b.buffer.size() * sizeof(float), .launch = seconds_since(step_start_)};
        b.work = distributed::all_reduce_async(b.buffer.data(), b.buffer.size(),
                                               "DistributedDataParallel: gradient allreduce");
        ++next_launch_;
    }
}

std::string Reducer::unused_problem() const {
    return fmt::format("the forward's output does not depend on {} parameter(s) ({}); their gradients would never be "
                       "averaged. Construct with find_unused_parameters = true, or freeze them (requires_grad false) "
                       "before wrapping", unused_names_.size(), fmt::join(unused_names_, ", "));
}

void Reducer::put_verdicts(Bucket& last) const {
    float* w = last.buffer.data() + weights_at_;
    std::fill(w, last.buffer.data() + last.buffer.size(), 0.f);
    const int world = distributed::get_world_size(), rank = distributed::get_rank();
    w[rank] = static_cast<float>(weight_);
    w[world + rank] = static_cast<float>(unused_names_.size());
}

// A forward whose output missed parameters on some rank (find_unused_parameters false): every
// rank learns the counts from the reduction and refuses alike; the rank at fault names them.
void Reducer::check_unused() {
    const int world = distributed::get_world_size();
    const float* counts = buckets_.back().buffer.data() + weights_at_ + world;
    std::vector<int> ranks;
    std::vector<std::string> at_fault;
    for (int r = 0; r < world; ++r)
        if (counts[r] > 0) {
            ranks.push_back(r);
            at_fault.push_back(fmt::format("rank {}: {} unused", r, counts[r]));
        }
    if (ranks.empty()) return;
    phase_ = Phase::idle;
    fail("DistributedDataParallel: on rank(s) {} the forward's output does not depend on some parameters ({}); {}",
         fmt::join(ranks, ", "), fmt::join(at_fault, ", "),
         unused_names_.empty() ? "those ranks name them" : "here: " + unused_problem());
}

// The weights must sum to 1 (each process's part of the global batch): a weight of 1 on every
// process (a share computed wrong) would scale the averaged gradient by the world size, silently.
// Every process sees the same reduced weights, so all refuse together, before the averages reach .grad.
void Reducer::check_weights() {
    const int world = distributed::get_world_size();
    if (world == 1) return;  // one process: the weight only scales its own gradient
    const float* w = buckets_.back().buffer.data() + weights_at_;
    const double total = std::accumulate(w, w + world, 0.0);
    if (std::abs(total - 1) <= 1e-4) return;
    std::vector<std::string> each;
    for (int r = 0; r < world; ++r) each.push_back(fmt::format("rank {}: {}", r, w[r]));
    phase_ = Phase::idle;
    fail("DistributedDataParallel: the gradient weights of the {} processes sum to {}, not 1 ({}); "
         "set_gradient_weight takes this process's part of the global batch (its rows or tokens over all of them), "
         "parts that sum to 1", world, total, fmt::join(each, ", "));
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
    }
    check_unused();
    check_weights();
    for (Bucket& b : buckets_) {
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
