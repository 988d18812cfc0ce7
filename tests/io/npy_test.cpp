// Tests of io/npy.hpp: round trips, files written by numpy (tests/data/npy, made by
// tests/data/make_io_fixtures.py) and every class of malformed input.
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/io/npy.hpp>
#include "tests/io/io_test_util.hpp"
#include "tests/test_util.hpp"
#include "tests/under_asan.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

TEST_SUITE_BEGIN("io");

using namespace xtgrad;
using xtgrad::test::data_path;
using xtgrad::test::read_bytes;
using xtgrad::test::TempDir;
using xtgrad::test::write_bytes;

namespace {

template <class T>
using RowMajor = RowMajorArray<T>;

template <class T>
RowMajor<T> load_as(const std::string& path) {
    if constexpr (std::is_same_v<T, float>) return load_npy_float(path);
    else if constexpr (std::is_same_v<T, std::int64_t>) return load_npy_ids(path);
    else return load_npy_mask(path);
}

// Distinct, type-appropriate values: fractions, large ids, an irregular bool pattern.
template <class T>
RowMajor<T> sample(const Shape& shape) {
    RowMajor<T> a = RowMajor<T>::from_shape(shape);
    for (std::size_t i = 0; i < a.size(); ++i) {
        if constexpr (std::is_same_v<T, bool>) a.data()[i] = i % 3 == 1;
        else if constexpr (std::is_same_v<T, float>) a.data()[i] = static_cast<float>(i) * 0.37f - 2.0f;
        else a.data()[i] = (static_cast<std::int64_t>(i) - 50) * 1'000'000'007LL;
    }
    return a;
}

Shape shape_of_any(const auto& a) { return Shape(a.shape().begin(), a.shape().end()); }

// A version 1.0 file with the given header dict text and data bytes (no alignment padding).
std::string npy_with_header(const std::string& dict, const std::string& data) {
    const std::string header = dict + "\n";
    std::string bytes = "\x93NUMPY\x01";
    bytes += '\0';
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    return bytes + header + data;
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
    const std::size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE_TEMPLATE("npy: save_npy then load gives back the shape and the values", T, float, std::int64_t, bool) {
    TempDir dir;
    const std::string path = dir.file("a.npy");
    // Includes 0-d, empty dimensions and one array larger than the 64 KiB write buffer.
    for (const Shape& shape : {Shape{2, 3, 4}, Shape{}, Shape{0}, Shape{3, 0, 2}, Shape{7}, Shape{257, 300}}) {
        CAPTURE(shape_str(shape));
        const RowMajor<T> original = sample<T>(shape);
        save_npy(path, original);
        const RowMajor<T> loaded = load_as<T>(path);
        CHECK(shape_of_any(loaded) == shape);
        CHECK(loaded == original);
    }
    CHECK(dir.entries() == std::set<std::string>{"a.npy"});
}

TEST_CASE("npy: int64 extremes survive a round trip") {
    TempDir dir;
    Ids ids = Ids::from_shape(Shape{3});
    ids(0) = std::numeric_limits<std::int64_t>::min();
    ids(1) = std::numeric_limits<std::int64_t>::max();
    ids(2) = -1;
    save_npy(dir.file("ids.npy"), ids);
    CHECK(load_npy_ids(dir.file("ids.npy")) == ids);
}

TEST_CASE("npy: reads numpy's float32, int64, bool, 0-d and empty files, and writes them byte for byte") {
    TempDir dir;
    SUBCASE("float32, C order") {
        const Array a = load_npy_float(data_path("npy/f32_c.npy"));
        CHECK(shape_of(a) == Shape{2, 3});
        CHECK(a == Array{{-1.0f, -0.5f, 0.0f}, {0.5f, 1.0f, 1.5f}});
        save_npy(dir.file("out.npy"), a);
        CHECK(read_bytes(dir.file("out.npy")) == read_bytes(data_path("npy/f32_c.npy")));
    }
    SUBCASE("int64") {
        const Ids ids = load_npy_ids(data_path("npy/i64.npy"));
        const std::int64_t expected[] = {0, -1, std::int64_t{1} << 40, std::numeric_limits<std::int64_t>::max(),
                                         std::numeric_limits<std::int64_t>::min()};
        REQUIRE(ids.shape().size() == 1);
        REQUIRE(ids.size() == 5);
        for (std::size_t i = 0; i < 5; ++i) CHECK(ids(i) == expected[i]);
        save_npy(dir.file("out.npy"), ids);
        CHECK(read_bytes(dir.file("out.npy")) == read_bytes(data_path("npy/i64.npy")));
    }
    SUBCASE("bool") {
        const Mask m = load_npy_mask(data_path("npy/bool.npy"));
        CHECK(m == Mask{{true, false, true}, {false, false, true}});
        save_npy(dir.file("out.npy"), m);
        CHECK(read_bytes(dir.file("out.npy")) == read_bytes(data_path("npy/bool.npy")));
    }
    SUBCASE("0-d") {
        const Array a = load_npy_float(data_path("npy/f32_scalar.npy"));
        CHECK(a.dimension() == 0);
        CHECK(a.size() == 1);
        CHECK(a() == 3.5f);
        save_npy(dir.file("out.npy"), a);
        CHECK(read_bytes(dir.file("out.npy")) == read_bytes(data_path("npy/f32_scalar.npy")));
    }
    SUBCASE("empty (0, 3)") {
        const Array a = load_npy_float(data_path("npy/f32_empty.npy"));
        CHECK(shape_of(a) == Shape{0, 3});
        save_npy(dir.file("out.npy"), a);
        CHECK(read_bytes(dir.file("out.npy")) == read_bytes(data_path("npy/f32_empty.npy")));
    }
}

TEST_CASE("npy: float64 is converted to float32 and int32 widened to int64") {
    const Array a = load_npy_float(data_path("npy/f64.npy"));
    CHECK(a == Array{{1.5f, -2.25f}, {static_cast<float>(3.0e10), static_cast<float>(1.0e-3)}});
    const Ids ids = load_npy_ids(data_path("npy/i32.npy"));
    CHECK(ids == Ids{{7, -8}, {std::numeric_limits<std::int32_t>::max(), std::numeric_limits<std::int32_t>::min()}});
}

TEST_CASE("npy: a Fortran-order file is read into row-major order") {
    const std::string path = data_path("npy/f32_fortran.npy");
    const NpyArray raw = read_npy(path);
    CHECK(raw.dtype == "<f4");
    CHECK(raw.shape == Shape{2, 3, 4});
    CHECK(raw.fortran_order);
    CHECK(raw.data.size() == 96);
    CHECK(raw.source == path);

    const Array a = to_float(raw);
    REQUIRE(shape_of(a) == Shape{2, 3, 4});
    for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 3; ++j)
            for (std::size_t k = 0; k < 4; ++k) CHECK(a(i, j, k) == static_cast<float>(i * 12 + j * 4 + k));
}

TEST_CASE("npy: in-memory Fortran-order int32 and bool arrays are reordered and converted") {
    // [[1, 2, 3], [4, 5, 6]] stored column by column.
    NpyArray ints{"<i4", {2, 3}, true, {}, ""};
    for (std::int32_t v : {1, 4, 2, 5, 3, 6}) {
        const char* bytes = reinterpret_cast<const char*>(&v);
        ints.data.insert(ints.data.end(), bytes, bytes + sizeof v);
    }
    CHECK(to_ids(ints) == Ids{{1, 2, 3}, {4, 5, 6}});

    const NpyArray bools{"|b1", {2, 3}, true, {1, 0, 0, 0, 1, 1}, ""};
    CHECK(to_mask(bools) == Mask{{true, false, true}, {false, false, true}});
}

TEST_CASE("npy: a version 2.0 file and header variants of other writers are accepted") {
    CHECK(load_npy_float(data_path("npy/f32_v2.npy")) == Array{1.0f, 2.0f, 4.0f});

    TempDir dir;
    const float values[] = {0.25f, -8.0f};
    const std::string data(reinterpret_cast<const char*>(values), sizeof values);
    // Double quotes, keys in another order, '=' byte order, no trailing comma, tabs.
    write_bytes(dir.file("v.npy"), npy_with_header("{\"shape\":\t(2,), \"descr\": \"=f4\", \"fortran_order\": True}", data));
    const NpyArray raw = read_npy(dir.file("v.npy"));
    CHECK(raw.dtype == "<f4");
    CHECK(to_float(raw) == Array{0.25f, -8.0f});
}

TEST_CASE("npy: every truncation of a file is refused, naming the byte counts") {
    TempDir dir;
    const std::string path = dir.file("cut.npy");
    const std::string full = read_bytes(data_path("npy/f32_c.npy"));  // 128-byte header + 24 bytes
    for (std::size_t size = 0; size < full.size(); ++size) {
        CAPTURE(size);
        write_bytes(path, full.substr(0, size));
        CHECK_THROWS_WITH_AS(read_npy(path), doctest::Contains("truncated"), Error);
    }
    write_bytes(path, full.substr(0, full.size() - 4));
    CHECK_THROWS_WITH_AS(read_npy(path),
                         doctest::Contains("truncated data: shape (2,3) of '<f4' needs 24 bytes after the 128-byte "
                                           "header, the file has 20 (file size 148, expected 152)"),
                         Error);
    write_bytes(path, full.substr(0, 60));
    CHECK_THROWS_WITH_AS(read_npy(path),
                         doctest::Contains("truncated header: the header needs 118 bytes after the 10-byte preamble, "
                                           "the file has 60 bytes"),
                         Error);
    CHECK_THROWS_WITH_AS(read_npy(path), doctest::Contains(path.c_str()), Error);
}

TEST_CASE("npy: bytes after the data are refused") {
    TempDir dir;
    write_bytes(dir.file("long.npy"), read_bytes(data_path("npy/f32_c.npy")) + "xyz");
    CHECK_THROWS_WITH_AS(load_npy_float(dir.file("long.npy")), doctest::Contains("unexpected bytes after the data"), Error);
}

TEST_CASE("npy: a wrong magic, an unknown version and big-endian data are refused") {
    TempDir dir;
    const std::string path = dir.file("bad.npy");
    const std::string good = read_bytes(data_path("npy/f32_c.npy"));

    write_bytes(path, "PK\x03\x04" + good.substr(4));
    CHECK_THROWS_WITH_AS(read_npy(path), doctest::Contains("not an .npy file"), Error);

    write_bytes(path, good.substr(0, 6) + "\x04" + good.substr(7));
    CHECK_THROWS_WITH_AS(read_npy(path), doctest::Contains("unsupported npy format version 4.0"), Error);

    write_bytes(path, replace_once(good, "'<f4'", "'>f4'"));
    CHECK_THROWS_WITH_AS(read_npy(path), doctest::Contains("'>f4': big-endian data is not supported"), Error);
}

TEST_CASE("npy: malformed header dicts are refused with the reason") {
    struct Case {
        const char* dict;
        const char* reason;
    };
    const Case cases[] = {
        {"", "expected '{'"},
        {"{'descr': '<f4', 'fortran_order': False}", "needs the keys 'descr', 'fortran_order' and 'shape'"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "duplicate key 'descr'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1, }", "unexpected key 'extra'"},
        {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", "expected True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "expected a non-negative integer"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [1], }", "expected '('"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,), }", "expected '}'"},
        {"{'descr' '<f4', 'fortran_order': False, 'shape': (1,), }", "expected ':'"},
        {"{'descr': '<f4", "unterminated string"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "expected a string"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } junk", "unexpected text after the dict"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", "dimension too large"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", "is too large"},
        {"{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype '|O'"},
        {"{'descr': '<U4', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype '<U4'"},
        {"{'descr': '<f', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype '<f'"},
        {"{'descr': '<f4x', 'fortran_order': False, 'shape': (1,), }", "bad item size"},
        {"{'descr': '|f4', 'fortran_order': False, 'shape': (1,), }", "needs a byte order"},
        // text from the file is quoted on one line, control bytes escaped
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x\n\x1b[2J': 1, }", "unexpected key 'x\\x0a\\x1b[2J'"},
        {"{'descr': '\x01" "f4', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype '\\x01f4'"},
    };
    TempDir dir;
    const std::string path = dir.file("header.npy");
    for (const Case& c : cases) {
        CAPTURE(c.dict);
        write_bytes(path, npy_with_header(c.dict, std::string(4, '\0')));
        CHECK_THROWS_WITH_AS(read_npy(path), doctest::Contains(c.reason), Error);
    }
}

// Skipped under ASan, which reserves terabytes of address space: no RLIMIT_AS there.
TEST_CASE("npy: data larger than the memory left is an Error naming the file" * doctest::skip(XTGRAD_UNDER_ASAN != 0)) {
    // 1 GiB of float32 (a sparse file) with 256 MiB of address space to spare: the read buffer's
    // std::bad_alloc used to leave read_npy unworded
    TempDir dir;
    const std::string path = dir.file("big.npy");
    write_bytes(path, npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (268435456,), }", ""));
    std::filesystem::resize_file(path, std::filesystem::file_size(path) + (std::uint64_t{1} << 30));
    CHECK(test::error_under_address_limit(std::size_t{256} << 20, "out of memory: the 1073741824 bytes of its data",
                                          [&] { read_npy(path); }));
}

TEST_CASE("npy: the file limits of io/shape_limits.hpp: header length, rank, element count") {
    TempDir dir;
    const std::string path = dir.file("limits.npy");
    const auto refused = [&](const std::string& bytes, std::initializer_list<const char*> parts) {
        write_bytes(path, bytes);
        test::expect_error([&] { read_npy(path); }, parts);
    };
    const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
    // numpy's own limit: a header longer than 10 000 bytes is refused before it is read.
    refused(npy_with_header(dict + std::string(10'000, ' '), std::string(4, '\0')),
            {"read_npy: '", "header length 10058 is more than the 10000 bytes a header may have (numpy's limit)"});
    // in a version 2.0 file the length may say 4 GiB: refused before allocating
    refused(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12), {"header length 4294967295 is more than"});
    std::string rank65 = "(";
    for (int i = 0; i < 65; ++i) rank65 += "1, ";
    refused(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': " + rank65 + "), }", std::string(4, '\0')),
            {"65 dimensions, more than the 64 a file may have"});
    // zero bytes of data, but xtensor's strides for the other dimensions would overflow
    refused(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296), }", ""),
            {"shape (0,4294967296,4294967296) is too large"});
    refused(npy_with_header("{'descr': '<c16', 'fortran_order': False, 'shape': (576460752303423488,), }", ""),
            {"is too large"});
    // 64 dimensions of 1 and an empty array with large (but stride-safe) dimensions are fine
    std::string rank64 = "(";
    for (int i = 0; i < 64; ++i) rank64 += "1, ";
    write_bytes(path, npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': " + rank64 + "), }",
                                      std::string(4, '\0')));
    CHECK(load_npy_float(path).dimension() == 64);
    write_bytes(path, npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 65536, 65536), }", ""));
    CHECK(load_npy_float(path).size() == 0);
}

