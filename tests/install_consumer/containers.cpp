// Every public function and constructor that takes or returns one of the library's containers
// (Array, Ids, Mask, ByteMask, NamedArrays), called from a user's program: their types are part
// of the mangled names, so a container whose type followed the compiler's -march flags (xsimd's
// default allocator) linked at one -march and not at another. tests/install_consumer/run.sh
// builds this at -march=x86-64, -mavx2, -march=native and with plain pkg-config flags.
#include <xtgrad/xtgrad.hpp>

#include <cstdio>
#include <filesystem>

using namespace xtgrad;

namespace {

int failures = 0;
void expect(bool ok, const char* what) {
    if (!ok) {
        std::printf("containers: %s is wrong\n", what);
        ++failures;
    }
}

void tensors_and_ops() {
    Tensor x(Array(xt::ones<float>({2, 3})), true);
    x.register_hook([](const Array& g) { return Array(g * 2.f); });
    Tensor y = sum(masked_fill(x, Mask(xt::zeros<bool>({2, 3})), 0.f));
    y.backward(Array(1.f));
    expect(x.grad_array()(0, 0) == 2.f && !to_string(x.grad_array()).empty() && l2_norm(x.data()) > 0, "backward");
    Ids ids = {1, 0};
    expect(index_select(x, 0, ids).shape()[0] == 2 && argmax(x, 1).size() == 2, "index_select, argmax");
    expect(cross_entropy(embedding(x, ids), Ids{0, 1}).item() > 0, "embedding, cross_entropy");
    const Mask none = xt::zeros<bool>({2, 2});
    expect(attention_weights(x, x, 1.f, &none, 0.f).shape()[1] == 2, "attention_weights");
    expect(randint({3}, 0, 5, default_generator()).size() == 3, "randint");
    nn::Embedding emb(4, 2);
    expect(emb.forward(ids).shape()[1] == 2, "Embedding::forward");
    optim::Adam opt(emb.parameters());
    expect(opt.state(emb.weight, "exp_avg") == nullptr, "Optimizer::state");
}

void files() {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "xtgrad_containers";
    std::filesystem::create_directories(dir);
    const std::string f = (dir / "f.npy").string(), i = (dir / "i.npy").string(), m = (dir / "m.npy").string();
    save_npy(f, Array(xt::ones<float>({2})));
    save_npy(i, Ids{1, 2});
    save_npy(m, Mask(xt::ones<bool>({2})));
    expect(load_npy_float(f)(1) == 1.f && load_npy_ids(i)(1) == 2 && load_npy_mask(m)(0), "load_npy_*");
    expect(to_float(read_npy(f)).size() == 2 && to_ids(read_npy(i)).size() == 2 && to_mask(read_npy(m)).size() == 2,
           "to_float, to_ids, to_mask");
    const std::string st = (dir / "t.safetensors").string();
    save_safetensors(st, NamedArrays{{"w", Array(xt::ones<float>({2}))}});
    expect(load_safetensors(st).tensors.at(0).second(0) == 1.f, "safetensors");
    std::filesystem::remove_all(dir);
}

void masks_and_tutorials() {
    const Ids seq = {{1, 2, 0}};
    expect(nn::key_padding_mask(seq, seq, "consumer").shape()[2] == 3 && nn::subsequent_mask(seq, "consumer")(0, 0, 1) &&
               nn::decoder_self_mask(seq, "consumer").size() == 9,
           "nn masks");
    expect(nn::tutorial_a::padding_mask(seq, seq).size() == 9 && nn::tutorial_a::sequence_mask(seq).size() == 9 &&
               nn::tutorial_a::decoder_self_mask(seq).size() == 9,
           "tutorial A masks");
    expect(nn::tutorial_b::generate_mask(seq, seq).tgt_mask.size() == 9 && nn::tutorial_b::shift_targets(seq).input.size() == 2,
           "tutorial B masks");
    expect(nn::tutorial_c::get_attn_pad_mask(seq, seq).size() == 9 && nn::tutorial_c::get_attn_subsequent_mask(seq).size() == 9 &&
               nn::tutorial_c::get_dec_self_attn_mask(seq).size() == 9 && nn::tutorial_c::positions(seq).size() == 3,
           "tutorial C masks");
    expect(nn::parallel::select_rows(seq, {0}).size() == 3, "select_rows");
    using nn::tutorial_d::AttentionMask;
    nn::tutorial_d::set_warning_handler([](const std::string&) {});  // the byte mask's deprecation
    const nn::tutorial_d::ByteMask bytes = xt::zeros<std::uint8_t>({2, 2});
    expect(AttentionMask(bytes).from_bytes() && AttentionMask(bytes).masked().size() == 4, "AttentionMask(ByteMask)");
    expect(AttentionMask(Mask(xt::zeros<bool>({2, 2}))).is_bool(), "AttentionMask(Mask)");
    expect(AttentionMask(Tensor(Array(xt::zeros<float>({2, 2})))).defined(), "AttentionMask(Tensor)");
}

}  // namespace

int main() {
    tensors_and_ops();
    files();
    masks_and_tutorials();
    if (failures == 0) std::printf("every public function that takes a container links and runs\n");
    return failures == 0 ? 0 : 1;
}
