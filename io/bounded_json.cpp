#include <xtgrad/io/bounded_json.hpp>

#include <xtgrad/autograd/error.hpp>

namespace xtgrad::detail {

nlohmann::json parse_bounded_json(std::string_view text, int max_depth, std::string_view what,
                                  const nlohmann::json::parser_callback_t& check) {
    using Event = nlohmann::json::parse_event_t;
    const nlohmann::json::parser_callback_t bounded = [&](int depth, Event event, nlohmann::json& parsed) {
        if ((event == Event::object_start || event == Event::array_start) && depth >= max_depth)
            fail("{} nests lists and objects more than {} deep", what, max_depth);
        return check ? check(depth, event, parsed) : true;
    };
    return nlohmann::json::parse(text, bounded);
}

}  // namespace xtgrad::detail
