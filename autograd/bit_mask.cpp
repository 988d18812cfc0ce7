#include <xtgrad/autograd/bit_mask.hpp>

#include <xtgrad/autograd/error.hpp>

#include <bit>

namespace xtgrad {

BitMask::BitMask(Shape shape)
    : shape_(std::move(shape)),
      size_(checked_numel(shape_, "bit mask")),
      words_((size_ + kWordBits - 1) / kWordBits, 0u) {}

std::size_t BitMask::count() const {
    std::size_t on = 0;
    for (std::uint32_t w : words_) on += static_cast<std::size_t>(std::popcount(w));  // tail bits are never set
    return on;
}

void detail::check_same_bits(const BitMask& a, const BitMask& b, const char* who) {
    if (a.size() != b.size())
        fail("{}: the masks must have the same number of bits, got shapes {} ({} bits) and {} ({} bits)", who,
             shape_str(a.shape()), a.size(), shape_str(b.shape()), b.size());
}

Mask BitMask::to_mask() const {
    Mask m = Mask::from_shape(shape_);
    for (std::size_t i = 0; i < size_; ++i) m.data()[i] = (*this)[i];
    return m;
}

}  // namespace xtgrad