TEST_CASE("npy: an in-memory NpyArray and save_npy follow the same limits") {
    NpyArray npy{"<f4", Shape{0, std::size_t{1} << 40, std::size_t{1} << 40}, false, {}, ""};
    test::expect_error([&] { to_float(npy); }, {"npy: '<memory>': shape (0,1099511627776,1099511627776) is too large"});
    TempDir dir;
    const Array rank65 = Array::from_shape(Shape(65, 1));
    test::expect_error([&] { save_npy(dir.file("x.npy"), rank65); }, {"save_npy: '", "65 dimensions"});
    CHECK(dir.entries().empty());
}

TEST_CASE("npy: a converter refuses a dtype it does not take, naming the file and the dtype") {
    const std::string floats = data_path("npy/f32_c.npy");
    CHECK_THROWS_WITH_AS(load_npy_ids(floats),
                         doctest::Contains("dtype '<f4' cannot be read as int64 ids (accepted: <i8, <i4)"), Error);
    CHECK_THROWS_WITH_AS(load_npy_ids(floats), doctest::Contains(floats.c_str()), Error);
    CHECK_THROWS_WITH_AS(load_npy_mask(floats),
                         doctest::Contains("'<f4' cannot be read as a bool mask (accepted: |b1)"), Error);
    CHECK_THROWS_WITH_AS(load_npy_float(data_path("npy/i64.npy")),
                         doctest::Contains("'<i8' cannot be read as float32 (accepted: <f4, <f8)"), Error);
    CHECK_THROWS_WITH_AS(load_npy_float(data_path("npy/bool.npy")), doctest::Contains("'|b1' cannot be read as float32"),
                         Error);
    // An NpyArray built by hand whose data does not match its shape.
    const NpyArray short_data{"<f4", {2}, false, std::vector<char>(4), ""};
    CHECK_THROWS_WITH_AS(to_float(short_data), doctest::Contains("4 bytes of data for shape (2) of <f4, expected 8"), Error);
}

TEST_CASE("npy: a missing file or a directory is refused with the path and the reason") {
    TempDir dir;
    const std::string missing = dir.file("missing.npy");
    const std::string expected = "cannot open '" + missing + "': No such file or directory";
    CHECK_THROWS_WITH_AS(read_npy(missing), doctest::Contains(expected.c_str()), Error);
    CHECK_THROWS_WITH_AS(read_npy(dir.file("")), doctest::Contains("not a regular file"), Error);
}

TEST_CASE("npy: save_npy into a missing directory throws and creates nothing") {
    TempDir dir;
    const std::string path = dir.file("no/such/dir/a.npy");
    CHECK_THROWS_WITH_AS(save_npy(path, Array{1.0f}), doctest::Contains("No such file or directory"), Error);
    CHECK(dir.entries().empty());
}

TEST_SUITE_END();
