// A speed switch set for a scope (autograd/speed_switches.hpp), restored at its end; `drop`
// (optional) runs on both ends, for the copies a switch's mechanism keeps (inference's
// transposed and packed weights), so a case starts and leaves with none.
#pragma once

#include <xtgrad/autograd/speed_switches.hpp>

namespace xtgrad::test {

class SpeedSwitchScope {
public:
    SpeedSwitchScope(const detail::EnvSwitch& s, bool on, void (*drop)() = nullptr)
        : switch_(s), before_(detail::speed_switch_on(s)), drop_(drop) {
        detail::set_speed_switch(switch_, on);
        if (drop_) drop_();
    }
    ~SpeedSwitchScope() {
        detail::set_speed_switch(switch_, before_);
        if (drop_) drop_();
    }
    SpeedSwitchScope(const SpeedSwitchScope&) = delete;
    SpeedSwitchScope& operator=(const SpeedSwitchScope&) = delete;

private:
    const detail::EnvSwitch& switch_;
    bool before_;
    void (*drop_)();
};

}  // namespace xtgrad::test
