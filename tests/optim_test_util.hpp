// What the optimizer tests share: a two-parameter quadratic to step, and a record of what a
// refused call must leave as it was.
#pragma once

#include <xtgrad/optim/optimizer.hpp>
#include "tests/test_util.hpp"

#include <limits>
#include <vector>

namespace xtgrad::test {

using optim::Optimizer;

// Two parameters; the second takes no step in the first `skip_second` steps (no state then).
struct Quadratic {
    Tensor a = Tensor::from_vector({3.f, -2.f, 0.5f}, {3}, true), b = Tensor::from_vector({1.f, 4.f}, {2}, true);
    void step(Optimizer& opt, bool both) {
        opt.zero_grad();
        Tensor loss = sum(a * a);
        if (both) loss = loss + sum(b * b * b);
        loss.backward();
        opt.step();
    }
};

inline constexpr double kBadNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kBadInf = std::numeric_limits<double>::infinity();

// What a refused call must leave as it was: the parameters, the lr, the step counts, the moments.
struct Unchanged {
    const Optimizer& opt;
    std::vector<Array> values;
    double lr;
    std::vector<long> steps;
    explicit Unchanged(const Optimizer& o) : opt(o), lr(o.lr()) {
        for (const Tensor& p : o.params()) {
            values.push_back(p.data());
            steps.push_back(o.step_count(p));
        }
    }
    void check() const {
        CHECK(opt.lr() == lr);
        for (std::size_t i = 0; i < values.size(); ++i) {
            CHECK(test::max_abs_diff(opt.params()[i].data(), values[i]) == 0.f);
            CHECK(opt.step_count(opt.params()[i]) == steps[i]);
        }
    }
};

}  // namespace xtgrad::test
