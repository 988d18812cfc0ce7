// Helpers shared by the file-format tests: fixture paths, scratch directories, raw bytes.
#pragma once

#include <xtgrad/autograd/error.hpp>

#include <doctest/doctest.h>

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string_view>
#include <string>
#include <vector>

#ifndef XTGRAD_TEST_DATA_DIR
#define XTGRAD_TEST_DATA_DIR "tests/data"
#endif

namespace xtgrad::test {

// Appended in place: GCC 12 at -O1 gave a false -Warray-bounds on string(literal) + "/" + relative
// (in a unity group whose headers come precompiled, tests/pch).
inline std::string data_path(const std::string& relative) {
    std::string path = XTGRAD_TEST_DATA_DIR;
    path += '/';
    path += relative;
    return path;
}

// A fresh directory under the system temp dir, removed with its contents at scope exit.
class TempDir {
public:
    TempDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "xtgrad_io_test_XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
        path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    std::string file(const std::string& name) const { return (path_ / name).string(); }
    const std::filesystem::path& path() const { return path_; }

    // Names of everything in the directory, to check that no temporary file is left behind.
    std::set<std::string> entries() const {
        std::set<std::string> names;
        for (const auto& entry : std::filesystem::directory_iterator(path_)) names.insert(entry.path().filename().string());
        return names;
    }

private:
    std::filesystem::path path_;
};

inline std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "cannot open " << path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE_MESSAGE(out.good(), "cannot write " << path);
}

// n as 8 bytes, little-endian (safetensors' header length)
inline std::string le64(std::uint64_t n) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
    return bytes;
}

// A safetensors file with the given header text and data section.
inline std::string safetensors_bytes(const std::string& header, const std::string& data) {
    return le64(header.size()) + header + data;
}

inline std::string float_bytes(const std::vector<float>& values) {
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// Runs `body` in a child process whose address space is capped at what it has now plus
// `spare_bytes`; whether it ended with an xtgrad::Error containing `expected` (not a bad_alloc,
// an abort or a signal), the reason given when not. Not under ASan, which reserves terabytes of
// address space.
template <class Body>
bool error_under_address_limit(std::size_t spare_bytes, std::string_view expected, Body&& body) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        std::ifstream status("/proc/self/status");
        std::string line;
        std::size_t vm_kb = 0;
        while (std::getline(status, line))
            if (line.starts_with("VmSize:")) vm_kb = std::stoul(line.substr(7));
        const rlimit limit{(vm_kb << 10) + spare_bytes, (vm_kb << 10) + spare_bytes};
        if (vm_kb == 0 || ::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(3);
        try {
            body();
        } catch (const Error& e) {
            ::_exit(std::string_view(e.what()).find(expected) != std::string_view::npos ? 0 : 1);
        } catch (...) {
            ::_exit(2);  // a std::bad_alloc
        }
        ::_exit(4);  // no Error at all
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    if (!WIFEXITED(status)) {
        MESSAGE("killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
        return false;
    }
    if (WEXITSTATUS(status) != 0) MESSAGE("exit " << WEXITSTATUS(status) << " (1: another message, 2: not an Error, 4: no error)");
    return WEXITSTATUS(status) == 0;
}

}  // namespace xtgrad::test
