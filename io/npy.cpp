#include <xtgrad/io/npy.hpp>

#include <xtgrad/io/atomic_file.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/utf8_text.hpp>
#include <xtgrad/io/shape_limits.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstring>
#include <optional>
#include <ostream>
#include <string_view>
#include <utility>

namespace xtgrad {
namespace {

static_assert(std::endian::native == std::endian::little,
              "xtgrad's file formats copy little-endian data as is");
static_assert(sizeof(bool) == 1, "Mask data is written as numpy's one-byte bools");

constexpr std::string_view kMagic{"\x93NUMPY", 6};
constexpr std::size_t kAlign = 64;             // numpy aligns the data to 64 bytes
constexpr std::size_t kGrowthAxisDigits = 21;  // numpy's spare room after the header dict
// numpy's own default limit (np.load's max_header_size): refused before allocating.
constexpr std::uint64_t kMaxHeaderBytes = 10'000;

// Text from the header as a message quotes it: one line, control and non-UTF-8 bytes as \xHH.
std::string header_text(std::string_view text) {
    constexpr std::size_t kShownBytes = 120;
    return escaped_for_message(text, false, kShownBytes);
}

std::string_view name_of(const std::string& source) {
    return source.empty() ? std::string_view("<memory>") : std::string_view(source);
}

// prod(shape) * itemsize, refusing the shapes io/shape_limits.hpp refuses.
std::uint64_t data_bytes(std::string_view op, std::string_view source, const Shape& shape, std::size_t itemsize) {
    std::uint64_t bytes = 0;
    const std::string problem = shape_problem(shape, itemsize, &bytes);
    if (!problem.empty()) fail("{}: '{}': {}", op, source, problem);
    return bytes;
}

// ---------------------------------------------------------------------------------------------
// Header

struct Dtype {
    std::string descr;  // normalised: byte order '<' (or '|' for one-byte types), kind, size
    std::size_t itemsize = 0;
};

// numpy's descr of a plain scalar type: byte order, kind and item size, as in "<f4" or "|b1".
Dtype parse_descr(std::string_view source, const std::string& descr) {
    auto refuse = [&](std::string_view why) {
        fail("read_npy: '{}': unsupported dtype '{}': {}", source, header_text(descr), why);
    };
    if (descr.size() < 3 || std::string_view("<>|=").find(descr[0]) == std::string_view::npos)
        refuse("expected a byte order, a kind and an item size such as '<f4'");
    if (std::string_view("biufc").find(descr[1]) == std::string_view::npos)
        refuse("only bool, integer, float and complex data can be read");
    std::size_t itemsize = 0;
    const char* digits_end = descr.data() + descr.size();
    const auto [end, ec] = std::from_chars(descr.data() + 2, digits_end, itemsize);
    if (ec != std::errc() || end != digits_end || itemsize == 0 || itemsize > 16)
        refuse("bad item size");
    char order = descr[0];
    if (itemsize == 1) {
        order = '|';  // byte order means nothing for one-byte items
    } else if (order == '>') {
        refuse("big-endian data is not supported (in numpy: a.astype(a.dtype.newbyteorder('<')))");
    } else if (order == '|') {
        refuse("a multi-byte type needs a byte order");
    } else {
        order = '<';  // '=' is the writer's native order; numpy itself writes '<' or '>'
    }
    std::string normalised = descr;
    normalised[0] = order;
    return {normalised, itemsize};
}

struct Header {
    Dtype dtype;
    bool fortran_order = false;
    Shape shape;
};

// Parses the header: a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline. Only what numpy writes there is accepted: the three keys,
// each once, with a string, a bool and a tuple of non-negative ints.
class HeaderParser {
public:
    HeaderParser(std::string_view source, std::string_view text) : source_(source), text_(text) {}

