#include <xtgrad/io/safetensors.hpp>

#include <xtgrad/io/atomic_file.hpp>
#include <xtgrad/io/bounded_json.hpp>
#include <xtgrad/autograd/error.hpp>
#include <xtgrad/autograd/utf8_text.hpp>
#include <xtgrad/io/shape_limits.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <ostream>
#include <set>
#include <string_view>

namespace xtgrad {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian and copied as is");

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kMetadataKey = "__metadata__";
constexpr std::size_t kHeaderLengthBytes = 8;
// The reference implementation's limit (safetensors' MAX_HEADER_SIZE): refused before allocating.
constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;
constexpr int kMaxNesting = 8;
// The most tensors a header may list, refused while it is parsed. The largest models have under
// 100 000 tensors over all their shards (DeepSeek-V3: ~91 000); each costs ~600 bytes parsed.
constexpr std::size_t kMaxTensors = std::size_t{1} << 18;
// Values (numbers, strings, lists, objects) in a header: 16 a tensor, as many as an entry of rank
// 10 holds. Parsed, a value costs 16 to ~170 bytes (an object's member, its key kept again for the
// duplicate check): ~720 MB at most, where a 94 MB shape of 47 M dimensions took 2.4 GB and 19 s
// before its rank was checked (and a 100 MB header of small objects would take 1.8 GB).
constexpr std::size_t kMaxHeaderValues = 16 * kMaxTensors;

// ---------------------------------------------------------------------------------------------
// Dtypes: how to turn n stored items into float32.

float from_f32(float v) { return v; }
float from_f64(double v) { return static_cast<float>(v); }
float from_bf16(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t{bits} << 16); }

float from_f16(std::uint16_t bits) {
    const std::uint32_t sign = std::uint32_t{bits & 0x8000u} << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1fu;
    const std::uint32_t mantissa = bits & 0x3ffu;
    if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
        const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
        return sign ? -magnitude : magnitude;
    }
    // Rebias the exponent from 15 to 127; all-ones (inf, nan) stays all-ones.
    const std::uint32_t float_exponent = exponent == 0x1fu ? 0xffu : exponent + 112;
    return std::bit_cast<float>(sign | (float_exponent << 23) | (mantissa << 13));
}

template <class Stored, float (*Decode)(Stored)>
void decode_items(const char* src, std::size_t n, float* dst) {
    for (std::size_t i = 0; i < n; ++i) {
        Stored value;
        std::memcpy(&value, src + i * sizeof(Stored), sizeof(Stored));  // data may be unaligned
        dst[i] = Decode(value);
    }
}

struct SafetensorsDtype {
    std::string_view name;
    std::size_t itemsize;
    void (*decode)(const char* src, std::size_t n, float* dst);
};

constexpr std::array kDtypes{
    SafetensorsDtype{"F32", 4, &decode_items<float, from_f32>},
    SafetensorsDtype{"F64", 8, &decode_items<double, from_f64>},
    SafetensorsDtype{"F16", 2, &decode_items<std::uint16_t, from_f16>},
    SafetensorsDtype{"BF16", 2, &decode_items<std::uint16_t, from_bf16>},
};

// ---------------------------------------------------------------------------------------------
// Reading

struct Entry {
    std::string name;
    const SafetensorsDtype* dtype = nullptr;
    Shape shape;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
};

// The header text; checks that the file holds the 8-byte length and that many bytes after it,
// and that the header is no longer than kSafetensorsMaxHeaderBytes.
std::string read_header(const FileReader& file) {
    if (file.size() < kHeaderLengthBytes)
        fail("load_safetensors: '{}': the file has {} bytes, fewer than the 8-byte header length", file.path(),
             file.size());
    std::uint64_t length = 0;
    file.read(0, &length, kHeaderLengthBytes);
    if (length > kSafetensorsMaxHeaderBytes)
        fail("load_safetensors: '{}': header length {} is more than the {} bytes a header may have", file.path(),
             length, kSafetensorsMaxHeaderBytes);
    if (length > file.size() - kHeaderLengthBytes)
        fail("load_safetensors: '{}': header length {} is past the end of the file ({} bytes, so at most {})",
             file.path(), length, file.size(), file.size() - kHeaderLengthBytes);
    std::string header(length, '\0');
    file.read(kHeaderLengthBytes, header.data(), header.size());
    return header;
}

