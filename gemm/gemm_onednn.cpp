// The oneDNN GEMM backend (the default; XTGRAD_GEMM_BACKEND=onednn; not in a -Dgemm=openblas
// build): dnnl_sgemm, row-major.
//
// Threads. Debian's oneDNN threads with OpenMP (libgomp), whose idle threads busy-wait
// (GOMP_SPINCOUNT, read once when libgomp loads, before any code of ours runs) on the core that
// xtgrad's pool or an OpenBLAS thread wants next: on 2 cores every op after a GEMM then waits out
// a scheduler quantum (torch needs OMP_WAIT_POLICY=PASSIVE here for that reason). So no OpenMP
// thread is ever started: every calling thread keeps its OpenMP thread count at 1 (the ICV is
// per thread in libgomp, hence the thread_local), and blas.cpp splits a big product into row or
// column blocks over xtgrad's own pool, one single-threaded dnnl_sgemm per block. One pool for
// every kernel; measured against oneDNN's own 2-thread OpenMP GEMM in docs/performance.md
// ("Design choices").
#include <xtgrad/gemm/gemm_backend.hpp>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <xtgrad/autograd/error.hpp>

namespace xtgrad::detail {

namespace {
// named: a unity build puts both backends in one file, and each calls its entry points sgemm
namespace onednn_impl {
std::atomic<int> product_threads{1};

void single_openmp_thread() {
    thread_local bool set = false;
    if (!set) {
        omp_set_num_threads(1);
        set = true;
    }
}

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
           int ldb, float beta, float* C, int ldc) {
    single_openmp_thread();
    const dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb,
                                            beta, C, ldc);
    if (status != dnnl_success)
        fail("gemm: dnnl_sgemm failed (status {}) on ({}, {}, {}) lda {} ldb {} ldc {}", static_cast<int>(status), M, N,
             K, lda, ldb, ldc);
}

// ---- bf16 products (autocast, autograd/autocast.hpp) ----------------------------------------
// oneDNN's public GEMM functions are fp32 and integer only; its bf16 product is the matmul
// primitive: src (M, K) bf16 · weights (K, N) bf16 -> dst (M, N) f32, here with the row-major
// layouts of gemm's contract given as strides (a transposed operand is the same buffer with its
// strides swapped), alpha as the output scale and beta as a "sum" post-op. On an AVX512-BF16 CPU
// oneDNN picks its brgemm kernel (vdpbf16ps: two bf16 products per fp32 lane and instruction).
// A bias goes in as the matmul's bias argument, added to the finished fp32 sum in the kernel's
// epilogue: the bits of a separate pass after it, without the pass over C (a Linear's output,
// read and written again: bench probe on 640 x 2048 x 512, 3.0 -> 2.3 ms). Creating a primitive
// takes 0.1-0.4 ms (more than a small product), so each thread keeps the primitives of the shapes
// it met; a training step meets a few dozen.

struct Bf16Key {
    int M, N, K, lda, ldb, ldc;
    bool trans_a, trans_b, bias;
    float alpha, beta;
    bool operator==(const Bf16Key& o) const {
        return M == o.M && N == o.N && K == o.K && lda == o.lda && ldb == o.ldb && ldc == o.ldc &&
               trans_a == o.trans_a && trans_b == o.trans_b && bias == o.bias &&
               std::memcmp(&alpha, &o.alpha, sizeof alpha) == 0 && std::memcmp(&beta, &o.beta, sizeof beta) == 0;
    }
};

const dnnl::engine& cpu_engine() {
    static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

struct Bf16Matmul {
    dnnl::memory::desc a, b, c, bias;  // bias: zero where the product has none
    dnnl::matmul product;
};

Bf16Matmul make_bf16_matmul(const Bf16Key& k) {
    using dt = dnnl::memory::data_type;
    using dims = dnnl::memory::dims;
    // op(A) (M, K): A row-major (M, K) with row stride lda, or Aᵀ of a row-major (K, M)
    const dnnl::memory::desc a({k.M, k.K}, dt::bf16, k.trans_a ? dims{1, k.lda} : dims{k.lda, 1});
    // op(B) (K, N): B row-major (K, N), or Bᵀ of a row-major (N, K) (a Linear weight)
    const dnnl::memory::desc b({k.K, k.N}, dt::bf16, k.trans_b ? dims{1, k.ldb} : dims{k.ldb, 1});
    const dnnl::memory::desc c({k.M, k.N}, dt::f32, dims{k.ldc, 1});
    const dnnl::memory::desc bias = k.bias ? dnnl::memory::desc({1, k.N}, dt::f32, dims{k.N, 1}) : dnnl::memory::desc();
    dnnl::primitive_attr attr;
    if (k.alpha != 1.f) attr.set_output_scales(0, {k.alpha});
    if (k.beta != 0.f) {
        dnnl::post_ops sum;
        sum.append_sum(k.beta);
        attr.set_post_ops(sum);
    }
    const dnnl::matmul::primitive_desc pd(k.bias ? dnnl::matmul::desc(a, b, bias, c) : dnnl::matmul::desc(a, b, c), attr,
                                          cpu_engine());
    // A reference implementation would be orders of magnitude slower: say so instead.
    if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0)
        fail("gemm (bf16): oneDNN has only its reference kernel ({}) for the bf16 product ({}, {}, {}) on this CPU",
             pd.impl_info_str(), k.M, k.N, k.K);
    return {a, b, c, bias, dnnl::matmul(pd)};
}

// This thread's primitives, most recent last; a bounded list (a step's shapes fit many times).
const Bf16Matmul& bf16_matmul(const Bf16Key& key) {
    constexpr std::size_t kKept = 256;
    thread_local std::vector<std::pair<Bf16Key, Bf16Matmul>> kept;
    for (auto& [k, p] : kept)
        if (k == key) return p;
    if (kept.size() == kKept) kept.erase(kept.begin());
    kept.emplace_back(key, make_bf16_matmul(key));
    return kept.back().second;
}


void gemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const std::uint16_t* A, int lda,
               const std::uint16_t* B, int ldb, const float* bias, float beta, float* C, int ldc) {
    single_openmp_thread();
    const Bf16Key key{M, N, K, lda, ldb, ldc, trans_a, trans_b, bias != nullptr, alpha, beta};
    try {
        const Bf16Matmul& m = bf16_matmul(key);
        thread_local dnnl::stream stream(cpu_engine());
        // oneDNN's memory objects take non-const handles; the primitive only reads src and weights
        const dnnl::memory a(m.a, cpu_engine(), const_cast<std::uint16_t*>(A));
        const dnnl::memory b(m.b, cpu_engine(), const_cast<std::uint16_t*>(B));
        const dnnl::memory c(m.c, cpu_engine(), C);
        if (bias) {
            const dnnl::memory b_vec(m.bias, cpu_engine(), const_cast<float*>(bias));
            m.product.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_BIAS, b_vec}, {DNNL_ARG_DST, c}});
        } else {
            m.product.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
        }
        stream.wait();
    } catch (const dnnl::error& e) {
        fail("gemm (bf16): oneDNN's matmul failed (status {}: {}) on ({}, {}, {}) lda {} ldb {} ldc {}",
             static_cast<int>(e.status), e.what(), M, N, K, lda, ldb, ldc);
    }
}

