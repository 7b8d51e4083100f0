/* Chapter 05: C = alpha * A * B + beta * C in fp32, row-major, ten steps from a naive
 * kernel to one tuned for Hopper.
 *
 *   sgemm_naive          one thread per output; neighbouring threads walk different rows of A
 *   sgemm_coalesced      the same, with neighbouring threads on neighbouring columns of C
 *   sgemm_smem           32x32 tiles of A and B staged in shared memory
 *   sgemm_blocktile_1d   each thread computes 8 outputs of one column
 *   sgemm_blocktile_2d   each thread computes an 8x8 tile from registers
 *   sgemm_vectorized     16-byte loads, A stored transposed so fragments load as float4
 *   sgemm_padded         the transposed A padded so its stores hit 32 different banks
 *   sgemm_warptile       threads of a warp interleaved in 4x4 sub-tiles (warp tiling)
 *   sgemm_double_buffer  cp.async copies the next tile while this one is multiplied
 *   sgemm_hopper         the same kernel with the sweep's parameters (sweep.sh): 128x256 tiles,
 *                        K slices of 32, 8x16 per thread, fragments prefetched across slices
 *   sgemm_hopper_small   a 64x64-tile instance for shapes too small to fill the GPU
 *   sgemm_splitk         the 64x64 tiles with K split over several blocks, for small C and long K
 *   sgemm_splitk_8x8     split-K with 64x128 tiles, 8x8 per thread, vector atomics, and
 *                        the split count chosen to balance the SMs (the MLP's shapes)
 *
 * THE CONTRACT (chapter 07 relies on it). Every launcher has the signature
 *     void sgemm_<name>(int M, int N, int K, float alpha, const float *A, const float *B,
 *                       float beta, float *C);
 * A is M x K, B is K x N, C is M x N, all row-major, contiguous, device pointers; the call
 * is asynchronous on the default stream. Any M, N, K >= 1 works: shapes that are not
 * multiples of the tiles, of 4 or of 32 take a checked edge path inside the same kernel.
 * Pointers that are not 16-byte aligned or rows whose length is not a multiple of 4 just
 * turn off the 16-byte loads. beta == 0 never reads C (C may hold garbage or NaN).
 *
 *     sgemm_best(...)  same signature: picks sgemm_hopper for large C, and sgemm_splitk_8x8,
 *                      sgemm_hopper_small or sgemm_splitk when the large tiles would leave
 *                      SMs idle (see the chapter README for which wins on each chapter-07
 *                      shape). Use this one.
 *
 * The tuned kernel's parameters can be set at compile time (-DSGEMM_TUNED_BM=... and the
 * seven others next to SgemmHopperCfg); sweep.sh rebuilds with different values. */
#ifndef CH05_KERNELS_CUH
#define CH05_KERNELS_CUH

#include <stdint.h>

#include "common/cuda_utils.cuh"

typedef void (*SgemmLauncher)(int M, int N, int K, float alpha, const float *A, const float *B,
                              float beta, float *C);

static inline int sgemm_ceil_div(int a, int b) { return (a + b - 1) / b; }

/* The epilogue of every version. beta == 0 must not read C: 0 * NaN would be NaN. */
__device__ __forceinline__ float sgemm_axpby(float alpha, float acc, float beta, const float *c)
{
    return beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

static inline int sgemm_aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* ---------------------------------------------------------------------------------------
 * 1. naive: thread (x, y) of a 32x32 block computes C[m][n] with m from threadIdx.x. The
 * 32 threads of a warp have 32 different m, so each load of A touches 32 rows K floats
 * apart (32 sectors for 128 useful bytes) and each store of C 32 rows apart. */
__global__ void sgemm_naive_kernel(int M, int N, int K, float alpha, const float *A,
                                   const float *B, float beta, float *C)
{
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    int n = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc += A[(size_t)m * K + k] * B[(size_t)k * N + n];
    float *c = C + (size_t)m * N + n;
    *c = sgemm_axpby(alpha, acc, beta, c);
}

static inline void sgemm_naive(int M, int N, int K, float alpha, const float *A, const float *B,
                               float beta, float *C)
{
    dim3 block(32, 32), grid(sgemm_ceil_div(M, 32), sgemm_ceil_div(N, 32));
    sgemm_naive_kernel<<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
    CHECK_LAUNCH();
}

/* 2. coalesced: swap the roles of x and y. A warp now shares one row m (its A load is a
 * broadcast) and covers 32 neighbouring columns n: one 128-byte line of B per load and one
 * of C per store instead of 32 scattered sectors. */
__global__ void sgemm_coalesced_kernel(int M, int N, int K, float alpha, const float *A,
                                       const float *B, float beta, float *C)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc += A[(size_t)m * K + k] * B[(size_t)k * N + n];
    float *c = C + (size_t)m * N + n;
    *c = sgemm_axpby(alpha, acc, beta, c);
}

static inline void sgemm_coalesced(int M, int N, int K, float alpha, const float *A,
                                   const float *B, float beta, float *C)
{
    dim3 block(32, 32), grid(sgemm_ceil_div(N, 32), sgemm_ceil_div(M, 32));
    sgemm_coalesced_kernel<<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
    CHECK_LAUNCH();
}

/* 3. smem: the block loads a 32x32 tile of A and of B into shared memory once and every
 * thread reads 32 values of each from there, so global (L1/L2) traffic drops 32-fold.
 * Out-of-range elements are loaded as zeros, which adds nothing to the sums. */
#define SGEMM_SMEM_TILE 32

