// DistributedDataParallel (torch.nn.parallel.DistributedDataParallel): every process holds a
// replica of the model and computes gradients on its share of the global batch; backward
// averages the gradients over the processes, so every replica takes the same optimizer step.
//
//   distributed::init_process_group();
//   nn::parallel::DistributedDataParallel ddp(model);   // rank 0's parameters to every rank
//   Tensor loss = loss_fn(ddp.forward(my_share_of_the_batch...));
//   loss.backward();          // gradients averaged over the processes when it returns
//   opt.step();
//
// How (docs/distributed.md has the picture): the parameters are cut, in reverse registration
// order (roughly the order backward produces their gradients), into buckets of about 25 MB
// (the first 1 MB, as torch). A post-accumulate-grad hook on each parameter copies its
// gradient, divided by the world size, into its bucket; when a bucket is full it is summed
// across the processes with a non-blocking MPI allreduce while backward goes on computing the
// other gradients. Buckets are launched strictly in index order, so every process issues the
// same collectives in the same order. When the last bucket is launched, the hook waits for
// all of them and copies the averaged gradients back into .grad: the wait before the
// optimizer step happens inside backward, as in torch.
//
// Misuse is an Error, never diverging replicas: construction checks that every process built
// the same model (tensor names, shapes, which parameters require grad) with the same DDPOptions
// and fails on every rank if one differs; a second backward that would add onto gradients already averaged (two
// backward passes after one ddp.forward, without zero_grad) is refused, as are a parameter
// frozen after construction and a gradient whose shape is not its parameter's. Uneven shares of
// a batch: set_gradient_weight (below).
//
// Differences from torch: the wrapper is not itself a Module (parameter names, and so
// checkpoints, stay the model's own, without torch's "module." prefix; save ddp.module());
// buffers are broadcast once, at construction (the tutorials' buffers are constants).
//
// Unused parameters: forward() walks the output's graph. A parameter the output does not
// depend on is an Error naming it (torch's find_unused_parameters=False: at forward in one
// process; with peers at the end of backward, on every rank alike, since the peers would
// otherwise wait for its bucket), or, with find_unused_parameters, contributes zeros to its
// bucket (torch's True).
#pragma once

#include <xtgrad/autograd/tensor.hpp>
#include <xtgrad/nn/module.hpp>
#include <xtgrad/nn/parallel/process_group.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace xtgrad::nn::parallel {

struct DDPOptions {
    double bucket_cap_mb = 25;       // torch's default
    double first_bucket_cap_mb = 1;  // torch's dist._DEFAULT_FIRST_BUCKET_BYTES: the first allreduce starts early
    bool find_unused_parameters = false;
};

// Cuts tensors of the given sizes (in bytes, in the order their gradients are expected)
// into buckets: each bucket takes tensors in order until its size reaches the cap
// (first_cap_bytes for the first bucket, cap_bytes after). Returns the tensor indices per
// bucket (torch's _compute_bucket_assignment_by_size, without its per-dtype split).
std::vector<std::vector<std::size_t>> compute_bucket_assignment_by_size(const std::vector<std::size_t>& bytes,
                                                                         std::size_t first_cap_bytes,
                                                                         std::size_t cap_bytes);

// One bucket's allreduce in the last synchronised backward, in seconds since that backward's
// first gradient hook: when it was launched, when a poll first found it complete (polls run in
// every later hook and in the final wait, so `finish` is late by at most one hook's spacing),
// and how long the final wait spent on it.
struct BucketTiming {
    std::size_t bytes = 0;
    double launch = 0, finish = 0, wait = 0;
};

// Where the time went, accumulated over steps (for the benchmark).
struct ReducerStats {
    long steps = 0;
    double hook_seconds = 0;  // copying gradients into buckets and launching allreduces, inside backward
    double wait_seconds = 0;  // waiting for the allreduces after the last bucket was launched
    std::size_t buckets = 0;
    std::vector<BucketTiming> last_step;  // per bucket, the first bucket first
    double last_backward_end = 0;         // when the last bucket was launched: backward's compute is over
};

// The share of the last step's allreduce time (launch to finish, summed over the buckets) that
// passed while backward was still computing (before last_backward_end): what the overlap hid.
// 0 when nothing was reduced.
double hidden_fraction(const ReducerStats& stats);

namespace detail {

// The gradient synchronisation behind DistributedDataParallel (torch's Reducer). Shared by
// the wrapper and, through weak pointers, by the hooks it put on the parameters: hooks of a
// wrapper that is gone do nothing.
class Reducer : public std::enable_shared_from_this<Reducer> {
public:
    Reducer(const Module& module, const DDPOptions& options);
    void install_hooks();

