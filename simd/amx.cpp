#include <xtgrad/simd/amx.hpp>

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <cstdint>

namespace xtgrad {

namespace {
#if defined(__x86_64__) && defined(__linux__)
constexpr long kArchReqXcompPerm = 0x1023;   // arch/x86/include/uapi/asm/prctl.h
constexpr unsigned long kXfeatureXtiledata = 18;
constexpr std::uint64_t kTileStateBits = (1ull << 17) | (1ull << 18);  // XTILECFG, XTILEDATA

bool ask() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE: xgetbv exists
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    if (!(d & (1u << 22)) || !(d & (1u << 24))) return false;  // AMX-BF16, AMX-TILE
    std::uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if (((static_cast<std::uint64_t>(hi) << 32 | lo) & kTileStateBits) != kTileStateBits) return false;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}
#else
bool ask() { return false; }
#endif
}  // namespace

bool amx_bf16_permitted() {
    static const bool permitted = ask();
    return permitted;
}

}  // namespace xtgrad
