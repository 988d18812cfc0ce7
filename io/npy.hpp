// NumPy .npy files (format versions 1.0, 2.0 and 3.0): a checked reader and an atomic writer.
//
// xtgrad does not use xt::load_npy because it does not notice a truncated file (probe notes
// §5.11): read_npy checks the magic, the version, the header and that the file holds exactly
// header + prod(shape) * itemsize bytes, and throws xtgrad::Error naming the file otherwise.
// Only little-endian (or byte-order-free) bool, integer and float dtypes are read.
#pragma once

#include <xtgrad/autograd/array.hpp>

#include <string>
#include <vector>

namespace xtgrad {

// The contents of an .npy file, before conversion to an xtgrad array.
struct NpyArray {
    std::string dtype;           // normalised numpy descr: "<f4", "<f8", "<i8", "|b1", ...
    Shape shape;                 // empty for a 0-d array
    bool fortran_order = false;  // data is column-major
    std::vector<char> data;      // prod(shape) * itemsize little-endian bytes
    std::string source;          // the file it came from, for error messages ("" if none)
};

// Reads and validates an .npy file.
NpyArray read_npy(const std::string& path);

// Converters to row-major xtgrad arrays (Fortran-order data is reordered). Each throws an Error
// naming the file and the dtype if the dtype is not one it accepts.
Array to_float(const NpyArray& npy);  // <f4, or <f8 rounded to float32
Ids to_ids(const NpyArray& npy);      // <i8, or <i4 widened
Mask to_mask(const NpyArray& npy);    // |b1

Array load_npy_float(const std::string& path);
Ids load_npy_ids(const std::string& path);
Mask load_npy_mask(const std::string& path);

// Writes C-order <f4 / <i8 / |b1 files byte for byte as numpy.save does (the data starts at a
// multiple of 64 bytes), through write_file_atomically.
void save_npy(const std::string& path, const Array& array);
void save_npy(const std::string& path, const Ids& array);
void save_npy(const std::string& path, const Mask& array);

}  // namespace xtgrad
