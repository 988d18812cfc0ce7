// Tutorial C's one sentence pair, with its vocabularies fixed (docs/tutorial_c.md, errata):
// PAD = 0 and every word its own id. The tutorial maps 'I' to 0 (the id masks treat as
// padding), 'Beijing', 'Winter' and 'Games' all to 4, and '我' to 0.
#pragma once

#include "autograd/array.hpp"

#include <string>
#include <vector>

namespace winter_games {

inline const std::vector<std::string> source_words = {"P", "I", "like", "the", "2022", "Beijing", "Winter", "Games"};
inline const std::vector<std::string> target_words = {"P", "我", "爱", "2022", "北京", "冬", "奥会", "S", "E"};
constexpr std::int64_t kStart = 7, kEnd = 8;  // 'S' and 'E' in target_words

// 'I like the 2022 Beijing Winter Games' -> 'S 我 爱 2022 北京 冬 奥会' (decoder input)
//                                        -> '我 爱 2022 北京 冬 奥会 E' (target)
inline xtgrad::Ids enc_inputs() { return xtgrad::Ids{{1, 2, 3, 4, 5, 6, 7}}; }
inline xtgrad::Ids dec_inputs() { return xtgrad::Ids{{7, 1, 2, 3, 4, 5, 6}}; }
inline xtgrad::Ids targets() { return xtgrad::Ids{1, 2, 3, 4, 5, 6, 8}; }

inline std::string words(const xtgrad::Ids& ids, const std::vector<std::string>& vocab) {
    std::string s;
    for (std::int64_t id : ids) {
        if (id == 0) break;  // PAD ends a decoded row
        s += (s.empty() ? "" : " ") + vocab.at(static_cast<std::size_t>(id));
    }
    return s;
}

}  // namespace winter_games
