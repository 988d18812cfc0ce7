// Tests of io/atomic_file.hpp: a failed write never touches the target nor leaves a
// temporary behind; FileReader reports short reads with the byte counts.
#include <xtgrad/io/atomic_file.hpp>
#include <xtgrad/autograd/error.hpp>
#include "tests/io/io_test_util.hpp"
#include "tests/test_util.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <thread>

#include <filesystem>
#include <ostream>
#include <stdexcept>
#include <string>

TEST_SUITE_BEGIN("io");

using namespace xtgrad;
using xtgrad::test::read_bytes;
using xtgrad::test::TempDir;
using xtgrad::test::write_bytes;

namespace {

void write_text(const std::string& path, const std::string& text) {
    write_file_atomically(path, [&](std::ostream& out) { out << text; });
}

// A child process that starts saving `path` and stops half-way, its temporary written and
// flushed, until it is killed. Returns its pid once the temporary is on disk.
pid_t start_stuck_save(const TempDir& dir, const std::string& path) {
    const std::size_t before = dir.entries().size();
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        write_file_atomically(path, [](std::ostream& out) {
            out << std::string(200'000, 'x');
            out.flush();
            for (;;) ::pause();
        });
        ::_exit(1);
    }
    for (int i = 0; i < 500 && dir.entries().size() == before; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (dir.entries().size() != before + 1) ::kill(child, SIGKILL);  // no stray child if the check fails
    REQUIRE(dir.entries().size() == before + 1);
    return child;
}

void kill_and_reap(pid_t child) {
    ::kill(child, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
}

// A pid that no process has: a child that exited and was reaped.
pid_t dead_pid() {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) ::_exit(0);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    return child;
}

}  // namespace

TEST_CASE("write_file_atomically: creates the file and leaves no temporary") {
    TempDir dir;
    write_text(dir.file("out.txt"), "hello");
    CHECK(read_bytes(dir.file("out.txt")) == "hello");
    CHECK(dir.entries() == std::set<std::string>{"out.txt"});
}

TEST_CASE("write_file_atomically: replaces an existing file and keeps its permission bits") {
    TempDir dir;
    const std::string path = dir.file("out.txt");
    write_bytes(path, "old contents, longer than the new ones");
    REQUIRE(::chmod(path.c_str(), 0640) == 0);
    write_text(path, "new");
    CHECK(read_bytes(path) == "new");
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0640);
    CHECK(dir.entries() == std::set<std::string>{"out.txt"});
}

