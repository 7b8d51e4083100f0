/* Chapter 05, the fp32 ladder, step 8: warptile. Also the parameterized tile that steps
 * 8-10 and the any-shape versions share: SgemmConfig, the warp-tiled thread layout, the
 * inner product of one K slice and the epilogues, and SgemmWarptileCfg (step 8's tiles,
 * reused by step 9). */
#ifndef CH05_FP32_08_WARPTILE_CUH
#define CH05_FP32_08_WARPTILE_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/00_common.cuh"

/* ---------------------------------------------------------------------------------------
 * Steps 8-10 share one parameterized tile. A block computes BM x BN of C with K in steps
 * of BK. Its warps split the block tile into WARPS_M x WARPS_N warp tiles of WM x WN; the
 * 32 threads of a warp form a WTR x WTC grid, and each thread owns a TM x TN tile made of
 * (TM/4) x (TN/4) sub-tiles of 4x4, one in each repetition of the warp's grid:
 *
 *      warp tile (WTR = 4, WTC = 8, TM = TN = 8):   columns: 8 threads x 4, twice
 *        rows   +----+----+-- ... --+----+----+-- ... --+
 *        4 x 4  | t0 | t1 |   ...   | t0 | t1 |   ...   |   thread t0's 8x8 tile is
 *               | t8 | t9 |         | t8 | t9 |         |   the four 4x4 boxes marked t0
 *         twice |... |    |         |    |    |         |
 *               +----+----+-- ... --+----+----+-- ... --+
 *
 * So per k the threads of a warp read WTC neighbouring float4 of B (and WTR of A): each
 * 16-byte shared load is a contiguous, conflict-free 128-byte (or 64-byte) run, and the
 * warp's footprint in shared memory is small. As is [k][BM + 4]: transposed and padded. */
template <int BM_, int BN_, int BK_, int TM_, int TN_, int WTR_, int STAGES_, int FRAG_PIPE_ = 0>
struct SgemmConfig {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_, STAGES = STAGES_;
    static constexpr bool FRAG_PIPE = FRAG_PIPE_ != 0; /* see sgemm_mainloop_frag_pipe */
    static constexpr bool FMA_BY_ROWS = false;         /* see sgemm_fma_step */
    static constexpr int WTR = WTR_, WTC = 32 / WTR_;
    static constexpr int WM = TM * WTR, WN = TN * WTC;
    static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    static constexpr int AS = BM + 4; /* row length of the transposed, padded A tile */
    static constexpr int STAGE_FLOATS = BK * (AS + BN);
    static constexpr int SMEM_BYTES = STAGES * STAGE_FLOATS * (int)sizeof(float);
    /* Blocks per SM asked of the register allocator: about TM*TN + 64 registers a thread. */
    static constexpr int MIN_BLOCKS_RAW = 65536 / (THREADS * (TM * TN + 64));
    static constexpr int MIN_BLOCKS = MIN_BLOCKS_RAW < 1 ? 1 : MIN_BLOCKS_RAW;
    static_assert(WTR * WTC == 32 && TM % 4 == 0 && TN % 4 == 0, "thread layout");
    static_assert(BM % WM == 0 && BN % WN == 0 && BK % 4 == 0, "tile sizes");
    static_assert((BM * BK) % (4 * THREADS) == 0 && (BK * BN) % (4 * THREADS) == 0, "loads");
    static_assert(BK % 8 == 0 && (THREADS / 32) % (BK / 8) == 0, "copy plan");
    static_assert(THREADS % (BN / 4) == 0 && BM * BK / THREADS <= 32, "copy plan");
    static_assert(STAGES >= 2, "stages");
};

/* Where accumulator row i of a thread lies below the thread's first row: its rows come in
 * groups of 4, one group every WTR * 4 rows of the warp tile (sgemm_thread_origin). */
template <typename Cfg> __device__ __forceinline__ constexpr int sgemm_acc_row(int i)
{
    return (i / 4) * Cfg::WTR * 4 + i % 4;
}

/* ... and where its float4 of columns j starts, right of the thread's first column. */
template <typename Cfg> __device__ __forceinline__ constexpr int sgemm_acc_col(int j)
{
    return j * Cfg::WTC * 4;
}

