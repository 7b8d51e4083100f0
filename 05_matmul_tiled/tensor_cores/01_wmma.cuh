/* Chapter 05, part two, step 1: the tensor cores through the WMMA API (sm_80 and newer).
 *
 *   tc_wmma_bf16   nvcuda::wmma m16n16k16, bf16 inputs, fp32 accumulators
 *   tc_wmma_tf32   nvcuda::wmma m16n16k8 with precision::tf32, fp32 inputs and accumulators
 *
 * Both follow common.cuh's contract (A and Bt K-contiguous, C = alpha * A * B +
 * beta * C, any M, N, K >= 1, beta == 0 never reads C). This file also holds what every
 * portable tensor-core version shares: the copy of a K-slice of A and Bt into shared memory
 * (tc_copy_stage), used here and by the mma.sync versions of 02_mma.cuh to
 * 04_mma_pipeline.cuh.
 *
 * What the tensor cores change. One warp-wide instruction multiplies a 16 x 16 tile of A by
 * a 16 x 16 tile of B (16 x 8 by 8 x 16 in TF32) and adds the product into a 16 x 16 fp32
 * tile of C: 4096 multiply-adds (2048 in TF32) where an FMA instruction does 32. The operands live
 * in "fragments", registers spread over the warp's 32 threads in a layout the API hides:
 * load_matrix_sync fills a fragment from memory, mma_sync multiplies, store_matrix_sync
 * writes the accumulator back. The H100's tensor cores run bf16 at 15 times and TF32 at 7.5
 * times the fp32 FMA rate, so from here on the question is only how fast the operands can
 * be brought to them.
 *
 * TF32: the tensor cores read the top 19 bits of each fp32 input (sign, 8 exponent bits, 10
 * mantissa bits) and ignore the low 13 mantissa bits, which rounds each input toward zero.
 * These versions (and the mma.sync ones) leave the bits as they are instead of rounding
 * with __float_to_tf32 (cvt.rna.tf32.f32) first, the behaviour the wgmma versions have
 * by definition: every TF32 version of the chapter sees the same truncated inputs. */
#ifndef CH05_TENSOR_CORES_01_WMMA_CUH
#define CH05_TENSOR_CORES_01_WMMA_CUH

#include <mma.h>

#include "05_matmul_tiled/tensor_cores/common.cuh"
#include "05_matmul_tiled/tensor_cores/swizzle.h"

/* ------------------------------------------------------------------ the tile copy */

/* A tile in shared memory is ROWS rows of 128 bytes of K (swizzle.h): a stage
 * holds the BM rows of A and the BN rows of Bt that one K-slice of BK = 128 / sizeof(T)
 * elements multiplies. Thread t copies chunk t % 8 of rows t / 8, t / 8 + THREADS / 8, ...: eight
 * neighbouring threads read one contiguous 128-byte row segment, and write the 8 chunks of
 * one tile row (a different bank group each, swizzled or not). */
template <typename T> struct TcBits; /* an element's bits, for the element-wise path */
template <> struct TcBits<bf16> {
    typedef unsigned short type;
};
template <> struct TcBits<float> {
    typedef unsigned int type;
};

__device__ __forceinline__ uint32_t tc_smem(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* cp.async (sm_80+): 16 bytes from global to shared memory without passing through
 * registers, without blocking the thread. ok == false reads nothing (src must still be a
 * valid address) and writes 16 zeros: the copy of a chunk outside the matrix. */
__device__ __forceinline__ void tc_cp_async16(uint32_t dst, const void *src, bool ok)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :
                 : "r"(dst), "l"(src), "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void tc_cp_async_commit(void)
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void tc_cp_async_wait(void)
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* The same for 4 bytes (one float): .ca, as cp.async allows only 16-byte copies to bypass
 * the L1. */
__device__ __forceinline__ void tc_cp_async4(uint32_t dst, const void *src, bool ok)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :
                 : "r"(dst), "l"(src), "r"(ok ? 4 : 0));
}

/* The element-wise path for bf16: the first n elements of a chunk from global memory (n <= 0:
 * none), zeros after them, stored as one 16-byte shared-memory write. The thread waits for
 * its loads here, where a cp.async would not make it wait. */