__global__ void sgemm_smem_kernel(int M, int N, int K, float alpha, const float *A,
                                  const float *B, float beta, float *C)
{
    __shared__ float As[SGEMM_SMEM_TILE][SGEMM_SMEM_TILE];
    __shared__ float Bs[SGEMM_SMEM_TILE][SGEMM_SMEM_TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int n = blockIdx.x * SGEMM_SMEM_TILE + tx;
    int m = blockIdx.y * SGEMM_SMEM_TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += SGEMM_SMEM_TILE) {
        As[ty][tx] = (m < M && k0 + tx < K) ? A[(size_t)m * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && n < N) ? B[(size_t)(k0 + ty) * N + n] : 0.0f;
        __syncthreads();
        for (int k = 0; k < SGEMM_SMEM_TILE; k++) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (m < M && n < N) {
        float *c = C + (size_t)m * N + n;
        *c = sgemm_axpby(alpha, acc, beta, c);
    }
}

static inline void sgemm_smem(int M, int N, int K, float alpha, const float *A, const float *B,
                              float beta, float *C)
{
    dim3 block(SGEMM_SMEM_TILE, SGEMM_SMEM_TILE);
    dim3 grid(sgemm_ceil_div(N, SGEMM_SMEM_TILE), sgemm_ceil_div(M, SGEMM_SMEM_TILE));
    sgemm_smem_kernel<<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
    CHECK_LAUNCH();
}

/* 4. blocktile_1d: a 64x64 tile per block, K in steps of 8, 512 threads, each thread 8
 * outputs of one column. Per k a thread loads one B value and reuses it 8 times from a
 * register: 9 shared loads per 8 FMAs instead of 2 per FMA. */
#define SGEMM_1D_BM 64
#define SGEMM_1D_BN 64
#define SGEMM_1D_BK 8
#define SGEMM_1D_TM 8

__global__ void __launch_bounds__(512) sgemm_blocktile_1d_kernel(int M, int N, int K, float alpha,
                                                                 const float *A, const float *B,
                                                                 float beta, float *C)
{
    __shared__ float As[SGEMM_1D_BM][SGEMM_1D_BK];
    __shared__ float Bs[SGEMM_1D_BK][SGEMM_1D_BN];
    int tid = threadIdx.x;
    int m0 = blockIdx.y * SGEMM_1D_BM, n0 = blockIdx.x * SGEMM_1D_BN;
    int col = tid % SGEMM_1D_BN, row0 = (tid / SGEMM_1D_BN) * SGEMM_1D_TM;
    int a_m = tid / SGEMM_1D_BK, a_k = tid % SGEMM_1D_BK;
    int b_k = tid / SGEMM_1D_BN, b_n = tid % SGEMM_1D_BN;
    float acc[SGEMM_1D_TM] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += SGEMM_1D_BK) {
        int am = m0 + a_m, ak = k0 + a_k, bk = k0 + b_k, bn = n0 + b_n;
        As[a_m][a_k] = (am < M && ak < K) ? A[(size_t)am * K + ak] : 0.0f;
        Bs[b_k][b_n] = (bk < K && bn < N) ? B[(size_t)bk * N + bn] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < SGEMM_1D_BK; k++) {
            float b = Bs[k][col];
#pragma unroll
            for (int i = 0; i < SGEMM_1D_TM; i++) acc[i] += As[row0 + i][k] * b;
        }
        __syncthreads();
    }
    int n = n0 + col;
    for (int i = 0; i < SGEMM_1D_TM; i++) {
        int m = m0 + row0 + i;
        if (m < M && n < N) {
            float *c = C + (size_t)m * N + n;
            *c = sgemm_axpby(alpha, acc[i], beta, c);
        }
    }
}

static inline void sgemm_blocktile_1d(int M, int N, int K, float alpha, const float *A,
                                      const float *B, float beta, float *C)
{
    dim3 grid(sgemm_ceil_div(N, SGEMM_1D_BN), sgemm_ceil_div(M, SGEMM_1D_BM));
    sgemm_blocktile_1d_kernel<<<grid, SGEMM_1D_BM * SGEMM_1D_BN / SGEMM_1D_TM>>>(M, N, K, alpha,
                                                                                A, B, beta, C);
    CHECK_LAUNCH();
}

/* 5. blocktile_2d: a 128x128 tile per block, 256 threads, each an 8x8 tile. Per k a thread
 * loads 8 values of A and 8 of B into registers and does 64 FMAs with them (16 loads per 64
 * FMAs), and each block reads every element of A and B half as often as step 4. */
#define SGEMM_2D_BM 128
#define SGEMM_2D_BN 128
#define SGEMM_2D_BK 8
#define SGEMM_2D_T 8
#define SGEMM_2D_THREADS (SGEMM_2D_BM * SGEMM_2D_BN / (SGEMM_2D_T * SGEMM_2D_T))

