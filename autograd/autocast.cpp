#include <xtgrad/autograd/autocast.hpp>

#include <xtgrad/autograd/error.hpp>
#include <xtgrad/gemm/blas.hpp>

#include <cstring>

namespace xtgrad {

namespace detail {
std::string bf16_unsupported_reason(const char* backend, bool cpu_has_avx512_bf16) {
    if (std::strcmp(backend, "onednn") != 0)
        return fmt::format("this build's GEMM backend is {}, which has no bf16 matrix product; build with "
                           "-Dgemm=onednn (the default) to use autocast(bf16)",
                           backend);
    if (!cpu_has_avx512_bf16)
        return "this CPU has no AVX512-BF16 instructions: oneDNN would emulate the bf16 dot products, slower than "
               "fp32; run without autocast (fp32)";
    return "";
}
}  // namespace detail

namespace autocast {

namespace {
thread_local DType current = DType::fp32;
}

std::string bf16_unsupported_reason() {
    __builtin_cpu_init();
    return detail::bf16_unsupported_reason(gemm_backend_name(), __builtin_cpu_supports("avx512bf16"));
}

Scope::Scope(DType dtype, bool enabled) : previous_(current) {
    const DType wanted = enabled ? dtype : DType::fp32;
    if (wanted == DType::bf16) {
        static const std::string reason = bf16_unsupported_reason();  // the build and the CPU do not change
        if (!reason.empty()) fail("autocast(bf16): {}", reason);
    }
    current = wanted;
}

Scope::~Scope() { current = previous_; }

DType dtype() { return current; }
bool is_enabled() { return current != DType::fp32; }

}  // namespace autocast

}  // namespace xtgrad