// ---- bf16 products on a packed B (inference's weights, autograd/packed_weights.hpp) ----------
// With B in plain strides the matmul copies B into its blocked layout inside every call; given B
// already in that layout (format_tag::any, then a reorder), it reads it as it is: on the AMX
// guest (docs/performance.md) tutorial D's forward products on one thread 609-675 -> 685-820
// GFLOP/s (bench probe, hot), bf16 inference 1.10-1.22x faster (bench/compare_builds.sh --switches).
// The layout is the one the primitive for M rows chose; oneDNN's brgemm picks the same for
// every M at N >= 100 (for N = 64 it changes with M), and a thread's share of the rows runs on
// it through a primitive created with that layout, or says it cannot (false).

struct PackedB {
    dnnl::memory::desc layout;
    dnnl::memory values;  // owns the packed copy
};

std::shared_ptr<const void> pack_bf16_b(bool trans_b, int M, int N, int K, const std::uint16_t* B, int ldb) {
    single_openmp_thread();
    using dt = dnnl::memory::data_type;
    using dims = dnnl::memory::dims;
    try {
        const dnnl::memory::desc a({M, K}, dt::bf16, dims{K, 1});
        const dnnl::memory::desc any({K, N}, dt::bf16, dnnl::memory::format_tag::any);
        const dnnl::memory::desc c({M, N}, dt::f32, dims{N, 1});
        const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, any, c), cpu_engine());
        if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0) return nullptr;
        auto packed = std::make_shared<PackedB>(PackedB{pd.weights_desc(), dnnl::memory(pd.weights_desc(), cpu_engine())});
        const dnnl::memory::desc plain({K, N}, dt::bf16, trans_b ? dims{1, ldb} : dims{ldb, 1});
        dnnl::memory from(plain, cpu_engine(), const_cast<std::uint16_t*>(B));
        thread_local dnnl::stream stream(cpu_engine());
        dnnl::reorder(from, packed->values).execute(stream, from, packed->values);
        stream.wait();
        return packed;
    } catch (const dnnl::error& e) {
        if (e.status == dnnl_unimplemented) return nullptr;  // no bf16 matmul on this CPU: nothing to pack for
        fail("gemm (bf16): packing B ({}, {}) for oneDNN's matmul failed (status {}: {})", K, N,
             static_cast<int>(e.status), e.what());
    }
}

