/* Chapter 05, part two, step 10: TMA at any K (sm_90a only).
 *
 *   tc_wgmma_padded_<t>  copies A and Bt into rows of K rounded up to a multiple of 16 bytes
 *                        (8 bf16, 4 tf32), zeros in the extra columns, then runs
 *                        tc_wgmma_ws on the copies.
 *
 * A tensor map describes a matrix by its row stride, and TMA accepts only strides (and
 * bases) that are multiples of 16 bytes: K = 4095 in bf16 is a stride of 8190 bytes, which
 * no tensor map can describe, so every wgmma version refuses it. The rows of a copy with
 * K' = 4096 can be described, and the extra column holds zeros: a zero times anything adds
 * nothing to a dot product, so the product over K' is the product over K, exactly (the
 * fp32 sums see the same terms plus exact zeros).
 *
 * What it costs: the copy reads each operand once and writes it once, (M + N) (K + K')
 * elements through DRAM, in a launch of its own before the product. The product reads
 * the operands (M + N) K times over (once per tile row or column), so the copy is a small
 * share of a large product and most of a small one; tc_best (best.cuh) weighs it against the
 * mma.sync pipeline, which reads rows of any length, and takes the copy only where it
 * predicts it faster. That version copies only what TMA refuses: both operands when K is the
 * reason (A and Bt rows both hold K elements), one when only its pointer is unaligned. This
 * one always copies both, so that the bench measures the copy at every shape (its time minus
 * tc_wgmma_ws's on the same shape).
 *
 * Measure-worthy alternatives, not built here: copying only the rows a tile needs, inside
 * the kernel, with a producer warpgroup that loads them with ordinary loads (no copy
 * through DRAM, but 2- or 4-byte loads where TMA moves a whole box per instruction); and a
 * caller that keeps its operands in padded rows in the first place (chapter 07's trainers
 * write their operands themselves and could give them any stride).
 *
 * The copies live in scratch buffers, one pair per GPU, made on the first call that needs
 * them, grown when a larger product comes, freed at exit. Inside a CUDA graph capture no
 * copy is made (a capture cannot allocate): the call runs the mma.sync pipeline instead. */
#ifndef CH05_TENSOR_CORES_10_WGMMA_PADDED_CUH
#define CH05_TENSOR_CORES_10_WGMMA_PADDED_CUH

#include <stdlib.h>

/* 01_wmma.cuh: TcBits, an element as raw bits */
#include "05_matmul_tiled/tensor_cores/01_wmma.cuh"
#include "05_matmul_tiled/tensor_cores/04_mma_pipeline.cuh"
#include "05_matmul_tiled/tensor_cores/06_wgmma_ws.cuh"
#include "05_matmul_tiled/tensor_cores/model.h"

/* K rounded up to a row TMA can describe. */
template <typename T> static inline int tc_padded_k(int K)
{
    return tc_model_padded_k(K, (int)sizeof(T));
}

/* 16 bytes of elements as one 16-byte store (the lower address in the lower bits). */
__device__ __forceinline__ uint4 tc_pack16(const unsigned short (&w)[8])
{
    return make_uint4(w[0] | (uint32_t)w[1] << 16, w[2] | (uint32_t)w[3] << 16,
                      w[4] | (uint32_t)w[5] << 16, w[6] | (uint32_t)w[7] << 16);
}
__device__ __forceinline__ uint4 tc_pack16(const unsigned int (&w)[4])
{
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* dst_a (a_rows x kp) = a (a_rows x K) and dst_b (b_rows x kp) = b, zeros in columns
 * K .. kp - 1, in one launch (a_rows or b_rows may be 0: that operand is not copied), the
 * elements as raw bits W (TcBits: a copy needs no arithmetic, and zero bits are +0 in both
 * types). One thread per 16 bytes of the destination, Q = 16 / sizeof(W) elements:
 * neighbouring threads read and write neighbouring pieces of a row. kp * sizeof(W) is a
 * multiple of 16 and the buffers come from cudaMalloc, so every 16-byte store is aligned. */
template <typename W> __global__ void tc_pad_rows_kernel(const W *a, W *dst_a, int a_rows,
                                                         const W *b, W *dst_b, int b_rows, int K,
                                                         int kp)
{
    constexpr int Q = 16 / sizeof(W);
    const size_t per_row = (size_t)kp / Q, chunks = ((size_t)a_rows + b_rows) * per_row;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < chunks;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / per_row;
        int c = (int)(i % per_row) * Q;
        const W *src = r < (size_t)a_rows ? a : b;
        W *dst = r < (size_t)a_rows ? dst_a : dst_b;
        if (r >= (size_t)a_rows) r -= a_rows;
        const W *s = src + r * K;
        W w[Q];
#pragma unroll
        for (int j = 0; j < Q; j++) w[j] = c + j < K ? s[c + j] : (W)0;
        *(uint4 *)(dst + r * kp + c) = tc_pack16(w);
    }
}

/* Copies A (M x K) if pad_a and Bt (N x K) if pad_b into rows of kp elements; *pa and *pb
 * point at what the product should read (the copy, or the operand as it was). False, with
 * nothing launched, when the buffers cannot be had (tc_scratch_reserve). */
template <typename T> static inline bool tc_pad_operands(int M, int N, int K, int kp, const T *A,
                                                         const T *Bt, bool pad_a, bool pad_b,
                                                         const T **pa, const T **pb)
{
    typedef typename TcBits<T>::type W;
    size_t a_bytes = pad_a ? (size_t)M * kp * sizeof(T) : 0;
    size_t b_bytes = pad_b ? (size_t)N * kp * sizeof(T) : 0;
    void *da, *db;
    bool grown;
    if (!tc_scratch_reserve<TC_SCRATCH_PAD>(a_bytes, b_bytes, &da, &db, &grown)) return false;
    *pa = pad_a ? (const T *)da : A;
    *pb = pad_b ? (const T *)db : Bt;
    int a_rows = pad_a ? M : 0, b_rows = pad_b ? N : 0;
    size_t chunks = ((size_t)a_rows + b_rows) * (kp / (16 / sizeof(T)));
    if (chunks == 0) return true;
    size_t blocks = (chunks + 255) / 256;
    tc_pad_rows_kernel<W><<<(int)(blocks < 4096 ? blocks : 4096), 256>>>(
        (const W *)A, (W *)da, a_rows, (const W *)Bt, (W *)db, b_rows, K, kp);
    CHECK_LAUNCH();
    return true;
}

/* Step 10: both operands copied, then tc_wgmma_ws (128x256 tiles) on the copies; the
 * mma.sync pipeline on the operands as they are where no copy can be made. */
template <typename T> static inline void
tc_wgmma_padded(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta, float *C)
{
    const T *pa, *pb;
    int kp = tc_padded_k<T>(K);
    if (!tc_pad_operands(M, N, K, kp, A, Bt, true, true, &pa, &pb)) {
        tc_mma_pipeline_launch(M, N, K, alpha, A, Bt, beta, C);
        return;
    }
    tc_wgmma_ws_launch<T, 256, 2, TC_EPI_STORE>(M, N, kp, alpha, pa, pb, beta, C, 0, 1);
}

static inline void tc_wgmma_padded_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                        const bf16 *Bt, float beta, float *C)
{
    tc_wgmma_padded(M, N, K, alpha, A, Bt, beta, C);
}
static inline void tc_wgmma_padded_tf32(int M, int N, int K, float alpha, const float *A,
                                        const float *Bt, float beta, float *C)
{
    tc_wgmma_padded(M, N, K, alpha, A, Bt, beta, C);
}

#endif
