#include <xtgrad/io/atomic_file.hpp>

#include <xtgrad/autograd/error.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <charconv>
#include <climits>
#include <filesystem>
#include <functional>
#include <locale>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string_view>
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

// What a non-regular file is, for the error that refuses to replace it.
const char* file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a fifo";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

// The file a save really replaces: `path` itself when it is a regular file or does not exist
// yet, or the regular file a symbolic link (chain) names — the link is kept and the file it
// points to is replaced, as `cp` writes through a link. rename() would replace anything
// (a device such as /dev/null, a fifo, a socket, an empty directory), so everything else,
// and a link that points nowhere, is refused.
std::string replaceable_target(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        const int err = errno;
        if (err == ENOENT) return path;  // a new file (a missing folder fails when the temporary is created)
        fail("cannot write '{}': {}", path, errno_text(err));
    }
    if (S_ISREG(st.st_mode)) return path;
    if (!S_ISLNK(st.st_mode))
        fail("cannot write '{}': it is {}; only a regular file or a new path is replaced", path, file_kind(st.st_mode));
    std::error_code ec;
    const std::filesystem::path resolved = std::filesystem::canonical(path, ec);
    if (ec == std::errc::too_many_symbolic_link_levels)
        fail("cannot write '{}': it is a loop of symbolic links (or a chain of more than the system follows), which "
             "names no file", path);
    if (ec) fail("cannot write '{}': it is a symbolic link to nothing that exists ({})", path, ec.message());
    if (::stat(resolved.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        fail("cannot write '{}': it is a symbolic link to '{}', which is {}; only a regular file is replaced", path,
             resolved.string(), file_kind(st.st_mode));
    return resolved.string();
}

// The most ".tmp.<pid>.<n>" adds to a name: a pid_t and an unsigned in decimal.
constexpr std::size_t kMaxTempSuffix = std::string_view(".tmp.").size() + 10 + 1 + 10;

// The start of the temporaries' names for `target`, "<name>.tmp.", in its folder. A name within
// kMaxTempSuffix of the file system's NAME_MAX (a 250-byte name) would give a temporary that cannot
// be created (ENAMETOOLONG), so it is cut, at a character's start, and a hash of the whole name
// added, so that other long names keep their own: "<start>~<16 hex digits>.tmp.". The hash is
// libstdc++'s, the same in every build; a save made with another would merely leave a stale one.
std::filesystem::path temp_prefix(const std::string& target) {
    const std::filesystem::path target_path(target);
    const std::string name = target_path.filename().string();
    const std::filesystem::path dir = target_path.has_parent_path() ? target_path.parent_path() : ".";
    const long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
    const std::size_t limit = name_max > 0 ? static_cast<std::size_t>(name_max) : NAME_MAX;
    if (name.size() + kMaxTempSuffix <= limit) return target_path.parent_path() / (name + ".tmp.");
    const std::string hash = fmt::format("~{:016x}", std::hash<std::string>{}(name));
    std::size_t keep = limit > kMaxTempSuffix + hash.size() ? limit - kMaxTempSuffix - hash.size() : 0;
    while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
    return target_path.parent_path() / (name.substr(0, keep) + hash + ".tmp.");
}

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
        (void)replaceable_target(target_);  // again: something may have taken its place while we wrote
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
        const std::string prefix = temp_prefix(target_).string();
        for (int attempt = 0; attempt < 100; ++attempt) {
            path_ = prefix + std::to_string(::getpid()) + "." + std::to_string(counter++);
            fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd_ >= 0 || errno != EEXIST) break;
        }
        if (fd_ < 0) fail_errno("cannot create the temporary file");
        // Held until the process exits or closes the file: remove_stale_temporaries leaves a
        // locked temporary alone, even if its pid looks dead from another pid namespace.
        ::flock(fd_, LOCK_EX | LOCK_NB);
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

// The pid in a temporary's name "<target>.tmp.<pid>.<n>", given the part after ".tmp.".
std::optional<pid_t> writer_pid(std::string_view suffix) {
    pid_t pid = 0;
    unsigned counter = 0;
    const char* end = suffix.data() + suffix.size();
    const auto [dot, ec] = std::from_chars(suffix.data(), end, pid);
    if (ec != std::errc() || pid <= 0 || dot == end || *dot != '.') return std::nullopt;
    const auto [last, ec2] = std::from_chars(dot + 1, end, counter);
    if (ec2 != std::errc() || last != end) return std::nullopt;
    return pid;
}

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// Removes a temporary that is a regular file nobody holds the lock of.
void remove_if_unlocked(const std::filesystem::path& temp) {
    const int fd = ::open(temp.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(temp.c_str());
    ::close(fd);
}

// Removes the temporaries of `target` that writers killed mid-save (kill -9, a crash) left
// behind: those whose process is gone and whose lock nobody holds. Best effort: a temporary
// that cannot be removed does no harm beyond its space.
void remove_stale_temporaries(const std::string& target) {
    namespace fs = std::filesystem;
    const fs::path target_path(target);
    const fs::path dir = target_path.has_parent_path() ? target_path.parent_path() : fs::path(".");
    const std::string prefix = temp_prefix(target).filename().string();
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (!name.starts_with(prefix)) continue;
        const std::optional<pid_t> pid = writer_pid(std::string_view(name).substr(prefix.size()));
        if (pid && *pid != ::getpid() && !process_exists(*pid)) remove_if_unlocked(it->path());
    }
}

}  // namespace

void write_file_atomically(const std::string& path,
                           const std::function<void(std::ostream&)>& write) {
    // refused before anything is written: the rename of a whole temporary would fail
    if (path.empty()) fail("cannot write '': the path is empty");
    const std::string name = std::filesystem::path(path).filename().string();
    if (name.empty() || name == "." || name == "..")
        fail("cannot write '{}': the path names a folder (it ends in '{}'), not a file", path, name.empty() ? "/" : name);
    const std::string target = replaceable_target(path);
    remove_stale_temporaries(target);
    TempFile temp(target);
    FdStreamBuf buffer(temp.fd());
    std::ostream out(&buffer);
    out.imbue(std::locale::classic());  // a number written is plain digits whatever the global locale
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
    // O_NONBLOCK: opening a fifo must not wait for a writer (it is refused below).
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
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

void FileReader::read_into(std::vector<char>& buffer, std::uint64_t offset, std::size_t n,
                           std::string_view what) const {
    try {
        buffer.resize(n);
    } catch (const std::bad_alloc&) {
        fail("cannot read '{}': out of memory: the {} bytes of {} could not be allocated", path_, n, what);
    }
    read(offset, buffer.data(), n);
}

}  // namespace xtgrad
