// Writes the fuzzers' seed corpora with xtgrad's own writers: small safetensors and .npy files
// of every shape class (scalar, empty, vector, matrix, rank 5) and dtype the writers produce.
//   make_seeds SAFETENSORS_DIR NPY_DIR
#include <xtgrad/io/npy.hpp>
#include <xtgrad/io/safetensors.hpp>

#include <cstdio>
#include <string>

using namespace xtgrad;

namespace {

Array counting(const Shape& shape) {
    Array a = empty_array(shape);
    for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<float>(i) * 0.5f - 1.f;
    return a;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: make_seeds SAFETENSORS_DIR NPY_DIR\n");
        return 2;
    }
    const std::string st = argv[1], npy = argv[2];
    const std::vector<Shape> shapes{{}, {0}, {3}, {2, 3}, {0, 3}, {1, 2, 1, 2, 1}};
    int n = 0;
    for (const Shape& shape : shapes) {
        const std::string id = std::to_string(n++);
        save_safetensors(st + "/one_" + id + ".safetensors", {{"w", counting(shape)}});
        save_npy(npy + "/f32_" + id + ".npy", counting(shape));
        Ids ids = Ids::from_shape(shape);
        for (std::size_t i = 0; i < ids.size(); ++i) ids.data()[i] = static_cast<std::int64_t>(i) - 2;
        save_npy(npy + "/i64_" + id + ".npy", ids);
        Mask mask = Mask::from_shape(shape);
        for (std::size_t i = 0; i < mask.size(); ++i) mask.data()[i] = i % 2 == 0;
        save_npy(npy + "/b1_" + id + ".npy", mask);
    }
    save_safetensors(st + "/model.safetensors",
                     {{"encoder.weight", counting({4, 2})}, {"encoder.bias", counting({4})}, {"empty", counting({0, 2})},
                      {"scale", counting({})}},
                     {{"epoch", "3"}, {"format", "pt"}});
    save_safetensors(st + "/metadata_only.safetensors", {}, {{"note", "no tensors"}});
    std::printf("wrote %d safetensors and %d npy seeds\n", n + 2, 3 * n);
    return 0;
}
