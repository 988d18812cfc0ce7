#include <xtgrad/random/mt19937.hpp>

#include <xtgrad/simd/vector_kernels.hpp>

#include <algorithm>
#include <istream>
#include <ostream>

namespace xtgrad {

void Mt19937::seed(result_type s) {
    state_[0] = s;
    for (std::size_t i = 1; i < state_size; ++i) {
        const std::uint32_t prev = state_[i - 1];
        state_[i] = 1812433253u * (prev ^ (prev >> 30)) + static_cast<std::uint32_t>(i);
    }
    pos_ = state_size;
}

Mt19937 Mt19937::from_words(const std::array<result_type, state_size>& words, std::size_t pos) {
    Mt19937 e;
    e.state_ = words;
    e.pos_ = pos;
    return e;
}

void Mt19937::twist() {
    vec::mt_twist(state_.data());  // the vector kernels of the CPU's instruction set
    pos_ = 0;
}

void Mt19937::generate(result_type* out, std::size_t n) {
    while (n > 0) {
        if (pos_ >= state_size) twist();
        const std::size_t k = std::min(n, state_size - pos_);
        vec::mt_temper(state_.data() + pos_, k, out);
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

bool Mt19937::stuck() const {
    return (state_[0] & 0x80000000u) == 0 && std::all_of(state_.begin() + 1, state_.end(), [](result_type w) { return w == 0; });
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