/* One k step's FMAs: the thread's TM x TN outer product of its fragments, a column of B at
 * a time, down the rows for one column and back up for the next. Every order gives the
 * same sums (each acc[i][j] still adds its k steps in k order), but the order decides which
 * registers ptxas gives the accumulators, and so how often an FMA reads two operands from
 * the same register bank and waits a cycle (ncu: "dispatch stall"). Row by row, hopper's
 * and double_buffer's loops have more such FMAs and run slower. FMA_BY_ROWS keeps the row
 * order where it measured faster. */
template <typename Cfg> __device__ __forceinline__ void
sgemm_fma_step(float (&acc)[Cfg::TM][Cfg::TN], const float (&a)[Cfg::TM], const float (&b)[Cfg::TN])
{
    if constexpr (Cfg::FMA_BY_ROWS) {
#pragma unroll
        for (int i = 0; i < Cfg::TM; i++)
#pragma unroll
            for (int j = 0; j < Cfg::TN; j++) acc[i][j] += a[i] * b[j];
    } else {
#pragma unroll
        for (int j = 0; j < Cfg::TN; j++)
#pragma unroll
            for (int n = 0; n < Cfg::TM; n++) {
                int i = j % 2 == 0 ? n : Cfg::TM - 1 - n;
                acc[i][j] += a[i] * b[j];
            }
    }
}

/* The inner product of one BK-slice: per k, TM/4 + TN/4 16-byte shared loads feed TM*TN
 * FMAs. Fully unrolled, so the compiler can load k+1's fragments during k's FMAs. */
template <typename Cfg>
__device__ __forceinline__ void sgemm_tile_multiply(const float *As, const float *Bs,
                                                    float (&acc)[Cfg::TM][Cfg::TN], int a_off,
                                                    int b_off)
{
    float a[Cfg::TM], b[Cfg::TN];
#pragma unroll
    for (int k = 0; k < Cfg::BK; k++) {
#pragma unroll
        for (int i = 0; i < Cfg::TM / 4; i++)
            *(float4 *)&a[4 * i] =
                *(const float4 *)&As[k * Cfg::AS + a_off + sgemm_acc_row<Cfg>(4 * i)];
#pragma unroll
        for (int j = 0; j < Cfg::TN / 4; j++)
            *(float4 *)&b[4 * j] =
                *(const float4 *)&Bs[k * Cfg::BN + b_off + sgemm_acc_col<Cfg>(j)];
        sgemm_fma_step<Cfg>(acc, a, b);
    }
}

/* Where this thread's first sub-tile starts inside the block tile. */
template <typename Cfg>
__device__ __forceinline__ void sgemm_thread_origin(int tid, int *row, int *col)
{
    int warp = tid / 32, lane = tid % 32;
    *row = (warp / Cfg::WARPS_N) * Cfg::WM + (lane / Cfg::WTC) * 4;
    *col = (warp % Cfg::WARPS_N) * Cfg::WN + (lane % Cfg::WTC) * 4;
}

/* The epilogue of steps 8-10: C = alpha acc + beta C for this thread's TM x TN outputs,
 * EPI_ROWS of its rows at a time, all their loads of C before any of their stores. A load
 * from C that comes after a store to C cannot be moved ahead of it (the two might be the
 * same float), so reading and writing one float4 after the other (sgemm_store4, as step 6
 * does) waited for one trip to DRAM per float4: 32 trips in a row for hopper's 8x16
 * outputs, 128 on the element-by-element path of an odd N. With 32 loads in flight at a
 * time it is 4. That matters little when K is large and the main loop dominates, and is
 * most of the kernel when K is small (the shape sweep's small-K products). */
