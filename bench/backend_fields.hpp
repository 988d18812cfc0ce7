// The GEMM backend's fields of a benchmark's JSON line (xtgrad_bench, ceiling_bench): which
// backend ran (XTGRAD_GEMM_BACKEND), its kernel, and for OpenBLAS whether OPENBLAS_CORETYPE
// pinned that kernel (bench/run.sh runs OpenBLAS both ways and keeps the faster).
#pragma once

#include <xtgrad/gemm/blas.hpp>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

namespace xtgrad::bench {

inline void add_backend_fields(nlohmann::ordered_json& r) {
    const std::string backend = gemm_backend_name();
    r["gemm_backend"] = backend;
    r["gemm_kernel"] = gemm_backend_kernel();
    const char* coretype = std::getenv("OPENBLAS_CORETYPE");  // empty: OpenBLAS detects the CPU
    r["openblas_env"] = backend != "openblas"       ? nlohmann::ordered_json(nullptr)
                        : coretype && *coretype ? nlohmann::ordered_json("pinned")
                                                : nlohmann::ordered_json("own detection");
}

}  // namespace xtgrad::bench
