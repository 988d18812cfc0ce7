// Transposes in 16 x 16 tiles: a tile's 16 source rows (64-byte lines) and 16 destination rows
// stay in L1 while it is copied, so every cache line is read and written once. Within a tile the
// loop runs along the destination's row (contiguous stores; GCC turns the strided loads into
// vector gathers or scalar loads, either of which is far from the products' cost: ~0.1 ms per
// 512 x 512 against the 1-8 ms product it reorients).
#include <xtgrad/gemm/transpose.hpp>

#include <algorithm>
#include <cstddef>

namespace xtgrad::detail {

namespace {
constexpr int kTile = 16;

// The tile loop shared by both: visit(r, c) for every (r, c) of a rows x cols source, tile by
// tile, destination rows (c) outermost within a tile.
template <class Visit>
void by_tiles(int rows, int cols, const Visit& visit) {
    for (int r0 = 0; r0 < rows; r0 += kTile) {
        const int r1 = std::min(rows, r0 + kTile);
        for (int c0 = 0; c0 < cols; c0 += kTile) {
            const int c1 = std::min(cols, c0 + kTile);
            for (int c = c0; c < c1; ++c)
                for (int r = r0; r < r1; ++r) visit(r, c);
        }
    }
}
}  // namespace

void transpose(const float* src, int rows, int cols, int ld_src, float* dst, int ld_dst) {
    by_tiles(rows, cols, [&](int r, int c) {
        dst[static_cast<std::ptrdiff_t>(c) * ld_dst + r] = src[static_cast<std::ptrdiff_t>(r) * ld_src + c];
    });
}

void add_transposed(const float* T, int rows, int cols, int ldt, float beta, float* C, int ldc) {
    // C's rows are the destination here: tile over C (rows, cols), reading T's columns
    if (beta == 0.f)
        transpose(T, cols, rows, ldt, C, ldc);
    else
        by_tiles(cols, rows, [&](int t_row, int t_col) {
            float& c = C[static_cast<std::ptrdiff_t>(t_col) * ldc + t_row];
            c = T[static_cast<std::ptrdiff_t>(t_row) * ldt + t_col] + beta * c;
        });
}

}  // namespace xtgrad::detail
