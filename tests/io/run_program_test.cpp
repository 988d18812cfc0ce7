// Tests of io/run_program.hpp: arguments reach the program unchanged, with no
// shell in between (examples/graph passes its --out path to Graphviz's dot this way).
#include <xtgrad/io/run_program.hpp>
#include "tests/io/io_test_util.hpp"

#include <doctest/doctest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

TEST_SUITE_BEGIN("io");

using xtgrad::run_program;
using xtgrad::test::read_bytes;
using xtgrad::test::TempDir;

TEST_CASE("run_program: a path full of shell syntax is one argument and runs no command") {
    TempDir dir;
    // A shell would expand $XTGRAD_MARKER (file names cannot hold the '/' of a full path).
    const std::string marker = dir.file("pwned");
    REQUIRE(::setenv("XTGRAD_MARKER", marker.c_str(), 1) == 0);
    const std::string hostile[] = {
        "a'; touch $XTGRAD_MARKER; '",  // closes the quotes the old std::system call put around it
        "b\"; touch $XTGRAD_MARKER; \"",
        "c $(touch $XTGRAD_MARKER)",
        "d `touch $XTGRAD_MARKER`",
        "e | touch $XTGRAD_MARKER",
    };
    for (const std::string& name : hostile) {
        CAPTURE(name);
        const std::string path = dir.file(name);
        CHECK(run_program({"cp", "/dev/null", path}) == 0);
        CHECK(std::filesystem::exists(path));
        CHECK_FALSE(std::filesystem::exists(marker));
    }
    // The same line through a shell does run the command: the check above can fail. (The quote
    // left over runs an empty command; its "Permission denied" goes to /dev/null, not the log.)
    CHECK(run_program({"sh", "-c", "cp /dev/null '" + dir.file(hostile[0]) + "' 2>/dev/null"}).has_value());
    CHECK(std::filesystem::exists(marker));
    ::unsetenv("XTGRAD_MARKER");
}

TEST_CASE("run_program: exit status, a missing program and a signal are told apart") {
    CHECK(run_program({"true"}) == 0);
    CHECK(run_program({"false"}) == 1);
    CHECK(run_program({"sh", "-c", "exit 7"}) == 7);  // the test's own shell, not run_program's
    CHECK(run_program({"sh", "-c", "kill -9 $$"}) == 128 + 9);
    CHECK_FALSE(run_program({"xtgrad-no-such-program"}).has_value());
    CHECK_FALSE(run_program({}).has_value());
}

TEST_CASE("run_program: dot renders a file whose path holds a quote (skipped without Graphviz)") {
    if (!run_program({"dot", "-V"}).has_value()) return;
    TempDir dir;
    const std::string dot = dir.file("it's.dot"), svg = dir.file("it's.svg");
    {
        std::ofstream out(dot);
        out << "digraph { a -> b }\n";
    }
    REQUIRE(run_program({"dot", "-Tsvg", dot, "-o", svg}) == 0);
    CHECK(read_bytes(svg).find("<svg") != std::string::npos);
}

TEST_CASE("file_argument: a path starting with '-' reaches dot as a file, never as an option") {
    using xtgrad::file_argument;
    CHECK(file_argument("-rf/x.dot") == "./-rf/x.dot");
    CHECK(file_argument("-o") == "./-o");
    CHECK(file_argument("out/x.dot") == "out/x.dot");
    CHECK(file_argument("/abs/-x") == "/abs/-x");
    if (!run_program({"dot", "-V"}).has_value()) return;  // the rest needs Graphviz
    TempDir dir;
    const std::filesystem::path cwd = std::filesystem::current_path();
    std::filesystem::current_path(dir.file(""));
    std::filesystem::create_directory("-Tpng");
    {
        std::ofstream out("-Tpng/g.dot");
        out << "digraph { a -> b }\n";
    }
    const std::optional<int> status = run_program({"dot", "-Tsvg", file_argument("-Tpng/g.dot"), "-o", file_argument("-Tpng/g.svg")});
    std::filesystem::current_path(cwd);
    CHECK(status == 0);
    CHECK(read_bytes(dir.file("-Tpng/g.svg")).find("<svg") != std::string::npos);
}

TEST_SUITE_END();
