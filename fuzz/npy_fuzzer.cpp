// libFuzzer target: read_npy and the three converters on arbitrary bytes. Any outcome but an
// array or an xtgrad::Error (a crash, a sanitizer report, another exception, a hang) is a finding.
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/io/npy.hpp>
#include "fuzz/fuzz_input.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace {

template <class Convert>
void try_convert(const xtgrad::NpyArray& npy, Convert convert) {
    try {
        const auto array = convert(npy);
        if (array.size() > npy.data.size()) std::abort();  // every element was read from the file
    } catch (const xtgrad::Error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        const xtgrad::NpyArray npy = xtgrad::read_npy(xtgrad::fuzz::input_file(data, size));
        if (npy.data.size() > size) std::abort();
        try_convert(npy, xtgrad::to_float);
        try_convert(npy, xtgrad::to_ids);
        try_convert(npy, xtgrad::to_mask);
    } catch (const xtgrad::Error&) {
    }
    return 0;
}
