// BitMask: one bit per element, for a backward that needs only a yes or no per element: relu's
// "was the output positive", dropout's "was this element kept". It is a 32nd of the floats torch
// keeps for relu (its whole result) and an 8th of a bool mask; on tutorial B at batch 64 the
// feed-forwards' relu outputs alone were ~630 MB kept for backward (docs/performance.md, "Memory").
//
// Element i is bit i % 32 of word i / 32. A word's 32 elements expand with one variable shift per
// lane (AVX2's vpsrlvd), so the loops in for_each_bit and pack_bits vectorise.
#pragma once

#include <xtgrad/autograd/array.hpp>
#include <xtgrad/threads/parallel.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace xtgrad {

class BitMask {
public:
    static constexpr std::size_t kWordBits = 32;

    BitMask() = default;
    explicit BitMask(Shape shape);  // every bit clear; an Error if the element count overflows

    const Shape& shape() const { return shape_; }
    std::size_t size() const { return size_; }
    std::size_t words() const { return words_.size(); }
    const std::uint32_t* data() const { return words_.data(); }
    std::uint32_t* data() { return words_.data(); }
    bool operator[](std::size_t i) const { return (words_[i / kWordBits] >> (i % kWordBits)) & 1u; }

    std::size_t count() const;  // how many bits are set
    Mask to_mask() const;       // the same bits as a bool array of shape(), for display and tests

private:
    Shape shape_;
    std::size_t size_ = 0;
    std::vector<std::uint32_t> words_;
};

namespace detail {
// An Error naming `who` and both shapes unless a and b hold the same number of bits (the helpers
// below loop over the first mask's words and index the others with them).
void check_same_bits(const BitMask& a, const BitMask& b, const char* who);
}  // namespace detail

// For every i < m.size(): write(i), then bit i = is_set(i), a word's 32 elements at a time, whole
// words split over xtgrad's pool (a word is written by one thread only). An op that computes its
// result and keeps a bit of it (relu, dropout) does both in one pass over its input: write(i)
// stores element i's result and is_set(i) reads it back while the word is in L1. Two loops per
// word, each vectorising on its own (one loop doing both did not: relu on 640 x 2048 took 1.75 ms,
// not 0.82); over cold buffers the one pass took 0.8-1.0 ms against 2.0-2.4 for two.
// With several masks (relu_dropout keeps two), mask k takes its bits from the k-th is_set; masks of
// different sizes are an Error, before anything is written.
template <class Write, class... IsSet>
void write_and_pack_bits(const std::array<BitMask*, sizeof...(IsSet)>& masks, Write write, IsSet... is_set) {
    static_assert(sizeof...(IsSet) >= 1, "at least one mask");
    const std::size_t n = masks[0]->size();
    static constexpr std::size_t kBits = BitMask::kWordBits;
    for (const BitMask* m : masks) detail::check_same_bits(*masks[0], *m, "write_and_pack_bits");
    parallel_rows(masks[0]->words(), kBits, [&](std::size_t w0, std::size_t w1) {
        for (std::size_t w = w0; w < w1; ++w) {
            const std::size_t base = w * kBits, len = std::min(kBits, n - base);
            // one mask's word from its is_set; a full word has fixed trip counts, so the loops vectorise
            const auto pack = [base, len](auto bit) {
                std::uint32_t word = 0;
                if (len == kBits) {
                    for (std::size_t j = 0; j < kBits; ++j) word |= static_cast<std::uint32_t>(bit(base + j) ? 1u : 0u) << j;
                } else {
                    for (std::size_t j = 0; j < len; ++j) word |= static_cast<std::uint32_t>(bit(base + j) ? 1u : 0u) << j;
                }
                return word;
            };
            if (len == kBits) {
                for (std::size_t j = 0; j < kBits; ++j) write(base + j);
            } else {
                for (std::size_t j = 0; j < len; ++j) write(base + j);
            }
            std::size_t k = 0;
            ((masks[k++]->data()[w] = pack(is_set)), ...);  // left to right: mask k, is_set k
        }
    });
}

template <class Write, class IsSet>
void write_and_pack_bits(BitMask& m, Write write, IsSet is_set) {
    write_and_pack_bits(std::array<BitMask*, 1>{&m}, write, is_set);
}

// Sets bit i = is_set(i) for every i < m.size(), as above with nothing written.
template <class IsSet>
void pack_bits(BitMask& m, IsSet is_set) {
    write_and_pack_bits(m, [](std::size_t) {}, is_set);
}

// Calls body(i, bit) for every i < m.size(), bit = 0.f or 1.f, a word's 32 elements at a time,
// words split over xtgrad's pool; element ranges, so any body that writes only element i gives
// the same result for any thread count.
template <class Body>
void for_each_bit(const BitMask& m, Body body) {
    const std::uint32_t* words = m.data();
    const std::size_t n = m.size();
    parallel_rows(m.words(), BitMask::kWordBits, [&](std::size_t w0, std::size_t w1) {
        for (std::size_t w = w0; w < w1; ++w) {
            const std::uint32_t word = words[w];
            const std::size_t base = w * BitMask::kWordBits;
            if (n - base >= BitMask::kWordBits) {  // a full word: a fixed trip count, so it vectorises
                for (std::uint32_t j = 0; j < BitMask::kWordBits; ++j)
                    body(base + j, static_cast<float>((word >> j) & 1u));
            } else {
                for (std::uint32_t j = 0; j < n - base; ++j) body(base + j, static_cast<float>((word >> j) & 1u));
            }
        }
    });
}

// As for_each_bit over two masks of one size (else an Error): body(i, bit of a, bit of b).
template <class Body>
void for_each_bit_pair(const BitMask& a, const BitMask& b, Body body) {
    detail::check_same_bits(a, b, "for_each_bit_pair");
    const std::uint32_t* wa = a.data();
    const std::uint32_t* wb = b.data();
    const std::size_t n = a.size();
    parallel_rows(a.words(), BitMask::kWordBits, [&](std::size_t w0, std::size_t w1) {
        for (std::size_t w = w0; w < w1; ++w) {
            const std::uint32_t x = wa[w], y = wb[w];
            const std::size_t base = w * BitMask::kWordBits;
            const std::uint32_t len = n - base >= BitMask::kWordBits ? BitMask::kWordBits : static_cast<std::uint32_t>(n - base);
            if (len == BitMask::kWordBits) {  // a full word: a fixed trip count, so it vectorises
                for (std::uint32_t j = 0; j < BitMask::kWordBits; ++j)
                    body(base + j, static_cast<float>((x >> j) & 1u), static_cast<float>((y >> j) & 1u));
            } else {
                for (std::uint32_t j = 0; j < len; ++j)
                    body(base + j, static_cast<float>((x >> j) & 1u), static_cast<float>((y >> j) & 1u));
            }
        }
    });
}

}  // namespace xtgrad