// `text` from the file (a name, a key, a value) as an error message quotes it: at most
// kShownChars bytes, on one line, with control bytes (a NUL, a newline, a terminal escape) and
// bytes that are not UTF-8 written as \xHH, as save_safetensors quotes a name it refuses.
std::string shown(std::string_view text) {
    constexpr std::size_t kShownChars = 120;
    return escaped_for_message(text, false, kShownChars);
}

// A JSON value as it appears in an error message. The parser bounds the nesting, so dump()
// recurses at most kMaxNesting deep.
std::string brief(const json& value) { return shown(value.dump()); }

// Parses the header, refusing what nlohmann would accept silently or unboundedly: nesting
// deeper than kMaxNesting (a valid header nests 3 deep: header, entry, shape), more than
// kMaxHeaderValues values or kMaxTensors tensors, and a key named twice in any object (nlohmann
// would keep the last one).
json parse_header(const std::string& path, const std::string& text) {
    std::vector<std::set<std::string, std::less<>>> open_objects;  // the keys seen so far in each open object
    std::size_t tensors = 0;
    const auto check = [&](json::parse_event_t event, std::string_view key) {
        using Event = json::parse_event_t;
        if (event == Event::object_start) open_objects.emplace_back();
        if (event == Event::object_end) open_objects.pop_back();
        if (event != Event::key) return;
        if (!open_objects.back().emplace(key).second)
            fail("load_safetensors: '{}': the header names '{}' twice in one object{}", path, shown(key),
                 open_objects.size() == 1 ? "" : " (inside an entry)");
        if (open_objects.size() == 1 && key != kMetadataKey && ++tensors > kMaxTensors)
            fail("load_safetensors: '{}': the header lists more than {} tensors, the most xtgrad reads from one file",
                 path, kMaxTensors);
    };
    json root;
    try {
        root = xtgrad::detail::parse_bounded_json(text, {kMaxNesting, kMaxHeaderValues},
                                                  fmt::format("load_safetensors: '{}': the header", path), check);
    } catch (const json::exception& e) {
        fail("load_safetensors: '{}': the {}-byte header is not valid JSON: {}", path, text.size(),
             shown(e.what()));
    }
    if (!root.is_object()) fail("load_safetensors: '{}': the header is JSON but not an object", path);
    return root;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& value) {
    if (!value.is_object()) fail("load_safetensors: '{}': \"__metadata__\" is not an object", path);
    std::map<std::string, std::string> metadata;
    for (const auto& [key, item] : value.items()) {
        if (!item.is_string())
            fail("load_safetensors: '{}': \"__metadata__\" value of '{}' is not a string: {}", path,
                 shown(key), brief(item));
        metadata.emplace(key, item.get<std::string>());
    }
    return metadata;
}

// Checks one tensor entry on its own: its fields, and that its byte range fits its shape and
// lies inside the data section.
class EntryParser {
public:
    EntryParser(const std::string& path, const std::string& name, const json& value, std::uint64_t data_size)
        : path_(path), name_(name), value_(value), data_size_(data_size) {}

    Entry parse() const {
        if (!value_.is_object()) error(fmt::format("the entry is not an object: {}", brief(value_)));
        Entry entry{name_, &dtype(), uint_list("shape"), 0, 0};
        const std::vector<std::uint64_t> offsets = uint_list("data_offsets");
        if (offsets.size() != 2 || offsets[0] > offsets[1])
            error(fmt::format("data_offsets must be [begin, end] with begin <= end, not {}",
                              brief(field("data_offsets"))));
        entry.begin = offsets[0];
        entry.end = offsets[1];
        if (entry.end > data_size_)
            error(fmt::format("data_offsets [{}, {}] end past the {}-byte data section", entry.begin, entry.end,
                              data_size_));
        const std::uint64_t needed = byte_count(entry);
        if (entry.end - entry.begin != needed)
            error(fmt::format("data_offsets [{}, {}] hold {} bytes, but shape {} of {} needs {}", entry.begin,
                              entry.end, entry.end - entry.begin, shape_str(entry.shape), entry.dtype->name, needed));
        return entry;
    }

private:
    [[noreturn]] void error(const std::string& what) const {
        fail("load_safetensors: '{}': tensor '{}': {}", path_, shown(name_), what);
    }

