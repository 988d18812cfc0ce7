// Which GEMM backend this process uses (gemm/gemm_backend.hpp): XTGRAD_GEMM_BACKEND, read once.
#include <xtgrad/gemm/gemm_backend.hpp>

#include <xtgrad/autograd/env_switch.hpp>
#include <xtgrad/autograd/error.hpp>
#include "xtgrad_gemm_config.hpp"

#include <cstdlib>
#include <string_view>

namespace xtgrad::detail {

bool onednn_built() { return XTGRAD_HAVE_ONEDNN; }

#if !XTGRAD_HAVE_ONEDNN
const GemmBackend& onednn_backend() {
    fail("XTGRAD_GEMM_BACKEND=onednn: this build has no oneDNN (it was configured with -Dgemm=openblas); "
         "unset XTGRAD_GEMM_BACKEND or set it to openblas");
}
#endif

const GemmBackend& backend_from_env(const char* value) {
    const std::string_view v = value ? value : "";
    if (v.empty()) return onednn_built() ? onednn_backend() : openblas_backend();
    if (v == "onednn") return onednn_backend();
    if (v == "openblas") return openblas_backend();
    fail("XTGRAD_GEMM_BACKEND={}: expected onednn or openblas (unset: {}, this build's default)", shown_env_value(v),
         onednn_built() ? "onednn" : "openblas");
}

// A function-local static: an Error on the first call leaves it unset, so every call that
// needs the backend fails the same way instead of running on another one.
const GemmBackend& active_backend() {
    static const GemmBackend& backend = backend_from_env(std::getenv("XTGRAD_GEMM_BACKEND"));
    return backend;
}

}  // namespace xtgrad::detail
