// packed_b_probe: two threads on one product, three ways. gemm/gemm_door.hpp's split_product
// gives each thread one half of C, one single-threaded dnnl_sgemm each, and each call packs its
// part of B again; when the host slows one core, the other waits at the end (docs/performance.md,
// "Two threads on the Zen 5"). Smaller pieces handed out as threads come free would balance that,
// but per dnnl_sgemm call they pay B's packing again. oneDNN 2.6 has no packed-B sgemm; its matmul
// primitive takes B in its own blocked layout (weights format "any"), reordered once, so pieces
// pay no packing. This times:
//   sgemm 1 thread | sgemm halves (what xtgrad does) | B reordered once, primitive halves |
//   B reordered once, primitive pieces of --piece rows taken dynamically by 2 threads |
//   primitive halves on B packed before
// the reorder included in both primitive columns (a weight changes every step) and shown alone,
// at tutorial D's shapes (seed-d: 640 decoder rows, 320 encoder rows, d 512, d_ff 2048). The last
// column is B kept packed while its weight is unchanged (inference) against what xtgrad runs
// then: for y = x·Wᵀ the sgemm halves on Wᵀ kept (autograd/transposed_weights.hpp), else the
// halves as stored.
// "bits": whether the pieces give the primitive's one-call bits (they must not depend on the
// thread count, so pieces would have to be cut the same way on any); "copies of B": the layouts
// the row counts chose, each reordered (one is the point). Built with -Dgemm=onednn.
//
//   build/bench/packed_b_probe [--reps R] [--piece ROWS]
#include <xtgrad/gemm/blas.hpp>
#include <xtgrad/gemm/transpose.hpp>
#include <xtgrad/threads/parallel.hpp>
#include "bench/timing.hpp"
#include "examples/common/cli.hpp"

#include "examples/common/cli11.hpp"
#include <fmt/core.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace xtgrad;
using bench::median;
using bench::ms_of;
using bench::randn_buffer;

namespace {

using dnnl::memory;

struct Case {
    const char* what;
    int M, N, K;
    bool trans_a, trans_b;  // A stored (K, M); B stored (N, K), as a Linear's weight in x·Wᵀ
};

// C (rows, N) = A (rows, K) · B, B in the layout the primitive chose ("any"), A and C row-major
// slices with the product's leading dimensions.
struct Primitive {
    dnnl::matmul product;
    memory::desc a, b, c;
};

Primitive make_primitive(const dnnl::engine& engine, int rows, int N, int K, bool trans_a, int lda, int ldc) {
    const memory::desc a({rows, K}, memory::data_type::f32, trans_a ? memory::dims{1, lda} : memory::dims{lda, 1});
    const memory::desc b({K, N}, memory::data_type::f32, memory::format_tag::any);
    const memory::desc c({rows, N}, memory::data_type::f32, memory::dims{ldc, 1});
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine);
    return {dnnl::matmul(pd), a, pd.weights_desc(), c};
}

// The halves split_product cuts: rows when C is at least as tall as wide, else columns, at a
// multiple of 16.
int half_of(int extent) { return (extent / 2 + 15) / 16 * 16; }

