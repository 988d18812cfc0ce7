#include "examples/common/file_identity.hpp"

#include <sys/stat.h>

#include <filesystem>

namespace xtgrad::examples {

std::optional<FileStamp> stamp_of(const std::string& path) {
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::nullopt;
    return FileStamp{.device = st.st_dev,
                     .inode = st.st_ino,
                     .size = static_cast<unsigned long long>(st.st_size),
                     .mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

bool same_file(const std::string& a, const std::string& b) {
    if (a.empty() || b.empty()) return false;
    const std::optional<FileStamp> sa = stamp_of(a), sb = stamp_of(b);
    if (sa && sb) return sa->device == sb->device && sa->inode == sb->inode;
    std::error_code ea, eb;
    const std::filesystem::path ca = std::filesystem::weakly_canonical(a, ea), cb = std::filesystem::weakly_canonical(b, eb);
    return !ea && !eb && ca == cb;
}

}  // namespace xtgrad::examples
