#include <xtgrad/io/run_program.hpp>

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>

extern char** environ;

namespace xtgrad {

std::optional<int> run_program(const std::vector<std::string>& argv) {
    if (argv.empty()) return std::nullopt;
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));  // exec does not write them
    args.push_back(nullptr);
    pid_t pid = 0;
    // glibc reports a failed exec (ENOENT, EACCES) here, not as exit status 127.
    if (::posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return std::nullopt;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return std::nullopt;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

std::string file_argument(const std::string& path) { return path.starts_with('-') ? "./" + path : path; }

}  // namespace xtgrad
