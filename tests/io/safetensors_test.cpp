// Tests of io/safetensors.hpp: round trips, the exact file layout, a file from another writer
// (tests/data/safetensors, made by tests/data/make_io_fixtures.py) and malformed files.
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/io/safetensors.hpp>
#include "tests/io/io_test_util.hpp"
#include "tests/test_util.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

TEST_SUITE_BEGIN("io");

using namespace xtgrad;
using xtgrad::test::data_path;
using xtgrad::test::read_bytes;
using xtgrad::test::TempDir;
using xtgrad::test::write_bytes;
using xtgrad::test::safetensors_bytes;
using xtgrad::test::float_bytes;
using xtgrad::test::le64;

namespace {

std::vector<float> values_of(const Array& a) { return std::vector<float>(a.begin(), a.end()); }

NamedArrays sample_tensors() {
    return {{"layer.weight", Array{{1.0f, -2.0f, 3.5f}, {0.25f, 0.0f, -1e-20f}}},
            {"scalar", Array(2.5f)},
            {"empty", Array::from_shape(Shape{0, 3})},
            {"bias", Array{7.0f, 8.0f, 9.0f}}};
}

}  // namespace

TEST_CASE("safetensors: a saved file loads back with its names, order, shapes, values and metadata") {
    TempDir dir;
    const std::string path = dir.file("ckpt.safetensors");
    const NamedArrays tensors = sample_tensors();
    const std::map<std::string, std::string> metadata{{"format", "pt"}, {"step", "12"}, {"note", "ünïcode"}};
    save_safetensors(path, tensors, metadata);

    const SafetensorsFile loaded = load_safetensors(path);
    CHECK(loaded.metadata == metadata);
    REQUIRE(loaded.tensors.size() == tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        CAPTURE(tensors[i].first);
        CHECK(loaded.tensors[i].first == tensors[i].first);
        CHECK(shape_of(loaded.tensors[i].second) == shape_of(tensors[i].second));
        CHECK(loaded.tensors[i].second == tensors[i].second);
    }
    CHECK(dir.entries() == std::set<std::string>{"ckpt.safetensors"});
}

TEST_CASE("safetensors: the written layout is 8-byte length, space-padded JSON, tightly packed data") {
    TempDir dir;
    const std::string path = dir.file("ckpt.safetensors");
    save_safetensors(path, sample_tensors());
    const std::string bytes = read_bytes(path);
    std::uint64_t length = 0;
    std::memcpy(&length, bytes.data(), 8);
    CHECK(length % 8 == 0);
    const std::uint64_t data_bytes = (6 + 1 + 0 + 3) * sizeof(float);
    CHECK(bytes.size() == 8 + length + data_bytes);

    const std::string header = bytes.substr(8, length);
    CHECK(header.find_last_not_of(' ') + 1 > length - 8);  // at most 7 spaces of padding
    const nlohmann::json root = nlohmann::json::parse(header);
    CHECK_FALSE(root.contains("__metadata__"));  // no metadata given, none written
    CHECK(root["layer.weight"] == nlohmann::json::parse(R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})"));
    CHECK(root["scalar"] == nlohmann::json::parse(R"({"dtype":"F32","shape":[],"data_offsets":[24,28]})"));
    CHECK(root["empty"] == nlohmann::json::parse(R"({"dtype":"F32","shape":[0,3],"data_offsets":[28,28]})"));
    CHECK(root["bias"] == nlohmann::json::parse(R"({"dtype":"F32","shape":[3],"data_offsets":[28,40]})"));
    CHECK(bytes.substr(8 + length + 28) == float_bytes({7.0f, 8.0f, 9.0f}));
}

