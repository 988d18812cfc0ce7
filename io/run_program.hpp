// Runs another program without a shell (posix_spawnp + waitpid): every argument reaches the
// program as one argv entry, so a user-supplied path with quotes, spaces, `;` or `$(...)` is
// only ever a file name, never a command.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace xtgrad {

// Runs argv[0] (looked up on PATH like execvp) with the arguments argv[1..], inheriting stdin,
// stdout and stderr, and waits for it. Returns its exit status (128 + the signal number if a
// signal ended it), or nullopt if it could not be started (e.g. it is not installed).
std::optional<int> run_program(const std::vector<std::string>& argv);

// A file path as an argument to another program: one that starts with '-' ("-rf/x.dot") would be
// read as an option, so it gets a "./" in front (the same file).
std::string file_argument(const std::string& path);

}  // namespace xtgrad