__global__ void __launch_bounds__(SGEMM_2D_THREADS) sgemm_blocktile_2d_kernel(
    int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    __shared__ float As[SGEMM_2D_BM][SGEMM_2D_BK];
    __shared__ float Bs[SGEMM_2D_BK][SGEMM_2D_BN];
    int tid = threadIdx.x;
    int m0 = blockIdx.y * SGEMM_2D_BM, n0 = blockIdx.x * SGEMM_2D_BN;
    int row0 = (tid / (SGEMM_2D_BN / SGEMM_2D_T)) * SGEMM_2D_T;
    int col0 = (tid % (SGEMM_2D_BN / SGEMM_2D_T)) * SGEMM_2D_T;
    float acc[SGEMM_2D_T][SGEMM_2D_T] = {{0.0f}};
    float a[SGEMM_2D_T], b[SGEMM_2D_T];
    for (int k0 = 0; k0 < K; k0 += SGEMM_2D_BK) {
        for (int i = tid; i < SGEMM_2D_BM * SGEMM_2D_BK; i += SGEMM_2D_THREADS) {
            int m = i / SGEMM_2D_BK, k = i % SGEMM_2D_BK;
            As[m][k] = (m0 + m < M && k0 + k < K) ? A[(size_t)(m0 + m) * K + k0 + k] : 0.0f;
        }
        for (int i = tid; i < SGEMM_2D_BK * SGEMM_2D_BN; i += SGEMM_2D_THREADS) {
            int k = i / SGEMM_2D_BN, n = i % SGEMM_2D_BN;
            Bs[k][n] = (k0 + k < K && n0 + n < N) ? B[(size_t)(k0 + k) * N + n0 + n] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < SGEMM_2D_BK; k++) {
#pragma unroll
            for (int i = 0; i < SGEMM_2D_T; i++) a[i] = As[row0 + i][k];
#pragma unroll
            for (int j = 0; j < SGEMM_2D_T; j++) b[j] = Bs[k][col0 + j];
#pragma unroll
            for (int i = 0; i < SGEMM_2D_T; i++)
#pragma unroll
                for (int j = 0; j < SGEMM_2D_T; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < SGEMM_2D_T; i++) {
        int m = m0 + row0 + i;
        if (m >= M) break;
        for (int j = 0; j < SGEMM_2D_T; j++) {
            int n = n0 + col0 + j;
            if (n < N) {
                float *c = C + (size_t)m * N + n;
                *c = sgemm_axpby(alpha, acc[i][j], beta, c);
            }
        }
    }
}

static inline void sgemm_blocktile_2d(int M, int N, int K, float alpha, const float *A,
                                      const float *B, float beta, float *C)
{
    dim3 grid(sgemm_ceil_div(N, SGEMM_2D_BN), sgemm_ceil_div(M, SGEMM_2D_BM));
    sgemm_blocktile_2d_kernel<<<grid, SGEMM_2D_THREADS>>>(M, N, K, alpha, A, B, beta, C);
    CHECK_LAUNCH();
}

/* ---------------------------------------------------------------------------------------
 * Helpers of the vectorized versions. A float4 of A (4 consecutive k of one row m) or of B
 * (4 consecutive n of one row k) is read with one 16-byte load when it lies inside the
 * matrix and the rows allow it (vec: row length % 4 == 0 and a 16-byte aligned base);
 * otherwise element by element, zeros outside the matrix. */
__device__ __forceinline__ float4 sgemm_load4(const float *base, int row, int col, int rows,
                                              int cols, bool vec)
{
    const float *p = base + (size_t)row * cols + col;
    if (row >= rows) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (vec && col + 3 < cols) return *(const float4 *)p;
    float4 v;
    v.x = col < cols ? p[0] : 0.0f;
    v.y = col + 1 < cols ? p[1] : 0.0f;
    v.z = col + 2 < cols ? p[2] : 0.0f;
    v.w = col + 3 < cols ? p[3] : 0.0f;
    return v;
}

/* Writes alpha*acc + beta*C for 4 neighbouring outputs of row m starting at column n:
 * one 16-byte load/store when allowed, else element by element inside the matrix. */
__device__ __forceinline__ void sgemm_store4(float *C, int m, int n, int M, int N, bool vec,
                                             float alpha, float beta, const float *acc)
{
    if (m >= M) return;
    float *c = C + (size_t)m * N + n;
    if (vec && n + 3 < N) {
        float4 v = make_float4(alpha * acc[0], alpha * acc[1], alpha * acc[2], alpha * acc[3]);
        if (beta != 0.0f) {
            float4 old = *(const float4 *)c;
            v.x += beta * old.x;
            v.y += beta * old.y;
            v.z += beta * old.z;
            v.w += beta * old.w;
        }
        *(float4 *)c = v;
        return;
    }
    for (int q = 0; q < 4 && n + q < N; q++) c[q] = sgemm_axpby(alpha, acc[q], beta, c + q);
}

/* 6. vectorized (APAD = 0) and 7. padded (APAD = 4). Step 5 with 16-byte global loads and
 * stores, and A stored transposed (As[k][m]) so the 8 values of A a thread needs per k are
 * contiguous: two 16-byte shared loads instead of eight 4-byte ones, for A and for B.
 * The transposed store writes 4 floats of one float4 to 4 rows of As; with rows of 128
 * floats the two threads that share a row m hit the same bank. Padding each row by 4
 * floats (step 7) shifts row k by 4k banks: the 32 stores of a warp land in 32 banks. */
#define SGEMM_V_BM 128
#define SGEMM_V_BN 128
#define SGEMM_V_BK 8
#define SGEMM_V_T 8
#define SGEMM_V_THREADS 256

template <int APAD>
__global__ void __launch_bounds__(SGEMM_V_THREADS) sgemm_vectorized_kernel(
    int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C,
    bool a_vec, bool b_vec, bool c_vec)
{
    __shared__ __align__(16) float As[SGEMM_V_BK][SGEMM_V_BM + APAD];
    __shared__ __align__(16) float Bs[SGEMM_V_BK][SGEMM_V_BN];
    int tid = threadIdx.x;
    int m0 = blockIdx.y * SGEMM_V_BM, n0 = blockIdx.x * SGEMM_V_BN;
    int row0 = (tid / (SGEMM_V_BN / SGEMM_V_T)) * SGEMM_V_T;
    int col0 = (tid % (SGEMM_V_BN / SGEMM_V_T)) * SGEMM_V_T;
    int a_m = tid / (SGEMM_V_BK / 4), a_k = (tid % (SGEMM_V_BK / 4)) * 4; /* 128 x 2 float4 */
    int b_k = tid / (SGEMM_V_BN / 4), b_n = (tid % (SGEMM_V_BN / 4)) * 4; /* 8 x 32 float4 */
    float acc[SGEMM_V_T][SGEMM_V_T] = {{0.0f}};
    float a[SGEMM_V_T], b[SGEMM_V_T];
    for (int k0 = 0; k0 < K; k0 += SGEMM_V_BK) {
        float4 av = sgemm_load4(A, m0 + a_m, k0 + a_k, M, K, a_vec);
        float4 bv = sgemm_load4(B, k0 + b_k, n0 + b_n, K, N, b_vec);
        As[a_k + 0][a_m] = av.x;
        As[a_k + 1][a_m] = av.y;
        As[a_k + 2][a_m] = av.z;
        As[a_k + 3][a_m] = av.w;
        *(float4 *)&Bs[b_k][b_n] = bv;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < SGEMM_V_BK; k++) {
#pragma unroll
            for (int i = 0; i < SGEMM_V_T; i += 4) *(float4 *)&a[i] = *(const float4 *)&As[k][row0 + i];
#pragma unroll
            for (int j = 0; j < SGEMM_V_T; j += 4) *(float4 *)&b[j] = *(const float4 *)&Bs[k][col0 + j];
#pragma unroll
            for (int i = 0; i < SGEMM_V_T; i++)
#pragma unroll
                for (int j = 0; j < SGEMM_V_T; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < SGEMM_V_T; i++)
        for (int j = 0; j < SGEMM_V_T; j += 4)
            sgemm_store4(C, m0 + row0 + i, n0 + col0 + j, M, N, c_vec, alpha, beta, &acc[i][j]);
}

template <int APAD>
static inline void sgemm_vectorized_launch(int M, int N, int K, float alpha, const float *A,
                                           const float *B, float beta, float *C)
{
    dim3 grid(sgemm_ceil_div(N, SGEMM_V_BN), sgemm_ceil_div(M, SGEMM_V_BM));
    bool a_vec = K % 4 == 0 && sgemm_aligned16(A);
    bool b_vec = N % 4 == 0 && sgemm_aligned16(B);
    bool c_vec = N % 4 == 0 && sgemm_aligned16(C);
    sgemm_vectorized_kernel<APAD><<<grid, SGEMM_V_THREADS>>>(M, N, K, alpha, A, B, beta, C, a_vec,
                                                             b_vec, c_vec);
    CHECK_LAUNCH();
}

static inline void sgemm_vectorized(int M, int N, int K, float alpha, const float *A,
                                    const float *B, float beta, float *C)
{
    sgemm_vectorized_launch<0>(M, N, K, alpha, A, B, beta, C);
}

static inline void sgemm_padded(int M, int N, int K, float alpha, const float *A, const float *B,
                                float beta, float *C)
{
    sgemm_vectorized_launch<4>(M, N, K, alpha, A, B, beta, C);
}

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
    static_assert(BK % 8 == 0 && (THREADS / 32) % (BK / 8) == 0 && THREADS % (BN / 4) == 0 &&
                  BM * BK / THREADS <= 32, "copy plan");
    static_assert(STAGES >= 2, "stages");
};

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
            *(float4 *)&a[4 * i] = *(const float4 *)&As[k * Cfg::AS + a_off + i * Cfg::WTR * 4];
#pragma unroll
        for (int j = 0; j < Cfg::TN / 4; j++)
            *(float4 *)&b[4 * j] = *(const float4 *)&Bs[k * Cfg::BN + b_off + j * Cfg::WTC * 4];
#pragma unroll
        for (int i = 0; i < Cfg::TM; i++)
#pragma unroll
            for (int j = 0; j < Cfg::TN; j++) acc[i][j] += a[i] * b[j];
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

template <typename Cfg>
__device__ __forceinline__ void sgemm_tile_store(float *C, int M, int N, float alpha, float beta,
                                                 bool c_vec, float (&acc)[Cfg::TM][Cfg::TN],
                                                 int m, int n)
{
#pragma unroll
    for (int i = 0; i < Cfg::TM; i++)
#pragma unroll
        for (int j = 0; j < Cfg::TN / 4; j++)
            sgemm_store4(C, m + (i / 4) * Cfg::WTR * 4 + i % 4, n + j * Cfg::WTC * 4, M, N, c_vec,
                         alpha, beta, &acc[i][4 * j]);
}

/* 8. warptile: step 7's loads (global -> registers -> transposed, padded shared tile) with
 * the warp-tiled thread layout above: shared loads without conflicts, and each warp reads
 * a compact WM x BK and BK x WN footprint. */
template <typename Cfg>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS) sgemm_warptile_kernel(
    int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C,
    bool a_vec, bool b_vec, bool c_vec)
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

/* ---------------------------------------------------------------------------------------
 * cp.async (sm_80+): a copy from global to shared memory that does not pass through
 * registers and does not block the thread; commit_group / wait_group say which copies
 * must have landed. src_bytes < size fills the rest with zeros: the edge path. */
__device__ __forceinline__ void sgemm_cp_async4(float *dst, const float *src)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src));
}

