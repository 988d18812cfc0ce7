// XTGRAD_ARG: one field of a module's Options class, as the PyTorch C++ frontend's TORCH_ARG:
// a chained setter returning *this and a getter of the same name,
//   MultiHeadAttentionOptions(512, 8).dropout(0.1f)   ->   options.dropout() == 0.1f
// Write `XTGRAD_ARG(float, dropout) = 0.1f;` for a default. The convention (docs/architecture.md, "Module options"): one
// `<Module>Options` per module, its required sizes as constructor arguments, everything else
// (errata switches included) as such fields with the tutorial's values as defaults.
// (`T const&`, not `const T&`: the macro pastes T as text, and `const Generator*&` would be
// another type.)
#pragma once

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