TEST_CASE("safetensors: a file from another writer loads in data order, with F64, F16 and BF16 converted") {
    const SafetensorsFile file = load_safetensors(data_path("safetensors/mixed.safetensors"));
    CHECK(file.metadata == std::map<std::string, std::string>{{"format", "pt"}, {"note", "made by make_io_fixtures.py"}});
    REQUIRE(file.tensors.size() == 5);
    // The JSON lists them alphabetically; the data order is h16, w32, b16, scalar, w64.
    const std::vector<std::string> names{"h16", "w32", "b16", "scalar", "w64"};
    for (std::size_t i = 0; i < names.size(); ++i) CHECK(file.tensors[i].first == names[i]);

    const std::vector<float> h16 = values_of(file.tensors[0].second);
    REQUIRE(h16.size() == 6);
    CHECK(std::vector<float>(h16.begin(), h16.begin() + 4) == std::vector<float>{1.0f, -2.5f, 65504.0f, 0x1p-24f});
    CHECK(h16[4] == std::numeric_limits<float>::infinity());
    CHECK(h16[5] == 0.0f);
    CHECK(std::signbit(h16[5]));
    CHECK(file.tensors[1].second == Array{{1.0f, 2.0f}, {3.0f, -4.5f}});
    CHECK(values_of(file.tensors[2].second) == std::vector<float>{1.0f, -0x1.c4p+127f, 0.15625f});
    CHECK(file.tensors[3].second.dimension() == 0);
    CHECK(file.tensors[3].second() == 7.25f);
    CHECK(values_of(file.tensors[4].second) ==
          std::vector<float>{static_cast<float>(0.1), static_cast<float>(-1.0e-30), static_cast<float>(12345.678)});
}

TEST_CASE("safetensors: F16 and BF16 special values convert exactly") {
    TempDir dir;
    const std::vector<std::uint16_t> f16{0x0001, 0x03ff, 0x0400, 0x3c00, 0xc000, 0x7bff, 0x7c00, 0xfc00, 0x8000, 0x7e00};
    const std::vector<std::uint16_t> bf16{0x3f80, 0x0001, 0x7f80, 0xffc0};
    const std::string data(reinterpret_cast<const char*>(f16.data()), f16.size() * 2);
    const std::string data_bf(reinterpret_cast<const char*>(bf16.data()), bf16.size() * 2);
    write_bytes(dir.file("h.safetensors"),
                safetensors_bytes(R"({"h":{"dtype":"F16","shape":[10],"data_offsets":[0,20]},)"
                                  R"("b":{"dtype":"BF16","shape":[2,2],"data_offsets":[20,28]}})",
                                  data + data_bf));
    const SafetensorsFile file = load_safetensors(dir.file("h.safetensors"));
    REQUIRE(file.tensors.size() == 2);
    const std::vector<float> h = values_of(file.tensors[0].second);
    const float inf = std::numeric_limits<float>::infinity();
    CHECK(std::vector<float>(h.begin(), h.begin() + 9) ==
          std::vector<float>{0x1p-24f, 1023 * 0x1p-24f, 0x1p-14f, 1.0f, -2.0f, 65504.0f, inf, -inf, -0.0f});
    CHECK(std::signbit(h[8]));
    CHECK(std::isnan(h[9]));
    const std::vector<float> b = values_of(file.tensors[1].second);
    CHECK(shape_of(file.tensors[1].second) == Shape{2, 2});
    CHECK(std::vector<float>(b.begin(), b.begin() + 3) == std::vector<float>{1.0f, 0x1p-133f, inf});
    CHECK(std::isnan(b[3]));
}

TEST_CASE("safetensors: zero-size tensors may share an offset with the next tensor") {
    TempDir dir;
    write_bytes(dir.file("z.safetensors"),
                safetensors_bytes(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                  R"("a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})",
                                  float_bytes({5.0f})));
    const SafetensorsFile file = load_safetensors(dir.file("z.safetensors"));
    REQUIRE(file.tensors.size() == 2);
    CHECK(file.tensors[0].first == "a");
    CHECK(file.tensors[0].second.size() == 0);
    CHECK(file.tensors[1].second == Array{5.0f});
}