    // Before the module's forward: the previous backward must have finished its reduction.
    void prepare_for_forward();
    // After it: arms the hooks for one backward over the graphs of `outputs`.
    void prepare_for_backward(const std::vector<Tensor>& outputs);
    void set_sync(bool on) { sync_ = on; }  // read at forward: a backward syncs if its forward did
    void set_gradient_weight(double weight);
    bool sync() const { return sync_; }
    const std::vector<std::vector<std::size_t>>& bucket_params() const { return assignment_; }
    const ReducerStats& stats() const { return stats_; }

private:
    struct Bucket {
        std::vector<std::size_t> params;   // indices into params_
        std::vector<std::size_t> offsets;  // of each parameter in `buffer`
        std::vector<float> buffer;
        std::size_t pending = 0;           // gradients not yet copied in this step
        distributed::Work work;
        BucketTiming timing;
        bool finished = false;             // a poll found this step's allreduce complete
    };
    // no forward armed; a no_sync forward; reducing; reduced (until the next forward)
    enum class Phase { idle, skip, reducing, reduced };
    void on_gradient(std::size_t param);
    void mark_ready(std::size_t param);
    void launch_ready_buckets();
    void finalize();
    void put_verdicts(Bucket& last) const;
    void check_unused();
    void check_weights();
    std::string unused_problem() const;
    void check_gradient_shape(std::size_t param) const;
    std::vector<std::string> unready_names() const;

    std::vector<Tensor> params_;       // trainable parameters, in registration order
    std::vector<std::size_t> bucket_of_, offset_of_;
    std::vector<std::vector<std::size_t>> assignment_;
    std::vector<Bucket> buckets_;
    std::vector<bool> ready_;
    std::vector<std::weak_ptr<Array>> averaged_;  // each parameter's .grad as the last reduction left it
    std::size_t next_launch_ = 0, ready_count_ = 0, gradients_seen_ = 0;
    std::size_t weights_at_ = 0;  // in the last bucket's buffer, after the gradients: per rank its weight, then its unused count
    std::vector<std::string> unused_names_;  // this forward's, when find_unused_parameters is false
    Phase phase_ = Phase::idle;
    std::chrono::steady_clock::time_point step_start_;  // the step's first gradient hook
    double weight_;  // of this process's gradient in the average: 1 / world size unless set
    bool sync_ = true;
    bool find_unused_;
    ReducerStats stats_;
};

std::vector<Tensor> output_tensors(const Tensor& t);

// A module's forward output: a Tensor, or a struct whose `logits` is (tutorial A's).
template <class Out>
std::vector<Tensor> output_tensors(const Out& out) {
    if constexpr (requires { out.logits; }) return {out.logits};
    else static_assert(sizeof(Out) == 0, "DistributedDataParallel: forward must return a Tensor or a struct with .logits");
}

}  // namespace detail

template <class M>
class DistributedDataParallel {
public:
    explicit DistributedDataParallel(M& module, DDPOptions options = {})
        : module_(module), reducer_(std::make_shared<detail::Reducer>(module, options)) {
        reducer_->install_hooks();
    }

    template <class... Args>
    auto forward(Args&&... args) {
        reducer_->prepare_for_forward();
        auto out = module_.forward(std::forward<Args>(args)...);
        if (is_grad_enabled() && module_.is_training()) reducer_->prepare_for_backward(detail::output_tensors(out));
        return out;
    }

    // The weight of this process's gradient in the average, from the next backward on: 1 / world
    // size by default (equal shares). With uneven shares of a batch, set it to this process's
    // part of what the loss averages over (its rows, or its counted tokens, over the global
    // count; the weights of all processes sum to 1), and the averaged gradient is the one a
    // single process computes on the whole batch (examples::DataParallel::share computes it).
    // Weights that do not sum to 1 over the processes are an Error on every rank at the end of the
    // next synchronised backward (each rank's weight travels with the last bucket).
    void set_gradient_weight(double weight) { reducer_->set_gradient_weight(weight); }

    M& module() { return module_; }
    const M& module() const { return module_; }
    std::vector<Tensor> parameters() const { return module_.parameters(); }

    // Gradient accumulation without communication (torch's no_sync()): backward passes in
    // this scope only add into .grad; the first synchronised backward after it averages the sum.
    class NoSync {
    public:
        explicit NoSync(detail::Reducer& r) : r_(r), previous_(r.sync()) { r_.set_sync(false); }
        ~NoSync() { r_.set_sync(previous_); }
        NoSync(const NoSync&) = delete;
        NoSync& operator=(const NoSync&) = delete;

    private:
        detail::Reducer& r_;
        bool previous_;
    };
    [[nodiscard]] NoSync no_sync() { return NoSync(*reducer_); }

    // Parameter indices (registration order) per bucket, the first bucket first.
    const std::vector<std::vector<std::size_t>>& buckets() const { return reducer_->bucket_params(); }
    const ReducerStats& stats() const { return reducer_->stats(); }

private:
    M& module_;
    std::shared_ptr<detail::Reducer> reducer_;
};

}  // namespace xtgrad::nn::parallel
