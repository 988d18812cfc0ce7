// SourceLocation: the file:line (and function) of the code that created a node, for anomaly
// errors and the debugger; what std::source_location gives, in a type of xtgrad's own.
//
// Why not std::source_location: clang 14 with libstdc++ 12 (Debian 12's pair) cannot compile
// <source_location> (it needs __builtin_source_location, which clang gained in 15), and the type
// appears in public signatures (make_result's default argument), so it must be one type for
// every compiler a user builds with. Both g++ and clang have the three builtins used here; as
// default arguments they take the caller's location, as std::source_location::current() does.
#pragma once

namespace xtgrad {

struct SourceLocation {
    const char* file = "";      // as the compiler saw it; meson.build makes it project-relative
    const char* function = "";  // the enclosing function's plain name
    unsigned line = 0;

    static constexpr SourceLocation current(const char* file = __builtin_FILE(),
                                            const char* function = __builtin_FUNCTION(),
                                            unsigned line = __builtin_LINE()) noexcept {
        return {file, function, line};
    }
    constexpr const char* file_name() const noexcept { return file; }
    constexpr const char* function_name() const noexcept { return function; }
    constexpr unsigned line_number() const noexcept { return line; }
};

}  // namespace xtgrad
