// Which file a path names, to tell two names of one file apart from two files, and whether a
// file changed: what the training examples need to keep a run's checkpoint from being
// overwritten by a lesser file, and to say truthfully what happened to it.
#pragma once

#include <optional>
#include <string>

namespace xtgrad::examples {

// A file as the file system knows it: device, inode, size and modification time.
struct FileStamp {
    unsigned long long device = 0, inode = 0, size = 0;
    long long mtime_ns = 0;
    bool operator==(const FileStamp&) const = default;
};
std::optional<FileStamp> stamp_of(const std::string& path);  // nothing if it does not exist

// a and b are one file: the same device and inode when both exist (hard links, symbolic links,
// "./x" and "x"), else the same path once "." , ".." and symbolic links are resolved.
bool same_file(const std::string& a, const std::string& b);

}  // namespace xtgrad::examples
