#include "examples/common/data_parallel.hpp"

#include <xtgrad/autograd/error.hpp>
#include "examples/common/cli.hpp"
#include <xtgrad/nn/checkpoint.hpp>
#include <xtgrad/nn/parallel/distributed_sampler.hpp>
#include <xtgrad/nn/parallel/process_group.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace xtgrad::examples {

DataParallel::DataParallel(std::string program) : program_(std::move(program)) {
    if (distributed::launched_by_mpirun() && !distributed::mpi_available())
        fmt::print(stderr, "{}: launched by mpirun, but xtgrad was built without MPI (meson -Dmpi=enabled "
                           "needs libopenmpi-dev): every process trains alone\n", program_);
    if (distributed::launched_by_mpirun()) {
        try {
            (void)distributed::timeout();  // XTGRAD_DIST_TIMEOUT: a bad value is a usage error, before MPI starts
        } catch (const Error& e) {
            throw cli::UsageError(e.what());
        }
    }
    distributed::init_process_group();
    rank_ = distributed::get_rank();
    world_ = distributed::get_world_size();
    if (!active()) return;
    if (rank_ == 0) {
        fmt::print("data-parallel: {} processes\n", world_);
        std::fflush(stdout);
    } else if (std::freopen("/dev/null", "w", stdout) == nullptr) {
        fmt::print(stderr, "{} rank {}: cannot silence stdout\n", program_, rank_);
    }
}

DataParallel::~DataParallel() { distributed::destroy_process_group(); }

int DataParallel::threads(int requested) const {
    return std::max(1, requested / std::max(1, distributed::get_local_world_size()));
}

Ids DataParallel::shard(const Ids& global_batch) const {
    if (!active()) return global_batch;
    const std::size_t rows = global_batch.dimension() == 0 ? 0 : global_batch.shape()[0];
    const std::size_t world = static_cast<std::size_t>(world_);
    if (rows < world)
        xtgrad::fail("{}: a batch of {} rows cannot be shared by {} processes (every process needs at least one row)", program_,
             rows, world_);
    std::vector<std::size_t> mine;
    for (std::size_t r = static_cast<std::size_t>(rank_); r < rows; r += world) mine.push_back(r);
    return nn::parallel::select_rows(global_batch, mine);
}

double DataParallel::share(std::size_t local) const {
    if (!active()) return 1.0;
    double total = static_cast<double>(local);
    distributed::all_reduce(&total, 1, "the global count of the batch");
    if (!(total > 0)) xtgrad::fail("{}: the batch holds nothing to average over on any process", program_);
    return static_cast<double>(local) / total;
}

double DataParallel::mean(double value, double weight) const {
    if (!active()) return value;
    double v = value * (weight < 0 ? 1.0 / world_ : weight);
    distributed::all_reduce(&v, 1, "the global loss");
    return v;
}

void DataParallel::save(const nn::Module& module, const std::string& path) const {
    if (rank_ == 0) nn::save(module, path);
    distributed::barrier("the checkpoint barrier");
}

int DataParallel::fail(const std::exception& e) const {
    if (!active()) {
        fmt::print(stderr, "{}: {}\n", program_, escaped_for_message(e.what()));
        return 2;
    }
    fmt::print(stderr, "{} rank {} of {}: {}\n", program_, rank_, world_, escaped_for_message(e.what()));
    std::fflush(stderr);
    distributed::abort(2);
}

}  // namespace xtgrad::examples
