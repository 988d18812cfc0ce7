// Copies made from tensors' values (autocast's bf16 weights, autograd/bf16_weights.hpp; inference's
// transposed weights, autograd/transposed_weights.hpp): one copy of each kind per tensor, made on
// its first use and served until the values are written in place (their version counter moves,
// autograd/tensor.hpp). The copy is kept in the values themselves (TensorValues::kept_copies), so
// it goes when the tensor goes; a tensor's older copy is released before its newer one is made,
// so at most one copy of each kind of each tensor is held. The copy is made outside the lock: making
// it runs on the pool, whose jobs may come here too. Thread-safe. Internal.
#pragma once

#include <xtgrad/autograd/tensor.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace xtgrad::detail {

// C: the copy's type, with size() = the values' element count.
template <class C, TensorValues::CopyKind kind>
class VersionedCopies {
public:
    using Copy = std::shared_ptr<const C>;
    struct Counts {
        std::size_t made = 0;    // misses: a new tensor or a new version
        std::size_t reused = 0;  // hits
        std::size_t held = 0;    // copies held now (by live tensors)
    };

    // The copy of `values` at their current version: the one kept, or make(values) (kept).
    template <class Make>
    Copy get(const std::shared_ptr<const TensorValues>& values, Make&& make) {
        TensorValues::KeptCopy& kept = values->kept_copies[kind];
        const std::uint64_t version = values->version;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            if (Copy c = current(*values)) {
                ++counts_.reused;
                return c;
            }
            kept.copy = nullptr;  // the old version's copy goes before the new one is made
        }
        Copy made = make(*values);
        const std::lock_guard<std::mutex> lock(mutex_);
        ++counts_.made;
        if (Copy c = current(*values)) return c;  // another thread made it meanwhile
        kept = {version, made};
        if (holders_.find(values.get()) == holders_.end())  // a new holder: forget the dead ones first
            std::erase_if(holders_, [](const auto& h) { return h.second.expired(); });
        holders_[values.get()] = values;
        any_.store(true, std::memory_order_release);
        return made;
    }

    Counts counts() const {
        const std::lock_guard<std::mutex> lock(mutex_);
        Counts c = counts_;
        for (const auto& [key, holder] : holders_)
            if (const auto v = holder.lock(); v && v->kept_copies[kind].copy) ++c.held;
        return c;
    }

    // Drops every copy (those a caller still holds live on with it) and zeroes the counts.
    void clear() {
        const std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& [key, holder] : holders_)
            if (const auto v = holder.lock()) v->kept_copies[kind].copy = nullptr;
        holders_.clear();
        counts_ = {};
        any_.store(false, std::memory_order_release);
    }
    // The same, cheap when no copy was made since the last clear; true when it cleared.
    bool clear_if_any() {
        if (!any_.load(std::memory_order_acquire)) return false;
        clear();
        return true;
    }

private:
    // The kept copy when it is of the values' current version (under the lock).
    static Copy current(const TensorValues& values) {
        const TensorValues::KeptCopy& kept = values.kept_copies[kind];
        if (!kept.copy || kept.version != values.version) return nullptr;
        Copy c = std::static_pointer_cast<const C>(kept.copy);
        return c->size() == values.array.size() ? c : nullptr;
    }

    mutable std::mutex mutex_;
    std::unordered_map<const TensorValues*, std::weak_ptr<const TensorValues>> holders_;  // for clear()
    Counts counts_;
    std::atomic<bool> any_{false};  // set under the lock after a copy is kept
};

}  // namespace xtgrad::detail
