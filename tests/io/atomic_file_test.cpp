// Tests of autograd/atomic_file.hpp: a failed write never touches the target nor leaves a
// temporary behind; FileReader reports short reads with the byte counts.
#include "autograd/atomic_file.hpp"
#include "autograd/error.hpp"
#include "tests/io/io_test_util.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <ostream>
#include <stdexcept>
#include <string>

using namespace xtgrad;
using xtgrad::test::read_bytes;
using xtgrad::test::TempDir;
using xtgrad::test::write_bytes;

namespace {

void write_text(const std::string& path, const std::string& text) {
    write_file_atomically(path, [&](std::ostream& out) { out << text; });
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

TEST_CASE("write_file_atomically: a failed rename removes the temporary") {
    TempDir dir;
    std::filesystem::create_directory(dir.file("target"));  // a directory cannot be replaced by a file
    CHECK_THROWS_WITH_AS(write_text(dir.file("target"), "data"),
                         doctest::Contains("renaming the temporary file over it failed"), Error);
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
