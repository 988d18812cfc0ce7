#include <xtgrad/nn/parallel/zero_optimizer.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/io/bounded_json.hpp>
#include <xtgrad/nn/parallel/agreement.hpp>
#include <xtgrad/nn/parallel/process_group.hpp>
#include <xtgrad/optim/option_checks.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>

namespace xtgrad::nn::parallel {

std::vector<int> partition_parameters(const std::vector<std::size_t>& numels, int world) {
    if (world < 1) fail("ZeroRedundancyOptimizer: world size must be >= 1, got {}", world);
    std::vector<std::size_t> order(numels.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return numels[a] > numels[b]; });
    std::vector<std::size_t> load(static_cast<std::size_t>(world), 0);
    std::vector<int> owner(numels.size(), 0);
    for (std::size_t i : order) {
        const auto least = std::min_element(load.begin(), load.end());  // the first of equals: the lowest rank
        owner[i] = static_cast<int>(least - load.begin());
        *least += numels[i];
    }
    return owner;
}

namespace {

const char* kWho = "ZeroRedundancyOptimizer";

// "state.<i>.<key>" -> i (npos if the name has no such index, in state_dict()'s form; the caller reports it)
std::size_t state_index(const std::string& name, std::string* key) {
    const auto entry = optim::checks::state_entry(name);
    if (!entry) return std::string::npos;
    *key = entry->second;
    return entry->first;
}

// param_groups is a file's text: parsed with a bound on its nesting (a valid one nests 3 deep),
// as optim's own parser does, so that a 200 000-deep list cannot overflow the stack.
nlohmann::json parse_groups(const std::string& text) {
    try {
        return xtgrad::detail::parse_bounded_json(text, {8}, "optimizer state: param_groups");
    } catch (const nlohmann::json::exception& e) {
        fail("optimizer state: param_groups is not JSON ({})", std::string(e.what()).substr(0, 200));
    }
}

// param_groups with "params" replaced by 0..n-1 (the local optimizer numbers its own shard).
std::string renumbered_groups(const std::string& text, std::size_t n) {
    nlohmann::json groups = parse_groups(text);
    std::vector<std::size_t> all(n);
    std::iota(all.begin(), all.end(), std::size_t{0});
    groups.at(0)["params"] = all;
    return groups.dump();
}

// Large shards go in pieces: MPI counts are ints.
void broadcast_bytes(void* data, std::size_t bytes, int root, const char* what) {
    constexpr std::size_t kPiece = std::size_t{1} << 30;
    auto* p = static_cast<unsigned char*>(data);
    for (std::size_t done = 0; done < bytes; done += kPiece)
        distributed::broadcast(p + done, std::min(kPiece, bytes - done), root, what);
}

// A shard's state entries as bytes for a broadcast: per entry its name, shape and floats.
void put(std::vector<unsigned char>& out, const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    out.insert(out.end(), b, b + n);
}
}  // namespace

std::vector<unsigned char> detail::serialize_shard(const std::vector<std::pair<std::string, Array>>& entries) {
    std::vector<unsigned char> out;
    const std::uint64_t count = entries.size();
    put(out, &count, 8);
    for (const auto& [name, a] : entries) {
        const std::uint64_t len = name.size(), dims = a.dimension();
        put(out, &len, 8);
        put(out, name.data(), name.size());
        put(out, &dims, 8);
        for (std::size_t d : a.shape()) {
            const std::uint64_t v = d;
            put(out, &v, 8);
        }
        put(out, a.data(), a.size() * sizeof(float));
    }
    return out;
}

namespace {

// The other process's bytes, read with every length checked against what is left: a
// truncated or corrupt message is an Error naming its sender, never a read past the end.
class Reader {
public:
    Reader(const std::vector<unsigned char>& b, int from) : b_(b), from_(from) {}
    std::uint64_t u64() {
        std::uint64_t v = 0;
        take(&v, 8, "a length");
        return v;
    }
    void need(std::uint64_t n, const char* what) const {
        if (n > b_.size() - at_)
            fail("{}.consolidate_state_dict: the shard of rank {} is cut short ({} needs {} bytes, {} left)", kWho, from_,
                 what, n, b_.size() - at_);
    }
    void take(void* dst, std::uint64_t n, const char* what) {
        need(n, what);
        if (n != 0) std::memcpy(dst, b_.data() + at_, n);
        at_ += n;
    }
    bool done() const { return at_ == b_.size(); }

private:
    const std::vector<unsigned char>& b_;
    std::size_t at_ = 0;
    int from_;
};

}  // namespace

