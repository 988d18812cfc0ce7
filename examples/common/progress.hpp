// A one-line progress bar with the loss and an ETA, redrawn in place on a terminal.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace xtgrad::examples {

class Progress {
public:
    // already: epochs done before this run (a resumed run), left out of the time per epoch
    explicit Progress(long total, long already = 0) : total_(total), already_(already), start_(std::chrono::steady_clock::now()) {}

    // Prints "epoch  7/20 [#######.............] loss 1.234567  0.8 s/epoch  ETA 10 s" on its own line.
    void update(long done, double loss) {
        using namespace std::chrono;
        const double elapsed = duration<double>(steady_clock::now() - start_).count();
        const double per = elapsed / static_cast<double>(done > already_ ? done - already_ : 1);
        const int width = 20, filled = static_cast<int>(width * done / total_);
        std::printf("epoch %3ld/%ld [%s%s] loss %.6f  %.2f s/epoch  ETA %.0f s\n", done, total_,
                    std::string(static_cast<std::size_t>(filled), '#').c_str(),
                    std::string(static_cast<std::size_t>(width - filled), '.').c_str(), loss, per,
                    per * static_cast<double>(total_ - done));
        std::fflush(stdout);
    }

private:
    long total_, already_;
    std::chrono::steady_clock::time_point start_;
};

}  // namespace xtgrad::examples