    Header parse() {
        std::optional<std::string> descr;
        std::optional<bool> fortran_order;
        std::optional<Shape> shape;
        expect('{');
        while (!consume('}')) {
            const std::string key = string_literal();
            expect(':');
            if (key == "descr") set_once(descr, string_literal(), key);
            else if (key == "fortran_order") set_once(fortran_order, bool_literal(), key);
            else if (key == "shape") set_once(shape, tuple_literal(), key);
            else error(fmt::format("unexpected key '{}'", header_text(key)));
            if (!consume(',')) {
                expect('}');
                break;
            }
        }
        skip_space();
        if (pos_ != text_.size()) error("unexpected text after the dict");
        if (!descr || !fortran_order || !shape) error("the dict needs the keys 'descr', 'fortran_order' and 'shape'");
        return {parse_descr(source_, *descr), *fortran_order, *shape};
    }

private:
    [[noreturn]] void error(std::string_view what) const {
        constexpr std::size_t kShown = 200;
        fail("read_npy: '{}': bad header at character {}: {} (header: {:?}{})", source_, pos_, what,
             text_.substr(0, kShown), text_.size() > kShown ? "..." : "");
    }

    template <class T>
    void set_once(std::optional<T>& slot, T value, const std::string& key) {
        if (slot) error(fmt::format("duplicate key '{}'", header_text(key)));
        slot = std::move(value);
    }

    void skip_space() {
        while (pos_ < text_.size() && std::string_view(" \t\r\n").find(text_[pos_]) != std::string_view::npos) ++pos_;
    }

    bool consume(char c) {
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }

    void expect(char c) {
        if (!consume(c)) error(fmt::format("expected '{}'", c));
    }

    std::string string_literal() {
        skip_space();
        if (pos_ == text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) error("expected a string");
        const char quote = text_[pos_++];
        const std::size_t end = text_.find(quote, pos_);
        if (end == std::string_view::npos) error("unterminated string");
        const std::string_view value = text_.substr(pos_, end - pos_);
        if (value.find('\\') != std::string_view::npos) error("escapes in strings are not supported");
        pos_ = end + 1;
        return std::string(value);
    }

    bool bool_literal() {
        skip_space();
        for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, {"False", false}}) {
            if (text_.substr(pos_).starts_with(word)) {
                pos_ += word.size();
                return value;
            }
        }
        error("expected True or False");
    }

    std::size_t int_literal() {
        skip_space();
        std::size_t value = 0;
        const char* begin = text_.data() + pos_;
        const auto [end, ec] = std::from_chars(begin, text_.data() + text_.size(), value);
        if (ec == std::errc::result_out_of_range) error("dimension too large");
        if (ec != std::errc()) error("expected a non-negative integer");
        pos_ += static_cast<std::size_t>(end - begin);
        return value;
    }

    Shape tuple_literal() {
        Shape shape;
        expect('(');
        while (!consume(')')) {
            shape.push_back(int_literal());
            if (!consume(',')) {
                expect(')');
                break;
            }
        }
        return shape;
    }

    std::string_view source_;
    std::string_view text_;
    std::size_t pos_ = 0;
};

// Where the header text lies: after the magic, the version and the little-endian header
// length, which is 2 bytes in version 1.0 and 4 bytes in versions 2.0 and 3.0.
struct HeaderSpan {
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
};

