#include <xtgrad/nn/parallel/agreement.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/nn/parallel/process_group.hpp>

#include <fmt/ranges.h>

#include <cstdint>
#include <vector>

namespace xtgrad::nn::parallel::detail {

void agree(const std::string& problem, const char* what, const char* verdict) {
    distributed::require_process_group(what);
    const int world = distributed::get_world_size(), rank = distributed::get_rank();
    if (world == 1) {
        if (!problem.empty()) fail("{}", problem);
        return;
    }
    std::vector<float> refused(static_cast<std::size_t>(world), 0.f);
    refused[static_cast<std::size_t>(rank)] = problem.empty() ? 0.f : 1.f;
    distributed::all_reduce(refused.data(), refused.size(), what);
    std::vector<int> ranks;
    std::vector<std::string> reasons;
    for (int r = 0; r < world; ++r) {
        if (refused[static_cast<std::size_t>(r)] == 0.f) continue;
        // every process takes part in each refusing rank's broadcast of its reason
        std::string text = r == rank ? problem.substr(0, 400) : std::string();
        std::uint64_t size = text.size();
        distributed::broadcast(&size, sizeof size, r, what);
        text.resize(size);
        distributed::broadcast(text.data(), size, r, what);
        ranks.push_back(r);
        reasons.push_back(fmt::format("rank {}: {}", r, text));
    }
    if (!ranks.empty()) fail("{}: rank(s) {} {}: {}", what, fmt::join(ranks, ", "), verdict, fmt::join(reasons, "; "));
}

namespace {

// A number for a name, the same in every process (FNV-1a).
std::uint64_t name_hash(const std::string& name) {
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
    return h;
}

// What every process must agree on about each tensor: its name, shape and whether it is
// trained (requires_grad). Four numbers per tensor, after the tensor count.
constexpr std::size_t kWordsPerTensor = 4;
std::vector<std::uint64_t> tensors_signature(const NamedTensors& tensors) {
    std::vector<std::uint64_t> words{tensors.size()};
    for (const auto& [name, t] : tensors) {
        std::uint64_t shape = t.dim();
        for (std::size_t d : t.shape()) shape = shape * 1000003ull + d;
        words.insert(words.end(), {name_hash(name), shape, t.numel(), t.requires_grad() ? 1ull : 0ull});
    }
    return words;
}

}  // namespace

std::string difference_from_rank0(const NamedTensors& tensors) {
    const std::vector<std::uint64_t> mine = tensors_signature(tensors);
    std::uint64_t count = mine.size();
    distributed::broadcast(&count, sizeof count, 0, "broadcast of rank 0's tensor signature length");
    std::vector<std::uint64_t> root(count);
    if (distributed::get_rank() == 0) root = mine;
    distributed::broadcast(root.data(), count * sizeof(std::uint64_t), 0, "broadcast of rank 0's tensor signature");
    if (root.size() < mine.size()) root.resize(mine.size(), ~0ull);  // rank 0 has fewer tensors: a difference
    if (root[0] != mine[0]) return fmt::format("{} tensors here, {} on rank 0", mine[0], root[0]);
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const std::size_t at = 1 + i * kWordsPerTensor;
        const auto& [name, t] = tensors[i];
        if (root[at] != mine[at]) return fmt::format("tensor #{} is '{}' here but has another name on rank 0", i, name);
        if (root[at + 1] != mine[at + 1] || root[at + 2] != mine[at + 2])
            return fmt::format("'{}' has shape {} here but another shape on rank 0", name, shape_str(t.shape()));
        if (root[at + 3] != mine[at + 3])
            return fmt::format("'{}' {} here but {} on rank 0 (requires_grad {} / {}; freeze the same parameters in "
                               "every process)", name, mine[at + 3] ? "is trained" : "is frozen",
                               root[at + 3] ? "trained" : "frozen", mine[at + 3] != 0, root[at + 3] != 0);
    }
    return {};
}

std::string difference_from_rank0(const std::string& mine, const char* what) {
    std::uint64_t size = mine.size();
    distributed::broadcast(&size, sizeof size, 0, "broadcast of rank 0's settings");
    std::string root = distributed::get_rank() == 0 ? mine : std::string(size, '\0');
    distributed::broadcast(root.data(), size, 0, "broadcast of rank 0's settings");
    if (root == mine) return {};
    return fmt::format("{} is {} here but {} on rank 0", what, mine.substr(0, 150), root.substr(0, 150));
}

}  // namespace xtgrad::nn::parallel::detail
