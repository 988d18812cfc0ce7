#include <xtgrad/nn/tutorial_c/showgraph.hpp>

#include <xtgrad/autograd/error.hpp>

#include <xtensor/xview.hpp>

namespace xtgrad::nn::tutorial_c {

AttentionMap attention_map(const std::vector<Tensor>& attns, const std::vector<std::string>& x_words,
                           const std::vector<std::string>& y_words, const ShowgraphOptions& options) {
    const long layers = static_cast<long>(attns.size());
    const long layer = options.layer < 0 ? layers + options.layer : options.layer;
    if (layer < 0 || layer >= layers)
        fail("showgraph: layer {} is out of range: the model returned {} layers of attention weights", options.layer,
             layers);
    const Tensor& a = attns[static_cast<std::size_t>(layer)];
    const Shape s = a.shape();
    if (s.size() != 4) fail("showgraph: layer {}'s attention weights have shape {}, expected (batch, heads, Lq, Lk)", layer, shape_str(s));
    if (options.batch >= s[0]) fail("showgraph: sentence {} is out of range: the batch has {} (shape {})", options.batch, s[0], shape_str(s));
    if (options.head >= s[1]) fail("showgraph: head {} is out of range: the layer has {} heads (shape {})", options.head, s[1], shape_str(s));
    AttentionMap map;
    map.weights = xt::view(a.data(), options.batch, options.head, xt::all(), xt::all());
    map.key_words = x_words;
    map.query_words = y_words;
    map.scale = options.scale;
    map.title = options.title.empty() ? fmt::format("layer {}, head {}", layer, options.head) : options.title;
    map.query_axis = options.query_axis;
    map.key_axis = options.key_axis;
    const Mask& m = options.masked;
    if (m.dimension() == 3) {  // the model's (B, Lq, Lk): this sentence's
        if (m.shape(0) != s[0] || m.shape(1) != s[2] || m.shape(2) != s[3])
            fail("showgraph: the mask of shape {} does not fit layer {}'s attention weights {} (batch, heads, Lq, Lk)",
                 shape_str(m.shape()), layer, shape_str(s));
        map.masked = xt::view(m, options.batch, xt::all(), xt::all());
    } else if (m.dimension() == 2) {
        map.masked = m;
    } else if (m.dimension() != 0) {
        fail("showgraph: the mask must be (B, Lq, Lk) or (Lq, Lk), got {}", shape_str(m.shape()));
    }
    check_attention_map(map, "showgraph");
    return map;
}

AttentionMap showgraph(const std::vector<Tensor>& attns, const std::vector<std::string>& x_words,
                       const std::vector<std::string>& y_words, const std::string& svg_path,
                       const ShowgraphOptions& options) {
    AttentionMap map = attention_map(attns, x_words, y_words, options);
    write_attention_svg(svg_path, map);
    return map;
}

}  // namespace xtgrad::nn::tutorial_c