TEST_CASE("safetensors: duplicate, reserved and non-UTF-8 names are refused and nothing is written") {
    TempDir dir;
    const std::string path = dir.file("bad.safetensors");
    CHECK_THROWS_WITH_AS(save_safetensors(path, {{"w", Array{1.0f}}, {"w", Array{2.0f}}}),
                         doctest::Contains("duplicate tensor name 'w'"), Error);
    CHECK_THROWS_WITH_AS(save_safetensors(path, {{"__metadata__", Array{1.0f}}}), doctest::Contains("reserved"), Error);
    CHECK_THROWS_WITH_AS(save_safetensors(path, {{"\xff", Array{1.0f}}}), doctest::Contains("UTF-8"), Error);
    CHECK_THROWS_WITH_AS(save_safetensors(path, {}, {{"k", "\xfe"}}), doctest::Contains("UTF-8"), Error);
    // what load_safetensors refuses is not written: a shape past the file limits, an over-long header
    // (0, 2^30, 2^30): no elements, but past the file's element limit (2^32 · 2^32 would overflow xtensor's strides)
    CHECK_THROWS_WITH_AS(save_safetensors(path, {{"w", Array::from_shape({0, std::size_t{1} << 30, std::size_t{1} << 30})}}),
                         doctest::Contains("tensor 'w': shape (0,1073741824,1073741824) is too large"), Error);
    CHECK_THROWS_WITH_AS(save_safetensors(path, {}, {{"k", std::string(100'000'000, 'x')}}),
                         doctest::Contains("more than the 100000000 bytes a header may have"), Error);
    CHECK(dir.entries().empty());
}

TEST_CASE("safetensors: a name or metadata that is not UTF-8 is named with the byte at fault, and the file is untouched") {
    TempDir dir;
    const std::string path = dir.file("kept.safetensors");
    save_safetensors(path, {{"w", Array{1.0f}}});
    const std::string before = read_bytes(path);
    const auto refused = [&](const NamedArrays& tensors, const std::map<std::string, std::string>& metadata,
                             const std::string& message) {
        CAPTURE(message);
        CHECK_THROWS_WITH_AS(save_safetensors(path, tensors, metadata), doctest::Contains(message.c_str()), Error);
        CHECK(read_bytes(path) == before);
    };
    // a Latin-1 name, a cut 北 (E5 8C), a surrogate (ED A0 80), an escape code before the stray byte: shown escaped
    refused({{"ok", Array{1.0f}}, {"caf\xe9", Array{2.0f}}}, {},
            "save_safetensors: '" + path + "': tensor name 'caf\\xe9' is not valid UTF-8: byte 3 (0xe9) begins no UTF-8 character: a 3-byte sequence cut short by the end of the text");
    refused({{"\xe5\x8c", Array{1.0f}}}, {}, "tensor name '\\xe5\\x8c' is not valid UTF-8: byte 0 (0xe5) begins no UTF-8 character: a 3-byte sequence cut short by the end of the text");
    refused({{"ab\xed\xa0\x80", Array{1.0f}}}, {}, "tensor name 'ab\\xed\\xa0\\x80' is not valid UTF-8: byte 2 (0xed) begins no UTF-8 character: a UTF-16 surrogate (U+D800-U+DFFF), which UTF-8 never encodes");
    refused({{"\x1b[2J\xff", Array{1.0f}}}, {}, "tensor name '\\x1b[2J\\xff' is not valid UTF-8: byte 4 (0xff) begins no UTF-8 character: a byte that never occurs in UTF-8 (0xf5-0xff)");
    refused({}, {{"k\xfe", "v"}}, "metadata key 'k\\xfe' is not valid UTF-8: byte 1 (0xfe)");
    refused({}, {{"note", "\xe5\x8c\x97\xfe"}}, "the value of metadata key 'note' is not valid UTF-8: byte 3 (0xfe) begins no UTF-8 character: a byte that never occurs");
    // a long name is quoted cut (the offset finds the byte), a newline in it escaped: one line
    refused({{std::string(1'000'000, 'n') + "\xc0", Array{1.0f}}}, {},
            "tensor name '" + std::string(200, 'n') + "... (1000001 bytes in all)' is not valid UTF-8: byte 1000000 (0xc0)");
    refused({}, {{"line1\nline2\xfe", "v"}}, "metadata key 'line1\\x0aline2\\xfe' is not valid UTF-8: byte 11 (0xfe)");
    // nn::save and save_run write through save_safetensors: the same refusal (a generator's name is a metadata key)
    nn::Linear model(2, 2);
    CHECK_THROWS_WITH_AS(nn::save(model, path, {{"who", "\xc0\xaf"}}),
                         doctest::Contains("the value of metadata key 'who' is not valid UTF-8: byte 0 (0xc0) begins no UTF-8 character: an overlong form"), Error);
    Generator g(1);
    CHECK_THROWS_WITH_AS(nn::save_run(path, model, {.generators = {{"g\x80", &g}}}),
                         doctest::Contains("metadata key 'generator.g\\x80' is not valid UTF-8: byte 11 (0x80) begins no UTF-8 character: a continuation byte (0x80-0xbf) with no lead byte before it"), Error);
    CHECK(read_bytes(path) == before);
    CHECK(dir.entries() == std::set<std::string>{"kept.safetensors"});
}

