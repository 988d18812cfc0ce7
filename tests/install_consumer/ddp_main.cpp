// A user's data-parallel program against the installed xtgrad (tests/install_consumer/run.sh runs
// it under `mpirun -np 2` when the library was built with MPI). Only <xtgrad/...> headers and
// pkg-config's flags: the headers never include mpi.h, the library links libmpi itself.
// Each process starts from other weights and sees other rows of the batch; after backward every
// process must hold rank 0's weights and the gradient of the whole batch, averaged.
#include <xtgrad/xtgrad.hpp>

#include <cmath>

namespace {

int check_one_step() {
    using namespace xtgrad;
    const int rank = distributed::get_rank(), world = distributed::get_world_size();
    manual_seed(static_cast<std::uint64_t>(rank) + 1);  // other weights on every rank: DDP broadcasts rank 0's
    nn::Linear layer(3, 2);
    nn::parallel::DistributedDataParallel ddp(layer);

    // The global batch: 4 rows, x(i, j) = i + j / 10; this process takes the rows i with i % world == rank.
    const std::size_t rows = 4;
    std::size_t mine = 0;
    for (std::size_t i = 0; i < rows; ++i) mine += (i % static_cast<std::size_t>(world) == static_cast<std::size_t>(rank));
    Array share = xt::zeros<float>({mine, std::size_t{3}});
    for (std::size_t i = 0, r = 0; i < rows; ++i)
        if (i % static_cast<std::size_t>(world) == static_cast<std::size_t>(rank)) {
            for (std::size_t j = 0; j < 3; ++j) share(r, j) = static_cast<float>(i) + static_cast<float>(j) / 10;
            ++r;
        }
    sum(ddp.forward(Tensor(share))).backward();

    // d sum(x W^T + b) / dW(o, j) = the sum of column j over this process's rows; averaged over the
    // processes: the whole batch's column sum / world. It does not depend on the weights.
    const Array& dw = layer.weight.grad_array();
    for (std::size_t o = 0; o < 2; ++o)
        for (std::size_t j = 0; j < 3; ++j) {
            double want = 0;
            for (std::size_t i = 0; i < rows; ++i) want += static_cast<double>(i) + static_cast<double>(j) / 10;
            want /= world;
            if (std::abs(dw(o, j) - want) > 1e-5) {
                fmt::print("rank {}: averaged gradient at ({}, {}) is {}, expected {}\n", rank, o, j, dw(o, j), want);
                return 1;
            }
        }
    // The weights are rank 0's everywhere: with seed 1, as a fresh Linear(3, 2) gets on rank 0.
    manual_seed(1);
    nn::Linear rank0(3, 2);
    if (!(layer.weight.data() == rank0.weight.data())) {
        fmt::print("rank {}: weights differ from rank 0's after DistributedDataParallel's broadcast\n", rank);
        return 1;
    }
    if (rank == 0) fmt::print("installed xtgrad data-parallel works on {} processes\n", world);
    return 0;
}

}  // namespace

int main() {
    xtgrad::distributed::init_process_group();
    const int status = check_one_step();
    xtgrad::distributed::destroy_process_group();  // MPI_Finalize: every process must reach it
    return status;
}
