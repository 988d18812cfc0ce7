#include <xtgrad/autograd/bf16_weights.hpp>

#include <xtgrad/autograd/versioned_copies.hpp>
#include <xtgrad/gemm/blas.hpp>

#include <mutex>
#include <unordered_map>

namespace xtgrad::autocast {

namespace {

// An activation's copy is held by the products' backward closures, not here.
struct ActivationEntry {
    std::weak_ptr<const TensorValues> owner;
    std::uint64_t version = 0;
    std::weak_ptr<const Bf16Values> copy;
};

struct Cache {
    detail::VersionedCopies<Bf16Values, TensorValues::kBf16Copy> weights;
    std::mutex mutex;  // the activations' (ops may be created on several threads; autocast state is per thread)
    std::unordered_map<const TensorValues*, ActivationEntry> activations;
    WeightCacheStats stats;  // the activations' counts
};

Cache& cache() {
    static Cache c;
    return c;
}

// The copy of `values` (n floats), converted over the pool.
Bf16Copy convert(const TensorValues& values) {
    const std::size_t n = values.array.size();
    auto copy = std::make_shared<Bf16Values>(n);
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
    return cache().weights.get(values, convert);
}

Bf16Copy bf16_activation(const Tensor& x) {
    const std::shared_ptr<const TensorValues> values = x.values_ptr();
    if (!values) return nullptr;
    Cache& c = cache();
    const std::uint64_t version = values->version;
    const auto shared = [&]() -> Bf16Copy {  // under the lock: the copy of this version still held
        const auto found = c.activations.find(values.get());
        if (found == c.activations.end() || found->second.owner.lock() != values || found->second.version != version)
            return nullptr;
        Bf16Copy copy = found->second.copy.lock();
        return copy && copy->size() == values->array.size() ? copy : nullptr;
    };
    {
        const std::lock_guard<std::mutex> lock(c.mutex);
        if (Bf16Copy copy = shared()) {
            ++c.stats.activation_hits;
            return copy;
        }
    }
    Bf16Copy copy = convert(*values);  // outside the lock: it runs on the pool, whose jobs may come here
    const std::lock_guard<std::mutex> lock(c.mutex);
    ++c.stats.activation_conversions;
    if (Bf16Copy made_meanwhile = shared()) return made_meanwhile;
    if (c.activations.find(values.get()) == c.activations.end())  // a new tensor: drop the entries nobody holds first
        std::erase_if(c.activations, [](const auto& e) { return e.second.owner.expired() || e.second.copy.expired(); });
    c.activations[values.get()] = ActivationEntry{values, version, copy};
    return copy;
}

WeightCacheStats weight_cache_stats() {
    Cache& c = cache();
    const std::lock_guard<std::mutex> lock(c.mutex);
    WeightCacheStats s = c.stats;
    const auto weights = c.weights.counts();
    s.conversions = weights.made;
    s.hits = weights.reused;
    s.entries = weights.held;
    return s;
}

void clear_weight_cache() {
    Cache& c = cache();
    const std::lock_guard<std::mutex> lock(c.mutex);
    c.weights.clear();
    c.activations.clear();
    c.stats = {};
}

}  // namespace xtgrad::autocast
