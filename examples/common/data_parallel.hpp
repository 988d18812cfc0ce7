// The examples' data-parallel mode: launched with `mpirun -np N`, an example trains as N
// processes (nn/parallel/distributed.hpp, docs/distributed.md); launched alone it is unchanged.
//
//   const auto dp = examples::start_data_parallel("random_copy");  // first thing in main
//   DistributedDataParallel ddp(model);  ...  ddp.forward(dp.shard(src), ...)
//   fmt::print("loss {}", dp.mean(loss.item()));                   // the global loss
//   } catch (const std::exception& e) { return dp.fail(e); }
//
// Rank 0 prints "data-parallel: N processes" and everything else the example prints; the
// other ranks' stdout goes to /dev/null (their stderr stays: a failing rank is heard).
#pragma once

#include <xtgrad/autograd/array.hpp>

#include <exception>
#include <string>

namespace xtgrad::nn {
class Module;
}

namespace xtgrad::examples {

class DataParallel {
public:
    explicit DataParallel(std::string program);
    ~DataParallel();  // leaves the process group (MPI_Finalize)
    DataParallel(const DataParallel&) = delete;
    DataParallel& operator=(const DataParallel&) = delete;

    int rank() const { return rank_; }
    int world() const { return world_; }
    bool active() const { return world_ > 1; }
    // Threads per process, so that the processes on one host share its cores instead of
    // oversubscribing them: the requested count divided by the processes on this host.
    int threads(int requested) const;
    // This rank's rows of a global batch: rank r of N takes rows r, r + N, ... — all of them
    // and none twice, so shares differ by one row when N does not divide the batch (no padding:
    // the processes together see exactly the batch one process would). A batch of fewer rows
    // than processes is an Error. The whole batch when not data-parallel.
    Ids shard(const Ids& global_batch) const;
    // This rank's part of a global count (local / the sum over the ranks): the weight of its
    // loss, a mean over `local` items (rows, or counted tokens), in the global mean. Give it to
    // DistributedDataParallel::set_gradient_weight and to mean(). Error if the sum is 0.
    double share(std::size_t local) const;
    // The global loss: the sum over the ranks of weight x value (weight: share(); equal shares by
    // default, 1 / world size).
    double mean(double value, double weight = -1) const;
    // Writes a checkpoint on rank 0 only (atomically, nn::save), then every rank waits for it.
    void save(const nn::Module& module, const std::string& path) const;
    // For main's catch: prints "<program>[ rank r]: what" on stderr and returns 2; under MPI it
    // ends the whole job instead (MPI_Abort), so the other ranks stop rather than wait.
    int fail(const std::exception& e) const;

private:
    std::string program_;
    int rank_ = 0, world_ = 1;
};

}  // namespace xtgrad::examples
