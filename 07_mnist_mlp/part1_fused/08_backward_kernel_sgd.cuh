/* Chapter 07: the SGD steps the backward kernel (part1_fused/08_backward_kernel.cuh) takes inside
 * itself, where a gradient is complete, instead of in an update launch of their own:
 *
 *   mlp_last_ticket     which of a tile's blocks adds the last share of its gradient (and
 *                       so may step it): a ticket from an atomic count
 *   mlp_sgd_tile        the step of a BM x BN tile of W1 and its velocity, the gradient
 *                       staged in shared memory or already added into the velocity
 *   mlp_bwd_step_unit   the step of one hidden unit's row of W2, its b1 (and b2), from the
 *                       copy of b1, W2, b2 the step reads into the one it writes (MlpSmall)
 *
 * The velocity holds mu v from the step before (kernels.cuh's convention); a step adds its
 * gradient g, v = mu v + g, moves w -= lr v and leaves mu v for the next step. */
#ifndef CH07_KERNELS_SGD_STEPS_CUH
#define CH07_KERNELS_SGD_STEPS_CUH

#include "07_mnist_mlp/kernels.cuh"

/* b1, W2 and b2 (and their velocity) as one array laid out as the parameters are from
 * offset b1 on: b1 at 0, then W2 and b2 at their offsets. */
typedef struct {
    float *p, *v;
} MlpSmall;

/* A ticket: each block of a tile that has added its share draws one from the tile's counter
 * (an atomic add); the block that draws the last of `count` knows every share has landed,
 * takes the step that needed them all, and resets the counter for the next launch. What a
 * block wrote before its draw must be visible to the block that draws the last, as in a
 * grid barrier: the block's barrier (its threads' writes before thread 0's draw), a fence
 * by thread 0 before the draw, and one by the last block's thread 0 after it, before the
 * barrier that lets its threads read. Every thread of the block calls it. */
__device__ __forceinline__ bool mlp_last_ticket(int *counter, int count)
{
    __shared__ int s_last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        s_last = atomicAdd(counter, 1) == count - 1;
        if (s_last) {
            *counter = 0;
            __threadfence();
        }
    }
    __syncthreads();
    return s_last;
}

/* The SGD step of N small parameters at offsets at[0 .. N), from a.in into a.out (a: the
 * kernel's arguments, MlpBwdArgsOf; lr, mu, in, out read from it): v = v + g
 * (g NULL: the gradient is in in.v already, added by the tile's blocks), w -= lr v, and mu v
 * stored. in.v is read past L1 (other blocks' atomics put it in L2); all loads come before
 * any store. */
template <int N, typename Args> __device__ __forceinline__ void
mlp_bwd_step_small(const Args &a, const int (&at)[N], const float *g)
{
    float mv[N], mw[N];
#pragma unroll
    for (int k = 0; k < N; k++) mv[k] = __ldcg(a.in.v + at[k]), mw[k] = a.in.p[at[k]];
#pragma unroll
    for (int k = 0; k < N; k++) {
        float m = mv[k] + (g ? g[k] : 0.0f);
        a.out.p[at[k]] = mw[k] - a.lr * m;
        a.out.v[at[k]] = a.mu * m;
    }
}

/* Unit j's row of W2 and b1[j], with this block's sums g (W2's row, then b1) or, g NULL,
 * with what the tile's blocks added into in.v; and b2 when `with_b2` (thread j < 10 steps
 * b2[j]; its gradient came from the output layer). */
template <typename Args> __device__ __forceinline__ void
mlp_bwd_step_unit(const Args &a, int j, const float *g, bool with_b2)
{
    if (j < a.hidden) {
        int at[MLP_CLASSES + 1];
#pragma unroll
        for (int c = 0; c < MLP_CLASSES; c++) at[c] = a.w2 + j * MLP_CLASSES + c;
        at[MLP_CLASSES] = j;
        mlp_bwd_step_small<MLP_CLASSES + 1>(a, at, g);
    }
    if (with_b2 && j < MLP_CLASSES) {
        const int at[1] = {a.b2 + j};
        mlp_bwd_step_small<1>(a, at, NULL);
    }
}

/* 16-byte load past L1 (or element by element at the edge), zeros outside the matrix. */
__device__ __forceinline__ float4 mlp_load4_cg(const float *base, int row, int col, int rows,
                                               int cols, bool vec)
{
    if (row >= rows) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float *p = base + (size_t)row * cols + col;
    if (vec && col + 3 < cols) return __ldcg((const float4 *)p);
    float4 r;
    r.x = col < cols ? __ldcg(p) : 0.0f;
    r.y = col + 1 < cols ? __ldcg(p + 1) : 0.0f;
    r.z = col + 2 < cols ? __ldcg(p + 2) : 0.0f;
    r.w = col + 3 < cols ? __ldcg(p + 3) : 0.0f;
    return r;
}

/* The SGD step on the BM x BN tile of W1 at (m0, n0) (W1: rows x cols): v = v + g with g the tile's
 * gradient staged in shared memory (BN floats a row; NULL: already in v), then w -= lr v and
 * v = mu v; the new w also into w_out (shared, laid out as g; NULL: not). Consecutive threads take
 * consecutive float4 of a row (coalesced), and each issues up to 8 float4 loads of v and 8 of w
 * before its stores: two memory latencies for a 64 x 128 tile, not one per float4. */
template <int BM, int BN, int THREADS>
__device__ __forceinline__ void mlp_sgd_tile(float *w, float *v, const float *g, float *w_out,
                                             int m0, int n0, int rows, int cols, float lr, float mu,
                                             bool vec)
{
    constexpr int QR = BN / 4, PER = BM * QR / THREADS, BATCH = PER < 8 ? PER : 8;
    static_assert(BM * QR % THREADS == 0 && PER % BATCH == 0, "whole batches of float4s");
#pragma unroll
    for (int b0 = 0; b0 < PER; b0 += BATCH) {
        float4 mv[BATCH], mw[BATCH];
#pragma unroll
        for (int q = 0; q < BATCH; q++) {
            int i = (b0 + q) * THREADS + threadIdx.x, r = m0 + i / QR, c = n0 + i % QR * 4;
            mv[q] = mlp_load4_cg(v, r, c, rows, cols, vec);
            mw[q] = sgemm_load4(w, r, c, rows, cols, vec);
        }
#pragma unroll
        for (int q = 0; q < BATCH; q++) {
            int i = (b0 + q) * THREADS + threadIdx.x, r = m0 + i / QR, c = n0 + i % QR * 4;
            float4 m = mv[q], p = mw[q];
            if (g) {
                float4 d = *(const float4 *)(g + (i / QR) * BN + i % QR * 4);
                m.x += d.x, m.y += d.y, m.z += d.z, m.w += d.w;
            }
            float4 np = make_float4(p.x - lr * m.x, p.y - lr * m.y, p.z - lr * m.z, p.w - lr * m.w);
            sgemm_write4(w, r, c, rows, cols, vec, np);
            if (w_out) *(float4 *)(w_out + (i / QR) * BN + i % QR * 4) = np;
            sgemm_write4(v, r, c, rows, cols, vec,
                         make_float4(mu * m.x, mu * m.y, mu * m.z, mu * m.w));
        }
    }
}

#endif
