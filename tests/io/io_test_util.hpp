// Helpers shared by the file-format tests: fixture paths, scratch directories, raw bytes.
#pragma once

#include <doctest/doctest.h>

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
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

}  // namespace xtgrad::test
