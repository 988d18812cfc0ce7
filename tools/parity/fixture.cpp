#include "tools/parity/fixture.hpp"

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/io/npy.hpp>
#include "tools/parity/rng_checks.hpp"
#include "tools/parity/register_all.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace xtgrad::parity {

namespace fs = std::filesystem;

Fixture::Fixture(std::string dir) : dir_(std::move(dir)), meta_(read_fixture_meta(dir_)) {}

const json& Fixture::config() const {
    static const json empty = json::object();
    auto it = meta_.find("config");
    return it == meta_.end() ? empty : *it;
}

json Fixture::options() const { return meta_.value("options", json::object()); }

Tolerance Fixture::tolerance() const {
    Tolerance t;
    if (auto it = meta_.find("suggested_tolerance"); it != meta_.end()) {
        t.rtol = it->value("rtol", t.rtol);
        t.atol = it->value("atol", t.atol);
    }
    return t;
}

std::string Fixture::path(const std::string& key) const { return dir_ + "/" + key + ".npy"; }
bool Fixture::has(const std::string& key) const {
    std::error_code ec;  // a name too long for the file system: not there (a read names the path)
    return fs::exists(path(key), ec);
}
Array Fixture::floats(const std::string& key) const { return load_npy_float(path(key)); }
Ids Fixture::ids(const std::string& key) const { return load_npy_ids(path(key)); }
Mask Fixture::mask(const std::string& key) const { return load_npy_mask(path(key)); }

std::string Fixture::dtype(const std::string& key) const {
    auto files = meta_.find("files");
    if (files != meta_.end() && files->contains(key)) return (*files)[key].value("dtype", "");
    return has(key) ? read_npy(path(key)).dtype : "";
}

nn::NamedTensors Fixture::state() const {
    nn::NamedTensors out;
    for (const char* list : {"params", "buffers"})
        if (auto it = meta_.find(list); it != meta_.end())
            for (const json& p : *it) {
                const std::string name = p.at("name");
                out.emplace_back(name, Tensor(floats("param." + name)));
            }
    return out;
}

// Errors name the file and the field: a case's name is the fixture's own text, the folder is where it is.
long Fixture::cfg_int(const std::string& key, long lowest, long highest) const {
    const json& c = config();
    if (!c.contains(key)) fail("parity: {}/meta.json: config.{} is missing (a whole number)", dir_, key);
    const json& v = c[key];
    if (!is_whole_in(v, lowest, highest))
        fail("parity: {}/meta.json: config.{} must be a whole number from {} to {}, not {}", dir_, key, lowest, highest,
             shown_value(v));
    return v.get<long>();
}
double Fixture::cfg_float(const std::string& key) const {
    const json& c = config();
    if (!c.contains(key) || !c[key].is_number() || !std::isfinite(c[key].get<double>()))
        fail("parity: {}/meta.json: config.{} must be a finite number, not {}", dir_, key,
             c.contains(key) ? shown_value(c[key]) : "missing");
    return c[key].get<double>();
}
std::string Fixture::cfg_str(const std::string& key, const std::string& fallback) const {
    const json& c = config();
    if (!c.contains(key) || c[key].is_null()) return fallback;
    if (!c[key].is_string())
        fail("parity: {}/meta.json: config.{} must be a string, not {}", dir_, key, shown_value(c[key]));
    return c[key].get<std::string>();
}
bool Fixture::cfg_bool(const std::string& key, bool fallback) const {
    const json& c = config();
    if (!c.contains(key) || c[key].is_null()) return fallback;
    if (!c[key].is_boolean())
        fail("parity: {}/meta.json: config.{} must be true or false, not {}", dir_, key, shown_value(c[key]));
    return c[key].get<bool>();
}
std::string Fixture::option(const std::string& key, const std::string& fallback) const {
    const json o = options();
    return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : fallback;
}

// docs/fixtures.md, section Tolerances: pass iff max|got - ref| <= atol + rtol * max|ref| (+ section Kinks'
// allowance), per tensor; infinities must sit in the same places with the same sign.
void Report::compare(const std::string& name, const Array& got, const Array& ref, const Tolerance& tol,
                     double scale_override, const Allowance& extra) {
    Comparison c;
    c.name = name;
    const bool same_shape = got.shape() == ref.shape() || (got.size() == 1 && ref.size() == 1);  // [] vs [1]
    if (!same_shape) {
        c.passed = false;
        c.note = fmt::format("shape {} but the reference is {}", shape_str(got.shape()), shape_str(ref.shape()));
        rows_.push_back(c);
        return;
    }
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const float r = ref.data()[i], g = got.data()[i];
        if (std::isinf(r) || std::isinf(g)) {
            if (r != g) {
                c.passed = false;
                c.note = fmt::format("element {} is {} but the reference is {}", i, g, r);
            }
            continue;
        }
        if (std::isnan(g)) {
            c.passed = false;
            c.note = fmt::format("element {} is NaN", i);
        }
        c.max_abs = std::max(c.max_abs, static_cast<double>(std::abs(g - r)));
        c.scale = std::max(c.scale, static_cast<double>(std::abs(r)));
    }
    if (scale_override >= 0) {
        c.scale = scale_override;
        c.note = "near-zero in float64: tolerance scaled by the case's largest gradient";
    }
    c.allowed = tol.atol + tol.rtol * c.scale + extra.atol;
    if (extra.atol > 0) c.note += (c.note.empty() ? "" : "; ") + extra.why;
    if (c.max_abs > c.allowed) c.passed = false;
    rows_.push_back(c);
}

