// One verdict on every rank, for checks each process makes on its own (internal: distributed.cpp
// and zero_optimizer.cpp). A process that refused alone would leave the others waiting in their
// next collective (a timeout), or going on with state it never shared; so each process's own
// verdict is shared first, and every process throws the same Error or none does.
#pragma once

#include <xtgrad/nn/module.hpp>

#include <string>

namespace xtgrad::nn::parallel::detail {

// A collective. `problem` is this process's own verdict (empty: fine). Returns on every process
// if every problem is empty; otherwise throws on every process
//   "<what>: rank(s) 1, 2 <verdict>: rank 1: <its problem>; rank 2: <its problem>"
// (each problem cut to 400 bytes). In a world of one process the problem is thrown as it is.
void agree(const std::string& problem, const char* what, const char* verdict);

// Why this process's tensors differ from rank 0's (names, shapes, which require grad), or empty:
// a collective (rank 0's description is broadcast). Pass it to agree().
std::string difference_from_rank0(const NamedTensors& tensors);

// "<what> is <mine> here but <rank 0's> on rank 0", or empty when they are equal: a collective
// (rank 0's text is broadcast). For settings every process must share (options, a root rank).
std::string difference_from_rank0(const std::string& mine, const char* what);

}  // namespace xtgrad::nn::parallel::detail
