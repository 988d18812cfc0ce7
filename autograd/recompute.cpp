#include <xtgrad/autograd/recompute.hpp>
#include <xtgrad/autograd/tensor.hpp>

namespace xtgrad::detail {

void set_recompute(const Tensor& t, const char* what, const char* switch_name, std::function<Array()> make) {
    const ValuesPtr values = std::const_pointer_cast<TensorValues>(t.values_ptr());
    auto r = std::make_shared<Recompute>();
    r->make = std::move(make);
    r->what = what;
    r->switch_name = switch_name;
    r->last_version = values->version;
    r->made = values;
    values->recompute = std::move(r);
}

}  // namespace xtgrad::detail
