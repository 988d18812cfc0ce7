// ZeroRedundancyOptimizer (torch.distributed.optim.ZeroRedundancyOptimizer; ZeRO stage 1): each
// of N processes keeps the optimizer state (Adam's two moments) of about 1/N of the
// parameters, steps only those, and then every updated parameter is broadcast from the
// process that owns it (one broadcast per parameter, in place). The gradients stay whole on every process (DistributedDataParallel
// averages them), so the step, and every loss after it, is plain DDP's exactly.
//
//   DistributedDataParallel ddp(model);
//   ZeroRedundancyOptimizer opt(model.parameters(), optim::AdamOptions(1e-4));
//   loss.backward(); opt.step();                   // as a plain optimizer
//   opt.consolidate_state_dict(0);                 // on every rank (a collective), before rank 0 saves
//   if (rank == 0) nn::save_run(path, model, {.optimizer = &opt, ...});
//
// Partition (torch's): the parameters, largest first, each to the process with the fewest
// elements so far; the same on every process, since it depends on the shapes alone.
//
// Checkpoints do not depend on the world size: consolidate_state_dict gathers the shards into
// the layout of a plain optimizer over all parameters ("state.<i>.exp_avg" with i counting
// every trained parameter), byte for byte what optim::Adam writes; load_state_dict takes such a
// state (from any number of processes, or from one process with plain Adam) and keeps this
// process's shard. So a run saved by N processes resumes on M.
#pragma once

#include <xtgrad/autograd/tensor.hpp>
#include <xtgrad/optim/optimizer.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace xtgrad::nn::parallel {

// The owner of each parameter among `world` processes, from the element counts alone: largest
// first (ties by index), each to the least loaded process (ties to the lowest rank).
std::vector<int> partition_parameters(const std::vector<std::size_t>& numels, int world);

namespace detail {
// A shard's state entries as the bytes consolidate_state_dict broadcasts (per entry: name, shape,
// float32 values), and back. The bytes come from another process: one that does not parse whole
// (cut short, a length past its end, bytes left over) is an Error naming the sender `from`.
std::vector<unsigned char> serialize_shard(const std::vector<std::pair<std::string, Array>>& entries);
std::vector<std::pair<std::string, Array>> deserialize_shard(const std::vector<unsigned char>& bytes, int from);
}  // namespace detail

class ZeroRedundancyOptimizer : public optim::Optimizer {
public:
    // Builds the local optimizer over this process's parameters (in their global order). A
    // collective: every process must pass parameters of the same names, shapes and requires_grad
    // (as DistributedDataParallel checks its model), else an Error on every process names the
    // ranks that differ and how.
    using Factory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
    ZeroRedundancyOptimizer(std::vector<Tensor> params, const Factory& make_optimizer);
    ZeroRedundancyOptimizer(std::vector<Tensor> params, const optim::AdamOptions& adam);

    // Checks every gradient, and that no parameter was frozen since construction; a
    // check that fails on any process is an Error on every process before any steps. Then steps
    // this process's shard and broadcasts each process's updated parameters to the others. A
    // collective: every process calls it.
    void step() override;

    // Gathers every shard's state on rank `to` (a collective: every process calls it); until the
    // next step, state_dict() there returns the whole state. torch's consolidate_state_dict.
    void consolidate_state_dict(int to = 0);
    // The whole state, in plain optim's layout: on one process always; on several, only on the
    // rank that consolidated since the last step (an Error elsewhere, saying what to call).
    optim::OptimizerState state_dict() const override;
    // A whole state (any world size's, or plain Adam's): checks it, keeps this process's shard. A
    // collective: a state any process refuses is an Error on every process, naming the ranks that
    // refused and why, and no process keeps it.
    void load_state_dict(const optim::OptimizerState& state) override;
    // This process's shard, under the global indices.
    optim::OptimizerState local_state_dict() const override;

    int owner(std::size_t index) const { return owner_[index]; }  // index into params()
    const std::vector<std::size_t>& owned() const { return owned_; }
    // Bytes of optimizer state this process holds (Adam: 8 per element of its shard once stepped).
    std::size_t local_state_bytes() const;
    double broadcast_seconds() const { return broadcast_seconds_; }  // time in step()'s broadcasts, summed

protected:
    // The wrapper's own state_dict/load_state_dict never reach these: the local optimizer's are used.
    void write_options(nlohmann::json&) const override {}
    void read_options(const nlohmann::json&) override {}
    std::vector<std::string> state_keys() const override { return {}; }
    std::vector<std::string> required_state_keys(const nlohmann::json&) const override { return {}; }

private:
    void broadcast_parameters();
    void load_shard(const optim::OptimizerState& state);  // this process's checks and load alone

    std::vector<int> owner_;           // per global index
    std::vector<std::size_t> owned_;   // global indices this process steps, ascending
    std::unique_ptr<optim::Optimizer> local_;
    std::optional<optim::OptimizerState> consolidated_;
    int rank_, world_;
    double broadcast_seconds_ = 0;
};

}  // namespace xtgrad::nn::parallel
