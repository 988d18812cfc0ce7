#include "autograd/atomic_file.hpp"

#include "autograd/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <streambuf>
#include <system_error>
#include <utility>
#include <vector>

namespace xtgrad {
namespace {

// strerror is not thread-safe; the generic category gives the same text safely.
std::string errno_text(int err) { return std::generic_category().message(err); }

// A buffered output streambuf over a POSIX file descriptor. Unlike std::ofstream it keeps the
// errno of a failed write, so the error can say why (ENOSPC, EIO, EDQUOT, ...).
class FdStreamBuf : public std::streambuf {
public:
    explicit FdStreamBuf(int fd) : fd_(fd), buffer_(std::size_t{1} << 16) { reset_put_area(); }

    int error() const { return error_; }  // errno of the first failed write, 0 if none

protected:
    int_type overflow(int_type ch) override {
        if (!flush_buffer()) return traits_type::eof();
        if (!traits_type::eq_int_type(ch, traits_type::eof())) {
            *pptr() = traits_type::to_char_type(ch);
            pbump(1);
        }
        return traits_type::not_eof(ch);
    }

    std::streamsize xsputn(const char* s, std::streamsize n) override {
        if (n <= 0) return 0;  // and no memcpy from the null data() of an empty array
        if (n < epptr() - pptr()) {
            std::memcpy(pptr(), s, static_cast<std::size_t>(n));
            pbump(static_cast<int>(n));
            return n;
        }
        // Large blocks (tensor data) go straight to the file instead of through the buffer.
        return flush_buffer() && write_all(s, static_cast<std::size_t>(n)) ? n : 0;
    }

    int sync() override { return flush_buffer() ? 0 : -1; }

private:
    void reset_put_area() { setp(buffer_.data(), buffer_.data() + buffer_.size()); }

    bool flush_buffer() {
        const bool ok = write_all(pbase(), static_cast<std::size_t>(pptr() - pbase()));
        reset_put_area();
        return ok;
    }

    bool write_all(const char* s, std::size_t n) {
        while (n > 0) {
            const ssize_t written = ::write(fd_, s, n);
            if (written < 0) {
                if (errno == EINTR) continue;
                if (error_ == 0) error_ = errno;
                return false;
            }
            s += written;
            n -= static_cast<std::size_t>(written);
        }
        return true;
    }

    int fd_;
    std::vector<char> buffer_;
    int error_ = 0;
};

// The temporary file beside the target. Removed on destruction unless commit() renamed it
// into place, so every early exit (error or exception) cleans up.
class TempFile {
public:
    explicit TempFile(const std::string& target) : target_(target) {
        create();
        keep_mode_of_target();
    }
    ~TempFile() {
        if (fd_ >= 0) ::close(fd_);
        if (!committed_) ::unlink(path_.c_str());
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;

    int fd() const { return fd_; }

    void commit() {
        if (::fsync(fd_) != 0) fail_errno("fsync of the temporary file failed");
        if (::close(std::exchange(fd_, -1)) != 0) fail_errno("closing the temporary file failed");
        if (::rename(path_.c_str(), target_.c_str()) != 0) fail_errno("renaming the temporary file over it failed");
        committed_ = true;
        sync_directory();
    }

    [[noreturn]] void fail_errno(const char* what) const {
        const int err = errno;
        fail("cannot write '{}': {} ('{}'): {}", target_, what, path_, errno_text(err));
    }

private:
    void create() {
        // O_EXCL never reuses a file; a name left by a crashed process with our pid is skipped.
        static std::atomic<unsigned> counter{0};
        for (int attempt = 0; attempt < 100; ++attempt) {
            path_ = target_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
            fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd_ >= 0 || errno != EEXIST) break;
        }
        if (fd_ < 0) fail_errno("cannot create the temporary file");
    }

    // The rename replaces the inode, so copy the old file's permission bits to the new one.
    void keep_mode_of_target() {
        struct stat st {};
        if (::stat(target_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::fchmod(fd_, st.st_mode & 07777);
    }

    // Makes the rename itself durable. Best effort: the new contents are already in place, so a
    // failure here must not be reported as a failed write.
    void sync_directory() const {
        const std::filesystem::path parent = std::filesystem::path(target_).parent_path();
        const std::string dir = parent.empty() ? std::string(".") : parent.string();
        const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0) return;
        ::fsync(dir_fd);
        ::close(dir_fd);
    }

    std::string target_;
    std::string path_;
    int fd_ = -1;
    bool committed_ = false;
};

}  // namespace

void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& write) {
    TempFile temp(path);
    FdStreamBuf buffer(temp.fd());
    std::ostream out(&buffer);
    try {
        write(out);
    } catch (const std::exception& e) {
        fail("cannot write '{}': {}", path, e.what());
    }
    out.flush();
    if (buffer.error() != 0) fail("cannot write '{}': {}", path, errno_text(buffer.error()));
    if (!out) fail("cannot write '{}': the output stream failed", path);
    temp.commit();
}

FileReader::FileReader(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
        const int err = errno;
        fail("cannot open '{}': {}", path_, errno_text(err));
    }
    struct stat st {};
    const int err = ::fstat(fd_, &st) == 0 ? 0 : errno;
    if (err != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd_);  // the destructor does not run for a constructor that throws
        fail("cannot read '{}': {}", path_, err != 0 ? errno_text(err) : "not a regular file");
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
}

FileReader::~FileReader() { ::close(fd_); }

void FileReader::read(std::uint64_t offset, void* dst, std::size_t n) const {
    char* out = static_cast<char*>(dst);
    std::size_t done = 0;
    while (done < n) {
        const ssize_t got = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            const int err = errno;
            fail("cannot read '{}': {} (reading {} bytes at offset {})", path_, errno_text(err), n, offset);
        }
        if (got == 0) {
            // Only if the file shrank after it was opened: callers check sizes first.
            fail("cannot read '{}': unexpected end of file: wanted {} bytes at offset {}, got {}",
                 path_, n, offset, done);
        }
        done += static_cast<std::size_t>(got);
    }
}

}  // namespace xtgrad