    const json& field(const char* key) const {
        const auto it = value_.find(key);
        if (it == value_.end()) error(fmt::format("the entry has no \"{}\"", key));
        return *it;
    }

    const SafetensorsDtype& dtype() const {
        const json& value = field("dtype");
        for (const SafetensorsDtype& d : kDtypes)
            if (value.is_string() && d.name == value.get<std::string>()) return d;
        error(fmt::format("unsupported dtype {} (xtgrad reads F32, F64, F16 and BF16)", brief(value)));
    }

    std::vector<std::uint64_t> uint_list(const char* key) const {
        const json& value = field(key);
        if (!value.is_array()) error(fmt::format("\"{}\" is not a list: {}", key, brief(value)));
        std::vector<std::uint64_t> numbers;
        for (const json& item : value) {
            if (!item.is_number_unsigned())
                error(fmt::format("\"{}\" holds {}, not a non-negative integer", key, brief(item)));
            numbers.push_back(item.get<std::uint64_t>());
        }
        return numbers;
    }

    std::uint64_t byte_count(const Entry& entry) const {
        std::uint64_t bytes = 0;
        const std::string problem = shape_problem(entry.shape, entry.dtype->itemsize, &bytes);
        if (!problem.empty()) error(problem);
        return bytes;
    }

    const std::string& path_;
    const std::string& name_;
    const json& value_;
    std::uint64_t data_size_;
};

// Sorts the entries by offset and checks that they tile the data section: no overlap, no gap.
void check_tiling(const std::string& path, std::vector<Entry>& entries, std::uint64_t data_size) {
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
    });
    std::uint64_t covered = 0;  // bytes [0, covered) belong to the tensors checked so far
    const Entry* previous = nullptr;
    for (const Entry& e : entries) {
        if (e.begin < covered)
            fail("load_safetensors: '{}': tensor '{}' (bytes [{}, {})) overlaps tensor '{}' (bytes [{}, {}))", path,
                 shown(e.name), e.begin, e.end, shown(previous->name), previous->begin, previous->end);
        if (e.begin > covered)
            fail("load_safetensors: '{}': bytes [{}, {}) of the data section belong to no tensor (the next is '{}')",
                 path, covered, e.begin, shown(e.name));
        covered = e.end;
        previous = &e;
    }
    if (covered != data_size)
        fail("load_safetensors: '{}': bytes [{}, {}) at the end of the data section belong to no tensor", path, covered,
             data_size);
}

Array read_tensor(const FileReader& file, std::uint64_t data_start, const Entry& entry, std::vector<char>& buffer) {
    file.read_into(buffer, data_start + entry.begin, entry.end - entry.begin,
                   fmt::format("tensor '{}'", shown(entry.name)));
    Array out = empty_array(entry.shape);
    entry.dtype->decode(buffer.data(), out.size(), out.data());
    return out;
}

// ---------------------------------------------------------------------------------------------
// Writing

// The JSON header, padded with spaces to a multiple of 8 bytes so that the data is aligned.
// An Error naming `what` and the first byte that is not UTF-8: the header is UTF-8 JSON, which
// nlohmann would refuse only while dumping, in its own words.
// `what(quoted)` names the text, given it escaped (on one line) and quoted; at most its first
// kMaxQuotedBytes: the offset finds the byte in a longer one.
constexpr std::size_t kMaxQuotedBytes = 200;
template <class What>
void check_utf8(const std::string& path, const std::string& text, const std::string& key, What&& what) {
    if (const std::size_t at = first_invalid_utf8(text); at != std::string_view::npos)
        fail("save_safetensors: '{}': {} is not valid UTF-8: byte {} (0x{:02x}) begins no UTF-8 character: {}", path,
             what(fmt::format("'{}'", escaped_for_message(key, false, kMaxQuotedBytes))), at, static_cast<unsigned char>(text[at]),
             utf8_fault(std::string_view(text).substr(at)));
}