template <typename Cfg>
__device__ __forceinline__ void sgemm_tile_store(float *C, int M, int N, float alpha, float beta,
                                                 bool c_vec, float (&acc)[Cfg::TM][Cfg::TN], int m,
                                                 int n)
{
    constexpr int PER_32 = 32 / Cfg::TN > 0 ? 32 / Cfg::TN : 1;
    constexpr int EPI_ROWS = PER_32 < Cfg::TM ? PER_32 : Cfg::TM;
    static_assert(Cfg::TM % EPI_ROWS == 0, "whole groups of rows");
#pragma unroll
    for (int i0 = 0; i0 < Cfg::TM; i0 += EPI_ROWS) {
        float4 old[EPI_ROWS][Cfg::TN / 4];
#pragma unroll
        for (int i = 0; i < EPI_ROWS; i++)
#pragma unroll
            for (int j = 0; j < Cfg::TN / 4; j++) {
                int r = m + sgemm_acc_row<Cfg>(i0 + i);
                old[i][j] = beta != 0.0f ? sgemm_load4(C, r, n + sgemm_acc_col<Cfg>(j), M, N, c_vec)
                                         : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
#pragma unroll
        for (int i = 0; i < EPI_ROWS; i++)
#pragma unroll
            for (int j = 0; j < Cfg::TN / 4; j++) {
                int r = m + sgemm_acc_row<Cfg>(i0 + i);
                sgemm_write4(C, r, n + sgemm_acc_col<Cfg>(j), M, N, c_vec,
                             sgemm_axpby4(alpha, &acc[i0 + i][4 * j], beta, old[i][j]));
            }
    }
}

/* For a C whose rows cannot take 16-byte stores (N % 4 != 0): the 4 neighbouring outputs
 * v that this thread holds, moved across the lanes of its row. In a warp, the WTC lanes of
 * one row hold 4 * WTC neighbouring columns, 4 each (lane c: columns 4c .. 4c + 3). A
 * 4-byte store from there touches WTC floats 16 bytes apart in every row: 4 times the L2
 * sectors of the same floats in a run. After the exchange, t[q] is column q * WTC + c, so
 * each of the 4 stores (or atomic adds) writes WTC neighbouring floats of each row. Lane c
 * needs element c % 4 of lane q * WTC / 4 + c / 4: four shuffles, one per element, and
 * the lane keeps its own. All 32 lanes must call it (no lane may have left early). */
template <typename Cfg>
__device__ __forceinline__ void sgemm_lanes_to_rows(const float *v, float (&t)[4])
{
    int lane = threadIdx.x % 32, c = lane % Cfg::WTC, row_lanes = lane - c;
#pragma unroll
    for (int q = 0; q < 4; q++) {
        int src = row_lanes + q * Cfg::WTC / 4 + c / 4;
        float x0 = __shfl_sync(0xffffffffu, v[0], src), x1 = __shfl_sync(0xffffffffu, v[1], src);
        float x2 = __shfl_sync(0xffffffffu, v[2], src), x3 = __shfl_sync(0xffffffffu, v[3], src);
        t[q] = c % 4 == 0 ? x0 : c % 4 == 1 ? x1 : c % 4 == 2 ? x2 : x3;
    }
}

/* Where this thread's floats of a row lie after sgemm_lanes_to_rows: t[q] is column
 * first + q * WTC, first = n - 3c (n: the thread's first column, 4c past its row's first). */
template <typename Cfg> __device__ __forceinline__ int sgemm_rows_first(int n)
{
    return n - 3 * (threadIdx.x % 32 % Cfg::WTC);
}

/* The same for a C whose rows cannot take 16-byte stores (N % 4 != 0): 4 bytes at a time,
 * each float4 first moved across the lanes of its row (sgemm_lanes_to_rows), so that a
 * warp's store writes WTC neighbouring floats of each of its rows. After the exchange this
 * thread's floats of a row lie at fixed distances from its first one (sgemm_rows_first):
 * one pointer a row, and the distances become immediate offsets of the loads and stores. */
template <typename Cfg>
__device__ __forceinline__ void sgemm_tile_store_rows(float *C, int M, int N, float alpha,
                                                      float beta, float (&acc)[Cfg::TM][Cfg::TN],
                                                      int m, int n)
{
    /* 16 loads of C in flight a thread, not sgemm_tile_store's 32: with 32, ptxas spilled
     * 8-16 bytes in the kernels held to 128 registers */
    constexpr int PER_16 = 16 / Cfg::TN > 0 ? 16 / Cfg::TN : 1;
    constexpr int EPI_ROWS = PER_16 < Cfg::TM ? PER_16 : Cfg::TM;
    int first = sgemm_rows_first<Cfg>(n), room = N - first; /* columns left in C */
#pragma unroll
    for (int i0 = 0; i0 < Cfg::TM; i0 += EPI_ROWS) {
        float old[EPI_ROWS][Cfg::TN];
#pragma unroll
        for (int i = 0; i < EPI_ROWS; i++) {
            int r = m + sgemm_acc_row<Cfg>(i0 + i);
            const float *row = C + (size_t)r * N + first;
#pragma unroll
            for (int j = 0; j < Cfg::TN / 4; j++) {
                float t[4];
                sgemm_lanes_to_rows<Cfg>(&acc[i0 + i][4 * j], t);
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    int d = sgemm_acc_col<Cfg>(j) + q * Cfg::WTC;
                    acc[i0 + i][4 * j + q] = t[q];
                    old[i][4 * j + q] = beta != 0.0f && r < M && d < room ? row[d] : 0.0f;
                }
            }
        }
#pragma unroll
        for (int i = 0; i < EPI_ROWS; i++) {
            int r = m + sgemm_acc_row<Cfg>(i0 + i);
            float *row = C + (size_t)r * N + first;
#pragma unroll
            for (int j = 0; j < Cfg::TN / 4; j++)
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    int d = sgemm_acc_col<Cfg>(j) + q * Cfg::WTC;
                    float v = alpha * acc[i0 + i][4 * j + q];
                    if (r < M && d < room) row[d] = beta != 0.0f ? v + beta * old[i][4 * j + q] : v;
                }
        }
    }
}

