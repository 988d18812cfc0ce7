// The steps a resumed run's page keeps from the page of the run it continues
// (RunReport::continue_from): read back from that page's data, which is outside data (any file
// may sit at OUT/report.html), so every field is checked and one of another shape is an Error
// naming it. Internal.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace xtgrad::report {

struct EarlierSteps {
    struct Scalar {
        std::string name;
        std::vector<long> steps;
        std::vector<double> values;  // NaN and infinities as the page wrote them ("nan", "inf")
    };
    using Values = std::vector<std::optional<double>>;  // one per stat step; nullopt: not measured
    std::vector<Scalar> scalars;
    std::vector<long> stat_steps;
    // per statistic ("grad_norm", ...), per module: values at stat_steps
    std::vector<std::pair<std::string, std::vector<std::pair<std::string, Values>>>> stats;
};

// The steps up to `through_step` of a report's data (report::read_data of a report.html). `who`
// starts each message: "the page of the resumed run, 'out/report.html'". `null_scalars`: a
// scalar's value may be null (pages before "nan" was written wrote null; a comparison shows them
// as gaps), read as NaN.
EarlierSteps earlier_steps(const std::string& data, long through_step, const std::string& who, bool null_scalars = false);

}  // namespace xtgrad::report
