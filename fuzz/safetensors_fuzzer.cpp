// libFuzzer target: load_safetensors on arbitrary bytes. Any outcome but a loaded file or an
// xtgrad::Error (a crash, a sanitizer report, another exception, a hang) is a finding.
#include <xtgrad/autograd/error.hpp>
#include "fuzz/fuzz_input.hpp"
#include <xtgrad/io/safetensors.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const xtgrad::SafetensorsFile file = xtgrad::load_safetensors(xtgrad::fuzz::input_file(data, size));
        // A file that loads must be consistent: every tensor's bytes came from the data section.
        std::size_t elements = 0;
        for (const auto& [name, array] : file.tensors) elements += array.size();
        if (elements * 2 > size) std::abort();  // every element takes at least 2 bytes (F16, BF16)
    } catch (const xtgrad::Error&) {
    }
    return 0;
}
