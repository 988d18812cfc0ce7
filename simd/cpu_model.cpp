#include <xtgrad/simd/cpu_model.hpp>

#include <cpuid.h>

#include <cstring>
#include <string_view>

namespace xtgrad {

namespace {
CpuModel read_cpu_model() {
    CpuModel m;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return m;
    char vendor[13] = {};  // leaf 0 spells it in ebx, edx, ecx
    std::memcpy(vendor, &ebx, 4);
    std::memcpy(vendor + 4, &edx, 4);
    std::memcpy(vendor + 8, &ecx, 4);
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return m;
    const std::string_view v(vendor);
    m.vendor = v == "GenuineIntel" ? CpuVendor::intel : v == "AuthenticAMD" ? CpuVendor::amd : CpuVendor::other;
    // the extended family counts only past base family 15; the extended model from base family 6
    const unsigned base_family = (eax >> 8) & 0xf, base_model = (eax >> 4) & 0xf;
    m.family = base_family == 0xf ? base_family + ((eax >> 20) & 0xff) : base_family;
    m.model = base_family == 0x6 || base_family == 0xf ? (((eax >> 16) & 0xf) << 4) + base_model : base_model;
    return m;
}
}  // namespace

const CpuModel& cpu_model() {
    static const CpuModel m = read_cpu_model();
    return m;
}

}  // namespace xtgrad
