// Mt19937: the 32-bit Mersenne Twister of std::mt19937 (and of torch's CPU generator), number for
// number, with a bulk draw that is several times faster than calling it once per number.
//
// Why not std::mt19937: dropout draws two numbers per element from one sequential stream (torch's
// order, so the masks equal torch's), and one call at a time costs ~3.5 ns per number here; a
// training step of tutorial B draws hundreds of millions. generate() twists the whole 624-word
// state and tempers a run of words in loops the compiler vectorises (each twist step reads words
// 1 and 397 ahead, so 8 or 16 lanes never read a word the same pass is still writing), compiled
// for AVX2 and AVX-512 (simd/vector_kernels.hpp's mt_twist and mt_temper: 0.17 and 0.10 ns per
// word on Zen 5).
// The text form (operator<< / >>) is libstdc++'s for std::mt19937 — the 624 state words, then
// the position — so generator states saved by earlier builds still load.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>

namespace xtgrad {

class Mt19937 {
public:
    using result_type = std::uint32_t;
    static constexpr std::size_t state_size = 624;
    static constexpr std::size_t shift_size = 397;
    static constexpr result_type default_seed = 5489u;

    explicit Mt19937(result_type seed = default_seed) { this->seed(seed); }
    void seed(result_type s);
    // The engine at a given state: its 624 words and its position in them (<= 624; the caller checks).
    static Mt19937 from_words(const std::array<result_type, state_size>& words, std::size_t pos);

    static constexpr result_type min() { return 0; }
    static constexpr result_type max() { return 0xFFFFFFFFu; }

    result_type operator()() {
        if (pos_ >= state_size) twist();
        return temper(state_[pos_++]);
    }
    // out[0..n) = the next n numbers, as n calls of operator() would give them.
    void generate(result_type* out, std::size_t n);
    // Skips n numbers.
    void discard(unsigned long long n);
    // The state the twist keeps at zero: word 0's top bit and words 1-623 all 0 (its 19937 bits),
    // whose draws are 0 for ever after the words already twisted. No seed gives it; a state read
    // from bytes can.
    bool stuck() const;

    friend bool operator==(const Mt19937& a, const Mt19937& b);
    friend std::ostream& operator<<(std::ostream& os, const Mt19937& e);
    friend std::istream& operator>>(std::istream& is, Mt19937& e);

private:
    static result_type temper(result_type y) {
        y ^= y >> 11;
        y ^= (y << 7) & 0x9D2C5680u;
        y ^= (y << 15) & 0xEFC60000u;
        return y ^ (y >> 18);
    }
    void twist();  // the next 624 state words; pos_ = 0

    alignas(64) std::array<result_type, state_size> state_{};
    std::size_t pos_ = state_size;
};

}  // namespace xtgrad
