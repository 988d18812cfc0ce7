#include "autograd/random.hpp"

#include "autograd/error.hpp"

#include <sstream>

namespace xtgrad {

std::vector<std::uint8_t> Generator::state() const {
    std::ostringstream out;
    out << engine_;  // the engine's own textual serialisation (exact, portable across runs)
    const std::string text = out.str();
    return {text.begin(), text.end()};
}

void Generator::set_state(const std::vector<std::uint8_t>& bytes) {
    std::istringstream in(std::string(bytes.begin(), bytes.end()));
    std::mt19937_64 engine;
    in >> engine;
    if (in.fail()) fail("Generator::set_state: {} bytes that are not a generator state", bytes.size());
    engine_ = engine;
}

Generator& default_generator() {
    thread_local Generator gen(0);
    return gen;
}

void manual_seed(std::uint64_t seed) { default_generator().seed(seed); }

Tensor randn(const Shape& shape, Generator& gen, bool requires_grad) {
    Array a = empty_array(shape);
    for (float& v : a) v = gen.normal();
    return Tensor(std::move(a), requires_grad);
}

Tensor rand(const Shape& shape, Generator& gen, float lo, float hi, bool requires_grad) {
    Array a = empty_array(shape);
    for (float& v : a) v = gen.uniform(lo, hi);
    return Tensor(std::move(a), requires_grad);
}

Ids randint(const Shape& shape, std::int64_t lo, std::int64_t hi, Generator& gen) {
    if (hi <= lo) fail("randint: empty range [{}, {})", lo, hi);
    Ids ids = Ids::from_shape(shape);
    std::uniform_int_distribution<std::int64_t> dist(lo, hi - 1);
    for (auto& v : ids) v = dist(gen.engine());
    return ids;
}

}  // namespace xtgrad
