/* Chapter 07: the bf16 trainer's dW1 product inside the backward kernel
 * (part1_fused/08_backward_kernel.cuh), on tensor cores: mma.sync m16n8k16 of chapter 05
 * (05_matmul_tiled/tensor_cores/02_mma.cuh), fed by ldmatrix from the operands the kernel
 * already holds in shared memory.
 *
 *      dW1 tile (BM pixels x BN units)  =  x^T (BM x k_rows)  .  dz1 (k_rows x BN)
 *
 * Both operands lie in shared memory k-major, one batch row after the other: a row of x
 * (its BM pixels, bf16, as the gather stored them) and a row of dz1 (BN units, rounded to
 * bf16 as the block makes it). mma wants A row-major in (m, k) and B column-major in (k, n),
 * that is, pairs of neighbours along k in each register; k-major rows give neighbours along
 * m and n instead. ldmatrix.trans reads the same 8 x 8 matrices as ldmatrix and hands each
 * lane its pair down a column instead of along a row: the transpose happens on the way into
 * the registers, so neither x nor dz1 is ever stored transposed.
 *
 * Rows are padded by 16 bytes (MLP_MMA_PAD bf16): the eight rows one ldmatrix reads then
 * start 4 banks apart (a row of 64 + 8 bf16 is 36 words, of 128 + 8 is 68), and cover all
 * 32 banks without a conflict. Unpadded, the 128- or 256-byte rows would put all eight in
 * the same four banks. */
#ifndef CH07_KERNELS_BACKWARD_MMA_CUH
#define CH07_KERNELS_BACKWARD_MMA_CUH

/* MlpBf16; chapter 05's mma.sync (tensor_cores/02_mma.cuh) */
#include "07_mnist_mlp/part2_tensor_cores/01_tc_kernels.cuh"

#define MLP_MMA_PAD 8 /* bf16 of padding at the end of each shared row */