TEST_CASE("safetensors: malformed files are refused, naming the file, the tensor and the numbers") {
    struct Case {
        const char* what;
        std::string bytes;
        const char* reason;
    };
    const std::string f32_1 = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
    const std::string four = float_bytes({1.0f});
    // A file whose only tensor is 'a', described by `entry`.
    const auto only_a = [](const std::string& entry, const std::string& data) {
        return safetensors_bytes(R"({"a":)" + entry + "}", data);
    };
    const std::string two_a_b = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
    const std::string gap_a_b = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
    const Case cases[] = {
        {"shorter than the length field", "\x01\x02",
         "the file has 2 bytes, fewer than the 8-byte header length"},
        {"header length past the end", le64(1000) + "{}",
         "header length 1000 is past the end of the file (10 bytes, so at most 2)"},
        {"header length 2^64-1", le64(~std::uint64_t{0}) + "{}",
         "header length 18446744073709551615 is more than the 100000000 bytes a header may have"},
        {"bad JSON", safetensors_bytes(R"({"a": )", ""), "the 6-byte header is not valid JSON"},
        {"JSON but no object", safetensors_bytes("[1, 2]", ""), "the header is JSON but not an object"},
        {"duplicate name", safetensors_bytes(R"({"a":)" + f32_1 + R"(,"a":)" + f32_1 + "}", four),
         "the header names 'a' twice"},
        {"entry not an object", only_a("3", ""), "tensor 'a': the entry is not an object: 3"},
        {"missing dtype", only_a(R"({"shape":[1],"data_offsets":[0,4]})", four),
         "tensor 'a': the entry has no \"dtype\""},
        {"missing shape", only_a(R"({"dtype":"F32","data_offsets":[0,4]})", four),
         "tensor 'a': the entry has no \"shape\""},
        {"missing data_offsets", only_a(R"({"dtype":"F32","shape":[1]})", four),
         "tensor 'a': the entry has no \"data_offsets\""},
        {"unknown dtype", only_a(R"({"dtype":"F12","shape":[1],"data_offsets":[0,4]})", four),
         "tensor 'a': unsupported dtype \"F12\""},
        {"integer dtype", only_a(R"({"dtype":"I32","shape":[1],"data_offsets":[0,4]})", four),
         "unsupported dtype \"I32\" (xtgrad reads F32, F64, F16 and BF16)"},
        {"dtype not a string", only_a(R"({"dtype":7,"shape":[1],"data_offsets":[0,4]})", four),
         "unsupported dtype 7"},
        {"negative dimension", only_a(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})", four),
         "\"shape\" holds -1, not a non-negative integer"},
        {"shape not a list", only_a(R"({"dtype":"F32","shape":1,"data_offsets":[0,4]})", four),
         "\"shape\" is not a list: 1"},
        {"three offsets", only_a(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4,8]})", four),
         "data_offsets must be [begin, end] with begin <= end, not [0,4,8]"},
        {"begin after end", only_a(R"({"dtype":"F32","shape":[1],"data_offsets":[4,0]})", four), "not [4,0]"},
        {"size mismatch", only_a(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})", four),
         "tensor 'a': data_offsets [0, 4] hold 4 bytes, but shape (2) of F32 needs 8"},
        {"F64 size mismatch", only_a(R"({"dtype":"F64","shape":[1],"data_offsets":[0,4]})", four),
         "shape (1) of F64 needs 8"},
        {"shape overflow", only_a(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]})", four),
         "shape (4294967296,4294967296) is too large"},
        {"offsets out of range", only_a(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})", four),
         "tensor 'a': data_offsets [0, 8] end past the 4-byte data section"},
        {"overlap", safetensors_bytes(two_a_b, float_bytes({1, 2, 3})),
         "tensor 'b' (bytes [4, 12)) overlaps tensor 'a' (bytes [0, 8))"},
        {"gap", safetensors_bytes(gap_a_b, float_bytes({1, 2, 3})),
         "bytes [4, 8) of the data section belong to no tensor (the next is 'b')"},
        {"data before the first tensor", only_a(R"({"dtype":"F32","shape":[1],"data_offsets":[4,8]})", float_bytes({1, 2})),
         "bytes [0, 4) of the data section belong to no tensor (the next is 'a')"},
        {"trailing data", only_a(f32_1, float_bytes({1, 2})),
         "bytes [4, 8) at the end of the data section belong to no tensor"},
        {"metadata not an object", safetensors_bytes(R"({"__metadata__":3})", ""), "\"__metadata__\" is not an object"},
        {"metadata value not a string", safetensors_bytes(R"({"__metadata__":{"step":12}})", ""),
         "\"__metadata__\" value of 'step' is not a string: 12"},
    };
    TempDir dir;
    const std::string path = dir.file("bad.safetensors");
    for (const Case& c : cases) {
        CAPTURE(c.what);
        write_bytes(path, c.bytes);
        CHECK_THROWS_WITH_AS(load_safetensors(path), doctest::Contains(c.reason), Error);
        const std::string names_file = "load_safetensors: '" + path + "'";
        CHECK_THROWS_WITH_AS(load_safetensors(path), doctest::Contains(names_file.c_str()), Error);
    }
}