/* valid == false copies nothing and writes a zero (src must still be a valid address). */
__device__ __forceinline__ void sgemm_cp_async4_zfill(float *dst, const float *src, bool valid)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src),
                 "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void sgemm_cp_async16(float *dst, const float *src)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
}

__device__ __forceinline__ void sgemm_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void sgemm_cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/* What one thread copies, worked out once per block: the copies of a slice then cost a
 * few adds and compares, not a recomputed index each (steps 1-8 recompute everything in
 * the loop; at 512 FMAs a slice that overhead is a visible share of the instructions). */
typedef struct {
    const float *a_src, *b_src;  /* this thread's first A and B element of the slice at k = 0 */
    size_t a_step, b_step;       /* between this thread's successive copies: rows of A, of B */
    int a_dst, b_dst;            /* their offsets inside a stage */
    int a_k, b_k;                /* their k within the slice */
    int b_col;                   /* the first of this thread's 4 columns of B */
    unsigned a_rows_ok;          /* bit l: copy l of A lies on a row < M */
    bool a_rows_all;             /* all of them do */
    bool b_fast;                 /* this thread's B columns are inside N and 16-byte copyable */
} SgemmCopyPlan;

template <typename Cfg>
__device__ __forceinline__ SgemmCopyPlan sgemm_copy_plan(const float *A, const float *B, int M,
                                                         int N, int K, int m0, int n0, bool b_vec)
{
    constexpr int A_ROWS = Cfg::THREADS / Cfg::BK;        /* rows of A covered per copy round */
    constexpr int B_ROWS = Cfg::THREADS / (Cfg::BN / 4);  /* rows of B covered per copy round */
    constexpr int A_COPIES = Cfg::BM / A_ROWS;
    int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    SgemmCopyPlan p;
    /* A: each warp copies an 8 (k) x 4 (m) block per round, lane -> (k = lane % 8, m = lane / 8). */
    p.a_k = (warp % (Cfg::BK / 8)) * 8 + lane % 8;
    int am = (warp / (Cfg::BK / 8)) * 4 + lane / 8;
    int bn = (tid % (Cfg::BN / 4)) * 4;
    p.b_k = tid / (Cfg::BN / 4);
    p.a_src = A + (size_t)(m0 + am) * K + p.a_k;
    p.b_src = B + (size_t)p.b_k * N + n0 + bn;
    p.a_step = (size_t)A_ROWS * K;
    p.b_step = (size_t)B_ROWS * N;
    p.a_dst = p.a_k * Cfg::AS + am;
    p.b_dst = Cfg::BK * Cfg::AS + p.b_k * Cfg::BN + bn;
    p.a_rows_ok = 0;
    for (int l = 0; l < A_COPIES; l++)
        if (m0 + am + l * A_ROWS < M) p.a_rows_ok |= 1u << l;
    p.a_rows_all = p.a_rows_ok == (A_COPIES == 32 ? ~0u : (1u << A_COPIES) - 1u);
    p.b_col = n0 + bn;
    p.b_fast = b_vec && p.b_col + 3 < N;
    return p;
}

