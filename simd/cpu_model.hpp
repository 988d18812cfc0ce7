// What CPU this is, from cpuid: its vendor, family and model. The speed mechanisms that help one
// CPU and cost another (docs/performance.md, "Switches") take their defaults from it at run time
// (autograd/speed_switches.cpp); this is the one place that reads it.
#pragma once

namespace xtgrad {

enum class CpuVendor { intel, amd, other };

struct CpuModel {
    CpuVendor vendor = CpuVendor::other;
    unsigned family = 0;  // with the extended family, as /proc/cpuinfo shows it (Zen 4: 25, Zen 5: 26)
    unsigned model = 0;   // with the extended model (Zen 3 EPYC: 1; Zen 4 EPYC: 17; Intel Xeon Emerald Rapids: 207)

    bool is_amd(unsigned f) const { return vendor == CpuVendor::amd && family == f; }
    // Family 25 holds two generations: Zen 4 (models 0x10-0x1f, 0x60-0x7f, 0xa0-0xaf; AVX-512)
    // and Zen 3 (the rest; AVX2 only), which the switches measured apart (speed_switches.cpp).
    bool is_amd_zen4() const {
        return is_amd(25) && ((model >= 0x10 && model <= 0x1f) || (model >= 0x60 && model <= 0x7f) ||
                              (model >= 0xa0 && model <= 0xaf));
    }
    bool is_amd_zen3() const { return is_amd(25) && !is_amd_zen4(); }
    bool is_intel(unsigned f) const { return vendor == CpuVendor::intel && family == f; }
};

// Read once; a CPU without cpuid's leaves 0 and 1 is `other`, family 0.
const CpuModel& cpu_model();

}  // namespace xtgrad