std::string make_header(const std::string& path, const NamedArrays& tensors,
                        const std::map<std::string, std::string>& metadata) {
    for (const auto& entry : metadata) {
        check_utf8(path, entry.first, entry.first, [](const std::string& key) { return "metadata key " + key; });
        check_utf8(path, entry.second, entry.first, [](const std::string& key) { return "the value of metadata key " + key; });
    }
    for (const auto& named : tensors)
        check_utf8(path, named.first, named.first, [](const std::string& name) { return "tensor name " + name; });
    ordered_json root = ordered_json::object();
    if (!metadata.empty()) root[std::string(kMetadataKey)] = metadata;
    std::set<std::string_view> names;
    std::uint64_t offset = 0;
    for (const auto& [name, array] : tensors) {
        if (name == kMetadataKey)
            fail("save_safetensors: '{}': \"__metadata__\" is reserved and cannot name a tensor", path);
        if (!names.insert(name).second) fail("save_safetensors: '{}': duplicate tensor name '{}'", path, name);
        // what load_safetensors refuses is not written (a (0, 2^64-1, ...) shape, an over-long header)
        const Shape shape(array.shape().begin(), array.shape().end());
        if (const std::string problem = shape_problem(shape, sizeof(float)); !problem.empty())
            fail("save_safetensors: '{}': tensor '{}': {}", path, name, problem);
        const std::uint64_t bytes = array.size() * sizeof(float);
        root[name] = {{"dtype", "F32"},
                      {"shape", Shape(array.shape().begin(), array.shape().end())},
                      {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string text = root.dump();  // every string checked above: dump() throws only on text that is not UTF-8
    text.append((8 - text.size() % 8) % 8, ' ');
    if (text.size() > kSafetensorsMaxHeaderBytes)
        fail("save_safetensors: '{}': the header (names, shapes and metadata) would be {} bytes, more than the {} "
             "bytes a header may have", path, text.size(), kSafetensorsMaxHeaderBytes);
    return text;
}

}  // namespace

void save_safetensors(const std::string& path, const NamedArrays& tensors,
                      const std::map<std::string, std::string>& metadata) {
    const std::string header = make_header(path, tensors, metadata);
    write_file_atomically(path, [&](std::ostream& out) {
        const std::uint64_t length = header.size();
        out.write(reinterpret_cast<const char*>(&length), kHeaderLengthBytes);
        out.write(header.data(), static_cast<std::streamsize>(header.size()));
        for (const auto& [name, array] : tensors)
            out.write(reinterpret_cast<const char*>(array.data()),
                      static_cast<std::streamsize>(array.size() * sizeof(float)));
    });
}

SafetensorsFile load_safetensors(const std::string& path) {
    const FileReader file(path);
    const std::string header = read_header(file);
    const std::uint64_t data_start = kHeaderLengthBytes + header.size();
    const std::uint64_t data_size = file.size() - data_start;

    SafetensorsFile result;
    std::vector<Entry> entries;
    const json root = parse_header(path, header);
    for (const auto& [key, value] : root.items()) {
        if (key == kMetadataKey) result.metadata = parse_metadata(path, value);
        else entries.push_back(EntryParser(path, key, value, data_size).parse());
    }
    check_tiling(path, entries, data_size);

    std::vector<char> buffer;
    for (const Entry& entry : entries)
        result.tensors.emplace_back(entry.name, read_tensor(file, data_start, entry, buffer));
    return result;
}

std::map<std::string, std::string> load_safetensors_metadata(const std::string& path) {
    const FileReader file(path);
    const json root = parse_header(path, read_header(file));
    const auto it = root.find(kMetadataKey);
    return it == root.end() ? std::map<std::string, std::string>{} : parse_metadata(path, *it);
}

}  // namespace xtgrad