template <typename T> __device__ __forceinline__ void tc_gather16(uint32_t dst, const T *src, int n)
{
    typedef typename TcBits<T>::type Bits;
    constexpr int E = 16 / sizeof(T);
    union {
        uint4 v;
        Bits e[E];
    } u;
    const Bits *s = (const Bits *)src;
#pragma unroll
    for (int e = 0; e < E; e++) u.e[e] = e < n ? s[e] : (Bits)0;
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n"
                 :
                 : "r"(dst), "r"(u.v.x), "r"(u.v.y), "r"(u.v.z), "r"(u.v.w));
}

/* What one thread copies of one operand tile, worked out once per block. */
typedef struct {
    const char *src;  /* its first chunk at k = 0 */
    size_t step;      /* bytes between its successive rows (THREADS / 8 matrix rows) */
    unsigned rows_ok; /* bit i: its i-th row lies inside the matrix */
    int k;            /* the first k of its chunk */
    uint32_t dst;     /* its first chunk's offset inside the tile */
    /* The floats' element-wise path (tc_copy_tile_floats): */
    const char *lane_src; /* this lane's float of its warp's first row, at k = 0 */
    int lane_row;         /* that row of the tile, and the rows of the matrix from it on */
    int lane_rows;
    bool swz; /* whether the tile is swizzled */
} TcCopyPlan;

/* base: the tile's first row in the matrix; rows_left: rows of the matrix from there on. */
template <typename T, int ROWS, int THREADS, bool SWZ>
__device__ __forceinline__ TcCopyPlan tc_copy_plan(const T *base, int rows_left, int K)
{
    constexpr int STRIDE = THREADS / 8;
    static_assert(STRIDE % 8 == 0 && ROWS % STRIDE == 0 && ROWS / STRIDE <= 32, "copy rounds");
    int row = threadIdx.x / 8, chunk = threadIdx.x % 8;
    TcCopyPlan p;
    p.k = chunk * (16 / (int)sizeof(T));
    p.src = (const char *)(base + (size_t)row * K + p.k);
    p.step = (size_t)STRIDE * K * sizeof(T);
    p.rows_ok = 0;
    for (int i = 0; i < ROWS / STRIDE; i++)
        if (row + i * STRIDE < rows_left) p.rows_ok |= 1u << i;
    p.dst = tc_tile_offset(row, chunk, SWZ);
    p.lane_row = 4 * (threadIdx.x / 32); /* the rows of the warp's lanes in the plan above */
    p.lane_src = (const char *)(base + (size_t)p.lane_row * K + threadIdx.x % 32);
    p.lane_rows = rows_left - p.lane_row;
    p.swz = SWZ;
    return p;
}

/* Floats where 16-byte copies are ruled out, one 4-byte cp.async each: a warp copies the
 * same 4 rows of each round as in tc_copy_tile, but row by row, its 32 lanes on 32
 * neighbouring floats (a 128-byte line, two where the row is not aligned), where dealing the
 * chunks out as the 16-byte path does would have each instruction read one float of 8 chunks
 * of 4 rows: 4 to 8 lines for the same 128 bytes, 4 times the L1's work. */
template <int ROWS, int THREADS> __device__ __forceinline__ void
tc_copy_tile_floats(uint32_t tile, const TcCopyPlan &p, const float *any, int K, int k0)
{
    constexpr int STRIDE = THREADS / 8;
    int lane = threadIdx.x % 32;
    bool k_ok = k0 + lane < K;
    const float *src = (const float *)p.lane_src + k0;
#pragma unroll
    for (int i = 0; i < ROWS / STRIDE; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int r = i * STRIDE + e; /* rows from the warp's first */
            bool ok = k_ok && r < p.lane_rows;
            uint32_t dst = tile + tc_tile_offset(p.lane_row + r, lane / 4, p.swz) + 4 * (lane % 4);
            tc_cp_async4(dst, ok ? (const void *)src : (const void *)any, ok);
            /* the next row's address from this one's, each slice anew: the empty asm hides
             * the sum from the compiler, which would otherwise keep every row's address of
             * both tiles in registers across the K loop (a hundred and more) */
            src += e < 3 ? K : (size_t)(STRIDE - 3) * K;
            asm("" : "+l"(src));
        }
}