/* Starts the copies of the BK-slice at k0 into one stage. A goes element by element
 * (4-byte copies), since each lands transposed. A warp copies 8 neighbouring k of 4 rows
 * per round: the reads are four full 32-byte sectors, and the 32 stores land in 32
 * different banks (row k of As starts 4k banks further, rows m add m), for any BK.
 * B goes in 16-byte copies where it can. Only the last slice of K and the blocks on the
 * edges of C take the checked copies. */
template <typename Cfg>
__device__ __forceinline__ void sgemm_load_stage_async(float *stage, const SgemmCopyPlan &p,
                                                       const float *A, const float *B, int N,
                                                       int K, int k0)
{
    constexpr int A_ROWS = Cfg::THREADS / Cfg::BK;
    constexpr int B_ROWS = Cfg::THREADS / (Cfg::BN / 4);
    constexpr int A_COPIES = Cfg::BM / A_ROWS;
    constexpr int B_COPIES = Cfg::BK / B_ROWS;
    bool k_full = k0 + Cfg::BK <= K;
    if (k_full && p.a_rows_all) {
#pragma unroll
        for (int l = 0; l < A_COPIES; l++)
            sgemm_cp_async4(stage + p.a_dst + l * A_ROWS, p.a_src + l * p.a_step + k0);
    } else {
        bool a_k_ok = k_full || k0 + p.a_k < K;
#pragma unroll
        for (int l = 0; l < A_COPIES; l++) {
            bool ok = a_k_ok && ((p.a_rows_ok >> l) & 1u);
            const float *src = p.a_src + l * p.a_step + k0;
            sgemm_cp_async4_zfill(stage + p.a_dst + l * A_ROWS, ok ? src : A, ok);
        }
    }
    if (k_full && p.b_fast) {
#pragma unroll
        for (int l = 0; l < B_COPIES; l++)
            sgemm_cp_async16(stage + p.b_dst + l * B_ROWS * Cfg::BN,
                             p.b_src + l * p.b_step + (size_t)k0 * N);
        return;
    }
#pragma unroll
    for (int l = 0; l < B_COPIES; l++) {
        const float *src = p.b_src + l * p.b_step + (size_t)k0 * N;
        float *dst = stage + p.b_dst + l * B_ROWS * Cfg::BN;
        bool k_ok = k_full || k0 + p.b_k + l * B_ROWS < K;
        if (p.b_fast && k_ok) {
            sgemm_cp_async16(dst, src);
        } else {
#pragma unroll
            for (int q = 0; q < 4; q++) {
                bool ok = k_ok && p.b_col + q < N;
                sgemm_cp_async4_zfill(dst + q, ok ? src + q : B, ok);
            }
        }
    }
}

/* The main loop of steps 9 and 10: STAGES shared-memory slices in a ring. While the warps
 * multiply slice kt, the copies of slices up to kt + STAGES - 1 are in flight, so the load
 * latency hides behind the FMAs, and one __syncthreads per slice suffices: the slice being
 * overwritten was finished by every warp before the barrier at the top of this iteration. */
template <typename Cfg>
__device__ __forceinline__ void sgemm_mainloop(float *smem, const SgemmCopyPlan &plan,
                                               const float *A, const float *B, int N, int K,
                                               int k_first, int tiles,
                                               float (&acc)[Cfg::TM][Cfg::TN], int row, int col)
{
#pragma unroll
    for (int s = 0; s < Cfg::STAGES - 1; s++) {
        if (s < tiles)
            sgemm_load_stage_async<Cfg>(smem + s * Cfg::STAGE_FLOATS, plan, A, B, N, K,
                                        k_first + s * Cfg::BK);
        sgemm_cp_async_commit();
    }
    int read_stage = 0, write_stage = Cfg::STAGES - 1;
    for (int kt = 0; kt < tiles; kt++) {
        sgemm_cp_async_wait<Cfg::STAGES - 2>();
        __syncthreads();
        int next = kt + Cfg::STAGES - 1;
        if (next < tiles)
            sgemm_load_stage_async<Cfg>(smem + write_stage * Cfg::STAGE_FLOATS, plan, A, B, N, K,
                                        k_first + next * Cfg::BK);
        sgemm_cp_async_commit();
        const float *As = smem + read_stage * Cfg::STAGE_FLOATS;
        sgemm_tile_multiply<Cfg>(As, As + Cfg::BK * Cfg::AS, acc, row, col);
        read_stage = read_stage + 1 == Cfg::STAGES ? 0 : read_stage + 1;
        write_stage = write_stage + 1 == Cfg::STAGES ? 0 : write_stage + 1;
    }
}

/* One k step's fragments: TM values of A and TN of B from shared memory into registers. */
template <typename Cfg>
__device__ __forceinline__ void sgemm_load_fragments(const float *stage, int k, int row, int col,
                                                     float (&a)[Cfg::TM], float (&b)[Cfg::TN])
{
    const float *As = stage, *Bs = stage + Cfg::BK * Cfg::AS;
#pragma unroll
    for (int i = 0; i < Cfg::TM / 4; i++)
        *(float4 *)&a[4 * i] = *(const float4 *)&As[k * Cfg::AS + row + i * Cfg::WTR * 4];
#pragma unroll
    for (int j = 0; j < Cfg::TN / 4; j++)
        *(float4 *)&b[4 * j] = *(const float4 *)&Bs[k * Cfg::BN + col + j * Cfg::WTC * 4];
}

/* The same ring, software-pipelined one k step deep across slice boundaries: the fragments
 * of step k + 1 are loaded while step k's FMAs run, and the barrier moves to the last step
 * of a slice, so that the first fragments of slice kt + 1 load during the last FMAs of
 * slice kt. The plain loop above waits for them right after its barrier (ncu: "short
 * scoreboard" stalls on the first FMAs of each slice). Costs TM + TN registers. Here all
 * STAGES slices are filled before the loop, and slice kt's buffer is refilled (with slice
 * kt + STAGES) once its last fragments are in registers. */
