// A cache of copies made from tensors' values (autocast's bf16 weights, autograd/bf16_weights.hpp;
// inference's transposed weights, autograd/transposed_weights.hpp): one copy per tensor, made on
// its first use and served until the values are written in place (their version counter moves,
// autograd/tensor.hpp) or die. Keyed by the values' address and checked against a weak pointer to
// them, so a new tensor at a dead one's address is never served the old copy. A tensor's older
// copy is released before its new one is made: at most one copy of each tensor is held. The copies
// of dead tensors are dropped when a new tensor comes in. Thread-safe (ops may run on several
// threads); `make` runs under the lock. Internal.
#pragma once

#include <xtgrad/autograd/tensor.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace xtgrad::detail {

// Copy: a std::shared_ptr<const C>, C with size() = the values' element count.
template <class Copy>
class VersionedCopies {
public:
    struct Counts {
        std::size_t made = 0;    // misses: a new tensor or a new version
        std::size_t reused = 0;  // hits
        std::size_t held = 0;    // copies held now
    };

    // The copy of `values` at their current version: the one kept, or make(values) (kept).
    template <class Make>
    Copy get(const std::shared_ptr<const TensorValues>& values, Make&& make) {
        const std::lock_guard<std::mutex> lock(mutex_);
        const auto found = entries_.find(values.get());
        if (found != entries_.end() && found->second.owner.lock() == values &&
            found->second.version == values->version && found->second.copy->size() == values->array.size()) {
            ++counts_.reused;
            return found->second.copy;
        }
        if (found == entries_.end())  // a new tensor: drop the copies of the dead ones first
            std::erase_if(entries_, [](const auto& e) { return e.second.owner.expired(); });
        Entry& e = entries_[values.get()];
        e.copy = nullptr;  // the old version's copy goes before the new one is made
        e = Entry{values, values->version, make(*values)};
        ++counts_.made;
        return e.copy;
    }

    Counts counts() const {
        const std::lock_guard<std::mutex> lock(mutex_);
        Counts c = counts_;
        c.held = entries_.size();
        return c;
    }

    // Drops every copy (those a caller still holds live on with it) and zeroes the counts.
    void clear() {
        const std::lock_guard<std::mutex> lock(mutex_);
        entries_.clear();
        counts_ = {};
    }

private:
    struct Entry {
        std::weak_ptr<const TensorValues> owner;
        std::uint64_t version = 0;
        Copy copy;
    };
    mutable std::mutex mutex_;
    std::unordered_map<const TensorValues*, Entry> entries_;
    Counts counts_;
};

}  // namespace xtgrad::detail
