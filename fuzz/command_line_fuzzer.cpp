// libFuzzer target: the command line every xtgrad program parses (examples/common/cli.hpp). Each
// input is an argument list (its bytes split at NUL) given to cli::run_main over an App with the
// kinds of options the programs have: counts (count_in, seed_value, --threads), real values
// (finite_range), a string, a list, flags, a positional file, a required option half of the time.
// Findings, besides a crash, a sanitizer report or a hang:
//   - a status other than 0 (success or --help) and 2 (usage error);
//   - a success whose values are outside their options' ranges;
//   - a usage error without its one message on stderr ("fuzz_cli: ...", then the --help pointer);
//   - output a terminal would act on: a control byte other than a newline, or bytes that are not
//     UTF-8, on stdout or stderr (messages quote the command line; escaped_for_message's promise);
//   - a usage error's message broken over lines by a newline in an argument.
#include "examples/common/cli.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// What the program writes to stdout or stderr, both ways it writes (C's FILE* and the C++ stream
// CLI11 uses), kept in memory for one input. Not the file descriptors: libFuzzer's own report and
// the sanitizers' go to fd 2 and must stay there.
class CapturedOutput {
public:
    CapturedOutput(FILE*& c_stream, std::ostream& cpp_stream)
        : c_stream_(c_stream), cpp_stream_(cpp_stream), saved_file_(c_stream),
          memory_(::open_memstream(&buffer_, &size_)), saved_buf_(cpp_stream.rdbuf(&text_)) {
        if (memory_ == nullptr) std::abort();
        c_stream_ = memory_;
    }
    CapturedOutput(const CapturedOutput&) = delete;
    CapturedOutput& operator=(const CapturedOutput&) = delete;
    ~CapturedOutput() {
        c_stream_ = saved_file_;
        cpp_stream_.rdbuf(saved_buf_);
        std::fclose(memory_);
        std::free(buffer_);
    }
    // everything written so far, C's first (only one of the two is written for any input)
    std::string text() {
        cpp_stream_.flush();
        if (std::fflush(memory_) != 0) std::abort();
        return std::string(buffer_, size_) + text_.str();
    }

private:
    FILE*& c_stream_;
    std::ostream& cpp_stream_;
    FILE* saved_file_;
    char* buffer_ = nullptr;
    std::size_t size_ = 0;
    FILE* memory_;
    std::stringbuf text_;
    std::streambuf* saved_buf_;
};

// What a terminal can show as text: UTF-8 with no control character but the newline.
bool terminal_safe(const std::string& text) {
    bool replaced = false;
    (void)xtgrad::valid_utf8(text, &replaced);
    if (replaced) return false;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if ((byte < 0x20 && c != '\n') || byte == 0x7f) return false;
    }
    // C1 controls (U+0080..U+009F: 0xC2 0x80..0x9F), which some terminals take as CSI
    for (std::size_t i = 0; i + 1 < text.size(); ++i)
        if (static_cast<unsigned char>(text[i]) == 0xc2 && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
            static_cast<unsigned char>(text[i + 1]) <= 0x9f)
            return false;
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 4096) return 0;
    // argv: "fuzz_cli", then the input's NUL-separated pieces (at most 64)
    std::vector<std::string> args{"fuzz_cli"};
    std::string piece;
    for (std::size_t i = 1; i < size && args.size() <= 64; ++i) {
        if (data[i] == 0) {
            args.push_back(piece);
            piece.clear();
        } else {
            piece += static_cast<char>(data[i]);
        }
    }
    if (size > 1 && args.size() <= 64) args.push_back(piece);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const bool with_required = size > 0 && (data[0] & 1) != 0;

    int steps = 10, threads = 1;
    long long seed = 0;
    double lr = 1e-3, dropout = 0.1;
    bool adam = false;
    std::string out_path, file;
    std::vector<std::string> names;
    CLI::App app{"The options of an xtgrad program, fuzzed.", "fuzz_cli"};
    app.add_option("--steps", steps, "training steps")->transform(xtgrad::cli::count_at_least(1));
    app.add_option("--seed", seed, "the generator's seed")->transform(xtgrad::cli::seed_value());
    xtgrad::cli::add_threads_option(app, threads);
    app.add_option("--lr", lr, "learning rate")->check(xtgrad::cli::positive_finite());
    app.add_option("--dropout", dropout, "dropout probability")->check(xtgrad::cli::finite_range(0, 1));
    app.add_option("--out", out_path, "where to write")->required(with_required);
    app.add_option("--names", names, "labels");
    app.add_flag("--adam", adam, "Adam instead of SGD");
    app.add_option("FILE", file, "an input file");

    CapturedOutput out(stdout, std::cout), err(stderr, std::cerr);
    bool ran = false;
    const int status = xtgrad::cli::run_main(app, static_cast<int>(args.size()), argv.data(), [&] {
        ran = true;
        if (steps < 1 || threads < 1 || threads > 256 || seed < 0 || !std::isfinite(lr) || lr <= 0 ||
            !std::isfinite(dropout) || dropout < 0 || dropout > 1 || (with_required && !app.count("--out")))
            std::abort();  // a value the options' checks should have refused
        std::printf("ok %d %lld -> %s\n", steps, seed, xtgrad::cli::shown(out_path).c_str());
        return 0;
    });
    const std::string stdout_text = out.text(), stderr_text = err.text();
    if (status != 0 && status != 2) std::abort();
    if (!terminal_safe(stdout_text) || !terminal_safe(stderr_text)) std::abort();
    if (status == 2) {
        static const std::string pointer = "Run with --help for more information.\n";
        if (ran || stderr_text.rfind("fuzz_cli: ", 0) != 0 || stderr_text.size() < pointer.size() ||
            stderr_text.compare(stderr_text.size() - pointer.size(), pointer.size(), pointer) != 0)
            std::abort();
        // one message line, then the pointer: a newline in an argument is shown as \x0a
        if (stderr_text.find('\n') != stderr_text.size() - pointer.size() - 1) std::abort();
    }
    if (status == 0 && !ran && stdout_text.find("Usage:") == std::string::npos) std::abort();  // --help
    return 0;
}