template <typename Cfg>
__device__ __forceinline__ void sgemm_mainloop_frag_pipe(float *smem, const SgemmCopyPlan &plan,
                                                         const float *A, const float *B, int N,
                                                         int K, int k_first, int tiles,
                                                         float (&acc)[Cfg::TM][Cfg::TN], int row,
                                                         int col)
{
#pragma unroll
    for (int s = 0; s < Cfg::STAGES; s++) {
        if (s < tiles)
            sgemm_load_stage_async<Cfg>(smem + s * Cfg::STAGE_FLOATS, plan, A, B, N, K,
                                        k_first + s * Cfg::BK);
        sgemm_cp_async_commit();
    }
    sgemm_cp_async_wait<Cfg::STAGES - 1>();
    __syncthreads();
    float a[2][Cfg::TM], b[2][Cfg::TN];
    sgemm_load_fragments<Cfg>(smem, 0, row, col, a[0], b[0]);
    int stage = 0;
    for (int kt = 0; kt < tiles; kt++) {
        const float *cur = smem + stage * Cfg::STAGE_FLOATS;
        int next_stage = stage + 1 == Cfg::STAGES ? 0 : stage + 1;
#pragma unroll
        for (int k = 0; k < Cfg::BK; k++) {
            if (k == Cfg::BK - 1) {
                sgemm_cp_async_wait<Cfg::STAGES - 2>(); /* slice kt + 1 has landed */
                __syncthreads();                        /* and nobody reads slice kt any more */
                if (kt + Cfg::STAGES < tiles)
                    sgemm_load_stage_async<Cfg>(smem + stage * Cfg::STAGE_FLOATS, plan, A, B, N,
                                                K, k_first + (kt + Cfg::STAGES) * Cfg::BK);
                sgemm_cp_async_commit();
                if (kt + 1 < tiles)
                    sgemm_load_fragments<Cfg>(smem + next_stage * Cfg::STAGE_FLOATS, 0, row, col,
                                              a[(k + 1) % 2], b[(k + 1) % 2]);
            } else {
                sgemm_load_fragments<Cfg>(cur, k + 1, row, col, a[(k + 1) % 2], b[(k + 1) % 2]);
            }
#pragma unroll
            for (int i = 0; i < Cfg::TM; i++)
#pragma unroll
                for (int j = 0; j < Cfg::TN; j++) acc[i][j] += a[k % 2][i] * b[k % 2][j];
        }
        stage = next_stage;
    }
}

/* Split-K's epilogue: adds alpha * acc into C, which already holds beta * C. */
template <typename Cfg>
__device__ __forceinline__ void sgemm_tile_atomic_add(float *C, int M, int N, float alpha,
                                                      float (&acc)[Cfg::TM][Cfg::TN], int m, int n)
{
#pragma unroll
    for (int i = 0; i < Cfg::TM; i++) {
        int r = m + (i / 4) * Cfg::WTR * 4 + i % 4;
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < Cfg::TN; j++) {
            int c = n + (j / 4) * Cfg::WTC * 4 + j % 4;
            if (c < N) atomicAdd(C + (size_t)r * N + c, alpha * acc[i][j]);
        }
    }
}

/* sm_90 adds four neighbouring floats with one vector atomic (red.global.add.v4.f32): a
 * quarter of the atomic operations. Older GPUs add them one by one. p is 16-byte aligned. */
__device__ __forceinline__ void sgemm_atomic_add4(float *p, float4 v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd((float4 *)p, v);
#else
    atomicAdd(p, v.x);
    atomicAdd(p + 1, v.y);
    atomicAdd(p + 2, v.z);
    atomicAdd(p + 3, v.w);
#endif
}

/* The same with 16-byte atomics where C's rows allow them (c_vec), element by element
 * on the right edge of C. */
template <typename Cfg>
__device__ __forceinline__ void sgemm_tile_atomic_add4(float *C, int M, int N, float alpha,
                                                       bool c_vec,
                                                       float (&acc)[Cfg::TM][Cfg::TN], int m,
                                                       int n)
{
#pragma unroll
    for (int i = 0; i < Cfg::TM; i++) {
        int r = m + (i / 4) * Cfg::WTR * 4 + i % 4;
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < Cfg::TN / 4; j++) {
            int c = n + j * Cfg::WTC * 4;
            float *p = C + (size_t)r * N + c;
            const float *a = &acc[i][4 * j];
            if (c_vec && c + 3 < N) {
                sgemm_atomic_add4(p, make_float4(alpha * a[0], alpha * a[1], alpha * a[2],
                                                 alpha * a[3]));
            } else {
                for (int q = 0; q < 4 && c + q < N; q++) atomicAdd(p + q, alpha * a[q]);
            }
        }
    }
}

/* How a block leaves its tile: stored with alpha and beta, or (split-K) added into C. */
enum { SGEMM_EPI_STORE, SGEMM_EPI_ATOMIC, SGEMM_EPI_ATOMIC4 };

/* 9. double_buffer (STAGES = 2) and 10. hopper (the sweep's choice): the pipelined main
 * loop above and the warp-tiled epilogue. With an atomic EPI, block z multiplies only
 * slices [z * split_tiles, (z + 1) * split_tiles) and adds its partial product into C
 * with atomics (sgemm_splitk and sgemm_splitk_8x8 below). */
template <typename Cfg, int EPI>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS) sgemm_pipelined_kernel(
    int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C,
    bool b_vec, bool c_vec, int split_tiles)
{
    extern __shared__ float4 sgemm_dynamic_smem[];
    float *smem = (float *)sgemm_dynamic_smem;
    int m0 = blockIdx.y * Cfg::BM, n0 = blockIdx.x * Cfg::BN;
    int row, col;
    sgemm_thread_origin<Cfg>(threadIdx.x, &row, &col);
    SgemmCopyPlan plan = sgemm_copy_plan<Cfg>(A, B, M, N, K, m0, n0, b_vec);
    int tiles = (K + Cfg::BK - 1) / Cfg::BK, k_first = 0;
    if (EPI != SGEMM_EPI_STORE) {
        k_first = blockIdx.z * split_tiles * Cfg::BK;
        tiles = min(split_tiles, tiles - blockIdx.z * split_tiles);
    }
    float acc[Cfg::TM][Cfg::TN] = {{0.0f}};
    if (Cfg::FRAG_PIPE)
        sgemm_mainloop_frag_pipe<Cfg>(smem, plan, A, B, N, K, k_first, tiles, acc, row, col);
    else
        sgemm_mainloop<Cfg>(smem, plan, A, B, N, K, k_first, tiles, acc, row, col);
    if (EPI == SGEMM_EPI_ATOMIC)
        sgemm_tile_atomic_add<Cfg>(C, M, N, alpha, acc, m0 + row, n0 + col);
    else if (EPI == SGEMM_EPI_ATOMIC4)
        sgemm_tile_atomic_add4<Cfg>(C, M, N, alpha, c_vec, acc, m0 + row, n0 + col);
    else
        sgemm_tile_store<Cfg>(C, M, N, alpha, beta, c_vec, acc, m0 + row, n0 + col);
}