/* Starts the copy of the K-slice at k0 into one tile (a shared-memory address). vec (set by
 * the launcher): K * sizeof(T) % 16 == 0 and both bases 16-byte aligned, so every chunk lies
 * wholly inside or wholly outside K and is one 16-byte cp.async, zero-filled outside the
 * matrix. Otherwise each element is copied on its own, the only way that never reads past a
 * row that ends inside a chunk: floats by 4-byte cp.async (tc_copy_tile_floats), bf16
 * gathered chunk by chunk (tc_gather16), slower because the thread waits for its loads.
 * Rows of a swizzled tile THREADS / 8 apart (a multiple of 8) share the XOR, so the
 * destination advances by whole rows. `any` is a valid address for the copies that read
 * nothing. */
template <typename T, int ROWS, int THREADS> __device__ __forceinline__ void
tc_copy_tile(uint32_t tile, const TcCopyPlan &p, const T *any, int K, int k0, bool vec)
{
    if constexpr (sizeof(T) == 4) {
        if (!vec) {
            tc_copy_tile_floats<ROWS, THREADS>(tile, p, (const float *)any, K, k0);
            return;
        }
    }
    constexpr int STRIDE = THREADS / 8;
    const char *src = p.src + (size_t)k0 * sizeof(T);
    int k_left = K - k0 - p.k; /* elements of this chunk's row segment inside K */
#pragma unroll
    for (int i = 0; i < ROWS / STRIDE; i++) {
        bool row_ok = (p.rows_ok >> i) & 1u;
        uint32_t dst = tile + p.dst + i * STRIDE * TC_TILE_ROW_BYTES;
        if (vec) {
            bool ok = row_ok && k_left > 0;
            tc_cp_async16(dst, ok ? (const void *)(src + i * p.step) : (const void *)any, ok);
        } else if constexpr (sizeof(T) == 2) { /* floats took tc_copy_tile_floats above */
            tc_gather16<T>(dst, (const T *)(src + i * p.step), row_ok ? k_left : 0);
        }
    }
}

/* One stage: the BM x 128-byte tile of A, then the BN x 128-byte tile of Bt. */
template <typename T, int BM, int BN, int THREADS>
__device__ __forceinline__ void tc_copy_stage(uint32_t stage, const TcCopyPlan &pa,
                                              const TcCopyPlan &pb, const T *A, const T *Bt, int K,
                                              int k0, bool vec)
{
    tc_copy_tile<T, BM, THREADS>(stage, pa, A, K, k0, vec);
    tc_copy_tile<T, BN, THREADS>(stage + BM * TC_TILE_ROW_BYTES, pb, Bt, K, k0, vec);
}

/* The launchers' flag for 16-byte copies (see tc_copy_tile). */
template <typename T> static inline bool tc_vec16(int K, const T *A, const T *Bt)
{
    return (K * sizeof(T)) % 16 == 0 && sgemm_aligned16(A) && sgemm_aligned16(Bt);
}

/* ------------------------------------------------------------------ step 1: WMMA */

/* The fragment shapes: m16n16k16 for bf16, m16n16k8 for TF32 (32 bytes of K either way). */
template <typename T> struct TcWmmaType;
template <> struct TcWmmaType<bf16> {
    static constexpr int K = 16;
    typedef bf16 elem;
};
template <> struct TcWmmaType<float> {
    static constexpr int K = 8;
    typedef nvcuda::wmma::precision::tf32 elem;
};

#define TC_WMMA_BM 64
#define TC_WMMA_BN 64
#define TC_WMMA_THREADS 128

/* A 64x64 tile of C per block, 4 warps of 32x32, each warp 2 x 2 accumulator fragments, so
 * each A fragment it loads serves 2 products and so does each B fragment. Per K-slice of
 * 128 bytes the block copies the 64 rows of A and of Bt into shared memory (plain layout,
 * rows 128 bytes apart), waits for them, and each warp runs 4 k-steps of 2 + 2 fragment
 * loads and 4 mma_sync. Compared with the fp32 ladder's best kernel (sgemm_hopper): the
 * multiply-adds now cost almost nothing; what is left is a copy and a block barrier per
 * 128 bytes of K with nothing to overlap them but the other blocks on the SM, and fragment
 * loads that hit the same banks (the rows of the tile are 128 bytes apart: 02_mma.cuh
 * counts the conflicts). Prediction: a few times the fp32 kernel, far below cuBLAS. */
