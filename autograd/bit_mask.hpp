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
#include <type_traits>
#include <utility>
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

// Calls run(len) with len the number of elements in word w of an n-element mask: for a full word a
// compile-time 32, so a loop `for (j = 0; j < len; ++j)` has a fixed trip count and vectorises;
// for the partial last word a plain count.
template <class Run>
void with_word_length(std::size_t n, std::size_t w, Run run) {
    constexpr std::size_t kBits = BitMask::kWordBits;
    if (n - w * kBits >= kBits) run(std::integral_constant<std::uint32_t, kBits>{});
    else run(static_cast<std::uint32_t>(n - w * kBits));
}
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
    for (const BitMask* m : masks) detail::check_same_bits(*masks[0], *m, "write_and_pack_bits");
    const std::size_t n = masks[0]->size();
    parallel_rows(masks[0]->words(), BitMask::kWordBits, [&](std::size_t w0, std::size_t w1) {
        for (std::size_t w = w0; w < w1; ++w) {
            const std::size_t base = w * BitMask::kWordBits;
            detail::with_word_length(n, w, [&](auto len) {
                for (std::uint32_t j = 0; j < len; ++j) write(base + j);
                const auto pack = [&](auto bit) {  // one mask's word from its is_set
                    std::uint32_t word = 0;
                    for (std::uint32_t j = 0; j < len; ++j) word |= static_cast<std::uint32_t>(bit(base + j) ? 1u : 0u) << j;
                    return word;
                };
                std::size_t k = 0;
                ((masks[k++]->data()[w] = pack(is_set)), ...);  // left to right: mask k, is_set k
            });
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
// the same result for any thread count. With several masks of one size (else an Error, before body
// runs): body(i, bit of mask 0, bit of mask 1, ...).
template <std::size_t N, class Body>
void for_each_bit(const std::array<const BitMask*, N>& masks, Body body) {
    static_assert(N >= 1, "at least one mask");
    for (const BitMask* m : masks) detail::check_same_bits(*masks[0], *m, "for_each_bit");
    const std::size_t n = masks[0]->size();
    parallel_rows(masks[0]->words(), BitMask::kWordBits, [&](std::size_t w0, std::size_t w1) {
        for (std::size_t w = w0; w < w1; ++w) {
            const std::size_t base = w * BitMask::kWordBits;
            [&]<std::size_t... K>(std::index_sequence<K...>) {
                const std::array<std::uint32_t, N> word{masks[K]->data()[w]...};
                detail::with_word_length(n, w, [&](auto len) {
                    for (std::uint32_t j = 0; j < len; ++j) body(base + j, static_cast<float>((word[K] >> j) & 1u)...);
                });
            }(std::make_index_sequence<N>{});
        }
    });
}

template <class Body>
void for_each_bit(const BitMask& m, Body body) {
    for_each_bit(std::array<const BitMask*, 1>{&m}, body);
}

}  // namespace xtgrad