TEST_CASE("safetensors: every truncation of a valid file is refused") {
    TempDir dir;
    save_safetensors(dir.file("full.safetensors"), sample_tensors(), {{"k", "v"}});
    const std::string full = read_bytes(dir.file("full.safetensors"));
    const std::string path = dir.file("cut.safetensors");
    for (std::size_t size = 0; size < full.size(); ++size) {
        CAPTURE(size);
        write_bytes(path, full.substr(0, size));
        CHECK_THROWS_AS(load_safetensors(path), Error);
    }
}

TEST_CASE("safetensors: a missing file is refused with the path and the reason") {
    TempDir dir;
    const std::string path = dir.file("none.safetensors");
    const std::string expected = "cannot open '" + path + "': No such file or directory";
    CHECK_THROWS_WITH_AS(load_safetensors(path), doctest::Contains(expected.c_str()), Error);
}

TEST_CASE("safetensors: a 250 000-deep header is refused at the nesting limit, without recursion") {
    // Before the limit this crashed (stack overflow in json::dump while building the message).
    const std::string deep = std::string(250'000, '[') + std::string(250'000, ']');
    const std::string cases[] = {
        R"({"a":)" + deep + "}",                                                // the entry itself
        R"({"__metadata__":{"k":)" + deep + "}}",                              // a metadata value
        R"({"a":{"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,0]}})",  // the shape
        [] {
            std::string objects;  // {"a":{"a":{"a":... unterminated
            for (int i = 0; i < 250'000; ++i) objects += R"({"a":)";
            return objects;
        }(),
    };
    TempDir dir;
    const std::string path = dir.file("deep.safetensors");
    for (const std::string& header : cases) {
        write_bytes(path, safetensors_bytes(header, ""));
        test::expect_error([&] { load_safetensors(path); },
                           {"load_safetensors: '", "the header nests lists and objects more than 8 deep"});
    }
}

TEST_CASE("safetensors: nesting up to the limit gives the precise message, one more is refused") {
    TempDir dir;
    const std::string path = dir.file("nest.safetensors");
    // header (1) + entry (2) + shape (3) + 5 more lists = 8: within the limit.
    const auto with_shape = [](int lists) {
        return R"({"a":{"dtype":"F32","shape":[)" + std::string(lists, '[') + std::string(lists, ']') +
               R"(],"data_offsets":[0,0]}})";
    };
    write_bytes(path, safetensors_bytes(with_shape(5), ""));
    test::expect_error([&] { load_safetensors(path); }, {"\"shape\" holds [[[[[]]]]], not a non-negative integer"});
    write_bytes(path, safetensors_bytes(with_shape(6), ""));
    test::expect_error([&] { load_safetensors(path); }, {"more than 8 deep"});
}

