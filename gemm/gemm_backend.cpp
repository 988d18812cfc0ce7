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
    if (onednn_built())
        fail("XTGRAD_GEMM_BACKEND: '{}' is neither onednn nor openblas (unset: onednn, the default)",
             shown_env_value(v));
    fail("XTGRAD_GEMM_BACKEND: '{}' is not openblas, the one backend of this build (it has no oneDNN)",
         shown_env_value(v));
}

// A function-local static: an Error on the first call leaves it unset, so the next call reads
// the variable again (a program that fixes it with setenv gets the backend it names).
const GemmBackend& active_backend() {
    static const GemmBackend& backend = backend_from_env(std::getenv("XTGRAD_GEMM_BACKEND"));
    return backend;
}

}  // namespace xtgrad::detail