/* C = beta * C (C = 0 when beta == 0, so garbage in C never reaches the sums). */
__global__ void sgemm_scale_kernel(float *C, size_t n, float beta)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        C[i] = beta == 0.0f ? 0.0f : beta * C[i];
}

template <typename Cfg>
static inline void sgemm_warptile_launch(int M, int N, int K, float alpha, const float *A,
                                         const float *B, float beta, float *C)
{
    dim3 grid(sgemm_ceil_div(N, Cfg::BN), sgemm_ceil_div(M, Cfg::BM));
    bool a_vec = K % 4 == 0 && sgemm_aligned16(A);
    bool b_vec = N % 4 == 0 && sgemm_aligned16(B);
    bool c_vec = N % 4 == 0 && sgemm_aligned16(C);
    sgemm_warptile_kernel<Cfg><<<grid, Cfg::THREADS>>>(M, N, K, alpha, A, B, beta, C, a_vec,
                                                       b_vec, c_vec);
    CHECK_LAUNCH();
}

/* splits > 1: K cut into that many ranges, one grid layer (blockIdx.z) each, whose
 * partial products meet in C through atomics of kind SPLIT_EPI. C first becomes beta * C
 * in a launch of its own, except (SGEMM_EPI_ATOMIC4 only) when beta == 1: then C already
 * is beta * C and the atomics can add into it as it stands. */
template <typename Cfg, int SPLIT_EPI = SGEMM_EPI_ATOMIC>
static inline void sgemm_pipelined_launch(int M, int N, int K, float alpha, const float *A,
                                          const float *B, float beta, float *C, int splits)
{
    static bool smem_set = false; /* once per configuration */
    if (!smem_set) {
        CUDA_CHECK(cudaFuncSetAttribute(sgemm_pipelined_kernel<Cfg, SGEMM_EPI_STORE>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        Cfg::SMEM_BYTES));
        CUDA_CHECK(cudaFuncSetAttribute(sgemm_pipelined_kernel<Cfg, SPLIT_EPI>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        Cfg::SMEM_BYTES));
        smem_set = true;
    }
    int tiles = sgemm_ceil_div(K, Cfg::BK);
    int split_tiles = sgemm_ceil_div(tiles, splits);
    splits = sgemm_ceil_div(tiles, split_tiles); /* no empty layer */
    dim3 grid(sgemm_ceil_div(N, Cfg::BN), sgemm_ceil_div(M, Cfg::BM), splits);
    bool b_vec = N % 4 == 0 && sgemm_aligned16(B);
    bool c_vec = N % 4 == 0 && sgemm_aligned16(C);
    if (splits == 1) {
        sgemm_pipelined_kernel<Cfg, SGEMM_EPI_STORE><<<grid, Cfg::THREADS, Cfg::SMEM_BYTES>>>(
            M, N, K, alpha, A, B, beta, C, b_vec, c_vec, tiles);
    } else {
        if (!(SPLIT_EPI == SGEMM_EPI_ATOMIC4 && beta == 1.0f)) {
            size_t n = (size_t)M * N;
            sgemm_scale_kernel<<<(int)((n + 255) / 256 < 1024 ? (n + 255) / 256 : 1024), 256>>>(
                C, n, beta);
            CHECK_LAUNCH();
        }
        sgemm_pipelined_kernel<Cfg, SPLIT_EPI><<<grid, Cfg::THREADS, Cfg::SMEM_BYTES>>>(
            M, N, K, alpha, A, B, beta, C, b_vec, c_vec, split_tiles);
    }
    CHECK_LAUNCH();
}

static inline int sgemm_sm_count(void)
{
    static int sms = 0;
    if (sms == 0) {
        int dev;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    }
    return sms;
}

/* The most shared memory one block may use on this GPU once it opts in: 227 KB on
 * Hopper, 163 KB on the A100, about 99 KB on most GeForce cards. */
static inline int sgemm_smem_limit(void)
{
    static int limit = 0;
    if (limit == 0) {
        int dev;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    }
    return limit;
}

/* 128x128 tiles, BK = 8, 8 warps of 32x64, 8x8 per thread (64 accumulators). */
typedef SgemmConfig<128, 128, 8, 8, 8, 4, 2> SgemmWarptileCfg;

/* The sweep's winner on an H200; sweep.sh overrides it with -DSGEMM_TUNED_BM=... */
#ifndef SGEMM_TUNED_BM
#define SGEMM_TUNED_BM 128
#define SGEMM_TUNED_BN 256
#define SGEMM_TUNED_BK 32
#define SGEMM_TUNED_TM 8
#define SGEMM_TUNED_TN 16
#define SGEMM_TUNED_WTR 8
#define SGEMM_TUNED_STAGES 3
#define SGEMM_TUNED_FRAG_PIPE 1
#endif
typedef SgemmConfig<SGEMM_TUNED_BM, SGEMM_TUNED_BN, SGEMM_TUNED_BK, SGEMM_TUNED_TM, SGEMM_TUNED_TN,
                    SGEMM_TUNED_WTR, SGEMM_TUNED_STAGES, SGEMM_TUNED_FRAG_PIPE> SgemmHopperCfg;
/* 64x64 tiles, 4x4 per thread, 256 threads: four times the blocks of a 128x128 tile. */
typedef SgemmConfig<64, 64, 16, 4, 4, 8, 2> SgemmSmallCfg;

