#include <xtgrad/autograd/packed_weights.hpp>

#include <xtgrad/autograd/versioned_copies.hpp>
#include <xtgrad/gemm/blas.hpp>

#include <atomic>
#include <mutex>
#include <vector>

namespace xtgrad::detail {

namespace {

// One version of a weight's packed blocks, filled as the blocks are first read. The blocks are
// packed from `source`, the bf16 copy a caller passed: a caller whose copy is another one (it
// read the weight's bf16 copy before a write, and the lookup here came after it) starts the list
// again from its own, so a block is only ever read with the copy it was packed from.
struct PackedBlocks {
    struct Block {
        std::size_t first, count;
        std::shared_ptr<const void> packed;
    };
    std::size_t elements;  // the values' element count (VersionedCopies checks it)
    mutable std::mutex mutex;
    mutable std::weak_ptr<const autocast::Bf16Values> source;
    mutable std::vector<Block> blocks;
    mutable std::size_t packed_elements = 0;  // sum of the blocks' count · in
    std::size_t size() const { return elements; }
};

// At most this many times the weight's elements packed per version: attention's in-projection
// packs its three blocks once (1x); a caller sliding a block along the rows would otherwise
// keep a copy per offset. Past it, blocks run on the bf16 copy as stored.
constexpr std::size_t kPackedPerWeight = 2;

VersionedCopies<PackedBlocks, TensorValues::kPackedBf16Copy>& copies() {
    static VersionedCopies<PackedBlocks, TensorValues::kPackedBf16Copy> c;
    return c;
}

std::atomic<std::size_t> blocks_packed{0}, blocks_reused{0};

}  // namespace

std::shared_ptr<const void> packed_bf16_weight(const Tensor& weight, const autocast::Bf16Copy& w16,
                                               std::size_t first, std::size_t count, int rows) {
    if (!w16 || !weight.defined() || !weight.is_leaf() || !weight.requires_grad() || weight.dim() != 2) return nullptr;
    const std::shared_ptr<const TensorValues> values = weight.values_ptr();
    if (!values) return nullptr;
    const std::size_t in = weight.size(1);
    if (first + count > weight.size(0) || w16->size() != values->array.size()) return nullptr;
    const auto version = copies().get(values, [](const TensorValues& v) {
        auto blocks = std::make_shared<PackedBlocks>();
        blocks->elements = v.array.size();
        return blocks;
    });
    const std::lock_guard<std::mutex> lock(version->mutex);
    if (version->source.lock() != w16) {
        version->blocks.clear();
        version->packed_elements = 0;
        version->source = w16;
    }
    for (const PackedBlocks::Block& b : version->blocks)
        if (b.first == first && b.count == count) {
            blocks_reused.fetch_add(1, std::memory_order_relaxed);
            return b.packed;
        }
    if (version->packed_elements + count * in > kPackedPerWeight * version->elements) return nullptr;
    // packed under the block list's lock: the products that wait for it would pack it too
    std::shared_ptr<const void> packed =
        pack_bf16_weight(rows, static_cast<int>(count), static_cast<int>(in), w16->data() + first * in);
    if (!packed) return nullptr;
    version->blocks.push_back({first, count, packed});
    version->packed_elements += count * in;
    blocks_packed.fetch_add(1, std::memory_order_relaxed);
    return packed;
}

// Called by every Linear forward with grad mode on: the counts are written only when there was
// something to drop, not on every training forward.
void drop_packed_weights() {
    if (!copies().clear_if_any()) return;
    blocks_packed.store(0, std::memory_order_relaxed);
    blocks_reused.store(0, std::memory_order_relaxed);
}

PackedWeightCounts packed_weight_counts() {
    return {blocks_packed.load(), blocks_reused.load(), copies().counts().held};
}

}  // namespace xtgrad::detail
