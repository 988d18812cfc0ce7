// std::source_location for clang 14, which lacks the builtin libstdc++ 12's <source_location>
// needs (the fuzz targets build with Debian 12's clang 14; the library's headers use it).
// Forced into the run-checkpoint target's files with -include, it declares the same type
// as libstdc++ — one pointer to the location, null here (no location recorded) — so objects
// of it pass unchanged to and from the library, built with GCC, which reads a null location as
// empty. Only for those fuzz builds: never include it elsewhere.
#pragma once

#include <version>

#if !defined(__cpp_lib_source_location) && defined(__clang__) && __clang_major__ < 15
namespace std {
struct source_location {
    struct __impl {
        const char* _M_file_name;
        const char* _M_function_name;
        unsigned _M_line;
        unsigned _M_column;
    };
    static constexpr source_location current() noexcept { return {}; }
    constexpr source_location() noexcept = default;
    constexpr unsigned line() const noexcept { return _M_impl ? _M_impl->_M_line : 0u; }
    constexpr unsigned column() const noexcept { return _M_impl ? _M_impl->_M_column : 0u; }
    constexpr const char* file_name() const noexcept { return _M_impl ? _M_impl->_M_file_name : ""; }
    constexpr const char* function_name() const noexcept { return _M_impl ? _M_impl->_M_function_name : ""; }

private:
    const __impl* _M_impl = nullptr;
};
}  // namespace std
#endif
