// libFuzzer target: a parity fixture's meta.json (tools/parity/fixture_meta.hpp) on arbitrary bytes.
// Any outcome but a checked meta or an xtgrad::Error (a crash, a sanitizer report, nlohmann's
// exception, a hang) is a finding; so is a meta the check accepted that a runner would still trip
// on: a name that is no file key, steps past the bound or with fewer entries than steps, a
// tolerance or a ReLU-kink allowance that is negative or not finite.
#include <xtgrad/autograd/error.hpp>
#include "tools/parity/fixture_meta.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

using xtgrad::parity::is_fixture_key;
using xtgrad::parity::json;

void require(bool ok) {
    if (!ok) std::abort();
}

void names_are_keys(const json& meta, const char* list) {
    if (!meta.contains(list)) return;
    for (const json& entry : meta[list]) require(is_fixture_key(entry["name"].get<std::string>()));
}

void finite_at_least_zero(const json& parent, const char* key) {
    if (parent.contains(key)) require(std::isfinite(parent[key].get<double>()) && parent[key].get<double>() >= 0);
}

// What the runners read (tools/parity/*.cpp), read as they read it.
void read_as_runners(const json& meta) {
    for (const char* list : {"params", "buffers", "inputs", "aux"}) names_are_keys(meta, list);
    if (meta.contains("grads"))
        for (const char* list : {"inputs", "params"})
            if (meta["grads"].contains(list))
                for (const json& k : meta["grads"][list]) require(is_fixture_key(k.get<std::string>()));
    if (meta.contains("files"))
        for (const auto& [key, entry] : meta["files"].items()) require(is_fixture_key(key) && entry.is_object());
    if (meta.contains("suggested_tolerance")) {
        finite_at_least_zero(meta["suggested_tolerance"], "rtol");
        finite_at_least_zero(meta["suggested_tolerance"], "atol");
    }
    for (const auto& [key, a] : xtgrad::parity::kink_allowances(meta, "fuzz/meta.json"))
        require(std::isfinite(a.atol) && a.atol >= 0 && !a.why.empty());
    if (meta.contains("training")) {
        const long steps = meta["training"]["steps"].get<long>();
        require(steps >= 0 && steps <= xtgrad::parity::kMaxFixtureSteps);
        (void)meta["training"]["hyper"]["betas"][1].get<double>();
    }
    if (meta.contains("optimizer")) {
        const json& o = meta["optimizer"];
        const long steps = o["steps"].get<long>();
        require(steps >= 0 && steps <= xtgrad::parity::kMaxFixtureSteps);
        require(o["lr_per_step"].size() >= static_cast<std::size_t>(steps));
        for (const json& p : o["params"]) {
            const json& counts = o["step_count_after_step"][p["name"].get<std::string>()];
            require(counts.size() >= static_cast<std::size_t>(steps));
            for (long k = 0; k < steps; ++k) require(counts[static_cast<std::size_t>(k)].get<long>() >= 0);
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    json meta;
    try {
        meta = xtgrad::parity::parse_fixture_meta(text, "fuzz/meta.json");
    } catch (const xtgrad::Error&) {
        return 0;
    }
    try {
        read_as_runners(meta);
    } catch (const std::exception&) {
        std::abort();  // the check let through a meta a runner cannot read
    }
    return 0;
}