/* Four 8 x 8 matrices of 16-bit elements, each lane's pair taken down a column. */
__device__ __forceinline__ void mlp_ldsm_x4_trans(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* How the block's warps share the tile: 32 rows (two 16-row m-tiles) each, as many warps
 * across as that leaves: 64x128 tiles as 2 x 2 warps of 32 x 64, 32x128 as 1 x 4 of 32 x 32. */
template <typename Cfg> struct MlpMmaWarps {
    static constexpr int M = Cfg::BM / 32, N = Cfg::THREADS / 32 / M, WN = Cfg::BN / N, NT = WN / 8;
    static constexpr int A_ROW = Cfg::BM + MLP_MMA_PAD, B_ROW = Cfg::BN + MLP_MMA_PAD; /* bf16 */
    static_assert(Cfg::BM % 32 == 0 && M * N * 32 == Cfg::THREADS && NT % 2 == 0,
                  "whole 32 x 16 warp tiles");
};

/* The warp's 32 x WN outputs over the block's k_rows rows (a multiple of 16): per 16 rows,
 * two ldmatrix.x4.trans for A (one a 16 x 16 m-tile: registers (m 0-7, k 0-7), (m 8-15,
 * k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15), 02_mma.cuh's a[0..3]) and NT / 2 for B (one
 * a pair of 8-column n-tiles: (k 0-7), (k 8-15) of the first, then of the second), then
 * 2 x NT mma. Lane l gives the row address of matrix l / 8, row l % 8. */
template <typename Cfg>
__device__ __forceinline__ void mlp_mma_product(const bf16 *As, const bf16 *Bs, int k_rows,
                                                float (&acc)[2][MlpMmaWarps<Cfg>::NT][4])
{
    typedef MlpMmaWarps<Cfg> W;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, mat = lane / 8, row = lane % 8;
    const int m_base = warp % W::M * 32, n_base = warp / W::M * W::WN;
    uint32_t a_addr = (uint32_t)__cvta_generic_to_shared(As + (row + mat / 2 * 8) * W::A_ROW +
                                                         m_base + mat % 2 * 8);
    uint32_t b_addr = (uint32_t)__cvta_generic_to_shared(Bs + (row + mat % 2 * 8) * W::B_ROW +
                                                         n_base + mat / 2 * 8);
    for (int k = 0; k < k_rows; k += 16) {
        uint32_t a[2][4], b[W::NT][2], r[4];
#pragma unroll
        for (int i = 0; i < 2; i++) mlp_ldsm_x4_trans(a[i], a_addr + (k * W::A_ROW + i * 16) * 2);
#pragma unroll
        for (int j = 0; j < W::NT / 2; j++) {
            mlp_ldsm_x4_trans(r, b_addr + (k * W::B_ROW + j * 16) * 2);
            b[2 * j][0] = r[0], b[2 * j][1] = r[1], b[2 * j + 1][0] = r[2], b[2 * j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < W::NT; j++) tc_mma_16x8<bf16>(acc[i][j], a[i], b[j]);
    }
}

/* The warp's accumulators into the block's BM x BN fp32 tile in shared memory (BN floats a
 * row): c[0], c[1] at row g, columns 2q, 2q + 1 of each 16 x 8 tile, c[2], c[3] 8 rows down. */
template <typename Cfg> __device__ __forceinline__ void
mlp_mma_stage(float *stage, const float (&acc)[2][MlpMmaWarps<Cfg>::NT][4])
{
    typedef MlpMmaWarps<Cfg> W;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    const int m_base = warp % W::M * 32, n_base = warp / W::M * W::WN;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < W::NT; j++) {
            float *p = stage + (m_base + i * 16 + g) * Cfg::BN + n_base + j * 8 + 2 * q;
            *(float2 *)p = make_float2(acc[i][j][0], acc[i][j][1]);
            *(float2 *)(p + 8 * Cfg::BN) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}

/* The tile staged in shared memory (BM x BN, BN floats a row) added into C (rows x cols)
 * at (m0, n0) with 16-byte atomics where the rows allow (vec), else float by float. */
template <int BM, int BN, int THREADS> __device__ __forceinline__ void
mlp_stage_atomic_add(float *C, const float *stage, int m0, int n0, int rows, int cols, bool vec)
{
    constexpr int QR = BN / 4;
    for (int i = threadIdx.x; i < BM * QR; i += THREADS) {
        int r = m0 + i / QR, c = n0 + i % QR * 4;
        if (r >= rows) continue;
        float4 v = *(const float4 *)(stage + i * 4);
        float *p = C + (size_t)r * cols + c;
        if (vec && c + 3 < cols) {
            sgemm_atomic_add4(p, v);
        } else {
            const float w[4] = {v.x, v.y, v.z, v.w};
            for (int q = 0; q < 4 && c + q < cols; q++) atomicAdd(p + q, w[q]);
        }
    }
}

/* W1t (hidden x 784, bf16), the forward product's B operand, rewritten from the tile of
 * new W1 values staged in shared memory (BM pixels x BN units, BN floats a row): thread u
 * writes unit n0 + u's row, 8 pixels (16 bytes) a store; it reads a column of the stage,
 * consecutive threads consecutive columns (no bank conflicts). */
template <int BM, int BN> __device__ __forceinline__ void
mlp_w1t_from_stage(bf16 *w1t, const float *stage, int m0, int n0, int hidden)
{
    static_assert(IDX_PIXELS % 8 == 0 && BM % 8 == 0, "whole 16-byte pieces of a W1t row");
    int u = threadIdx.x, j = n0 + u;
    if (u >= BN || j >= hidden) return;
#pragma unroll
    for (int m = 0; m < BM; m += 8) {
        if (m0 + m >= IDX_PIXELS) break;
        float v[8];
#pragma unroll
        for (int q = 0; q < 8; q++) v[q] = stage[(m + q) * BN + u];
        MlpBf16::store8(w1t + (size_t)j * IDX_PIXELS + m0 + m, v);
    }
}

#endif
