// The file a fuzz target hands to a loader: an anonymous in-memory file (memfd) refilled with
// each input, opened by the loader through /proc/self/fd/N. The loaders take a path, and this
// way the fuzzer runs exactly the code a user's file goes through (FileReader included),
// without touching the disk.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace xtgrad::fuzz {

inline const std::string& input_file(const std::uint8_t* data, std::size_t size) {
    static const int fd = ::memfd_create("xtgrad_fuzz_input", MFD_CLOEXEC);
    static const std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (fd < 0 || ::ftruncate(fd, 0) != 0 ||
        (size > 0 && ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))) {
        std::perror("xtgrad fuzz: cannot fill the in-memory input file");
        std::abort();
    }
    return path;
}

}  // namespace xtgrad::fuzz