std::vector<std::pair<std::string, Array>> detail::deserialize_shard(const std::vector<unsigned char>& bytes, int from) {
    std::vector<std::pair<std::string, Array>> out;
    Reader r(bytes, from);
    const std::uint64_t count = r.u64();
    for (std::uint64_t e = 0; e < count; ++e) {
        const std::uint64_t length = r.u64();
        r.need(length, "an entry's name");  // before allocating what a corrupt length claims
        std::string name(length, '\0');
        r.take(name.data(), name.size(), "an entry's name");
        const std::uint64_t dims = r.u64();
        if (dims > 8) fail("{}.consolidate_state_dict: entry '{}' from rank {} has {} dimensions", kWho, name, from, dims);
        Shape shape(dims);
        std::size_t numel = 1;
        for (std::size_t& d : shape) {
            d = r.u64();
            if (d != 0 && numel > bytes.size() / d)
                fail("{}.consolidate_state_dict: entry '{}' from rank {} claims more elements than its message holds", kWho,
                     name, from);
            numel *= d;
        }
        r.need(static_cast<std::uint64_t>(numel) * sizeof(float), "an entry's values");
        Array a = empty_array(shape);
        r.take(a.data(), static_cast<std::uint64_t>(numel) * sizeof(float), "an entry's values");
        out.emplace_back(std::move(name), std::move(a));
    }
    if (!r.done()) fail("{}.consolidate_state_dict: the shard of rank {} has bytes after its last entry", kWho, from);
    return out;
}

namespace {
// The partition and every broadcast follow the shapes: processes given other parameters (or other
// ones frozen) would overwrite each other's with the wrong values, silently. DDP's check, on the
// parameters as given (the optimizer then drops the frozen ones).
std::vector<Tensor> same_on_every_rank(std::vector<Tensor> params) {
    distributed::require_process_group(kWho);
    NamedTensors named;
    for (std::size_t i = 0; i < params.size(); ++i)
        named.emplace_back(params[i].name().empty() ? fmt::format("#{}", i) : params[i].name(), params[i]);
    detail::agree(detail::difference_from_rank0(named), kWho,
                  "differ from rank 0 (every process must give it the same parameters, frozen alike)");
    return params;
}
}  // namespace

namespace {
// The local optimizer's hyperparameters (its param_groups without the parameter lists, which
// differ by shard): a shard stepped with another lr or betas than the others' diverges silently.
std::string settings(const optim::Optimizer& local) {
    nlohmann::json groups = parse_groups(local.state_dict().param_groups);
    if (groups.is_array())
        for (nlohmann::json& g : groups)
            if (g.is_object()) g.erase("params");
    return groups.dump();
}
}  // namespace

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params, const Factory& make_optimizer)
    : Optimizer(same_on_every_rank(std::move(params)), 0), rank_(distributed::get_rank()),
      world_(distributed::get_world_size()) {
    std::vector<std::size_t> numels;
    for (const Tensor& p : params_) numels.push_back(p.numel());
    owner_ = partition_parameters(numels, world_);
    std::vector<Tensor> mine;
    for (std::size_t i = 0; i < params_.size(); ++i) {
        if (owner_[i] == rank_) {
            owned_.push_back(i);
            mine.push_back(params_[i]);
        }
    }
    std::string problem;  // a factory that fails on one process alone must stop every process
    try {
        local_ = make_optimizer(std::move(mine));
        if (!local_) fail("{}: the optimizer factory returned nothing", kWho);
        if (local_->params().size() != owned_.size())
            fail("{}: the local optimizer holds {} parameters, this process owns {} (the factory must use the ones it is "
                 "given)", kWho, local_->params().size(), owned_.size());
    } catch (const std::exception& e) {
        problem = e.what();
    }
    detail::agree(problem, kWho, "could not build the local optimizer");
    detail::agree(detail::difference_from_rank0(settings(*local_), "the optimizer's param_groups (without params)"),
                  kWho, "differ from rank 0 (every process must build the same optimizer: each steps its shard with its own)");
    local_->set_check_finite(false);  // step() checks every gradient once, before any process steps
    lr_ = local_->lr();
}

