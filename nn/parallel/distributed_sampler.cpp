#include <xtgrad/nn/parallel/distributed_sampler.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/random/random.hpp>
#include <xtgrad/nn/parallel/process_group.hpp>

#include <algorithm>
#include <numeric>

namespace xtgrad::nn::parallel {

DistributedSampler::DistributedSampler(std::size_t dataset_size, int num_replicas, int rank, bool shuffle,
                                       std::uint64_t seed, bool drop_last)
    : dataset_size_(dataset_size),
      replicas_(num_replicas < 0 ? distributed::get_world_size() : num_replicas),
      rank_(rank < 0 ? distributed::get_rank() : rank),
      shuffle_(shuffle),
      drop_last_(drop_last),
      seed_(seed) {
    if (replicas_ < 1) fail("DistributedSampler: num_replicas must be at least 1, got {}", replicas_);
    if (rank_ >= replicas_) fail("DistributedSampler: invalid rank {}, rank should be in [0, {}]", rank_, replicas_ - 1);
    const std::size_t n = static_cast<std::size_t>(replicas_);
    // drop_last: the largest multiple of N not above the size; else the smallest not below it.
    num_samples_ = drop_last_ ? dataset_size_ / n : (dataset_size_ + n - 1) / n;
}

std::vector<std::size_t> DistributedSampler::indices() const {
    std::vector<std::size_t> all(dataset_size_);
    std::iota(all.begin(), all.end(), std::size_t{0});
    if (shuffle_) {
        Generator gen(seed_ + epoch_);
        std::shuffle(all.begin(), all.end(), gen.engine());
    }
    const std::size_t total = total_size();
    if (all.empty() && total > 0) fail("DistributedSampler: cannot pad an empty dataset");
    for (std::size_t k = 0; all.size() < total; ++k) all.push_back(all[k]);  // repeats the start, as torch
    all.resize(total);
    std::vector<std::size_t> mine;
    for (std::size_t k = static_cast<std::size_t>(rank_); k < total; k += static_cast<std::size_t>(replicas_))
        mine.push_back(all[k]);
    return mine;
}

Ids select_rows(const Ids& a, const std::vector<std::size_t>& rows) {
    if (a.dimension() == 0) fail("select_rows: needs at least one axis, got a scalar");
    const std::size_t n = a.shape()[0], width = n == 0 ? 0 : a.size() / n;
    auto shape = a.shape();
    shape[0] = rows.size();
    Ids out = Ids::from_shape(shape);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        if (rows[r] >= n) fail("select_rows: row {} of an array with {} rows", rows[r], n);
        std::copy(a.data() + rows[r] * width, a.data() + (rows[r] + 1) * width, out.data() + r * width);
    }
    return out;
}

}  // namespace xtgrad::nn::parallel
