#include <xtgrad/autograd/bf16_weights.hpp>

#include <xtgrad/gemm/blas.hpp>

#include <mutex>
#include <unordered_map>

namespace xtgrad::autocast {

namespace {

struct Entry {
    std::weak_ptr<const TensorValues> owner;  // to tell a dead tensor from a new one at the same address
    std::uint64_t version = 0;
    Bf16Copy copy;
};

// An activation's copy is held by the products' backward closures, not here.
struct ActivationEntry {
    std::weak_ptr<const TensorValues> owner;
    std::uint64_t version = 0;
    std::weak_ptr<const std::vector<std::uint16_t>> copy;
};

struct Cache {
    std::mutex mutex;  // ops may be created on several threads (autocast state is per thread)
    std::unordered_map<const TensorValues*, Entry> entries;
    std::unordered_map<const TensorValues*, ActivationEntry> activations;
    WeightCacheStats stats;
};

Cache& cache() {
    static Cache c;
    return c;
}

// The copy of `values` (n floats), converted over the pool.
Bf16Copy convert(const TensorValues& values) {
    const std::size_t n = values.array.size();
    auto copy = std::make_shared<std::vector<std::uint16_t>>(n);
    // one row of n: convert_to_bf16 splits rows; give it rows of 4096 for the pool to share
    constexpr std::size_t kRow = 4096;
    const std::size_t full = n / kRow;
    if (full) convert_to_bf16(values.array.data(), static_cast<int>(full), static_cast<int>(kRow), static_cast<int>(kRow), copy->data());
    if (n % kRow)
        convert_to_bf16(values.array.data() + full * kRow, 1, static_cast<int>(n % kRow), static_cast<int>(n % kRow),
                        copy->data() + full * kRow);
    return copy;
}

}  // namespace

Bf16Copy bf16_weight(const Tensor& weight) {
    if (!weight.defined() || !weight.is_leaf() || !weight.requires_grad()) return nullptr;
    const std::shared_ptr<const TensorValues> values = weight.values_ptr();
    if (!values) return nullptr;
    Cache& c = cache();
    const std::lock_guard<std::mutex> lock(c.mutex);
    const auto found = c.entries.find(values.get());
    if (found != c.entries.end() && found->second.owner.lock() == values && found->second.version == values->version &&
        found->second.copy->size() == values->array.size()) {
        ++c.stats.hits;
        return found->second.copy;
    }
    if (found == c.entries.end())  // a new tensor: drop the copies of the dead ones first
        std::erase_if(c.entries, [](const auto& e) { return e.second.owner.expired(); });
    Entry& e = c.entries[values.get()];
    e.copy = nullptr;  // the old version's copy goes before the new one is made
    e = Entry{values, values->version, convert(*values)};
    ++c.stats.conversions;
    return e.copy;
}

Bf16Copy bf16_activation(const Tensor& x) {
    const std::shared_ptr<const TensorValues> values = x.values_ptr();
    if (!values) return nullptr;
    Cache& c = cache();
    const std::lock_guard<std::mutex> lock(c.mutex);
    const auto found = c.activations.find(values.get());
    if (found != c.activations.end() && found->second.owner.lock() == values && found->second.version == values->version)
        if (Bf16Copy copy = found->second.copy.lock(); copy && copy->size() == values->array.size()) {
            ++c.stats.activation_hits;
            return copy;
        }
    if (found == c.activations.end())  // a new tensor: drop the entries nobody holds first
        std::erase_if(c.activations, [](const auto& e) { return e.second.owner.expired() || e.second.copy.expired(); });
    Bf16Copy copy = convert(*values);
    c.activations[values.get()] = ActivationEntry{values, values->version, copy};
    ++c.stats.activation_conversions;
    return copy;
}

WeightCacheStats weight_cache_stats() {
    Cache& c = cache();
    const std::lock_guard<std::mutex> lock(c.mutex);
    WeightCacheStats s = c.stats;
    s.entries = c.entries.size();
    return s;
}

void clear_weight_cache() {
    Cache& c = cache();
    const std::lock_guard<std::mutex> lock(c.mutex);
    c.entries.clear();
    c.activations.clear();
    c.stats = {};
}

}  // namespace xtgrad::autocast