ZeroRedundancyOptimizer::ZeroRedundancyOptimizer(std::vector<Tensor> params, const optim::AdamOptions& adam)
    : ZeroRedundancyOptimizer(std::move(params), [adam](std::vector<Tensor> p) {
          return std::make_unique<optim::Adam>(std::move(p), adam);
      }) {}

void ZeroRedundancyOptimizer::step() {
    // Without DDP the gradients are each process's own: a check one process fails alone must stop
    // every process before any steps (the others would wait in the broadcasts, or step alone).
    std::string problem;
    try {
        for (std::size_t i = 0; i < params_.size(); ++i)  // every one was trained when the optimizer was built
            if (!params_[i].requires_grad())
                fail("{}.step: parameter {} '{}' was frozen after the optimizer was built; freeze parameters before "
                     "constructing it, the same in every process", kWho, i, params_[i].name());
        check_gradients(kWho);
    } catch (const std::exception& e) {
        problem = e.what();
    }
    detail::agree(problem, "ZeroRedundancyOptimizer.step", "refused the step, so no rank stepped");
    local_->set_lr(lr_);  // a schedule sets the wrapper's
    local_->step();
    consolidated_.reset();
    broadcast_parameters();
}

// One broadcast per parameter, in place from its owner: no buffer (torch's default without
// parameters_as_bucket_view), so the memory saved on the moments is not spent on a copy.
void ZeroRedundancyOptimizer::broadcast_parameters() {
    if (world_ == 1) return;
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < params_.size(); ++i)
        broadcast_bytes(params_[i].mutable_ptr(), params_[i].numel() * sizeof(float), owner_[i],
                        "ZeroRedundancyOptimizer.step: parameter broadcast");
    broadcast_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

optim::OptimizerState ZeroRedundancyOptimizer::local_state_dict() const {
    optim::OptimizerState local = local_->state_dict();
    local.param_groups = renumbered_groups(local.param_groups, params_.size());
    for (auto& [name, a] : local.tensors) {
        std::string key;
        const std::size_t i = state_index(name, &key);  // the local optimizer's own names: always well formed
        name = fmt::format("state.{}.{}", owned_.at(i), key);
    }
    return local;
}

void ZeroRedundancyOptimizer::consolidate_state_dict(int to) {
    // Every process must name the same rank: broadcasts from other roots would pair up wrongly.
    const std::string differs = detail::difference_from_rank0(std::to_string(to), "the rank to consolidate on");
    const std::string outside =
        to < 0 || to >= world_ ? fmt::format("{}.consolidate_state_dict: rank {} is not in the world of {}", kWho, to, world_) : "";
    detail::agree(outside.empty() ? differs : outside, "ZeroRedundancyOptimizer.consolidate_state_dict",
                  "refused the target rank");
    optim::OptimizerState all = local_state_dict();
    for (int r = 0; r < world_; ++r) {
        if (r == to) continue;  // its own entries are in `all`
        // every rank takes part in each broadcast (a transient 1/N of the state); only `to` keeps it
        std::vector<unsigned char> bytes;
        if (r == rank_) bytes = detail::serialize_shard(all.tensors);
        std::uint64_t size = bytes.size();
        distributed::broadcast(&size, sizeof size, r, "ZeroRedundancyOptimizer.consolidate_state_dict: shard size");
        bytes.resize(size);
        broadcast_bytes(bytes.data(), bytes.size(), r, "ZeroRedundancyOptimizer.consolidate_state_dict: shard");
        if (rank_ != to) continue;
        for (auto& entry : detail::deserialize_shard(bytes, r)) {
            std::string key;  // a parameter rank r owns, by this process's partition too
            const std::size_t i = state_index(entry.first, &key);
            if (i >= params_.size() || owner_[i] != r)
                fail("{}.consolidate_state_dict: rank {} sent '{}', which names no parameter it owns", kWho, r, entry.first);
            all.tensors.push_back(std::move(entry));
        }
    }
    if (rank_ != to) {
        consolidated_.reset();
        return;
    }
    // The order of a plain optimizer's state_dict: by parameter index (the keys keep their order).
    std::stable_sort(all.tensors.begin(), all.tensors.end(), [](const auto& a, const auto& b) {
        std::string ka, kb;
        return state_index(a.first, &ka) < state_index(b.first, &kb);
    });
    consolidated_ = std::move(all);
}

