#include <xtgrad/nn/parallel/process_group.hpp>

#include <xtgrad/autograd/error.hpp>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/ranges.h>

#if XTGRAD_WITH_MPI
#define OMPI_SKIP_MPICXX 1  // the C API only: OpenMPI's deprecated C++ bindings warn
#include <mpi.h>
#endif

namespace xtgrad::distributed {

namespace {

// The lost-rank probe listens as long as the timeout (up to 30 s) for the peers that are alive and
// time out a moment later: under a second it would report healthy ranks as dead.
constexpr const char* kWhyMinTimeout =
    "a shorter wait cannot tell a peer a moment behind from a dead one, and the lost-rank probe "
    "listens as long as the timeout";

struct State {
    bool initialized = false;  // MPI is in use
    int rank = 0, world = 1, local_world = 1;
#if XTGRAD_WITH_MPI
    MPI_Comm faults = MPI_COMM_NULL;  // the lost-rank probe's messages, apart from the collectives'
#endif
    std::optional<std::chrono::duration<double>> timeout;  // XTGRAD_DIST_TIMEOUT's, read when first needed
};

State& state() {
    static State s;
    return s;
}

}  // namespace

bool launched_by_mpirun() {
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
        if (std::getenv(var) != nullptr) return true;
    return false;
}

bool is_initialized() { return state().initialized; }
int get_rank() { return state().rank; }
int get_world_size() { return state().world; }
int get_local_world_size() { return state().local_world; }
std::chrono::duration<double> parse_timeout(std::string_view text) {
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    const std::string_view unit = ec == std::errc() ? text.substr(static_cast<std::size_t>(end - text.data())) : "";
    const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : 0;
    if (ec != std::errc() || scale == 0 || !std::isfinite(value) || !(value > 0) || !std::isfinite(value * scale))
        fail("XTGRAD_DIST_TIMEOUT='{}': not a positive finite time (seconds, e.g. 300, or with a unit: 90s, 5m, 1h)",
             text);
    if (value * scale < kMinTimeout.count())
        fail("XTGRAD_DIST_TIMEOUT='{}': {} s is under the lower bound of {} s ({})", text, value * scale,
             kMinTimeout.count(), kWhyMinTimeout);
    return std::chrono::duration<double>(value * scale);
}

std::chrono::duration<double> timeout() {
    State& s = state();
    if (!s.timeout) {
        const char* env = std::getenv("XTGRAD_DIST_TIMEOUT");
        s.timeout = env != nullptr ? parse_timeout(env) : std::chrono::duration<double>(300.0);
    }
    return *s.timeout;
}

void set_timeout(std::chrono::duration<double> t) {
    if (!std::isfinite(t.count()) || !(t.count() > 0))
        fail("distributed::set_timeout: the timeout must be a positive finite time, got {} s", t.count());
    if (t < kMinTimeout)
        fail("distributed::set_timeout: {} s is under the lower bound of {} s ({})", t.count(), kMinTimeout.count(),
             kWhyMinTimeout);
    state().timeout = t;
}

#if XTGRAD_WITH_MPI

struct Work::Request {
    MPI_Request request = MPI_REQUEST_NULL;
    std::string what;
};

namespace {

void check(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    fail("distributed: {} failed on rank {} of {}: {}", what, get_rank(), get_world_size(), std::string(text, len));
}

int mpi_count(std::size_t n, const char* what) {
    if (n > static_cast<std::size_t>(INT_MAX))
        fail("distributed: {} of {} elements is more than MPI's int count allows ({})", what, n, INT_MAX);
    return static_cast<int>(n);
}

}  // namespace

bool mpi_available() { return true; }

namespace {
bool finalized() {
    int done = 0;
    MPI_Finalized(&done);  // callable before MPI_Init and after MPI_Finalize
    return done != 0;
}
}  // namespace

void require_process_group(const char* what) {
    if (finalized())
        fail("{}: the process group was destroyed (destroy_process_group, MPI_Finalize) and MPI cannot start again "
             "in this process; destroy it only after the last collective", what);
    if (!state().initialized && launched_by_mpirun())
        fail("{}: this process was started by mpirun but distributed::init_process_group() was not called, so it "
             "would run as a world of 1 and train alone; call init_process_group() first", what);
}

void init_process_group() {
    State& s = state();
    if (s.initialized || !launched_by_mpirun()) return;
    if (finalized())  // MPI_Init_thread would abort the process
        fail("distributed::init_process_group: the process group was destroyed earlier in this process, and MPI "
             "cannot start again after MPI_Finalize");
    (void)timeout();  // a bad XTGRAD_DIST_TIMEOUT is an Error before any collective
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    // Errors come back as codes (and become xtgrad::Errors) instead of aborting inside MPI.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s.world);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, s.rank, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &s.local_world);
    MPI_Comm_free(&local);
    check(MPI_Comm_dup(MPI_COMM_WORLD, &s.faults), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(s.faults, MPI_ERRORS_RETURN);
    s.initialized = true;
}

void destroy_process_group() {
    State& s = state();
    if (!s.initialized) return;
    MPI_Comm_free(&s.faults);
    MPI_Finalize();
    s = State{};
}

bool Work::is_completed() {
    if (!request_ || request_->request == MPI_REQUEST_NULL) return true;
    int done = 0;
    check(MPI_Test(&request_->request, &done, MPI_STATUS_IGNORE), request_->what.c_str());
    return done != 0;
}

namespace {

// After a collective timed out: which peers are gone? Every process that times out sends a
// small message to every other and listens for theirs, for `grace`; a process that is alive
// and waiting is timing out too (the same collective, give or take its start), so it answers.
// Peers that sent nothing are the lost ones (dead, hung, or busy for longer than the timeout).
// A second round among those that answered lets them all finish the probe before any of them
// ends the job (MPI_Abort), so each prints its own Error. Requests to lost peers are left
// pending: the job ends next.
constexpr double kLostRankGrace = 30;  // seconds, at most: the spread of the survivors' timeouts

std::vector<int> lost_ranks(std::chrono::duration<double> grace) {
    const State& s = state();
    using clock = std::chrono::steady_clock;
    std::vector<int> alive(static_cast<std::size_t>(s.world), 0);
    alive[static_cast<std::size_t>(s.rank)] = 1;
    for (int round = 0; round < 2; ++round) {
        std::vector<int> inbox(static_cast<std::size_t>(s.world), 0), heard(static_cast<std::size_t>(s.world), 0);
        std::vector<MPI_Request> recv(static_cast<std::size_t>(s.world), MPI_REQUEST_NULL);
        const int mark = s.rank;
        for (int peer = 0; peer < s.world; ++peer) {
            if (peer == s.rank || (round == 1 && !alive[static_cast<std::size_t>(peer)])) continue;
            MPI_Request send = MPI_REQUEST_NULL;
            MPI_Irecv(&inbox[static_cast<std::size_t>(peer)], 1, MPI_INT, peer, round, s.faults, &recv[static_cast<std::size_t>(peer)]);
            if (MPI_Isend(&mark, 1, MPI_INT, peer, round, s.faults, &send) == MPI_SUCCESS) MPI_Request_free(&send);
        }
        const auto start = clock::now();
        for (bool pending = true; pending && clock::now() - start < grace;) {
            pending = false;
            for (int peer = 0; peer < s.world; ++peer) {
                MPI_Request& r = recv[static_cast<std::size_t>(peer)];
                if (r == MPI_REQUEST_NULL) continue;
                int done = 0;
                if (MPI_Test(&r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
                    r = MPI_REQUEST_NULL;  // an error from the link: this peer is gone
                    continue;
                }
                if (done) heard[static_cast<std::size_t>(peer)] = 1;
                else pending = true;
            }
        }
        if (round == 0)
            for (int peer = 0; peer < s.world; ++peer)
                if (peer != s.rank) alive[static_cast<std::size_t>(peer)] = heard[static_cast<std::size_t>(peer)];
    }
    std::vector<int> lost;
    for (int peer = 0; peer < s.world; ++peer)
        if (!alive[static_cast<std::size_t>(peer)]) lost.push_back(peer);
    return lost;
}

}  // namespace

// Polls instead of MPI_Wait, so that a peer that never joins the collective is an Error
// after timeout() rather than a hang. Without sleeping: OpenMPI moves a large collective
// along only inside MPI calls, one pipeline segment per call (sleeping 100 us between polls
// made a 207 MB allreduce between 2 local processes take 2.9 s instead of 1.4 s). MPI_Wait
// busy-polls the same way.
void Work::wait() {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    for (long polls = 0; !is_completed(); ++polls) {
        if (polls % 1024 == 0 && clock::now() - start > timeout()) {
            const auto grace = std::min(timeout(), std::chrono::duration<double>(kLostRankGrace));
            const std::vector<int> lost = lost_ranks(grace);
            std::vector<int> waiting;
            for (int r = 0; r < get_world_size(); ++r)
                if (std::find(lost.begin(), lost.end(), r) == lost.end()) waiting.push_back(r);
            if (!lost.empty())
                fail("distributed: {} did not complete within {:.0f} s on rank {} of {}: lost rank {} (it sent nothing "
                     "for {:.0f} s more: it died, hung or was cut off; still waiting: rank {})",
                     request_->what, timeout().count(), get_rank(), get_world_size(), fmt::join(lost, ", "),
                     grace.count(), fmt::join(waiting, ", "));
            fail("distributed: {} did not complete within {:.0f} s on rank {} of {}: every rank is alive, so one left "
                 "the collective out or called another (XTGRAD_DIST_TIMEOUT sets the limit)",
                 request_->what, timeout().count(), get_rank(), get_world_size());
        }
    }
}

Work all_reduce_async(float* data, std::size_t count, const char* what) {
    require_process_group(what);
    if (!is_initialized() || get_world_size() == 1) return Work{};
    auto r = std::make_shared<Work::Request>();
    r->what = what;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, mpi_count(count, what), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r->request),
          what);
    return Work(r);
}

void all_reduce(double* data, std::size_t count, const char* what) {
    require_process_group(what);
    if (!is_initialized() || get_world_size() == 1) return;
    auto r = std::make_shared<Work::Request>();
    r->what = what;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, mpi_count(count, what), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r->request),
          what);
    Work(r).wait();
}