TEST_CASE("write_file_atomically: a writer that throws leaves the old file unchanged and no temporary") {
    TempDir dir;
    const std::string path = dir.file("model.bin");
    write_bytes(path, "old");
    // More than the 64 KiB buffer, so part of it has reached the temporary file.
    const auto throwing_writer = [](std::ostream& out) {
        out << std::string(200'000, 'x');
        throw std::runtime_error("boom");
    };
    CHECK_THROWS_WITH_AS(write_file_atomically(path, throwing_writer),
                         doctest::Contains(("cannot write '" + path + "': boom").c_str()), Error);
    CHECK(read_bytes(path) == "old");
    CHECK(dir.entries() == std::set<std::string>{"model.bin"});
}

TEST_CASE("write_file_atomically: a process that dies mid-write leaves the old file intact") {
    TempDir dir;
    const std::string path = dir.file("ckpt.bin");
    write_bytes(path, "old");
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // dies with 200 KB written, as a crash or a kill would
        write_file_atomically(path, [](std::ostream& out) {
            out << std::string(200'000, 'x');
            out.flush();
            ::_exit(0);
        });
        ::_exit(1);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(read_bytes(path) == "old");
    // Only a dead process's temporary can be left, and never under the target's name.
    for (const std::string& name : dir.entries()) CHECK((name == "ckpt.bin" || name.starts_with("ckpt.bin.tmp.")));
}

TEST_CASE("write_file_atomically: kill -9 during a save leaves the old file; the next save removes the stale temporary") {
    TempDir dir;
    const std::string path = dir.file("ckpt.bin");
    write_text(path, "old");
    kill_and_reap(start_stuck_save(dir, path));
    CHECK(read_bytes(path) == "old");
    CHECK(dir.entries().size() == 2);  // the old file and the dead writer's temporary
    write_text(path, "new");
    CHECK(read_bytes(path) == "new");
    CHECK(dir.entries() == std::set<std::string>{"ckpt.bin"});
}

TEST_CASE("write_file_atomically: the temporaries of live or locked writers and other files are kept") {
    TempDir dir;
    const std::string path = dir.file("ckpt.bin");
    // A save in progress in another process survives a save of the same file here.
    const pid_t live = start_stuck_save(dir, path);
    write_text(path, "mine");
    CHECK(dir.entries().size() == 2);
    kill_and_reap(live);
    // A temporary whose pid is gone but whose lock is held (a writer in another pid namespace).
    const std::string locked = path + ".tmp." + std::to_string(dead_pid()) + ".0";
    write_bytes(locked, "partial");
    const int fd = ::open(locked.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX) == 0);
    // Names that only look like temporaries, and another file's temporary.
    const std::string dead = std::to_string(dead_pid());
    const std::set<std::string> look_alikes{"ckpt.bin.tmp.notes", "ckpt.bin.tmp." + dead + ".0.bak",
                                            "ckpt.bin.tmp." + dead, "other.bin.tmp." + dead + ".0"};
    for (const std::string& name : look_alikes) write_bytes(dir.file(name), "keep");
    write_text(path, "again");  // removes the killed writer's temporary only
    std::set<std::string> kept = look_alikes;
    kept.insert("ckpt.bin");
    std::set<std::string> with_locked = kept;
    with_locked.insert(std::filesystem::path(locked).filename().string());
    CHECK(dir.entries() == with_locked);
    ::close(fd);
    write_text(path, "last");  // the lock is gone: now that one goes too
    CHECK(dir.entries() == kept);
    CHECK(read_bytes(path) == "last");
}

TEST_CASE("FileReader: a fifo is refused at once, not waited on") {
    TempDir dir;
    const std::string path = dir.file("pipe");
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    const auto start = std::chrono::steady_clock::now();
    test::expect_error([&] { FileReader reader(path); }, {"cannot read '", "pipe': not a regular file"});
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("write_file_atomically: a non-standard exception passes through after the cleanup") {
    TempDir dir;
    CHECK_THROWS_AS(write_file_atomically(dir.file("x"), [](std::ostream&) { throw 42; }), int);
    CHECK(dir.entries().empty());
}

TEST_CASE("write_file_atomically: a stream left failed by the writer is an error") {
    TempDir dir;
    const auto failing_writer = [](std::ostream& out) { out.setstate(std::ios::failbit); };
    CHECK_THROWS_WITH_AS(write_file_atomically(dir.file("x"), failing_writer),
                         doctest::Contains("the output stream failed"), Error);
    CHECK(dir.entries().empty());
}

TEST_CASE("write_file_atomically: a missing directory throws and creates nothing") {
    TempDir dir;
    const std::string path = dir.file("missing/out.txt");
    CHECK_THROWS_WITH_AS(write_text(path, "data"), doctest::Contains(("cannot write '" + path + "'").c_str()), Error);
    CHECK_THROWS_WITH_AS(write_text(path, "data"), doctest::Contains("No such file or directory"), Error);
    CHECK_FALSE(std::filesystem::exists(dir.file("missing")));
    CHECK(dir.entries().empty());
}

TEST_CASE("write_file_atomically: only a regular file or a new path is replaced") {
    TempDir dir;
    std::filesystem::create_directory(dir.file("folder"));
    REQUIRE(::mkfifo(dir.file("pipe").c_str(), 0600) == 0);
    // A character device with /dev/null's numbers, made here: the system's /dev/null is never written.
    REQUIRE(::mknod(dir.file("null").c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0);
    const auto expect_refused = [&](const std::string& name, const std::string& kind) {
        test::expect_error([&] { write_text(dir.file(name), "data"); },
                           {("cannot write '" + dir.file(name) + "': it is " + kind).c_str(), "only a regular file"});
    };
    expect_refused("folder", "a directory");
    expect_refused("pipe", "a fifo");
    expect_refused("null", "a character device");
    struct stat st {};
    REQUIRE(::lstat(dir.file("null").c_str(), &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    REQUIRE(::lstat(dir.file("pipe").c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
    CHECK(dir.entries() == std::set<std::string>{"folder", "pipe", "null"});  // no temporary either
}

TEST_CASE("write_file_atomically: a symbolic link is followed to a regular file and kept; any other link is refused") {
    TempDir dir;
    write_text(dir.file("real"), "old");
    std::filesystem::create_symlink(dir.file("real"), dir.file("link"));
    write_text(dir.file("link"), "new");
    CHECK(std::filesystem::is_symlink(dir.file("link")));
    CHECK(read_bytes(dir.file("real")) == "new");
    std::filesystem::create_symlink(dir.file("nowhere"), dir.file("dangling"));
    test::expect_error([&] { write_text(dir.file("dangling"), "x"); }, {"a symbolic link to nothing that exists"});
    REQUIRE(::mkfifo(dir.file("pipe").c_str(), 0600) == 0);
    std::filesystem::create_symlink(dir.file("pipe"), dir.file("to_pipe"));
    test::expect_error([&] { write_text(dir.file("to_pipe"), "x"); }, {"which is a fifo"});
    CHECK(std::filesystem::is_symlink(dir.file("to_pipe")));
    CHECK(dir.entries() == std::set<std::string>{"real", "link", "dangling", "pipe", "to_pipe"});
}

TEST_CASE("write_file_atomically: a target replaced by a directory while writing is refused, the temporary removed") {
    TempDir dir;
    const std::string path = dir.file("target");
    CHECK_THROWS_WITH_AS(write_file_atomically(path, [&](std::ostream& out) {
                             out << "data";
                             std::filesystem::create_directory(path);
                         }),
                         doctest::Contains("it is a directory"), Error);
    CHECK(dir.entries() == std::set<std::string>{"target"});
}

TEST_CASE("FileReader: reads exact byte ranges and reports short reads with the counts") {
    TempDir dir;
    const std::string path = dir.file("ten.bin");
    write_bytes(path, "0123456789");
    const FileReader file(path);
    CHECK(file.size() == 10);
    CHECK(file.path() == path);
    char buffer[4] = {};
    file.read(3, buffer, 4);
    CHECK(std::string(buffer, 4) == "3456");
    CHECK_THROWS_WITH_AS(file.read(8, buffer, 4),
                         doctest::Contains("unexpected end of file: wanted 4 bytes at offset 8, got 2"), Error);
    CHECK_THROWS_WITH_AS(FileReader(dir.file("none")), doctest::Contains("No such file or directory"), Error);
}

TEST_CASE("write_file_atomically: a name of up to NAME_MAX bytes is saved; its temporaries fit and stale ones go") {
    // "<name>.tmp.<pid>.<n>" of a 250-byte name passed NAME_MAX: "File name too long", nothing saved
    TempDir dir;
    for (std::size_t length : {229u, 230u, 250u, 255u}) {
        CAPTURE(length);
        const std::string path = dir.file(std::string(length, 'a'));
        write_text(path, "old");
        kill_and_reap(start_stuck_save(dir, path));  // its temporary left behind
        for (const std::string& name : dir.entries()) {
            CHECK(name.size() <= NAME_MAX);
            if (name != std::string(length, 'a'))
                CHECK(name.starts_with(length <= 229 ? path.substr(path.size() - length) + ".tmp." : std::string(200, 'a')));
        }
        CHECK(dir.entries().size() == 2);
        write_text(path, "new");  // removes it
        CHECK(read_bytes(path) == "new");
        CHECK(dir.entries() == std::set<std::string>{std::string(length, 'a')});
        std::filesystem::remove(path);
    }
    // two long names that share their first 240 bytes keep their own temporaries
    const std::string first = dir.file(std::string(240, 'b') + "1.bin"), second = dir.file(std::string(240, 'b') + "2.bin");
    write_text(second, "second");
    kill_and_reap(start_stuck_save(dir, first));
    write_text(second, "again");
    CHECK(dir.entries().size() == 2);  // `second` and the temporary of `first`
}

TEST_CASE("write_file_atomically: an empty path or one naming a folder is refused before anything is written") {
    // "" wrote a whole temporary into the working folder, then failed to rename it over ""
    TempDir dir;
    test::expect_error([&] { write_text("", "data"); }, {"cannot write '': the path is empty"});
    for (const char* name : {"/", "sub/", "/.", "/.."}) {
        const std::string path = dir.path().string() + (name[0] == '/' ? name : "/" + std::string(name));
        test::expect_error([&] { write_text(path, "data"); }, {("cannot write '" + path + "': the path names a folder").c_str()});
    }
    CHECK(dir.entries().empty());
}

TEST_CASE("write_file_atomically: a loop of symbolic links is refused as a loop") {
    // it said "a symbolic link to nothing that exists (Too many levels of symbolic links)"
    TempDir dir;
    std::filesystem::create_symlink(dir.file("b"), dir.file("a"));
    std::filesystem::create_symlink(dir.file("a"), dir.file("b"));
    test::expect_error([&] { write_text(dir.file("a"), "x"); }, {"cannot write '", "a': it is a loop of symbolic links"});
    CHECK(dir.entries() == std::set<std::string>{"a", "b"});
}

TEST_CASE("write_file_atomically: a save killed by SIGXFSZ (ulimit -f) leaves the old file; the next save removes its temporary") {
    TempDir dir;
    const std::string path = dir.file("ckpt.bin");
    write_text(path, "old");
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const rlimit no_core{0, 0}, size{100'000, 100'000};
        ::setrlimit(RLIMIT_CORE, &no_core);
        ::setrlimit(RLIMIT_FSIZE, &size);
        write_text(path, std::string(1'000'000, 'x'));
        ::_exit(1);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ));
    CHECK(read_bytes(path) == "old");
    const std::set<std::string> left = dir.entries();
    REQUIRE(left.size() == 2);
    CHECK(std::prev(left.end())->starts_with("ckpt.bin.tmp." + std::to_string(child) + "."));  // NAME.tmp.<pid>.<n>
    write_text(path, "new");
    CHECK(read_bytes(path) == "new");
    CHECK(dir.entries() == std::set<std::string>{"ckpt.bin"});
}

TEST_SUITE_END();