/* 8. warptile: step 7's loads (global -> registers -> transposed, padded shared tile) with
 * the warp-tiled thread layout above: shared loads without conflicts, and each warp reads
 * a compact WM x BK and BK x WN footprint. */
template <typename Cfg> __global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS)
    sgemm_warptile_kernel(int M, int N, int K, float alpha, const float *A, const float *B,
                          float beta, float *C, bool a_vec, bool b_vec, bool c_vec)
{
    __shared__ __align__(16) float As[Cfg::BK * Cfg::AS];
    __shared__ __align__(16) float Bs[Cfg::BK * Cfg::BN];
    constexpr int A_LOADS = Cfg::BM * Cfg::BK / 4 / Cfg::THREADS;
    constexpr int B_LOADS = Cfg::BK * Cfg::BN / 4 / Cfg::THREADS;
    int tid = threadIdx.x;
    int m0 = blockIdx.y * Cfg::BM, n0 = blockIdx.x * Cfg::BN;
    int row, col;
    sgemm_thread_origin<Cfg>(tid, &row, &col);
    float acc[Cfg::TM][Cfg::TN] = {{0.0f}};
    for (int k0 = 0; k0 < K; k0 += Cfg::BK) {
#pragma unroll
        for (int l = 0; l < A_LOADS; l++) {
            int idx = tid + l * Cfg::THREADS;
            int m = idx / (Cfg::BK / 4), k = (idx % (Cfg::BK / 4)) * 4;
            float4 v = sgemm_load4(A, m0 + m, k0 + k, M, K, a_vec);
            As[(k + 0) * Cfg::AS + m] = v.x;
            As[(k + 1) * Cfg::AS + m] = v.y;
            As[(k + 2) * Cfg::AS + m] = v.z;
            As[(k + 3) * Cfg::AS + m] = v.w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; l++) {
            int idx = tid + l * Cfg::THREADS;
            int k = idx / (Cfg::BN / 4), n = (idx % (Cfg::BN / 4)) * 4;
            float4 v = sgemm_load4(B, k0 + k, n0 + n, K, N, b_vec);
            *(float4 *)&Bs[k * Cfg::BN + n] = v;
        }
        __syncthreads();
        sgemm_tile_multiply<Cfg>(As, Bs, acc, row, col);
        __syncthreads();
    }
    sgemm_tile_store<Cfg>(C, M, N, alpha, beta, c_vec, acc, m0 + row, n0 + col);
}

template <typename Cfg> static inline void sgemm_warptile_launch(int M, int N, int K, float alpha,
                                                                 const float *A, const float *B,
                                                                 float beta, float *C)
{
    dim3 grid(sgemm_ceil_div(N, Cfg::BN), sgemm_ceil_div(M, Cfg::BM));
    bool a_vec = K % 4 == 0 && sgemm_aligned16(A);
    bool b_vec = N % 4 == 0 && sgemm_aligned16(B);
    bool c_vec = N % 4 == 0 && sgemm_aligned16(C);
    sgemm_warptile_kernel<Cfg>
        <<<grid, Cfg::THREADS>>>(M, N, K, alpha, A, B, beta, C, a_vec, b_vec, c_vec);
    CHECK_LAUNCH();
}

/* 128x128 tiles, BK = 8, 8 warps of 32x64, 8x8 per thread (64 accumulators). */
typedef SgemmConfig<128, 128, 8, 8, 8, 4, 2> SgemmWarptileCfg;

static inline void sgemm_warptile(int M, int N, int K, float alpha, const float *A, const float *B,
                                  float beta, float *C)
{
    sgemm_warptile_launch<SgemmWarptileCfg>(M, N, K, alpha, A, B, beta, C);
}

#endif