static inline void sgemm_warptile(int M, int N, int K, float alpha, const float *A,
                                  const float *B, float beta, float *C)
{
    sgemm_warptile_launch<SgemmWarptileCfg>(M, N, K, alpha, A, B, beta, C);
}

static inline void sgemm_double_buffer(int M, int N, int K, float alpha, const float *A,
                                       const float *B, float beta, float *C)
{
    sgemm_pipelined_launch<SgemmWarptileCfg>(M, N, K, alpha, A, B, beta, C, 1);
}

static inline void sgemm_hopper(int M, int N, int K, float alpha, const float *A,
                                const float *B, float beta, float *C)
{
    sgemm_pipelined_launch<SgemmHopperCfg>(M, N, K, alpha, A, B, beta, C, 1);
}

static inline void sgemm_hopper_small(int M, int N, int K, float alpha, const float *A,
                                      const float *B, float beta, float *C)
{
    sgemm_pipelined_launch<SgemmSmallCfg>(M, N, K, alpha, A, B, beta, C, 1);
}

static inline long long sgemm_blocks(int M, int N, int bm, int bn)
{
    return (long long)sgemm_ceil_div(M, bm) * sgemm_ceil_div(N, bn);
}

/* splitk: the small tiles, with K cut into ranges so that a small C (say 256 x 10 with
 * K = 1024: 4 blocks of 64x64) still puts about two blocks on every SM. The partial
 * products meet in C through atomicAdd, so the last bits of the result depend on the
 * order they arrive in: not bitwise reproducible from run to run. */
static inline void sgemm_splitk(int M, int N, int K, float alpha, const float *A,
                                const float *B, float beta, float *C)
{
    long long blocks = sgemm_blocks(M, N, SgemmSmallCfg::BM, SgemmSmallCfg::BN);
    long long want = (2LL * sgemm_sm_count() + blocks - 1) / blocks;
    int most = sgemm_ceil_div(K, SgemmSmallCfg::BK) / 4; /* keep >= 4 slices per range */
    int splits = (int)(want < most ? want : most);
    sgemm_pipelined_launch<SgemmSmallCfg>(M, N, K, alpha, A, B, beta, C, splits < 1 ? 1 : splits);
}

/* splitk_8x8: split-K rebuilt for the small C of an MLP layer (256 x 1024 with K = 784:
 * 32 tiles of 64x128). Three changes against sgemm_splitk:
 * - 64x128 tiles of 128 threads (4 warps), 8x8 outputs a thread: per k a thread reads
 *   4 float4 from shared memory for 64 FMAs, against 2 for 16 with 4x4, so shared
 *   memory no longer caps the FMA rate. 127 registers a thread (no spills) let 4 blocks
 *   share an SM. (The fragment prefetch of step 10 needs more than the 128 registers
 *   that 4 blocks leave a thread, spills, and measured no faster here: it is off.)
 * - the split count evens out the SMs: it keeps small the work of the busiest SM, its
 *   blocks times the slices each block multiplies plus a fixed cost of about two slices
 *   (sgemm_splitk_8x8_splits), instead of asking for "two blocks per SM".
 * - the partial sums go out as 16-byte vector atomics, and with beta == 1 (a gradient
 *   accumulated into C) there is no clearing launch in front. */
typedef SgemmConfig<64, 128, 16, 8, 8, 4, 3> SgemmSplitWideCfg;

static inline int sgemm_splitk_8x8_splits(int M, int N, int K)
{
    typedef SgemmSplitWideCfg Cfg;
    long long sms = sgemm_sm_count(), tiles = sgemm_blocks(M, N, Cfg::BM, Cfg::BN);
    int slices = sgemm_ceil_div(K, Cfg::BK), best = 1;
    long long best_cost = -1;
    for (int s = 1; s <= slices && s <= 64; s++) {
        int per_block = sgemm_ceil_div(slices, s);
        if (s > 1 && sgemm_ceil_div(slices, per_block) < s) continue; /* same as a smaller s */
        long long busiest = (tiles * s + sms - 1) / sms;
        if (busiest < 2) busiest = 2; /* one 4-warp block alone runs an SM at half speed */
        long long cost = busiest * (per_block + 2);
        if (best_cost < 0 || cost < best_cost) best_cost = cost, best = s;
    }
    return best;
}

static inline void sgemm_splitk_8x8(int M, int N, int K, float alpha, const float *A,
                                    const float *B, float beta, float *C)
{
    sgemm_pipelined_launch<SgemmSplitWideCfg, SGEMM_EPI_ATOMIC4>(
        M, N, K, alpha, A, B, beta, C, sgemm_splitk_8x8_splits(M, N, K));
}

/* The large tiles when they make about a wave (3/4 of the SMs busy or more: the Hopper
 * configuration, or double_buffer's tiles on a GPU whose blocks cannot have the Hopper
 * configuration's shared memory); else, for a short K, the small tiles; else, when C has at least 64 columns, splitk_8x8; for
 * narrower C (the 10 classes of an MLP's output layer, where a 128-wide tile would be
 * mostly empty) the small tiles when they fill the SMs, else split-K over them. */
static inline void sgemm_best(int M, int N, int K, float alpha, const float *A, const float *B,
                              float beta, float *C)
{
    int sms = sgemm_sm_count();
    if (4 * sgemm_blocks(M, N, SgemmHopperCfg::BM, SgemmHopperCfg::BN) >= 3LL * sms) {
        if (SgemmHopperCfg::SMEM_BYTES <= sgemm_smem_limit())
            sgemm_hopper(M, N, K, alpha, A, B, beta, C);
        else
            sgemm_double_buffer(M, N, K, alpha, A, B, beta, C);
    } else if (K < 8 * SgemmSmallCfg::BK)
        sgemm_hopper_small(M, N, K, alpha, A, B, beta, C);
    else if (N >= 64)
        sgemm_splitk_8x8(M, N, K, alpha, A, B, beta, C);
    else if (sgemm_blocks(M, N, SgemmSmallCfg::BM, SgemmSmallCfg::BN) >= sms)
        sgemm_hopper_small(M, N, K, alpha, A, B, beta, C);
    else
        sgemm_splitk(M, N, K, alpha, A, B, beta, C);
}

#endif