optim::OptimizerState ZeroRedundancyOptimizer::state_dict() const {
    if (world_ == 1) return local_state_dict();  // the one shard is everything
    if (!consolidated_)
        fail("{}.state_dict: rank {} of {} holds only its shard; call consolidate_state_dict(to) on every rank after the "
             "last step, then state_dict() on rank `to`", kWho, rank_, world_);
    optim::OptimizerState out = *consolidated_;
    out.param_groups = renumbered_groups(local_state_dict().param_groups, params_.size());  // the current lr
    return out;
}

// Each process checks the whole state's names and shapes but only its own shard's contents (the
// local optimizer's checks): the verdicts are shared before anything stays loaded, so that no
// process keeps a state another refused (training on with mixed moments).
void ZeroRedundancyOptimizer::load_state_dict(const optim::OptimizerState& state) {
    std::string problem;
    std::optional<optim::OptimizerState> before;  // this shard's state, to undo a load others refused
    try {
        if (world_ > 1) before = local_->state_dict();
        load_shard(state);
    } catch (const std::exception& e) {
        problem = e.what();
        before.reset();  // a refused load changed nothing here
    }
    try {
        detail::agree(problem, "ZeroRedundancyOptimizer.load_state_dict", "refused the state, so no rank loaded it");
    } catch (const Error&) {
        if (before) local_->load_state_dict(*before);  // loaded here, refused elsewhere: undone
        throw;
    }
    lr_ = local_->lr();
    consolidated_.reset();
}

void ZeroRedundancyOptimizer::load_shard(const optim::OptimizerState& state) {
    optim::OptimizerState local;
    std::vector<std::size_t> local_index(params_.size(), std::string::npos);
    for (std::size_t k = 0; k < owned_.size(); ++k) local_index[owned_[k]] = k;
    for (const auto& [name, a] : state.tensors) {
        std::string key;
        const std::size_t i = state_index(name, &key);
        if (i == std::string::npos)
            fail("optimizer state: '{}' is not a 'state.<index>.<key>' entry", optim::checks::shown_name(name));
        if (i >= params_.size())
            fail("optimizer state: '{}' names parameter {}, this optimizer has {}", optim::checks::shown_name(name), i,
                 params_.size());
        if (key != "step" && a.shape() != params_[i].data().shape())
            fail("optimizer state: '{}' has shape {}, parameter {} ('{}') has shape {}", optim::checks::shown_name(name),
                 shape_str(a.shape()), i, params_[i].name(), shape_str(params_[i].shape()));
        if (local_index[i] != std::string::npos) local.tensors.emplace_back(fmt::format("state.{}.{}", local_index[i], key), a);
    }
    // The group's own checks (one group, its hyperparameters) are the local optimizer's; its
    // parameter count must be the whole optimizer's.
    const nlohmann::json groups = parse_groups(state.param_groups);
    if (!groups.is_array() || groups.size() != 1 || !groups[0].is_object() || !groups[0].contains("params") ||
        !groups[0]["params"].is_array() || groups[0]["params"].size() != params_.size())
        fail("optimizer state: the saved group must list {} parameters (this optimizer's, over every process), got {}",
             params_.size(), state.param_groups.substr(0, 120));
    local.param_groups = renumbered_groups(state.param_groups, owned_.size());
    local_->load_state_dict(local);
}

std::size_t ZeroRedundancyOptimizer::local_state_bytes() const {
    std::size_t bytes = 0;
    for (const Tensor& p : local_->params())
        for (const char* key : {"exp_avg", "exp_avg_sq", "momentum_buffer"})
            if (const Array* a = local_->state(p, key)) bytes += a->size() * sizeof(float);
    return bytes;
}

}  // namespace xtgrad::nn::parallel
