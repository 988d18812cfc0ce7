// Crash-safe writing and checked reading of files; the base of xtgrad's file formats
// (io/npy.hpp, io/safetensors.hpp).
//
// Every failure throws xtgrad::Error naming the file and the reason (the errno text for
// system errors, the byte counts for short files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace xtgrad {

// Replaces `path` so that it holds either its old contents or the complete new ones, never a
// mix, even if the process dies half-way: `write` fills a temporary file in the same directory
// ("<path>.tmp.<pid>.<n>", so that the rename stays within one file system; a name too long to
// take that suffix within NAME_MAX keeps its start and gets a hash of the whole instead,
// "<start>~<16 hex digits>.tmp.<pid>.<n>"), which is flushed, fsync'ed and then renamed over
// `path`. A file that is replaced keeps its permission bits.
// If anything fails — creating, writing, syncing, renaming, or `write` itself throwing — the
// temporary is removed, `path` is left as it was, and an Error naming `path` is thrown.
// A process killed mid-save (kill -9, SIGXFSZ) cannot remove its temporary, so every save first
// removes the temporaries of `path` whose writer is gone (its pid no longer exists and nobody
// holds the flock a writer keeps on its temporary).
// Only a regular file or a new path is replaced: a directory, a device (/dev/null), a fifo or
// a socket at `path` is an Error naming it, checked before writing and again before the
// rename. A symbolic link is followed: the regular file it names is replaced and the link
// kept; a link to anything else, to nothing, or a loop of links, is refused. So is, before
// anything is written, an empty path or one naming a folder (ending in '/', '.' or '..').
void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& write);

// A regular file opened for reading, whose reads deliver exactly the bytes asked for or throw.
// Readers of file formats check their byte counts against size() before reading, so that a
// truncated file is reported with the numbers at fault rather than read as garbage.
class FileReader {
public:
    // Throws if missing, unreadable or not a regular file (a fifo is refused without blocking).
    explicit FileReader(std::string path);
    ~FileReader();
    FileReader(const FileReader&) = delete;
    FileReader& operator=(const FileReader&) = delete;

    const std::string& path() const { return path_; }
    std::uint64_t size() const { return size_; }

    // Copies the n bytes at `offset` into `dst`; throws if the file has fewer.
    void read(std::uint64_t offset, void* dst, std::size_t n) const;
    // The same into `buffer`, resized to n first: a size the system cannot allocate (a file's
    // data may be larger than memory) is an Error naming the file and `what`, not a bad_alloc.
    void read_into(std::vector<char>& buffer, std::uint64_t offset, std::size_t n, std::string_view what) const;

private:
    std::string path_;
    int fd_ = -1;
    std::uint64_t size_ = 0;
};

}  // namespace xtgrad
