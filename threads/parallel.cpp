// The worker pool behind parallel_for (threads/parallel.hpp).
//
// One job at a time: the caller publishes (fn, n, chunk count) under the mutex, bumps the
// generation and wakes the workers; worker i runs chunk i + 1, the caller runs chunk 0, and
// the caller waits until `pending` drops to 0. A chunk is claimed before it runs (`claimed`
// holds the generation of the job that last claimed it): after its own, the caller runs any
// chunk no worker has claimed yet. On a guest whose host takes a vCPU away for milliseconds, a
// job otherwise waited for a worker that had not started: seed-d's bf16 steps on two threads ran
// 500-530 ms against 420 on one. The chunks' ranges do not depend on who runs them, so the
// results are the same bits. Workers spin (~50 µs) and then yield (to
// ~500 µs) on the generation before sleeping, so a step's jobs, with sequential stretches of a
// few hundred µs between them, do not pay a wake-up each (~20-40 µs on a KVM guest), and a
// waiting worker never holds a core another thread (OpenBLAS's) wants for long.
#include <xtgrad/threads/parallel.hpp>

#include <xtgrad/autograd/speed_switches.hpp>
#include <xtgrad/autograd/error.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace xtgrad {

namespace {

thread_local bool inside_chunk = false;  // no nested parallel_for
// parallel_for bodies this thread is in, serial ones too: set_num_threads refuses there at any
// thread count (on a chunk it would end the pool running it)
thread_local int inside_body = 0;
struct InsideBody {
    InsideBody() { ++inside_body; }
    ~InsideBody() { --inside_body; }
    InsideBody(const InsideBody&) = delete;
    InsideBody& operator=(const InsideBody&) = delete;
};

// One step of a spinning wait. PAUSE lets a hyperthread sibling have the core meanwhile, but under
// a hypervisor a run of PAUSEs is what its pause-loop exiting watches for: it then takes the vCPU
// off the CPU. On the Zen 5's guest (2 vCPUs) a worker spinning with PAUSE started the next job
// 26 µs after it was posted, with a plain loop 1.4 µs (bench/pool_wake_bench), and every split
// kernel waits that long for its second half. So under a hypervisor (CPUID's hypervisor bit) the
// spin is a plain loop; on bare metal, PAUSE.
bool under_hypervisor() {
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 31)) != 0;
#else
    return false;
#endif
}
const bool kUnderHypervisor = under_hypervisor();

constexpr std::chrono::microseconds kSpin{50}, kYield{500};  // a waiting worker's phases (loop)

inline void spin_step() {
#if defined(__x86_64__) || defined(__i386__)
    if (!kUnderHypervisor) _mm_pause();
#endif
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the loop re-reads what it waits on
}

class Pool {
public:
    explicit Pool(int workers) {
        try {
            for (int i = 0; i < workers; ++i) threads_.emplace_back([this, i] { loop(i); });
        } catch (const std::system_error& e) {  // a thread limit: the started ones joined, not terminated
            stop_and_join();
            fail("set_num_threads: could not start worker {} of {} ({})", threads_.size() + 1, workers, e.what());
        }
    }
    ~Pool() { stop_and_join(); }
    int workers() const { return static_cast<int>(threads_.size()); }

    // Runs fn on chunks 0 .. chunks-1 of [0, n), chunk 0 on the calling thread.
    void run(std::size_t n, std::size_t chunks, const std::function<void(std::size_t, std::size_t)>& fn) {
        std::lock_guard<std::mutex> one_job(job_mutex_);  // two callers never share the pool
        std::uint64_t job;  // this job's generation
        {
            std::lock_guard<std::mutex> lock(mutex_);
            fn_ = &fn;
            n_ = n;
            chunks_ = chunks;
            error_ = nullptr;
            pending_.store(static_cast<int>(chunks - 1), std::memory_order_relaxed);
            job = generation_.fetch_add(1, std::memory_order_release) + 1;
        }
        wake_.notify_all();
        run_chunk(0);
        for (std::size_t c = 1; c < chunks; ++c) run_if_unclaimed(c, job);  // the chunks no worker has started
        for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin)  // the workers' chunks
            if (spin < 1024)
                spin_step();
            else
                std::this_thread::yield();  // a worker was descheduled: give it the core
        if (error_) std::rethrow_exception(error_);
    }

