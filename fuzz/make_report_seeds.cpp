// Writes report_compare_fuzzer's seeds: report data as RunReport writes it (scalars with nan and
// inf, per-module statistics, an attention map, a graph's nodes, notes, an error outcome), each as
// a downloaded JSON and as a report.html, and a comparison page.
//   make_report_seeds DIR
#include <xtgrad/report/page.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_report_seeds DIR\n");
        return 2;
    }
    const std::string dir = argv[1];
    const std::vector<std::string> data{
        R"j({"format":"xtgrad-report 1","title":"t","live":false,"outcome":"finished","error":null,"notes":[],)j"
        R"j("scalars":{"loss":{"step":[1,2,3],"value":[2.5,1.25,"nan"]},"lr":{"step":[1],"value":[0.001]}},)j"
        R"j("stats":{"step":[1,2],"modules":["(model)","fc"],"grad_norm":{"fc":[0.5,null]},"update_ratio":{"fc":["inf",1e-3]},)j"
        R"j("act_mean":{},"act_std":{},"act_zeros":{}},"attention":[],"graph":null})j",
        R"j({"format":"xtgrad-report 1","title":"\u00e9t\u00e9 \ufffd","live":true,"outcome":"error","error":"loss is nan",)j"
        R"j("notes":["not valid UTF-8, shown with U+FFFD: the title"],"scalars":{"val_loss":{"step":[5],"value":["-inf"]}},)j"
        R"j("stats":{"step":[],"modules":[],"grad_norm":{},"update_ratio":{},"act_mean":{},"act_std":{},"act_zeros":{}},)j"
        R"j("attention":[{"kind":"self","layer":0,"head":0,"step":1,"queries":["a","\u003c/script>"],"keys":["a","b"],)j"
        R"j("weights":[[1,0],[0.5,0.5]],"masked":[[0,1],[0,0]]}],)j"
        R"j("graph":{"step":1,"dot":"digraph {}","module":"","svg":"","note":"no dot",)j"
        R"j("nodes":{"n1":{"kind":"op","op":"AddBackward","module":"fc","shape":"(2,2)","inputs":["(2,2)"],"saved":[],"grad_norm":1.5}}}})j",
    };
    int n = 0;
    for (const std::string& d : data) {
        std::ofstream(dir + "/data" + std::to_string(n) + ".json", std::ios::binary) << d;
        std::ofstream(dir + "/report" + std::to_string(n) + ".html", std::ios::binary) << xtgrad::report::page_html(d, n == 1);
        ++n;
    }
    std::ofstream(dir + "/compare.html", std::ios::binary) << xtgrad::report::comparison_page({{"a", data[0]}, {"b", data[1]}});
    return 0;
}
