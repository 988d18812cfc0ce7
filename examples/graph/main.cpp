// Graph: see the backward graph of one encoder layer of tutorial C's Transformer.
//
//   build/examples/graph [--out DIR] [--module encoder.layers.0] [--depth N] [--trace] [--no-render]
//
// Builds the Winter Games Transformer at a small size (d_model 16, 2 heads, one encoder and
// one decoder layer), runs forward and backward on 'I like the 2022 Beijing Winter Games'
// keeping the graph, with a TraceTable recording the gradient that reached every node, then
// writes DIR/encoder_layer.dot: the nodes of --module, clustered by sub-module, parameters
// by name, each labelled with its output shape, |value| and |grad|. If Graphviz's `dot` is
// installed it also renders DIR/encoder_layer.svg. --trace prints the trace table. A --module
// that names no module is a usage error (exit 2) listing the modules where its path stops.
#include <xtgrad/io/run_program.hpp>
#include "examples/common/cli.hpp"
#include "examples/common/module_path.hpp"
#include <xtgrad/nn/tutorial_c/tutorial_c.hpp>
#include <xtgrad/xtgrad.hpp>

#include "examples/common/cli11.hpp"

#include <filesystem>
#include <limits>
#include <optional>
#include <string>

using namespace xtgrad;
namespace tc = xtgrad::nn::tutorial_c;

int main(int argc, char** argv) {
    std::string out = "graph_out", module = "encoder.layers.0";
    int depth = -1;
    bool trace = false, no_render = false;
    CLI::App app{"Draw the backward graph of one layer of tutorial C's Transformer (Graphviz DOT).", "graph"};
    app.add_option("--out", out, "output folder")->capture_default_str();
    app.add_option("--module", module, "module path to draw (\"\" for the whole model)")->capture_default_str();
    app.add_option("--depth", depth, "stop this many nodes below the module's top (-1: no limit)")
        ->capture_default_str()
        ->transform(cli::count_in(-1, std::numeric_limits<int>::max()));
    app.add_flag("--trace", trace, "print the backward as a table");
    app.add_flag("--no-render", no_render, "write the .dot only");
    // run_main: an error is "graph: message" and exit 1; output that could not be written is exit 1
    return cli::run_main(app, argc, argv, [&] {
        manual_seed(0);
        tc::Transformer model(tc::Config().d_model(16).d_ff(32).d_k(8).d_v(8).n_layers(1).n_heads(2));
        examples::check_module_path(model, module);
        // 'I like the 2022 Beijing Winter Games' -> 'S 我 爱 2022 北京 冬 奥会' -> '我 爱 2022 北京 冬 奥会 E'
        const Ids enc{{1, 2, 3, 4, 5, 6, 7}}, dec{{7, 1, 2, 3, 4, 5, 6}}, target{1, 2, 3, 4, 5, 6, 8};
        Tensor loss = cross_entropy(model.forward(enc, dec).logits, target);

        TraceTable table;
        loss.backward(/*retain_graph=*/true);  // keep the graph to draw it
        if (trace) table.print();

        std::filesystem::create_directories(out);
        const std::string dot = out + "/encoder_layer.dot", svg = out + "/encoder_layer.svg";
        DotOptions o;
        o.module_prefix = module;
        o.max_depth = depth;
        o.values = o.grads = true;
        o.trace = &table;
        o.title = fmt::format("tutorial C, {} (loss {:.4f})", module.empty() ? "Transformer" : module, loss.item());
        write_dot(dot, loss, o);
        fmt::print("wrote {}\n", cli::shown(dot));
        if (no_render) return 0;
        // No shell: --out may hold any character (io/run_program.hpp), and may start with '-'
        // (e.g. "-rf"): file_argument keeps it a file for dot.
        std::error_code stale;
        std::filesystem::remove(svg, stale);  // an earlier run's picture must not pass for this one's
        const std::optional<int> status = run_program({"dot", "-Tsvg", file_argument(dot), "-o", file_argument(svg)});
        if (!status) {
            fmt::print("Graphviz's dot is not installed; render with: dot -Tsvg '{}' -o '{}'\n", cli::shown(dot), cli::shown(svg));
            return 0;
        }
        if (*status != 0) fail("dot failed on {} (exit status {})", dot, *status);
        // a dot that exits 0 without writing (not Graphviz's, or its output cut) is no rendering
        if (std::error_code e; !std::filesystem::is_regular_file(svg, e) || std::filesystem::file_size(svg, e) == 0)
            fail("dot exited 0 but wrote no {}", svg);
        fmt::print("wrote {}\n", cli::shown(svg));
        return 0;
    });
}
