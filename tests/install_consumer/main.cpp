// A user's program against the installed xtgrad: only <xtgrad/...> headers, linked through
// pkg-config or CMake (tests/install_consumer/run.sh builds it both ways at two -march settings).
// It passes an Array across the library's ABI (Tensor(Array), data()), whose type must not
// depend on the user's compiler flags (autograd/array.hpp).
#include <xtgrad/xtgrad.hpp>

int main() {
    using namespace xtgrad;
    nn::Linear layer(3, 2);
    Array values = xt::ones<float>({4, 3});
    Tensor x(values, /*requires_grad=*/true);
    Tensor loss = sum(layer.forward(x));
    loss.backward();
    const Array& dx = x.grad_array();
    // d sum(x W^T + b) / dx = column sums of W, the same for each of the 4 rows.
    for (std::size_t j = 0; j < 3; ++j) {
        const float want = layer.weight.data()(0, j) + layer.weight.data()(1, j);
        for (std::size_t i = 0; i < 4; ++i)
            if (std::abs(dx(i, j) - want) > 1e-6f) {
                fmt::print("wrong gradient at ({}, {}): {} != {}\n", i, j, dx(i, j), want);
                return 1;
            }
    }
    fmt::print("installed xtgrad works: loss {}, d loss/d x {}\n", loss.item(), shape_str(dx.shape()));
    return 0;
}
