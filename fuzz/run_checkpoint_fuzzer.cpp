// libFuzzer target: nn::load_run on arbitrary bytes — the safetensors container, the run
// metadata (epoch, optimizer.param_groups, schedule, generators) and the optimizer entries —
// and Generator::set_state on the same bytes (a run's generator entries are hex, whose every
// changed byte the state's check refuses: the fields' parser is reached this way).
// A load either succeeds or throws xtgrad::Error and then leaves the run exactly as it was
// (model, optimizer, schedule, generator, epoch: all or nothing). Any other outcome — a crash,
// a sanitizer report, another exception, a changed run after an Error — is a finding.
#include <xtgrad/autograd/error.hpp>
#include "fuzz/fuzz_input.hpp"
#include "fuzz/run_checkpoint.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

using namespace xtgrad;

namespace {

// Everything load_run may change, to compare before and after a refused load.
struct Observed {
    std::vector<Array> model, optimizer;
    std::string param_groups, schedule;
    std::vector<std::uint8_t> generator;
    long epoch;
    explicit Observed(const fuzz::TrainedRun& r) : schedule(r.schedule.state_dict()), generator(r.gen.state()), epoch(r.state.epoch) {
        for (const auto& [name, t] : r.net.state_dict()) model.push_back(t.data());
        const optim::OptimizerState o = r.opt.state_dict();
        for (const auto& [name, a] : o.tensors) optimizer.push_back(a);
        param_groups = o.param_groups;
    }
    // Bitwise, so that NaN values compare equal to themselves.
    static bool same(const std::vector<Array>& a, const std::vector<Array>& b) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (a[i].shape() != b[i].shape() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0)
                return false;
        return true;
    }
    bool operator==(const Observed& o) const {
        return same(model, o.model) && same(optimizer, o.optimizer) && param_groups == o.param_groups &&
               schedule == o.schedule && generator == o.generator && epoch == o.epoch;
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static auto run = std::make_unique<fuzz::TrainedRun>();
    static const Observed baseline(*run);
    {
        Generator gen(7);
        const std::vector<std::uint8_t> before = gen.state();
        try {
            gen.set_state(std::vector<std::uint8_t>(data, data + size));
        } catch (const Error&) {
            if (gen.state() != before) std::abort();  // a refused state changed the generator
        }
    }
    try {
        nn::load_run(fuzz::input_file(data, size), run->net, run->state);
    } catch (const Error&) {
        if (!(Observed(*run) == baseline)) std::abort();  // a refused load changed the run
        return 0;
    }
    run = std::make_unique<fuzz::TrainedRun>();  // loaded: the same run again for the next input
    return 0;
}
