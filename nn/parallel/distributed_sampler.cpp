#include <xtgrad/nn/parallel/distributed_sampler.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/random/random.hpp>
#include <xtgrad/nn/parallel/process_group.hpp>

#include <algorithm>
#include <numeric>

namespace xtgrad::nn::parallel {

namespace {
// The header's default for num_replicas and rank: the process group's. Any other negative is a
// mistake (a rank computed wrong), not a request for the group's.
constexpr int kFromGroup = -1;
}  // namespace

DistributedSampler::DistributedSampler(std::size_t dataset_size, int num_replicas, int rank, bool shuffle,
                                       std::uint64_t seed, bool drop_last)
    : dataset_size_(dataset_size), shuffle_(shuffle), drop_last_(drop_last), seed_(seed) {
    if (num_replicas < kFromGroup || rank < kFromGroup)
        fail("DistributedSampler: num_replicas {} and rank {}: a negative one must be -1 (the process group's)",
             num_replicas, rank);
    if (num_replicas == kFromGroup || rank == kFromGroup) distributed::require_process_group("DistributedSampler");
    replicas_ = num_replicas == kFromGroup ? distributed::get_world_size() : num_replicas;
    rank_ = rank == kFromGroup ? distributed::get_rank() : rank;
    if (replicas_ < 1) fail("DistributedSampler: num_replicas must be at least 1, got {}", replicas_);
    if (rank_ >= replicas_) fail("DistributedSampler: invalid rank {}, rank should be in [0, {}]", rank_, replicas_ - 1);
    const std::size_t n = static_cast<std::size_t>(replicas_);
    // drop_last: the largest multiple of N not above the size; else the smallest not below it
    // (a ceiling without size + N - 1, which wraps past SIZE_MAX).
    num_samples_ = dataset_size_ / n + (!drop_last_ && dataset_size_ % n != 0 ? 1 : 0);
    // indices() lists the padded total: it must fit a vector (and total_size() a size_t).
    const std::size_t max_total = std::vector<std::size_t>().max_size();
    if (num_samples_ > max_total / n)
        fail("DistributedSampler: dataset_size {} padded to a multiple of {} replicas is past the {} indices a list "
             "can hold", dataset_size_, replicas_, max_total);
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