int run(int reps, int piece) {
    set_num_threads(2);
    set_blas_threads(1);
    const Case cases[] = {
        {"forward y = x WT, feed-forward's first (decoder)", 640, 2048, 512, false, true},
        {"forward y = x WT, feed-forward's second (decoder)", 640, 512, 2048, false, true},
        {"forward y = x WT, projection (decoder)", 640, 512, 512, false, true},
        {"forward y = x WT, projection (encoder)", 320, 512, 512, false, true},
        {"dx = dy W, feed-forward's first (decoder)", 640, 512, 2048, false, false},
        {"dx = dy W, projection (decoder)", 640, 512, 512, false, false},
        {"dW1 reoriented: xT dy (decoder)", 512, 2048, 640, true, false},
    };
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    fmt::print("2 threads (xtgrad's pool), {} runs each, median ms; primitive pieces of {} rows; the reorder of B "
               "is inside both primitive columns\n", reps, piece);
    fmt::print("{:<50} {:>14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>5} {:>6} {:>9}\n", "product", "(M, N, K)", "sgemm 1t",
               "halves", "reorder", "B packed", "B packed", "pieces /", "bits", "copies", "B kept");
    fmt::print("{:<50} {:>14} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>5} {:>6} {:>9}\n", "", "", "", "(xtgrad)", "of B",
               "halves", "pieces", "halves", "", "of B", "/ xtgrad");
    for (const Case& c : cases) {
        const int M = c.M, N = c.N, K = c.K, lda = c.trans_a ? M : K, ldb = c.trans_b ? K : N, ldc = N;
        const std::vector<float> A = randn_buffer(std::size_t(M) * K, 1), B = randn_buffer(std::size_t(K) * N, 2);
        std::vector<float> C(std::size_t(M) * N), C_one(C.size()), C_pieces(C.size());
        omp_set_num_threads(1);  // every calling thread runs oneDNN on one thread (gemm_onednn.cpp)
        // One primitive per row count the pieces and halves meet, made before any timing.
        std::map<int, Primitive> primitives;
        const auto primitive = [&](int rows) -> Primitive& {
            auto it = primitives.find(rows);
            if (it == primitives.end()) it = primitives.emplace(rows, make_primitive(engine, rows, N, K, c.trans_a, lda, ldc)).first;
            return it->second;
        };
        const int row_half = half_of(M);
        for (int rows : {M, row_half, M - row_half}) primitive(rows);
        for (int m0 = 0; m0 < M; m0 += piece) primitive(std::min(piece, M - m0));
        // B packed once per layout the primitives chose (a row count may choose another: then its
        // pieces read a second copy, reordered too and timed in).
        const memory::desc stored_desc({K, N}, memory::data_type::f32,
                                       c.trans_b ? memory::dims{1, ldb} : memory::dims{ldb, 1});
        memory stored(stored_desc, engine, const_cast<float*>(B.data()));
        std::vector<std::pair<memory, dnnl::reorder>> copies;
        std::map<int, std::size_t> copy_of;  // rows -> its copy of B
        for (const auto& [rows, p] : primitives) {
            std::size_t i = 0;
            while (i < copies.size() && !(copies[i].first.get_desc() == p.b)) ++i;
            if (i == copies.size()) {
                memory packed(p.b, engine);
                copies.emplace_back(packed, dnnl::reorder(stored, packed));
            }
            copy_of[rows] = i;
        }
        const auto sgemm_block = [&](int m0, int m1, int n0, int n1) {
            const float* a = c.trans_a ? A.data() + m0 : A.data() + std::size_t(m0) * lda;
            const float* b = c.trans_b ? B.data() + std::size_t(n0) * ldb : B.data() + n0;
            dnnl_sgemm(c.trans_a ? 'T' : 'N', c.trans_b ? 'T' : 'N', m1 - m0, n1 - n0, K, 1.f, a, lda, b, ldb, 0.f,
                       C.data() + std::size_t(m0) * ldc + n0, ldc);
        };
        const auto primitive_rows = [&](int m0, int rows, std::vector<float>& out) {
            const Primitive& p = primitive(rows);
            const float* a = c.trans_a ? A.data() + m0 : A.data() + std::size_t(m0) * lda;
            memory a_mem(p.a, engine, const_cast<float*>(a)), c_mem(p.c, engine, out.data() + std::size_t(m0) * ldc);
            p.product.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, copies[copy_of.at(rows)].first}, {DNNL_ARG_DST, c_mem}});
        };
        const auto on_two_threads = [&](const std::function<void(int)>& thread_work) {
            parallel_for(2, 1, [&](std::size_t t0, std::size_t t1) {
                omp_set_num_threads(1);
                for (std::size_t t = t0; t < t1; ++t) thread_work(static_cast<int>(t));
            });
        };
        // Wᵀ (K, N) as inference keeps it, for the products x·Wᵀ: A·(Wᵀ) in halves (xtgrad's split)
        std::vector<float> Wt(c.trans_b ? B.size() : 0);
        if (c.trans_b) detail::transpose(B.data(), N, K, K, Wt.data(), N);
        const auto wt_halves = [&] {
            on_two_threads([&](int t) {
                const int m0 = M >= N && t == 1 ? row_half : 0, m1 = M >= N && t == 0 ? row_half : M;
                const int n0 = M < N && t == 1 ? half_of(N) : 0, n1 = M < N && t == 0 ? half_of(N) : N;
                dnnl_sgemm('N', 'N', m1 - m0, n1 - n0, K, 1.f, A.data() + std::size_t(m0) * lda, lda, Wt.data() + n0, N,
                           0.f, C.data() + std::size_t(m0) * ldc + n0, ldc);
            });
        };
        const auto sgemm_one = [&] { sgemm_block(0, M, 0, N); };
        const auto sgemm_halves = [&] {
            on_two_threads([&](int t) {
                if (M >= N) t == 0 ? sgemm_block(0, row_half, 0, N) : sgemm_block(row_half, M, 0, N);
                else t == 0 ? sgemm_block(0, M, 0, half_of(N)) : sgemm_block(0, M, half_of(N), N);
            });
        };
        const auto reorder = [&] {
            for (auto& [packed, pack] : copies) pack.execute(stream, stored, packed);
        };
        const auto kept_halves = [&] {
            on_two_threads([&](int t) { t == 0 ? primitive_rows(0, row_half, C_one) : primitive_rows(row_half, M - row_half, C_one); });
        };
        const auto packed_halves = [&] {
            reorder();
            kept_halves();
        };
        const auto packed_pieces = [&] {
            reorder();
            std::atomic<int> next{0};
            on_two_threads([&](int) {
                for (int m0; (m0 = next.fetch_add(piece)) < M;) primitive_rows(m0, std::min(piece, M - m0), C_pieces);
            });
        };
        reorder();
        primitive_rows(0, M, C_one);
        packed_pieces();
        const bool same_bits = std::memcmp(C_one.data(), C_pieces.data(), C.size() * sizeof(float)) == 0;
        sgemm_one();
        double worst = 0;
        for (std::size_t i = 0; i < C.size(); ++i) worst = std::max(worst, double(std::abs(C[i] - C_one[i])));
        if (worst > 1e-3) fmt::print("  (the primitive differs from dnnl_sgemm by {:.3g})\n", worst);
        std::vector<double> t_one, t_halves, t_reorder, t_packed_halves, t_pieces, t_kept, t_wt;
        for (int r = 0; r < reps; ++r) {  // alternate, so a busy machine slows all alike
            t_one.push_back(ms_of(sgemm_one));
            t_halves.push_back(ms_of(sgemm_halves));
            t_reorder.push_back(ms_of(reorder));
            t_packed_halves.push_back(ms_of(packed_halves));
            t_pieces.push_back(ms_of(packed_pieces));
            t_kept.push_back(ms_of(kept_halves));
            if (c.trans_b) t_wt.push_back(ms_of(wt_halves));
        }
        const double xtgrad_kept = c.trans_b ? median(t_wt) : median(t_halves);
        fmt::print("{:<50} {:>14} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>10.2f}x {:>5} {:>6} {:>8.2f}x\n", c.what,
                   fmt::format("{}x{}x{}", M, N, K), median(t_one), median(t_halves), median(t_reorder),
                   median(t_packed_halves), median(t_pieces), median(t_pieces) / median(t_halves),
                   same_bits ? "same" : "other", copies.size(), median(t_kept) / xtgrad_kept);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 15, piece = 64;
    CLI::App app{"Two threads on one product: dnnl_sgemm's halves against B packed once (oneDNN's matmul primitive) "
                 "in halves or in dynamic pieces.", "packed_b_probe"};
    app.add_option("--reps", reps, "timed runs per way")->capture_default_str()->transform(cli::count_in(1, 10000));
    app.add_option("--piece", piece, "rows per dynamic piece")->capture_default_str()->transform(cli::count_in(16, 4096));
    return cli::run_main(app, argc, argv, [&] {
        // it compares oneDNN's two doors: on oneDNN only
        if (std::string(gemm_backend_name()) != "onednn")
            cli::usage_error("packed_b_probe measures oneDNN, and the GEMM backend is {} here "
                             "(XTGRAD_GEMM_BACKEND): unset it", gemm_backend_name());
        return run(reps, piece);
    });
}
