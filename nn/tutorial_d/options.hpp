// TUTORIAL_D_ARG: one option of a tutorial D Options struct, as the PyTorch C++ frontend's
// TORCH_ARG: a chained setter returning *this and a getter of the same name,
//   MultiheadAttentionOptions(512, 8).dropout(0.1f).batch_first(true)   ->   o.dropout() == 0.1f
// Write `TUTORIAL_D_ARG(float, dropout) = 0.1f;` for a default. (`T const&`, not `const T&`:
// the macro pastes T as text, and `const Generator*&` would be another type.)
#pragma once

#define TUTORIAL_D_ARG(T, name)                  \
public:                                          \
    auto& name(T const& new_##name) {            \
        this->name##_ = new_##name;              \
        return *this;                            \
    }                                            \
    T const& name() const { return this->name##_; } \
                                                 \
private:                                         \
    T name##_
