// The safetensors checkpoint format, low level: named float arrays plus string metadata.
//
// Layout: an 8-byte little-endian header length N; N bytes of UTF-8 JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value", ...}}
// padded with spaces to a multiple of 8; then the raw little-endian tensor data, with the
// offsets counted from the start of this data section. The module system builds state dicts
// and strict loading on top of these two functions.
#pragma once

#include <xtgrad/autograd/array.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace xtgrad {

using NamedArrays = std::vector<std::pair<std::string, Array>>;

struct SafetensorsFile {
    NamedArrays tensors;  // in the order of their data in the file
    std::map<std::string, std::string> metadata;
};

// Writes the tensors as F32, in the given order, through write_file_atomically. Throws an Error
// (and writes nothing) for a duplicate name, the reserved name "__metadata__" or a name or
// metadata text that is not valid UTF-8 (naming it, escaped, and its first byte at fault).
void save_safetensors(const std::string& path, const NamedArrays& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Reads F32 tensors, and F64, F16 and BF16 ones converted to float32. Validates the whole file
// first: the header length, the JSON, every entry (dtype, shape, data_offsets, byte count), and
// that the tensors' bytes neither overlap nor leave any byte of the data section unused. Every
// failure is an Error naming the file, the tensor and the numbers at fault.
SafetensorsFile load_safetensors(const std::string& path);

// The metadata alone, from the header (checked as load_safetensors checks it); the tensors'
// data is not read. For a quick look at what a file holds (is it a run? of which options?).
std::map<std::string, std::string> load_safetensors_metadata(const std::string& path);

}  // namespace xtgrad