private:
    void stop_and_join() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
            generation_.fetch_add(1, std::memory_order_release);
        }
        wake_.notify_all();
        for (std::thread& t : threads_) t.join();
    }

    // Runs chunk c of job `job` (a generation) unless another thread has claimed it: once per chunk
    // and job. A worker that read an older job's generation and was late finds every chunk of that
    // job claimed (the caller returned only after each ran) and a newer job's claims above it.
    // Generations are 64 bits, so they never wrap: a wrapped one would be below every claim, and
    // nobody could take a chunk.
    void run_if_unclaimed(std::size_t c, std::uint64_t job) {
        std::uint64_t last = claimed_[c].load(std::memory_order_acquire);
        if (last >= job || !claimed_[c].compare_exchange_strong(last, job, std::memory_order_acq_rel)) return;
        run_chunk(c);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
    }

    void run_chunk(std::size_t c) {
        const std::size_t begin = n_ * c / chunks_, end = n_ * (c + 1) / chunks_;
        const InsideBody body;
        inside_chunk = true;
        try {
            (*fn_)(begin, end);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = std::current_exception();
        }
        inside_chunk = false;
    }

    void loop(int index) {
        std::uint64_t seen = 0;
        for (;;) {
            // Wait for the next job: spin ~kSpin, then yield until ~kYield (the core goes to any
            // runnable thread, e.g. an OpenBLAS worker, at once), then sleep on the condition.
            // Bounded by time, not by counts: a PAUSE and a yield cost from 0.1 to several µs
            // depending on the machine and the hypervisor, and a worker asleep takes ~20-40 µs to
            // start a job (bench/pool_wake_bench), which a step's sequential stretches of a few
            // hundred µs (dropout's draws, the graph) would otherwise pay again and again.
            // XTGRAD_POOL_SPIN (on by default) read at each wait: xtgrad_bench --alternate flips it
            // between steps; set_num_threads checked it first, so an invalid value never gets here.
            const bool spin = detail::speed_switch_on(detail::kPoolSpinSwitch);
            const auto idle_since = std::chrono::steady_clock::now();
            const auto idle = [&] { return std::chrono::steady_clock::now() - idle_since; };
            while (spin && generation_.load(std::memory_order_acquire) == seen && idle() < kSpin)
                for (int i = 0; i < 64 && generation_.load(std::memory_order_acquire) == seen; ++i) spin_step();
            while (spin && generation_.load(std::memory_order_acquire) == seen && idle() < kYield)
                std::this_thread::yield();
            std::size_t chunks;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
                seen = generation_.load(std::memory_order_acquire);
                if (stop_) return;
                chunks = chunks_;
            }
            const std::size_t c = static_cast<std::size_t>(index) + 1;
            if (c < chunks) run_if_unclaimed(c, seen);  // the job's fields stay fixed until this chunk is done
        }
    }

    std::vector<std::thread> threads_;
    std::mutex mutex_, job_mutex_;
    std::condition_variable wake_;
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<int> pending_{0};
    std::atomic<std::uint64_t> claimed_[kMaxThreads]{};  // per chunk: the generation that last claimed it
    const std::function<void(std::size_t, std::size_t)>* fn_ = nullptr;
    std::size_t n_ = 0, chunks_ = 1;
    std::exception_ptr error_;
    bool stop_ = false;
};

// The pool in use. A job holds its own reference: set_num_threads from another thread swaps in a
// new pool, and the old one ends (its workers joined) when its last job returns, never under one.
// Never destroyed itself: a thread still in parallel_for after main returns finds it (its workers
// idle until the process ends).
std::mutex config_mutex;
std::atomic<int> configured_threads{1};
std::shared_ptr<Pool>& pool = *new std::shared_ptr<Pool>;

}  // namespace

void set_num_threads(int n) {
    if (n < 1 || n > kMaxThreads)
        fail("set_num_threads: {} threads asked for; xtgrad's pool takes 1 to {} (the calling thread included)", n,
             kMaxThreads);
    if (inside_body > 0) fail("set_num_threads: called from inside a parallel_for chunk (asked for {} threads)", n);
    (void)detail::read_switch(detail::kPoolSpinSwitch);  // checked before any change: a refusal keeps the pool
    if (n == num_threads()) return;
    // started before the lock, so jobs on other threads do not wait for its threads; a pool
    // replaced (or this one, where another call set n first) ends after the lock, by this thread or
    // by the last job running on it
    std::shared_ptr<Pool> fresh = n > 1 ? std::make_shared<Pool>(n - 1) : nullptr;
    std::lock_guard<std::mutex> lock(config_mutex);
    if (n == configured_threads.load(std::memory_order_relaxed)) return;
    pool.swap(fresh);
    configured_threads.store(n, std::memory_order_relaxed);
}

int num_threads() { return configured_threads.load(std::memory_order_relaxed); }

void parallel_for(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& fn) {
    grain = std::max<std::size_t>(grain, 1);
    std::shared_ptr<Pool> mine;
    if (!inside_chunk && n / grain > 1 && configured_threads.load(std::memory_order_relaxed) > 1) {
        std::lock_guard<std::mutex> lock(config_mutex);
        mine = pool;
    }
    const std::size_t chunks = mine ? std::min<std::size_t>(static_cast<std::size_t>(mine->workers()) + 1, n / grain) : 1;
    if (chunks <= 1) {
        const InsideBody body;
        if (n > 0) fn(0, n);
        return;
    }
    mine->run(n, chunks, fn);
}

void parallel_rows(std::size_t rows, std::size_t row_len, const std::function<void(std::size_t, std::size_t)>& fn) {
    parallel_for(rows, std::max<std::size_t>(1, kParallelElements / std::max<std::size_t>(row_len, 1)), fn);
}

}  // namespace xtgrad
