#include "tools/parity/fixture_meta.hpp"

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/io/atomic_file.hpp>
#include <xtgrad/io/bounded_json.hpp>

#include <climits>
#include <filesystem>
#include <cmath>

namespace xtgrad::parity {

bool is_fixture_key(std::string_view name) {
    if (name.empty() || name.size() > 200) return false;
    for (const char c : name)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            return false;
    return true;
}

std::string shown_value(const json& v) {
    std::string text = v.dump(-1, ' ', false, json::error_handler_t::replace);
    return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

bool is_whole_in(const json& v, long lowest, long highest) {
    return v.is_number_integer() && !(v.is_number_unsigned() && v.get<std::uint64_t>() > LONG_MAX) &&
           v.get<long>() >= lowest && v.get<long>() <= highest;
}

namespace {

// One meta.json's checks; each names the field at fault by its path (`training.hyper.lr`).
class MetaCheck {
public:
    explicit MetaCheck(const std::string& where) : where_(where) {}

    [[noreturn]] void bad(const std::string& field, const std::string& why) const {
        fail("parity: {}: {} {}", where_, field, why);
    }
    // A key from the file as part of a field's name: as it is where it is a file key, else quoted and
    // escaped (a newline or an escape sequence in a key must not break the message or the terminal).
    static std::string key_shown(const std::string& key) { return is_fixture_key(key) ? key : shown_value(json(key)); }
    static const json* find(const json& object, const char* key) {
        const auto it = object.find(key);
        return it == object.end() ? nullptr : &*it;
    }

    const json* object(const json& parent, const char* key, const std::string& field, bool required = false) const {
        const json* v = find(parent, key);
        if (!v) {
            if (required) bad(field, "is missing (an object)");
            return nullptr;
        }
        if (!v->is_object()) bad(field, "must be an object, not " + shown_value(*v));
        return v;
    }
    const json* array(const json& parent, const char* key, const std::string& field) const {
        const json* v = find(parent, key);
        if (v && !v->is_array()) bad(field, "must be a list, not " + shown_value(*v));
        return v;
    }
    void string(const json& parent, const char* key, const std::string& field) const {
        const json* v = find(parent, key);
        if (v && !v->is_string()) bad(field, "must be a string, not " + shown_value(*v));
    }
    void boolean(const json& parent, const char* key, const std::string& field) const {
        const json* v = find(parent, key);
        if (v && !v->is_boolean()) bad(field, "must be true or false, not " + shown_value(*v));
    }
    // A finite number (nlohmann reads 1e999 as an error already; NaN cannot be written in JSON).
    void number(const json& v, const std::string& field, double lowest = -HUGE_VAL) const {
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lowest)
            bad(field, lowest == 0 ? "must be a finite number >= 0, not " + shown_value(v) : "must be a finite number, not " + shown_value(v));
    }
    void number(const json& parent, const char* key, const std::string& field, bool required, double lowest = -HUGE_VAL) const {
        const json* v = find(parent, key);
        if (!v) {
            if (required) bad(field, "is missing (a number)");
            return;
        }
        number(*v, field, lowest);
    }
    // A whole number in [lowest, highest], as a long reads it.
    void whole(const json& v, const std::string& field, long lowest, long highest) const {
        if (!is_whole_in(v, lowest, highest))
            bad(field, fmt::format("must be a whole number from {} to {}, not {}", lowest, highest, shown_value(v)));
    }
    void whole(const json& parent, const char* key, const std::string& field, bool required, long lowest, long highest) const {
        const json* v = find(parent, key);
        if (!v) {
            if (required) bad(field, "is missing (a whole number)");
            return;
        }
        whole(*v, field, lowest, highest);
    }
    void key(const json& v, const std::string& field) const {
        if (!v.is_string() || !is_fixture_key(v.get_ref<const std::string&>()))
            bad(field, "must be a file key (1 to 200 of A-Z a-z 0-9 . _ -), not " + shown_value(v));
    }
    void keys(const json& parent, const char* name, const std::string& field) const {
        if (const json* list = array(parent, name, field))
            for (std::size_t i = 0; i < list->size(); ++i) key((*list)[i], fmt::format("{}[{}]", field, i));
    }
    void strings(const json& parent, const char* name, const std::string& field) const {
        if (const json* list = array(parent, name, field))
            for (std::size_t i = 0; i < list->size(); ++i)
                if (!(*list)[i].is_string()) bad(fmt::format("{}[{}]", field, i), "must be a string, not " + shown_value((*list)[i]));
    }
    // A list of {"name": KEY, ...} (params, buffers, inputs, aux, optimizer.params).
    void named(const json& parent, const char* name, const std::string& field) const {
        if (const json* list = array(parent, name, field))
            for (std::size_t i = 0; i < list->size(); ++i) {
                const json& entry = (*list)[i];
                const std::string at = fmt::format("{}[{}]", field, i);
                if (!entry.is_object() || !entry.contains("name")) bad(at, "must be an object with a name, not " + shown_value(entry));
                key(entry["name"], at + ".name");
                boolean(entry, "differentiable", at + ".differentiable");
            }
    }
    void betas(const json& hyper, const std::string& field, bool required) const {
        const json* b = find(hyper, "betas");
        if (!b && !required) return;
        if (!b || !b->is_array() || b->size() != 2) bad(field, "must be a list of two numbers, not " + (b ? shown_value(*b) : "missing"));
        number((*b)[0], field + "[0]");
        number((*b)[1], field + "[1]");
    }

private:
    const std::string& where_;
};

void check_training(const MetaCheck& c, const json& t) {
    const json& h = *c.object(t, "hyper", "training.hyper", true);
    c.number(h, "lr", "training.hyper.lr", true);
    c.betas(h, "training.hyper.betas", true);
    c.number(h, "eps", "training.hyper.eps", true);
    c.number(h, "weight_decay", "training.hyper.weight_decay", false);
    const json& args = *c.object(t, "loss_args", "training.loss_args", true);
    c.whole(args, "ignore_index", "training.loss_args.ignore_index", false, LONG_MIN, LONG_MAX);
    c.number(args, "label_smoothing", "training.loss_args.label_smoothing", false, 0);
    c.whole(t, "steps", "training.steps", true, 1, kMaxFixtureSteps);
    if (const json* losses = c.array(t, "losses", "training.losses"); losses && losses->size() != t["steps"].get<std::size_t>())
        c.bad("training.losses", fmt::format("has {} entries for {} steps", losses->size(), t["steps"].get<long>()));
    c.keys(t, "noise_driven_params", "training.noise_driven_params");
    c.number(t, "noise_driven_atol", "training.noise_driven_atol", false, 0);
}

void check_optimizer(const MetaCheck& c, const json& o) {
    if (!o.contains("class") || !o["class"].is_string()) c.bad("optimizer.class", "must be a string (torch's class name)");
    const json& h = *c.object(o, "hyper", "optimizer.hyper", true);
    c.number(h, "lr", "optimizer.hyper.lr", true);
    c.betas(h, "optimizer.hyper.betas", false);
    for (const char* k : {"eps", "momentum", "dampening", "weight_decay"})
        c.number(h, k, std::string("optimizer.hyper.") + k, false);
    c.boolean(h, "nesterov", "optimizer.hyper.nesterov");
    c.boolean(h, "amsgrad", "optimizer.hyper.amsgrad");
    c.whole(o, "steps", "optimizer.steps", true, 1, kMaxFixtureSteps);
    const auto steps = o["steps"].get<std::size_t>();
    const json* lrs = c.array(o, "lr_per_step", "optimizer.lr_per_step");
    if (!lrs || lrs->size() < steps)
        c.bad("optimizer.lr_per_step", fmt::format("has {} entries for {} steps", lrs ? lrs->size() : 0, steps));
    for (std::size_t k = 0; k < steps; ++k) c.number((*lrs)[k], fmt::format("optimizer.lr_per_step[{}]", k));
    c.named(o, "params", "optimizer.params");
    if (!o.contains("params")) c.bad("optimizer.params", "is missing (a list of {\"name\": ...})");
    c.keys(o, "state_keys", "optimizer.state_keys");
    const json& counts = *c.object(o, "step_count_after_step", "optimizer.step_count_after_step", true);
    for (const json& p : o["params"]) {
        const std::string& name = p["name"].get_ref<const std::string&>();
        const std::string field = "optimizer.step_count_after_step." + name;
        const json* list = c.array(counts, name.c_str(), field);
        if (!list || list->size() < steps) c.bad(field, fmt::format("has {} entries for {} steps", list ? list->size() : 0, steps));
        for (std::size_t k = 0; k < steps; ++k) c.whole((*list)[k], fmt::format("{}[{}]", field, k), 0, LONG_MAX);
    }
}

void check_meta(const json& m, const std::string& where) {
    const MetaCheck c(where);
    if (!m.is_object()) c.bad("the top level", "must be an object, not " + shown_value(m));
    for (const char* k : {"case", "module", "variant", "kind"}) c.string(m, k, k);
    if (const json* config = c.object(m, "config", "config"))
        for (const auto& [k, v] : config->items())
            if (v.is_structured())
                c.bad("config." + MetaCheck::key_shown(k), "must be a number, string, true, false or null, not " + shown_value(v));
    c.object(m, "options", "options");
    if (const json* tol = c.object(m, "suggested_tolerance", "suggested_tolerance")) {
        c.number(*tol, "rtol", "suggested_tolerance.rtol", false, 0);
        c.number(*tol, "atol", "suggested_tolerance.atol", false, 0);
    }
    if (const json* files = c.object(m, "files", "files"))
        for (const auto& [k, v] : files->items()) {
            c.key(json(k), "files key " + shown_value(json(k)));  // a file key from here on
            if (!v.is_object()) c.bad("files." + k, "must be an object, not " + shown_value(v));
            c.string(v, "dtype", "files." + k + ".dtype");
        }
    for (const char* k : {"params", "buffers", "inputs", "aux"}) c.named(m, k, k);
    if (const json* grads = c.object(m, "grads", "grads")) {
        c.keys(*grads, "inputs", "grads.inputs");
        c.keys(*grads, "params", "grads.params");
    }
    c.strings(m, "near_zero_in_f64", "near_zero_in_f64");
    c.keys(m, "call_order", "call_order");
    const std::string kind = m.value("kind", "module");
    if (kind != "module" && kind != "optimizer" && kind != "train" && kind != "init" && kind != "train_log")
        c.bad("kind", "must be one of module, optimizer, train, init, train_log, not " + shown_value(m["kind"]));
    c.whole(m, "seed", "seed", kind == "init" || kind == "train_log", 0, LONG_MAX);
    if (const json* ulps = c.object(m, "ulps", "ulps"))
        for (const auto& [k, v] : ulps->items()) c.whole(v, "ulps." + MetaCheck::key_shown(k), 0, INT_MAX);
    if (const json* t = c.object(m, "training", "training", kind == "train")) check_training(c, *t);
    if (const json* o = c.object(m, "optimizer", "optimizer", kind == "optimizer")) check_optimizer(c, *o);
    (void)kink_allowances(m, where);
}

}  // namespace

std::map<std::string, Allowance> kink_allowances(const json& meta, const std::string& where) {
    std::map<std::string, Allowance> out;
    if (!meta.contains("relu_kinks")) return out;
    const json& k = meta["relu_kinks"];
    const MetaCheck c(where);
    if (!k.is_object() || !k.contains("allowance") || !k["allowance"].is_object() || !k.contains("count") ||
        !k["count"].is_number_unsigned())
        c.bad("relu_kinks", "must be an object with a count and an allowance object");
    const auto count = k["count"].get<std::uint64_t>();
    for (const auto& [key, v] : k["allowance"].items()) {
        c.number(v, "relu_kinks allowance of " + MetaCheck::key_shown(key), 0);
        out[key] = {v.get<double>(), fmt::format("+{:.3g} for {} ReLU input(s) within rounding of zero", v.get<double>(), count)};
    }
    return out;
}

json parse_fixture_meta(std::string_view text, const std::string& where) {
    json meta;
    try {
        meta = detail::parse_bounded_json(text, {.max_depth = 32, .max_values = std::size_t{1} << 20}, "parity: " + where);
    } catch (const Error&) {
        throw;
    } catch (const std::exception& e) {
        fail("parity: {} is not valid JSON: {}", where, e.what());
    }
    check_meta(meta, where);
    return meta;
}

json read_fixture_meta(const std::string& dir) {
    const std::string path = dir + "/meta.json";
    if (!std::filesystem::exists(path)) fail("no meta.json in '{}'", dir);
    std::string text;
    {
        const FileReader file(path);  // Error for a missing file, a fifo, a folder
        if (file.size() > kMaxMetaBytes)
            fail("parity: '{}' has {} bytes, more than the {} a fixture's meta.json may have", path, file.size(), kMaxMetaBytes);
        text.resize(file.size());
        file.read(0, text.data(), text.size());
    }
    return parse_fixture_meta(text, path);
}

}  // namespace xtgrad::parity