template <class A>
static void exact(std::vector<Comparison>& rows, const std::string& name, const A& got, const A& ref) {
    Comparison c;
    c.name = name;
    c.passed = got.shape() == ref.shape() && std::equal(got.begin(), got.end(), ref.begin());
    if (!c.passed) c.note = fmt::format("not equal (shape {} vs reference {})", shape_str(got.shape()), shape_str(ref.shape()));
    rows.push_back(c);
}
void Report::compare_exact(const std::string& name, const Ids& got, const Ids& ref) { exact(rows_, name, got, ref); }
void Report::compare_exact(const std::string& name, const Mask& got, const Mask& ref) { exact(rows_, name, got, ref); }

namespace {
// Position of a float on the integer line of floats (-0 and +0 both at 0), for ulp distances.
std::int64_t float_ordinal(float x) {
    std::int32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return bits < 0 ? -static_cast<std::int64_t>(bits & 0x7fffffff) : bits;
}
}  // namespace

void Report::compare_ulps(const std::string& name, const Array& got, const Array& ref, long max_ulps) {
    Comparison c;
    c.name = name;
    c.allowed = static_cast<double>(max_ulps);
    if (got.shape() != ref.shape()) {
        c.passed = false;
        c.note = fmt::format("shape {} but the reference is {}", shape_str(got.shape()), shape_str(ref.shape()));
        rows_.push_back(c);
        return;
    }
    std::int64_t worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const float g = got.data()[i], r = ref.data()[i];
        const std::int64_t d = std::isnan(g) || std::isnan(r) ? INT64_MAX : std::abs(float_ordinal(g) - float_ordinal(r));
        c.max_abs = std::max(c.max_abs, static_cast<double>(std::abs(g - r)));
        c.scale = std::max(c.scale, static_cast<double>(std::abs(r)));
        if (d > worst) {
            worst = d;
            if (d > max_ulps) c.note = fmt::format("element {} is {} but the reference is {}", i, g, r);
        }
    }
    c.passed = worst <= max_ulps;
    c.note = fmt::format("{} ulps{}", worst, c.note.empty() ? "" : "; " + c.note);
    rows_.push_back(c);
}

void Report::fail(const std::string& name, const std::string& why) {
    Comparison c;
    c.name = name;
    c.passed = false;
    c.note = why;
    rows_.push_back(c);
}

bool Report::passed() const {
    return !rows_.empty() && std::all_of(rows_.begin(), rows_.end(), [](const Comparison& c) { return c.passed; });
}

std::string Report::summary() const {
    std::string s;
    for (const Comparison& c : rows_)
        s += fmt::format("  {:<4} {:<52} max_abs {:<10.3g} max_rel {:<10.3g} allowed {:<10.3g}{}\n", c.passed ? "ok" : "FAIL",
                         c.name, c.max_abs, c.scale > 0 ? c.max_abs / c.scale : 0.0, c.allowed,
                         c.note.empty() ? "" : "  " + c.note);
    return s;
}

namespace {
std::map<std::string, Runner>& registry() {
    static std::map<std::string, Runner> r;
    return r;
}
std::map<std::string, Builder>& builders() {
    static std::map<std::string, Builder> b;
    return b;
}
void ensure_registered() {
    static std::once_flag once;
    std::call_once(once, register_all_runners);
}
}  // namespace

void register_runner(const std::string& module_id, Runner runner) { registry()[module_id] = std::move(runner); }

const Runner* find_runner(const std::string& module_id) {
    ensure_registered();
    auto it = registry().find(module_id);
    return it == registry().end() ? nullptr : &it->second;
}

void register_builder(const std::string& module_id, Builder build) { builders()[module_id] = std::move(build); }

const Builder* find_builder(const std::string& module_id) {
    ensure_registered();
    auto it = builders().find(module_id);
    return it == builders().end() ? nullptr : &it->second;
}

std::vector<std::string> registered_modules() {
    ensure_registered();
    std::vector<std::string> out;
    for (auto& [k, v] : registry()) out.push_back(k);
    return out;
}

Outcome run_fixture(const std::string& dir) {
    Outcome o;
    try {
        Fixture f(dir);
        o.case_name = f.case_name();
        o.module = f.module();
        if (f.kind() == "init") {
            const Builder* build = find_builder(f.module());
            if (!build) return o;
            o.supported = true;
            check_init(f, *build, o.report);
            return o;
        }
        if (f.kind() == "train_log" && f.module() == "transformer_b") {
            o.supported = true;
            check_train_log(f, o.report);
            return o;
        }
        const Runner* run = find_runner(f.module());
        if (!run) return o;
        o.supported = true;
        (*run)(f, o.report);
    } catch (const json::exception& e) {  // a field no check covers, read by a runner
        o.error = fmt::format("parity: {}/meta.json: a field the runner for {} reads is missing or of another type: {}", dir,
                              shown_value(json(o.module)), e.what());
    } catch (const std::exception& e) {
        o.error = e.what();
    }
    return o;
}

std::vector<std::string> case_dirs(const std::string& root) {
    std::vector<std::string> dirs;
    std::error_code ec;  // an entry that cannot be read (a symbolic link loop, a name too long) is no case folder
    if (fs::exists(fs::path(root) / "meta.json", ec)) return {root};
    if (!fs::is_directory(root, ec)) fail("'{}' is not a directory", root);
    for (const auto& e : fs::directory_iterator(root))
        if (e.is_directory(ec) && fs::exists(e.path() / "meta.json", ec)) dirs.push_back(e.path().string());
    std::sort(dirs.begin(), dirs.end());
    return dirs;
}

}  // namespace xtgrad::parity