TEST_CASE("safetensors: a key named twice is refused in every object") {
    const std::string entry = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
    const struct {
        std::string header;
        const char* reason;
    } cases[] = {
        {R"({"a":)" + entry + R"(,"a":)" + entry + "}", "the header names 'a' twice in one object"},
        {R"({"a":{"dtype":"F32","dtype":"F64","shape":[1],"data_offsets":[0,4]}})",
         "the header names 'dtype' twice in one object (inside an entry)"},
        {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"shape":[2]}})", "names 'shape' twice"},
        {R"({"__metadata__":{"k":"1","k":"2"},"a":)" + entry + "}", "names 'k' twice in one object (inside an entry)"},
        {R"({"__metadata__":{},"a":)" + entry + R"(,"__metadata__":{}})", "names '__metadata__' twice"},
        {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":[{"q":1,"q":2}]}})", "names 'q' twice"},
    };
    TempDir dir;
    const std::string path = dir.file("dup.safetensors");
    for (const auto& c : cases) {
        CAPTURE(c.header);
        write_bytes(path, safetensors_bytes(c.header, float_bytes({1.0f})));
        test::expect_error([&] { load_safetensors(path); }, {c.reason});
    }
    // The same key in two different objects is fine.
    write_bytes(path, safetensors_bytes(R"({"__metadata__":{"dtype":"x"},"a":)" + entry + "}", float_bytes({1.0f})));
    CHECK(load_safetensors(path).metadata.at("dtype") == "x");
}

TEST_CASE("safetensors: a header length above 100 MB is refused before anything is allocated") {
    TempDir dir;
    const std::string path = dir.file("big.safetensors");
    write_bytes(path, le64(100'000'001) + "{}");
    test::expect_error([&] { load_safetensors(path); },
                       {"header length 100000001 is more than the 100000000 bytes a header may have"});
}

TEST_CASE("safetensors: shapes past the file limits are refused (rank, element count with a zero dimension)") {
    const auto only_a = [](const std::string& shape) {
        return safetensors_bytes(R"({"a":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,0]}})", "");
    };
    std::string rank65 = "[1";
    for (int i = 1; i < 65; ++i) rank65 += ",1";
    rank65 += "]";
    const struct {
        std::string bytes;
        const char* reason;
    } cases[] = {
        {only_a(rank65), "65 dimensions, more than the 64 a file may have"},
        // zero bytes, but xtensor's strides for the other dimensions would overflow
        {only_a("[0,4294967296,4294967296]"), "shape (0,4294967296,4294967296) is too large"},
        {only_a("[18446744073709551615]"), "is too large"},
    };
    TempDir dir;
    const std::string path = dir.file("shape.safetensors");
    for (const auto& c : cases) {
        write_bytes(path, c.bytes);
        test::expect_error([&] { load_safetensors(path); }, {"tensor 'a'", c.reason});
    }
}

TEST_CASE("safetensors: hostile names and values are shortened in error messages") {
    const std::string long_name(1'000'000, 'n');
    // built by appends: GCC 12 warns falsely (-Wrestrict) on "literal" + a temporary std::string here
    std::string long_value(1, '"');
    long_value.append(1'000'000, 'v').push_back('"');
    const std::string headers[] = {
        "{\"" + long_name + "\":3}",                                          // entry not an object
        R"({"a":{"dtype":)" + long_value + R"(,"shape":[1],"data_offsets":[0,4]}})",  // dtype
        R"({"__metadata__":{"k":[)" + std::string(100'000, '1') + "]}}",      // metadata value
        "{\"" + long_name + "\":{},\"" + long_name + "\":{}}",                  // duplicate key
        "{\"" + long_name,                                                    // parse error
    };
    TempDir dir;
    const std::string path = dir.file("long.safetensors");
    for (const std::string& header : headers) {
        write_bytes(path, safetensors_bytes(header, ""));
        try {
            load_safetensors(path);
            FAIL("expected an Error");
        } catch (const Error& e) {
            CHECK(std::string(e.what()).size() < 1000);
        }
    }
}

TEST_SUITE_END();