HeaderSpan locate_header(const FileReader& file) {
    const std::string& path = file.path();
    std::array<unsigned char, 12> pre{};
    const std::size_t have = static_cast<std::size_t>(std::min<std::uint64_t>(file.size(), pre.size()));
    file.read(0, pre.data(), have);
    const auto truncated = [&](std::size_t needed) {
        fail("read_npy: '{}': truncated header: the file has {} bytes, the npy preamble needs {}", path,
             file.size(), needed);
    };
    if (have < kMagic.size()) truncated(kMagic.size());
    if (std::memcmp(pre.data(), kMagic.data(), kMagic.size()) != 0)
        fail("read_npy: '{}': not an .npy file (it does not start with the magic \"\\x93NUMPY\")", path);
    if (have < 8) truncated(8);
    const unsigned major = pre[6], minor = pre[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        fail("read_npy: '{}': unsupported npy format version {}.{} (xtgrad reads 1.0, 2.0 and 3.0)", path, major,
             minor);
    const std::size_t length_bytes = major == 1 ? 2 : 4;
    const std::size_t offset = 8 + length_bytes;
    if (have < offset) truncated(offset);
    std::uint64_t length = 0;
    for (std::size_t i = length_bytes; i-- > 0;) length = (length << 8) | pre[8 + i];
    if (length > kMaxHeaderBytes)
        fail("read_npy: '{}': header length {} is more than the {} bytes a header may have (numpy's limit)", path,
             length, kMaxHeaderBytes);
    if (file.size() - offset < length)
        fail("read_npy: '{}': truncated header: the header needs {} bytes after the {}-byte preamble, "
             "the file has {} bytes in all",
             path, length, offset, file.size());
    return {offset, length};
}

// ---------------------------------------------------------------------------------------------
// Conversion: one table of accepted source dtypes per target type, one generic path.

template <class Out>
struct Source {
    std::string_view descr;
    void (*convert)(const char* src, std::size_t n, Out* dst);
    std::size_t itemsize;
};

template <class From, class Out>
void convert_items(const char* src, std::size_t n, Out* dst) {
    for (std::size_t i = 0; i < n; ++i) {
        From value;
        std::memcpy(&value, src + i * sizeof(From), sizeof(From));  // data may be unaligned
        dst[i] = static_cast<Out>(value);
    }
}

template <class From, class Out>
constexpr Source<Out> source(std::string_view descr) {
    return {descr, &convert_items<From, Out>, sizeof(From)};
}

constexpr std::array kFloatSources{source<float, float>("<f4"), source<double, float>("<f8")};
constexpr std::array kIdSources{source<std::int64_t, std::int64_t>("<i8"), source<std::int32_t, std::int64_t>("<i4")};
constexpr std::array kMaskSources{source<std::uint8_t, bool>("|b1")};

template <class Out>
using RowMajor = RowMajorArray<Out>;

template <class Out, std::size_t N>
RowMajor<Out> convert(const NpyArray& npy, const std::array<Source<Out>, N>& sources, std::string_view target) {
    const auto match = std::find_if(sources.begin(), sources.end(),
                                    [&](const Source<Out>& s) { return s.descr == npy.dtype; });
    if (match == sources.end()) {
        std::string accepted;
        for (const Source<Out>& s : sources) accepted += (accepted.empty() ? "" : ", ") + std::string(s.descr);
        fail("npy: '{}': dtype '{}' cannot be read as {} (accepted: {})", name_of(npy.source), npy.dtype, target,
             accepted);
    }
    const std::uint64_t expected = data_bytes("npy", name_of(npy.source), npy.shape, match->itemsize);
    if (npy.data.size() != expected)
        fail("npy: '{}': {} bytes of data for shape {} of {}, expected {}", name_of(npy.source), npy.data.size(),
             shape_str(npy.shape), npy.dtype, expected);
    if (!npy.fortran_order) {
        RowMajor<Out> out = RowMajor<Out>::from_shape(npy.shape);
        match->convert(npy.data.data(), out.size(), out.data());
        return out;
    }
    // Fill a column-major container and let xtensor's assignment reorder it.
    using ColumnMajor = xt::xarray<Out, xt::layout_type::column_major, typename RowMajor<Out>::allocator_type>;
    ColumnMajor column_major = ColumnMajor::from_shape(npy.shape);
    match->convert(npy.data.data(), column_major.size(), column_major.data());
    return RowMajor<Out>(column_major);
}

// ---------------------------------------------------------------------------------------------
// Writing

// Python's repr of a shape tuple: "()", "(3,)", "(2, 3)".
std::string python_tuple(const Shape& shape) {
    std::string text = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + (shape.size() == 1 ? ",)" : ")");
}

// Everything before the data, exactly as numpy 1.24's format.write_array makes it: the dict,
// spare spaces so the first axis can grow in place, then spaces and a newline up to the next
// multiple of 64 bytes (always at least one space). Version 2.0 only if the header needs it.
std::string make_preamble(std::string_view descr, const Shape& shape) {
    std::string header =
        fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, python_tuple(shape));
    if (!shape.empty()) header.append(kGrowthAxisDigits - std::to_string(shape[0]).size(), ' ');
    for (unsigned major : {1u, 2u}) {
        const std::size_t length_bytes = major == 1 ? 2 : 4;
        const std::size_t unpadded = kMagic.size() + 2 + length_bytes + header.size() + 1;
        const std::size_t length = header.size() + 1 + kAlign - unpadded % kAlign;
        if (major == 1 && length > 0xffff) continue;
        std::string out(kMagic);
        out += static_cast<char>(major);
        out += '\0';
        for (std::size_t i = 0; i < length_bytes; ++i) out += static_cast<char>((length >> (8 * i)) & 0xff);
        out += header;
        out.append(kAlign - unpadded % kAlign, ' ');
        return out + '\n';
    }
    fail("save_npy: a header of {} bytes is too long", header.size());
}

