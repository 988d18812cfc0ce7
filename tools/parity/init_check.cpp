#include "tools/parity/init_check.hpp"

#include "autograd/random.hpp"

#include <fmt/format.h>

#include <map>

namespace xtgrad::parity {

void check_init(const Fixture& f, const Builder& build, Report& r) {
    manual_seed(f.meta().at("seed").get<std::uint64_t>());
    const std::shared_ptr<nn::Module> model = build(f);
    std::map<std::string, Tensor> trainable;
    for (const auto& [name, t] : model->named_parameters())
        if (t.requires_grad()) trainable.emplace(name, t);
    const json ulps = f.meta().value("ulps", json::object());
    const nn::NamedTensors reference = f.state();
    for (const auto& [name, ref] : reference) {
        auto it = trainable.find(name);
        if (it == trainable.end()) {
            r.fail(name, "not a trainable parameter of xtgrad's model");
            continue;
        }
        r.compare_ulps(name, it->second.data(), ref.data(), ulps.value("param." + name, 0L));
    }
    if (trainable.size() != reference.size())
        r.fail("named_parameters", fmt::format("xtgrad's model has {} trainable parameters, torch's {}", trainable.size(),
                                               reference.size()));
}

}  // namespace xtgrad::parity