bool gemm_bf16_packed(int M, int N, int K, const std::uint16_t* A, int lda, const void* packed_b, const float* bias,
                      float* C, int ldc) {
    single_openmp_thread();
    using dt = dnnl::memory::data_type;
    using dims = dnnl::memory::dims;
    const PackedB& packed = *static_cast<const PackedB*>(packed_b);
    struct Kept {
        int M, N, K, lda, ldc;
        bool bias;
        dnnl::memory::desc layout;
        std::optional<dnnl::matmul> product;  // none: oneDNN has no fast kernel for this on the layout
    };
    // this thread's primitives on packed layouts, most recent last
    thread_local std::vector<Kept> kept;
    const Kept* hit = nullptr;
    for (const Kept& k : kept)
        if (k.M == M && k.N == N && k.K == K && k.lda == lda && k.ldc == ldc && k.bias == (bias != nullptr) &&
            k.layout == packed.layout) {
            hit = &k;
            break;
        }
    try {
        if (!hit) {
            const dnnl::memory::desc a({M, K}, dt::bf16, dims{lda, 1});
            const dnnl::memory::desc c({M, N}, dt::f32, dims{ldc, 1});
            const dnnl::memory::desc b_vec({1, N}, dt::f32, dims{N, 1});
            std::optional<dnnl::matmul> product;
            try {
                const dnnl::matmul::primitive_desc pd(
                    bias ? dnnl::matmul::desc(a, packed.layout, b_vec, c) : dnnl::matmul::desc(a, packed.layout, c),
                    cpu_engine());
                if (std::strncmp(pd.impl_info_str(), "ref", 3) != 0) product.emplace(pd);
            } catch (const dnnl::error& e) {
                if (e.status != dnnl_unimplemented) throw;
            }
            constexpr std::size_t kKept = 256;
            if (kept.size() == kKept) kept.erase(kept.begin());
            kept.push_back({M, N, K, lda, ldc, bias != nullptr, packed.layout, std::move(product)});
            hit = &kept.back();
        }
        if (!hit->product) return false;
        thread_local dnnl::stream stream(cpu_engine());
        const dnnl::memory a(dnnl::memory::desc({M, K}, dt::bf16, dims{lda, 1}), cpu_engine(),
                             const_cast<std::uint16_t*>(A));
        const dnnl::memory c(dnnl::memory::desc({M, N}, dt::f32, dims{ldc, 1}), cpu_engine(), C);
        if (bias) {
            const dnnl::memory b_vec(dnnl::memory::desc({1, N}, dt::f32, dims{N, 1}), cpu_engine(),
                                     const_cast<float*>(bias));
            hit->product->execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, packed.values}, {DNNL_ARG_BIAS, b_vec},
                                           {DNNL_ARG_DST, c}});
        } else {
            hit->product->execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, packed.values}, {DNNL_ARG_DST, c}});
        }
        stream.wait();
        return true;
    } catch (const dnnl::error& e) {
        fail("gemm (bf16): oneDNN's matmul on a packed B failed (status {}: {}) on ({}, {}, {}) lda {} ldc {}",
             static_cast<int>(e.status), e.what(), M, N, K, lda, ldc);
    }
}

const char* kernel() {
    switch (dnnl_get_effective_cpu_isa()) {
        case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
        case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
        case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
        case dnnl_cpu_isa_avx512_core: return "avx512_core";
        case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
        case dnnl_cpu_isa_avx2: return "avx2";
        default: return "older than avx2";
    }
}
void set_threads(int n) { product_threads.store(std::max(1, n)); }
int threads() { return product_threads.load(); }

}  // namespace onednn_impl
}  // namespace

const GemmBackend& onednn_backend() {
    using namespace onednn_impl;
    static const GemmBackend backend{
        "onednn", sgemm, gemm_bf16, kernel, set_threads, threads,
        /*threads_itself=*/false,
        /*slow_on_narrow_c=*/true,
        /*nt_slower_than_nn=*/true,
        /*prefers_skinny_kernels=*/false,
        pack_bf16_b,
        gemm_bf16_packed,
    };
    return backend;
}

}  // namespace xtgrad::detail
