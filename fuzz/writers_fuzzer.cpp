// libFuzzer target: the npy and safetensors WRITERS, by round trip. The input is read as a
// recipe — arrays of arbitrary shapes (rank 0-5, empty dimensions included) and bits (NaN,
// infinities and subnormals included), tensor names and metadata of arbitrary bytes — which
// is written with save_npy / save_safetensors and read back: what comes back must be the same
// shapes, names, order, metadata and bits. A writer may refuse its input only with an
// xtgrad::Error, and only for a reason it documents (a name that is not UTF-8, a duplicate or
// reserved name); anything else (a difference, a crash, a sanitizer report) is a finding.
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/io/npy.hpp>
#include <xtgrad/io/safetensors.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

using namespace xtgrad;

namespace {

// Reads the recipe: each take() consumes bytes of the input, zeros once it runs out.
class Recipe {
public:
    Recipe(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    bool more() const { return at_ < size_; }
    std::uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
    template <class T>
    T take() {
        T v{};
        const std::size_t n = std::min(sizeof(T), size_ - std::min(at_, size_));
        std::memcpy(&v, data_ + at_, n);
        at_ += n;
        return v;
    }
    std::string text() {
        std::string s(byte() % 24, '\0');
        for (char& c : s) c = static_cast<char>(byte());
        return s;
    }
    Shape shape() {
        Shape shape(byte() % 6);
        for (std::size_t& d : shape) d = byte() % 5;  // 0..4: empty arrays too, at most 1024 elements
        return shape;
    }
    template <class A, class T>
    A array() {
        A a = A::from_shape(shape());
        for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<typename A::value_type>(take<T>());
        return a;
    }

private:
    const std::uint8_t* data_;
    std::size_t size_, at_ = 0;
};

// Equal shapes and bits (NaN payloads included).
template <class A>
bool same(const A& a, const A& b) {
    return a.shape() == b.shape() &&
           (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(typename A::value_type)) == 0);
}

Mask mask_of(Recipe& r) {
    Mask m = Mask::from_shape(r.shape());
    for (std::size_t i = 0; i < m.size(); ++i) m.data()[i] = (r.byte() & 1) != 0;
    return m;
}

// A scratch folder in memory where possible (the writers fsync every file), removed at exit.
class ScratchDir {
public:
    ScratchDir() {
        const std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path().string();
        path_ = base + "/xtgrad_writers_fuzz_XXXXXX";
        if (::mkdtemp(path_.data()) == nullptr) std::abort();
    }
    ~ScratchDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

const std::string& scratch() {
    static const ScratchDir dir;
    return dir.path();
}

void check(bool ok) {
    if (!ok) std::abort();  // the round trip changed something: a finding
}

void npy_round_trip(Recipe& r) {
    const std::string path = scratch() + "/a.npy";
    const Array f = r.array<Array, float>();
    save_npy(path, f);
    check(same(load_npy_float(path), f));
    const Ids i = r.array<Ids, std::int64_t>();
    save_npy(path, i);
    check(same(load_npy_ids(path), i));
    const Mask m = mask_of(r);
    save_npy(path, m);
    check(same(load_npy_mask(path), m));
}

void safetensors_round_trip(Recipe& r) {
    const std::string path = scratch() + "/a.safetensors";
    NamedArrays tensors(r.byte() % 5);
    for (auto& [name, a] : tensors) {
        name = r.text();
        a = r.array<Array, float>();
    }
    std::map<std::string, std::string> metadata;
    for (int n = r.byte() % 4; n > 0; --n) metadata[r.text()] = r.text();
    try {
        save_safetensors(path, tensors, metadata);
    } catch (const Error&) {
        return;  // refused (names not UTF-8, duplicate, "__metadata__"): documented, and nothing was written
    }
    const SafetensorsFile back = load_safetensors(path);
    check(back.metadata == metadata && back.tensors.size() == tensors.size());
    // Every tensor comes back; the file lists them in the order of their data, which is the order
    // they were given in, except for empty tensors (no bytes: they share offsets).
    std::vector<std::string> order, back_order;
    for (const auto& [name, a] : tensors) {
        bool found = false;
        for (const auto& [back_name, b] : back.tensors) found = found || (back_name == name && same(a, b));
        check(found);
        if (a.size() > 0) order.push_back(name);
    }
    for (const auto& [name, b] : back.tensors)
        if (b.size() > 0) back_order.push_back(name);
    check(order == back_order);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Recipe recipe(data, size);
    try {
        npy_round_trip(recipe);
        safetensors_round_trip(recipe);
    } catch (const Error& e) {
        std::fprintf(stderr, "writers fuzz: a valid input was refused: %s\n", e.what());
        std::abort();
    }
    return 0;
}
