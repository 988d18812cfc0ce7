// The exercises' test runner: doctest's own main. Run one exercise with -ts=NAME
// (e.g. -ts=01_sigmoid), list them with -lts.
//
// Beside it, a listener for the two ways a learner's code can end a run with no word on what
// it was doing: an endless loop (a walk whose index never advances, a stack never popped, a
// decoding loop that never stops) and a crash (a recursion as deep as a graph, a null
// pointer). A test case that runs longer than XTGRAD_GRADER_SECONDS (default 60; every
// solution's case takes a few seconds at most) is stopped with a message naming it, and a crash
// (which doctest reports as CRASHED) gets the likely causes; both name the case the grader was
// on (grading::set_context).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "grading.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace {

// The environment's text in a message: printable ASCII as is, any other byte as \xNN, cut at 40.
std::string quoted(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size() && i < 40; ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        out += c >= 0x20 && c < 0x7f ? std::string(1, static_cast<char>(c)) : std::string(hex);
    }
    return text.size() > 40 ? out + "..." : out;
}

int grader_seconds() {
    const char* e = std::getenv("XTGRAD_GRADER_SECONDS");
    if (e == nullptr || *e == '\0') return 60;
    const std::string text = e;
    // plain digits only (strtol would take " 5" and "+5"), at most 5 of them
    const bool digits = text.size() <= 5 && text.find_first_not_of("0123456789") == std::string::npos;
    const long s = digits ? std::stol(text) : 0;
    if (s < 1 || s > 86400) {
        std::fprintf(stderr, "XTGRAD_GRADER_SECONDS must be a whole number of seconds from 1 to 86400, not '%s'\n",
                     quoted(text).c_str());
        std::exit(2);
    }
    return static_cast<int>(s);
}

std::string where_now(const std::string& test_case, bool wait = true) {
    const std::string context = grading::context(wait);
    return "'" + test_case + "'" + (context.empty() ? "" : ", on " + context);
}

class Watchdog : public doctest::IReporter {
public:
    explicit Watchdog(const doctest::ContextOptions&) : limit_(grader_seconds()), thread_([this] { watch(); }) {}
    ~Watchdog() override {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_one();
        thread_.join();
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

    void test_case_start(const doctest::TestCaseData& tc) override {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            name_ = tc.m_name;
            deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(limit_);
            armed_ = true;
        }
        grading::set_context("");
        wake_.notify_one();
    }
    void test_case_end(const doctest::CurrentTestCaseStats&) override {
        const std::lock_guard<std::mutex> lock(mutex_);
        armed_ = false;
    }
    void test_case_exception(const doctest::TestCaseException& e) override {
        if (!e.is_crash) return;  // an exception: doctest's own message says which and where
        std::string name;  // in a signal handler: never wait on a lock
        if (std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock); lock.owns_lock()) {
            name = name_;
            armed_ = false;
        }
        std::fprintf(stderr,
                     "\nThe grader crashed in %s. A crash in your code is most often a recursion as deep as the data "
                     "(a graph thousands of nodes deep overflows the stack: walk it with a stack of your own), a null "
                     "or dangling pointer, or an index past an array's end. Run the program under gdb to see where "
                     "(docs/debugging.md).\n",
                     where_now(name, false).c_str());
    }

    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats&) override {}
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}

private:
    void watch() {
        std::unique_lock<std::mutex> lock(mutex_);
        while (!stop_) {
            if (!armed_) {
                wake_.wait(lock);
                continue;
            }
            if (wake_.wait_until(lock, deadline_) == std::cv_status::no_timeout || !armed_ ||
                std::chrono::steady_clock::now() < deadline_)
                continue;
            std::fprintf(stderr,
                         "\nThe grader stopped %s: it ran for %d s without returning (every reference solution takes "
                         "a few seconds at most). Is there an endless loop in your code: a loop whose index never advances, a "
                         "stack or queue never emptied, a decoding loop that never reaches its end token? "
                         "(XTGRAD_GRADER_SECONDS sets the limit.)\n",
                         where_now(name_).c_str(), limit_);
            std::fflush(stdout);
            std::fflush(stderr);
            std::_Exit(1);
        }
    }

    const int limit_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::string name_;
    std::chrono::steady_clock::time_point deadline_;
    bool armed_ = false, stop_ = false;
    std::thread thread_;  // last: it starts once the members above are made
};

}  // namespace

REGISTER_LISTENER("watchdog", 1, Watchdog);

// The listener's own check (exercises/check.sh runs it with XTGRAD_GRADER_SELF_TEST=1 and a 1 s
// limit): a case that never returns is stopped, with the message. Skipped otherwise.
TEST_CASE("grader_self_test: a case that never returns is stopped" *
          doctest::skip(std::getenv("XTGRAD_GRADER_SELF_TEST") == nullptr)) {
    grading::set_context("the self-test's endless loop");
    for (volatile bool forever = true; forever;) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}
