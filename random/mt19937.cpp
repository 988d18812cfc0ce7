#include <xtgrad/random/mt19937.hpp>

#include <algorithm>
#include <istream>
#include <ostream>

namespace xtgrad {

namespace {

constexpr std::uint32_t kUpper = 0x80000000u, kLower = 0x7FFFFFFFu, kMatrixA = 0x9908B0DFu;

// One word of the twist: the top bit of `cur` and the low 31 of `next`, shifted and xored into the
// word 397 ahead. Branch-free (the odd case's matrix as a mask), so the loops below vectorise.
inline std::uint32_t twisted(std::uint32_t cur, std::uint32_t next, std::uint32_t far) {
    const std::uint32_t y = (cur & kUpper) | (next & kLower);
    return far ^ (y >> 1) ^ (kMatrixA & (0u - (y & 1u)));
}

}  // namespace

void Mt19937::seed(result_type s) {
    state_[0] = s;
    for (std::size_t i = 1; i < state_size; ++i) {
        const std::uint32_t prev = state_[i - 1];
        state_[i] = 1812433253u * (prev ^ (prev >> 30)) + static_cast<std::uint32_t>(i);
    }
    pos_ = state_size;
}

void Mt19937::twist() {
    // x: (624,) state words, rewritten in place in order. Word i reads words i + 1 (not yet
    // rewritten) and i + 397, which wraps to the already rewritten word i - 227 from i = 227 on:
    // both loops have a dependence distance of at least 227 words, far more than a vector.
    std::uint32_t* __restrict x = state_.data();
    constexpr std::size_t wrap = state_size - shift_size;  // 227
    for (std::size_t i = 0; i < wrap; ++i) x[i] = twisted(x[i], x[i + 1], x[i + shift_size]);
    for (std::size_t i = wrap; i < state_size - 1; ++i) x[i] = twisted(x[i], x[i + 1], x[i - wrap]);
    x[state_size - 1] = twisted(x[state_size - 1], x[0], x[shift_size - 1]);
    pos_ = 0;
}

void Mt19937::generate(result_type* out, std::size_t n) {
    while (n > 0) {
        if (pos_ >= state_size) twist();
        const std::size_t k = std::min(n, state_size - pos_);
        const std::uint32_t* __restrict x = state_.data() + pos_;
        std::uint32_t* __restrict o = out;
        for (std::size_t i = 0; i < k; ++i) o[i] = temper(x[i]);
        pos_ += k, out += k, n -= k;
    }
}

void Mt19937::discard(unsigned long long n) {
    while (n > 0) {
        if (pos_ >= state_size) twist();
        const std::size_t k = static_cast<std::size_t>(std::min<unsigned long long>(n, state_size - pos_));
        pos_ += k, n -= k;
    }
}

bool operator==(const Mt19937& a, const Mt19937& b) { return a.pos_ == b.pos_ && a.state_ == b.state_; }

std::ostream& operator<<(std::ostream& os, const Mt19937& e) {
    const auto flags = os.flags();
    const auto fill = os.fill();
    os.flags(std::ios_base::dec | std::ios_base::fixed | std::ios_base::left);
    os.fill(' ');
    for (std::uint32_t w : e.state_) os << w << ' ';
    os << e.pos_;
    os.flags(flags);
    os.fill(fill);
    return os;
}

std::istream& operator>>(std::istream& is, Mt19937& e) {
    const auto flags = is.flags();
    is.flags(std::ios_base::dec | std::ios_base::skipws);
    Mt19937 read;
    for (std::uint32_t& w : read.state_) is >> w;
    is >> read.pos_;
    if (read.pos_ > Mt19937::state_size) is.setstate(std::ios_base::failbit);
    if (!is.fail()) e = read;
    is.flags(flags);
    return is;
}

}  // namespace xtgrad
