// The XTGRAD_* environment variables the library reads, checked all at once.
//
//   XTGRAD_TRACE=1          print every backward node as it runs (engine.hpp, set_trace)
//   XTGRAD_BREAK_OP=OP      the debugger's stops: nodes of op OP (debug.hpp, break_on_op)
//   XTGRAD_BREAK_MODULE=P   ... nodes of the modules under path P (break_on_module)
//   XTGRAD_BREAK_TRAP=1     ... and raise SIGTRAP at each (set_trap_on_match)
//   XTGRAD_ISA=baseline     xtgrad's own kernels without AVX-512 (simd/cpu_isa.hpp)
//   XTGRAD_GEMM_PROFILE=1   per-shape GEMM times, printed at exit (gemm/gemm_profile.hpp)
//   XTGRAD_GEMM_BACKEND=openblas   the large products on OpenBLAS instead of oneDNN (gemm/blas.hpp)
//   XTGRAD_BLOCK_CACHE=0    large arrays from the C heap (autograd/array_allocator.hpp)
//   XTGRAD_BLOCK_CACHE_CUT=0   ... or cached, but past its budget from new pages, never cut and joined
//   XTGRAD_SMALL_GEMM=0, XTGRAD_SKINNY_GEMM=0   small / skinny products to the GEMM backend (gemm/blas.cpp)
//   XTGRAD_POOL_SPIN=0      idle pool workers sleep at once (threads/parallel.hpp)
//   XTGRAD_BF16_SMALL_IN_FP32=0   autocast runs products with a side under 8 in bf16 too
//   XTGRAD_SMALL_GEMM_BF16=0      autocast runs attention's medium blocks in fp32 (gemm/blas.hpp)
//   XTGRAD_SMALL_GEMM_AMX=0       ... or in bf16 on vdpbf16ps, not AMX tiles (gemm/small_gemm.hpp)
//   XTGRAD_INFERENCE_WEIGHTS_PACKED=0   bf16 inference reads W's bf16 copy as stored, not packed
//                           (autograd/packed_weights.hpp)
//                           (the speed switches: docs/performance.md, "Switches")
//   XTGRAD_DIST_TIMEOUT=T   under mpirun: how long a collective waits (nn/parallel/process_group.hpp)
//
// The switches take 1 or 0 (unset or empty: the default); XTGRAD_ISA takes baseline or avx512;
// XTGRAD_GEMM_BACKEND onednn or openblas; XTGRAD_DIST_TIMEOUT a time of at least 1 s. Each is read where it is first needed — a bad value is an
// Error there, naming the variable and the value — which can be after a forward pass.
// check_environment() reads all but XTGRAD_DIST_TIMEOUT now and throws the first such Error, so a
// program can refuse a bad setting before long work (the examples do, before training: exit
// status 2); XTGRAD_DIST_TIMEOUT is checked when the process group starts, before any collective.
// The break filters take any text; a filter that matched no node of a backward pass says so once
// on stderr, with the ops that pass ran (debug.hpp).
#pragma once

namespace xtgrad {

void check_environment();

}  // namespace xtgrad