void broadcast(void* data, std::size_t bytes, int root, const char* what) {
    require_process_group(what);
    if (!is_initialized() || get_world_size() == 1) return;
    auto r = std::make_shared<Work::Request>();
    r->what = what;
    check(MPI_Ibcast(data, mpi_count(bytes, what), MPI_BYTE, root, MPI_COMM_WORLD, &r->request), what);
    Work(r).wait();
}

void barrier(const char* what) {
    require_process_group(what);
    if (!is_initialized() || get_world_size() == 1) return;
    auto r = std::make_shared<Work::Request>();
    r->what = what;
    check(MPI_Ibarrier(MPI_COMM_WORLD, &r->request), what);
    Work(r).wait();
}

void abort(int code) {
    if (is_initialized()) MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
}

#else  // built without MPI: a world of one process

struct Work::Request {};

bool mpi_available() { return false; }
void require_process_group(const char*) {}  // every process is a world of 1, as documented
void init_process_group() {}
void destroy_process_group() {}
bool Work::is_completed() { return true; }
void Work::wait() {}
Work all_reduce_async(float*, std::size_t, const char*) { return Work{}; }
void all_reduce(double*, std::size_t, const char*) {}
void broadcast(void*, std::size_t, int, const char*) {}
void barrier(const char*) {}
void abort(int code) { std::exit(code); }

#endif

void all_reduce(float* data, std::size_t count, const char* what) { all_reduce_async(data, count, what).wait(); }

}  // namespace xtgrad::distributed
