// The process group of data-parallel training (torch.distributed with backend "mpi"): the
// processes mpirun started, their ranks, and the few collectives DistributedDataParallel
// needs. MPI does the networking (shared memory on one host, TCP or InfiniBand across hosts);
// this file only wraps it.
//
//   distributed::init_process_group();      // MPI_Init when launched by mpirun, else a world of 1
//   distributed::get_rank(), get_world_size()
//   distributed::all_reduce(buf, n);        // sum over all processes, in place
//   Work w = distributed::all_reduce_async(buf, n);  ...  w.wait();
//
// Without MPI (meson -Dmpi=disabled, or libopenmpi-dev missing) and when not launched by
// mpirun, the world is one process and every collective is the identity.
//
// No collective waits forever: each one is non-blocking underneath and wait() polls it until
// timeout() (default 300 s, XTGRAD_DIST_TIMEOUT), then throws an Error naming the
// operation, so a process whose peer died or hung fails with a message instead of hanging.
// (When a peer process exits, mpirun itself also stops the whole job.)
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string_view>

namespace xtgrad::distributed {

bool mpi_available();       // built with MPI
bool launched_by_mpirun();  // the environment of a process mpirun started (OMPI_/PMI_/PMIX_ variables)

// Joins the process group: MPI_Init when built with MPI and launched by mpirun; otherwise a
// world of one process. Idempotent. Throws if MPI_Init fails.
void init_process_group();
bool is_initialized();       // init_process_group() ran and MPI is in use (world may still be 1)
void destroy_process_group();  // MPI_Finalize; MPI cannot start again in this process
// An Error naming `what` when the group cannot be used: under mpirun before init_process_group()
// (every process would train alone as a world of 1, silently), or after destroy_process_group().
// The collectives, DistributedDataParallel, ZeroRedundancyOptimizer and DistributedSampler's
// defaults call it.
void require_process_group(const char* what);
int get_rank();               // 0 outside MPI
int get_world_size();         // 1 outside MPI
int get_local_world_size();   // processes on this host (for threads per process)

// XTGRAD_DIST_TIMEOUT is a finite number of seconds, at least kMinTimeout, with or without a unit
// ("300", "90s", "5m", "1h"); anything else ("nan", "0", "0.001", "-1", "5 min", "") is an Error
// naming the variable and its value, at init_process_group() or the first wait.
inline constexpr std::chrono::duration<double> kMinTimeout{1.0};
std::chrono::duration<double> timeout();
void set_timeout(std::chrono::duration<double> t);  // finite and >= kMinTimeout, else an Error
std::chrono::duration<double> parse_timeout(std::string_view text);  // XTGRAD_DIST_TIMEOUT's syntax

// A collective in flight (torch's Work). wait() returns once it completed, or throws an
// Error after timeout(); is_completed() only checks (and lets MPI progress).
class Work {
public:
    Work() = default;  // already complete
    bool is_completed();
    void wait();

    struct Request;
    explicit Work(std::shared_ptr<Request> r) : request_(std::move(r)) {}

private:
    std::shared_ptr<Request> request_;
};

// Sum over all processes, in place. `what` names the operation in errors.
Work all_reduce_async(float* data, std::size_t count, const char* what = "all_reduce");
void all_reduce(float* data, std::size_t count, const char* what = "all_reduce");
void all_reduce(double* data, std::size_t count, const char* what = "all_reduce");  // counts, weights
// Root's bytes to every process.
void broadcast(void* data, std::size_t bytes, int root, const char* what = "broadcast");
void barrier(const char* what = "barrier");
// Ends every process of the job (MPI_Abort) with `code`; std::exit(code) outside MPI.
[[noreturn]] void abort(int code);

}  // namespace xtgrad::distributed