template <typename T> __global__ void __launch_bounds__(TC_WMMA_THREADS)
    tc_wmma_kernel(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta, float *C,
                   bool vec, bool vec2)
{
    using namespace nvcuda;
    constexpr int BK = TC_TILE_ROW_BYTES / sizeof(T), FK = TcWmmaType<T>::K;
    typedef typename TcWmmaType<T>::elem E;
    __shared__ __align__(128) uint8_t smem[(TC_WMMA_BM + TC_WMMA_BN) * TC_TILE_ROW_BYTES];
    const T *As = (const T *)smem, *Bs = (const T *)(smem + TC_WMMA_BM * TC_TILE_ROW_BYTES);
    int tm, tn, warp = threadIdx.x / 32;
    tc_tile_grouped(blockIdx.x, (M + TC_WMMA_BM - 1) / TC_WMMA_BM,
                    (N + TC_WMMA_BN - 1) / TC_WMMA_BN, &tm, &tn);
    int m0 = tm * TC_WMMA_BM, n0 = tn * TC_WMMA_BN, wm = (warp / 2) * 32, wn = (warp % 2) * 32;
    TcCopyPlan pa =
        tc_copy_plan<T, TC_WMMA_BM, TC_WMMA_THREADS, false>(A + (size_t)m0 * K, M - m0, K);
    TcCopyPlan pb =
        tc_copy_plan<T, TC_WMMA_BN, TC_WMMA_THREADS, false>(Bt + (size_t)n0 * K, N - n0, K);
    wmma::fragment<wmma::accumulator, 16, 16, FK, float> acc[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);
    for (int k0 = 0; k0 < K; k0 += BK) {
        tc_copy_stage<T, TC_WMMA_BM, TC_WMMA_BN, TC_WMMA_THREADS>(tc_smem(smem), pa, pb, A, Bt, K,
                                                                  k0, vec);
        tc_cp_async_commit();
        tc_cp_async_wait<0>();
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; k += FK) {
            wmma::fragment<wmma::matrix_a, 16, 16, FK, E, wmma::row_major> a[2];
            /* col_major: the rows of Bt are the columns of B */
            wmma::fragment<wmma::matrix_b, 16, 16, FK, E, wmma::col_major> b[2];
            for (int i = 0; i < 2; i++)
                wmma::load_matrix_sync(a[i], As + (wm + 16 * i) * BK + k, BK);
            for (int j = 0; j < 2; j++)
                wmma::load_matrix_sync(b[j], Bs + (wn + 16 * j) * BK + k, BK);
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    /* The accumulator layout is the API's secret: each warp stores its 32x32 floats into
     * the (now free) staging area, then writes them to C two columns a thread. */
    float *out = (float *)smem + warp * 32 * 32;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(out + 16 * i * 32 + 16 * j, acc[i][j], 32, wmma::mem_row_major);
    __syncwarp();
    int lane = threadIdx.x % 32, c = 2 * (lane % 16);
    for (int r = lane / 16; r < 32; r += 2) {
        float2 v = *(const float2 *)&out[r * 32 + c];
        tc_store_pair(C, M, N, m0 + wm + r, n0 + wn + c, v.x, v.y, alpha, beta, vec2);
    }
}

template <typename T> static inline void
tc_wmma_launch(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta, float *C)
{
    int tiles = sgemm_ceil_div(M, TC_WMMA_BM) * sgemm_ceil_div(N, TC_WMMA_BN);
    tc_wmma_kernel<T><<<tiles, TC_WMMA_THREADS>>>(M, N, K, alpha, A, Bt, beta, C,
                                                  tc_vec16(K, A, Bt), tc_c_pairs(N, C));
    CHECK_LAUNCH();
}

static inline void tc_wmma_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                                float beta, float *C)
{
    tc_wmma_launch(M, N, K, alpha, A, Bt, beta, C);
}
static inline void tc_wmma_tf32(int M, int N, int K, float alpha, const float *A, const float *Bt,
                                float beta, float *C)
{
    tc_wmma_launch(M, N, K, alpha, A, Bt, beta, C);
}

#endif
