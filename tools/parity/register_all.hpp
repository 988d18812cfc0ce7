// One registration function per group of fixture runners (explicit calls, not static
// initialisers: those vanish when the linker drops an unreferenced object file).
#pragma once

namespace xtgrad::parity {

void register_shared_runners();      // cases_shared.cpp: linear, embedding, conv1d, layer norms, cross_entropy
void register_tutorial_a_runners();  // cases_a.cpp
void register_tutorial_b_runners();  // cases_b.cpp
void register_tutorial_c_runners();  // cases_c.cpp
void register_tutorial_d_runners();  // cases_d.cpp
void register_optim_runners();       // cases_optim.cpp: optimizer fixtures
void register_train_runners();       // cases_train.cpp: short training runs

inline void register_all_runners() {
    register_shared_runners();
    register_tutorial_a_runners();
    register_tutorial_b_runners();
    register_tutorial_c_runners();
    register_tutorial_d_runners();
    register_optim_runners();
    register_train_runners();
}

}  // namespace xtgrad::parity