template <class T>
void save_as(const std::string& path, const RowMajor<T>& array, std::string_view descr) {
    const Shape shape(array.shape().begin(), array.shape().end());
    data_bytes("save_npy", path, shape, sizeof(T));  // never write a file read_npy refuses
    const std::string preamble = make_preamble(descr, shape);
    write_file_atomically(path, [&](std::ostream& out) {
        out.write(preamble.data(), static_cast<std::streamsize>(preamble.size()));
        out.write(reinterpret_cast<const char*>(array.data()), static_cast<std::streamsize>(array.size() * sizeof(T)));
    });
}

}  // namespace

NpyArray read_npy(const std::string& path) {
    const FileReader file(path);
    const HeaderSpan span = locate_header(file);
    std::string text(span.length, '\0');
    file.read(span.offset, text.data(), text.size());
    Header header = HeaderParser(path, text).parse();

    const std::uint64_t data_offset = span.offset + span.length;
    const std::uint64_t expected = data_bytes("read_npy", path, header.shape, header.dtype.itemsize);
    const std::uint64_t actual = file.size() - data_offset;
    if (actual != expected)
        fail("read_npy: '{}': {} data: shape {} of '{}' needs {} bytes after the {}-byte header, the file has {} "
             "(file size {}, expected {})",
             path, actual < expected ? "truncated" : "unexpected bytes after the", shape_str(header.shape),
             header.dtype.descr, expected, data_offset, actual, file.size(), data_offset + expected);

    NpyArray npy{std::move(header.dtype.descr), std::move(header.shape), header.fortran_order, {}, path};
    file.read_into(npy.data, data_offset, expected, "its data");
    return npy;
}

Array to_float(const NpyArray& npy) { return convert(npy, kFloatSources, "float32"); }
Ids to_ids(const NpyArray& npy) { return convert(npy, kIdSources, "int64 ids"); }
Mask to_mask(const NpyArray& npy) { return convert(npy, kMaskSources, "a bool mask"); }

Array load_npy_float(const std::string& path) { return to_float(read_npy(path)); }
Ids load_npy_ids(const std::string& path) { return to_ids(read_npy(path)); }
Mask load_npy_mask(const std::string& path) { return to_mask(read_npy(path)); }

void save_npy(const std::string& path, const Array& array) { save_as(path, array, "<f4"); }
void save_npy(const std::string& path, const Ids& array) { save_as(path, array, "<i8"); }
void save_npy(const std::string& path, const Mask& array) { save_as(path, array, "|b1"); }

}  // namespace xtgrad
