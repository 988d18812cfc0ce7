// XTGRAD_ARG: one field of a module's Options class, as the PyTorch C++ frontend's TORCH_ARG:
// a chained setter returning *this and a getter of the same name,
//   MultiHeadAttentionOptions(512, 8).dropout(0.1f)   ->   options.dropout() == 0.1f
// Write `XTGRAD_ARG(float, dropout) = 0.1f;` for a default. The convention (docs/architecture.md, "Module options"): one
// `<Module>Options` per module, its required sizes as constructor arguments, everything else
// (errata switches included) as such fields with the tutorial's values as defaults.
// (`T const&`, not `const T&`: the macro pastes T as text, and `const Generator*&` would be
// another type.)
#pragma once

#include <concepts>
#include <type_traits>
#include <utility>

#define XTGRAD_ARG(T, name)                         \
public:                                             \
    auto& name(T const& new_##name) {               \
        this->name##_ = new_##name;                 \
        return *this;                               \
    }                                               \
    T const& name() const { return this->name##_; } \
                                                    \
private:                                            \
    T name##_


// A module's two constructors, as torch's C++ frontend has them: from its <Module>Options, and
// from the Options' constructor arguments (the required sizes) directly:
//   MultiHeadAttention(MultiHeadAttentionOptions(512, 8))   ==   MultiHeadAttention(512, 8)
// Write `XTGRAD_OPTIONS_CONSTRUCTORS(MultiHeadAttention);` in the class; define the Options one
// in the .cpp. The third, private constructor is never called: g++ writes a class's full debug
// information into a program only where it sees an inline non-template constructor of it, and
// without one gdb prints a module in a learner's own -g program as `<incomplete type>`
// (tests/gdb/run_gdb_test.sh prints one).
#define XTGRAD_OPTIONS_CONSTRUCTORS(Module)                                                   \
    template <class... Args>                                                                  \
        requires ::xtgrad::nn::detail::options_arguments<Module##Options, Args...>            \
    explicit Module(Args&&... args) : Module(Module##Options(std::forward<Args>(args)...)) {} \
                                                                                              \
private:                                                                                      \
    Module(::xtgrad::nn::detail::DebugInfoTag, const Module##Options& o) : Module(o) {}       \
                                                                                              \
public:                                                                                       \
    explicit Module(const Module##Options& options)

namespace xtgrad::nn::detail {
struct DebugInfoTag {};
// Arguments of an Options constructor, other than one Options (which the first constructor takes).
template <class Options, class... Args>
concept options_arguments =
    sizeof...(Args) > 0 && std::constructible_from<Options, Args...> &&
    !(sizeof...(Args) == 1 && (std::same_as<std::remove_cvref_t<Args>, Options> && ...));
}  // namespace xtgrad::nn::detail
