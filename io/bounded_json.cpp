#include <xtgrad/io/bounded_json.hpp>

#include <xtgrad/autograd/error.hpp>

#include <new>

namespace xtgrad::detail {
namespace {

using json = nlohmann::json;
using Event = json::parse_event_t;

// nlohmann's own DOM builder (the one json::parse uses without a callback), fed only what is
// within the bounds.
class BoundedSax {
public:
    BoundedSax(json& root, const JsonLimits& limits, std::string_view what, const JsonEventCheck& check)
        : dom_(root), limits_(limits), what_(what), check_(check) {}

    bool null() { return value() && dom_.null(); }
    bool boolean(bool v) { return value() && dom_.boolean(v); }
    bool number_integer(json::number_integer_t v) { return value() && dom_.number_integer(v); }
    bool number_unsigned(json::number_unsigned_t v) { return value() && dom_.number_unsigned(v); }
    bool number_float(json::number_float_t v, const json::string_t& s) { return value() && dom_.number_float(v, s); }
    bool string(json::string_t& v) { return value() && dom_.string(v); }
    bool binary(json::binary_t& v) { return value() && dom_.binary(v); }
    bool start_object(std::size_t n) { return open(Event::object_start) && dom_.start_object(n); }
    bool start_array(std::size_t n) { return open(Event::array_start) && dom_.start_array(n); }
    bool end_object() { return close(Event::object_end) && dom_.end_object(); }
    bool end_array() { return close(Event::array_end) && dom_.end_array(); }
    bool key(json::string_t& k) {
        if (check_) check_(Event::key, k);
        return dom_.key(k);
    }
    template <class Exception>
    bool parse_error(std::size_t position, const std::string& last_token, const Exception& e) {
        return dom_.parse_error(position, last_token, e);
    }

private:
    void counted() {
        if (++values_ > limits_.max_values)
            fail("{} holds more than {} values (numbers, strings, lists and objects)", what_, limits_.max_values);
    }
    bool value() {
        counted();
        if (check_) check_(Event::value, {});
        return true;
    }
    bool open(Event event) {
        if (depth_ >= limits_.max_depth) fail("{} nests lists and objects more than {} deep", what_, limits_.max_depth);
        counted();
        ++depth_;
        if (check_) check_(event, {});
        return true;
    }
    bool close(Event event) {
        --depth_;
        if (check_) check_(event, {});
        return true;
    }

    nlohmann::detail::json_sax_dom_parser<json> dom_;
    const JsonLimits& limits_;
    std::string_view what_;
    const JsonEventCheck& check_;
    std::size_t values_ = 0;
    int depth_ = 0;
};

// Frees a value from its leaves up. json's destructor first copies a list's or object's items
// into a new vector: after a std::bad_alloc that allocation fails too, in a destructor, and the
// process aborts. The nesting is bounded, so this recursion is too.
void release(json& value) {
    if (value.is_array()) {
        json::array_t& items = value.get_ref<json::array_t&>();
        for (; !items.empty(); items.pop_back()) release(items.back());
    } else if (value.is_object()) {
        json::object_t& members = value.get_ref<json::object_t&>();
        for (auto it = members.begin(); it != members.end(); it = members.erase(it)) release(it->second);
    }
}

}  // namespace

json parse_bounded_json(std::string_view text, JsonLimits limits, std::string_view what, const JsonEventCheck& check) {
    json root;
    try {
        BoundedSax sax(root, limits, what, check);
        json::sax_parse(text, &sax);
    } catch (const std::bad_alloc&) {
        release(root);
        fail("{}: out of memory while parsing its {} bytes", what, text.size());
    } catch (...) {
        release(root);  // a refusal near the bounds leaves up to max_values values to free
        throw;
    }
    return root;
}

}  // namespace xtgrad::detail
