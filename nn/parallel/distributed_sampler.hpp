// DistributedSampler (torch.utils.data.distributed.DistributedSampler): which samples of a
// dataset this process takes, so that the processes of a data-parallel job share every
// epoch without overlap.
//
//   DistributedSampler s(dataset_size);        // world size and rank from the process group
//   s.set_epoch(epoch);                        // a new shuffle per epoch, the same on every rank
//   for (std::size_t i : s.indices()) ...      // this rank's samples, s.size() of them
//
// torch's semantics: the (shuffled, seed + epoch) index list is padded by repeating its
// start up to a multiple of the world size (or, with drop_last, cut down to one), and rank r
// takes positions r, r + N, r + 2N, ... So batch k of every rank's list, at a per-rank batch
// of B / N, together hold exactly the samples of batch k of one process at batch B.
// The shuffle is xtgrad's generator, not torch's randperm: the same on every rank, not the
// same permutation as torch's.
#pragma once

#include <xtgrad/autograd/array.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xtgrad::nn::parallel {

class DistributedSampler {
public:
    // num_replicas and rank default (-1) to the process group's world size and rank; another
    // negative, a rank outside [0, num_replicas), or a dataset_size whose padded total would not
    // fit a list of indices is an Error naming the values.
    explicit DistributedSampler(std::size_t dataset_size, int num_replicas = -1, int rank = -1, bool shuffle = true,
                                std::uint64_t seed = 0, bool drop_last = false);

    void set_epoch(std::uint64_t epoch) { epoch_ = epoch; }
    std::vector<std::size_t> indices() const;  // this rank's samples for the current epoch
    std::size_t size() const { return num_samples_; }  // torch's len(sampler)
    std::size_t total_size() const { return num_samples_ * static_cast<std::size_t>(replicas_); }

private:
    std::size_t dataset_size_, num_samples_;
    int replicas_, rank_;
    bool shuffle_, drop_last_;
    std::uint64_t seed_, epoch_ = 0;
};

// The rows of `a` (along axis 0) at `rows`, in that order: a rank's share of a batch.
Ids select_rows(const Ids& a, const std::vector<std::size_t>& rows);

}  // namespace xtgrad::nn::parallel
