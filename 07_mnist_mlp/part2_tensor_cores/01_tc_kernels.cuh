/* Chapter 07: the kernels of the tensor-core trainers (tf32, bf16;
 * part2_tensor_cores/01_tc_steps.cuh).
 *
 * Their two big products are chapter 05's tensor-core GEMMs (tc_best_tf32, tc_best_bf16),
 * whose contract (05_matmul_tiled/tensor_cores/common.cuh) is C = alpha A B + beta C with A (M x K)
 * and B *transposed*, Bt (N x K), both row-major, K-contiguous, in bf16 or in fp32 read as
 * TF32. So each operand must exist in that layout and precision:
 *
 *   forward   z1 (B x H)   += x (B x 784)      . W1          Bt = W1t  (H x 784)
 *   dW1       vW1 (784 x H) += xt (784 x B)    . dz1         Bt = dz1t (H x B)
 *
 * and each copy is written by a kernel that touches the data anyway, rounded on the way
 * (part2_tensor_cores/01_roundings.h): the gather writes x and xt (kernels.cuh's gather, stored
 * through the precision's MlpBf16 or MlpTf32 below), the hidden backward writes dz1t instead of dz1
 * (kernels.cuh), and the update kernel here writes W1t while it updates W1. The master weights, the
 * velocity and z1 stay fp32.
 *
 *   mlp_update_tc   the fused update of the tensor-core step: in one grid, the gather of
 *                   the next batch, W1 updated tile by tile with each tile's transpose
 *                   stored into W1t (chapter 02's tiled transpose: both sides coalesced),
 *                   and the other parameters (b1, W2, b2) in the float4 pass of
 *                   mlp_update_and_gather
 *   mlp_make_w1t    W1t from W1 alone: once an epoch, before its first step (the
 *                   parameters may have been uploaded since the last update) */
#ifndef CH07_KERNELS_TC_CUH
#define CH07_KERNELS_TC_CUH

#include "05_matmul_tiled/tensor_cores/best.cuh"
#include "07_mnist_mlp/kernels.cuh"

/* bf16 operands: x, xt, W1t and dz1t hold bf16 (half of fp32's bytes). */
struct MlpBf16 {
    typedef bf16 T;
    static constexpr bool TC = true;
    /* The GPU's own rounding, cvt.rn.bf16x2.f32: to nearest, ties to even, the same bits as
       01_roundings.h's for every finite value, in one instruction for two values.
       01_roundings.h's integer rounding, which the host tests share, is five or six
       instructions a value: too many for the persistent trainer, whose blocks round 28 K
       pixels of the batch and their slice of W1 every step. */
    static __device__ __forceinline__ unsigned pack2(float lo, float hi)
    {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi); /* .x = lo: the low half */
        return *(const unsigned *)&h;
    }
    static __device__ __forceinline__ bf16 cvt(float v) { return __float2bfloat16_rn(v); }
    /* 8 values as one 16-byte store (part2_tensor_cores/01_roundings.h's pairs: element 2i in the
       low half of word i) */
    static __device__ __forceinline__ void store8(bf16 *p, const float (&v)[8])
    {
        *(uint4 *)p =
            make_uint4(pack2(v[0], v[1]), pack2(v[2], v[3]), pack2(v[4], v[5]), pack2(v[6], v[7]));
    }
};

/* TF32 operands: fp32 storage, each value rounded to TF32 (part2_tensor_cores/01_roundings.h says
 * why not truncated). */
struct MlpTf32 {
    typedef float T;
    static constexpr bool TC = true;
    static __device__ __forceinline__ float cvt(float v) { return tc_round_tf32(v); }
    static __device__ __forceinline__ void store8(float *p, const float (&v)[8])
    {
        float4 *q = (float4 *)p;
        q[0] = make_float4(cvt(v[0]), cvt(v[1]), cvt(v[2]), cvt(v[3]));
        q[1] = make_float4(cvt(v[4]), cvt(v[5]), cvt(v[6]), cvt(v[7]));
    }
};

/* C (M x N) += A (M x K) . B, B given as Bt (N x K): chapter 05's best tensor-core GEMM in
 * the operands' precision (TMA + wgmma on a Hopper GPU, mma.sync elsewhere or where TMA
 * cannot describe K, such as a short last batch of an odd size). */
static inline void tc_gemm_acc(int M, int N, int K, const bf16 *A, const bf16 *Bt, float *C)
{
    tc_best_bf16(M, N, K, 1.0f, A, Bt, 1.0f, C);
}

static inline void tc_gemm_acc(int M, int N, int K, const float *A, const float *Bt, float *C)
{
    tc_best_tf32(M, N, K, 1.0f, A, Bt, 1.0f, C);
}

#define MLP_W1_ROWS (MLP_UPDATE_THREADS / MLP_W1_TILE) /* a block's rows of threads: 8 */

/* One MLP_W1_TILE x MLP_W1_TILE tile of W1 (in x hidden, row-major), tile `tile` of
 * mlp_w1_tiles: with UPDATE, w -= lr v and v *= mu (mlp_update_range's arithmetic); then the
 * tile, new values, goes through shared memory and out transposed and rounded into W1t
 * (hidden x in): thread (tx, ty) reads and writes W1 along its rows (j = j0 + tx) and W1t
 * along its rows (k = k0 + tx), so both sides are coalesced, and the shared tile's padding
 * column keeps the transposed reads free of bank conflicts. Thread (tx, ty) of 32 x 8. */
template <typename S, bool UPDATE>
__device__ __forceinline__ void mlp_w1_tile(float *w1, float *v1, int in, int hidden, float lr,
                                            float mu, typename S::T *w1t, int tile, int tx, int ty)
{
    __shared__ float s_w[MLP_W1_TILE][MLP_W1_TILE + 1];
    int k0, j0;
    mlp_w1_tile_origin(tile, hidden, &k0, &j0);
#pragma unroll
    for (int r = ty; r < MLP_W1_TILE; r += MLP_W1_ROWS) {
        int k = k0 + r, j = j0 + tx;
        if (k < in && j < hidden) {
            size_t i = (size_t)k * hidden + j;
            float p = w1[i];
            if (UPDATE) {
                float m = v1[i];
                p = p - lr * m;
                w1[i] = p;
                v1[i] = mu * m;
            }
            s_w[r][tx] = p; /* W1[k0 + r][j0 + tx] */
        }
    }
    __syncthreads();
#pragma unroll
    for (int r = ty; r < MLP_W1_TILE; r += MLP_W1_ROWS) {
        int j = j0 + r, k = k0 + tx;
        if (j < hidden && k < in) w1t[(size_t)j * in + k] = S::cvt(s_w[tx][r]); /* = W1[k][j] */
    }
}

/* mlp_update_tc: three jobs side by side in one grid (block ranges in this order):
 *   [0, gather_blocks)                 the next step's batch (x, xt in S's precision, y, z1
 *                                      cleared), as in mlp_update_and_gather;
 *   [.., + w1_blocks)                  W1 updated tile by tile, and W1t written from it;
 *   [.., end)                          b1, W2 and b2 (from offset l.b1, a multiple of 4, to
 *                                      the end of the array) in the float4 grid-stride pass. */
template <typename S> __global__ void __launch_bounds__(MLP_UPDATE_THREADS)
    mlp_update_tc(float *w, float *v, const MlpLayout l, float lr, float mu, int gather_blocks,
                  int w1_blocks, const MlpSource src, const int *cursor, int n_train, int batch,
                  const MlpBatchOf<S> dst, typename S::T *w1t)
{
    int block = blockIdx.x;
    if (block < gather_blocks) {
        mlp_gather_next(src, cursor, n_train, batch, dst, block, gather_blocks);
        return;
    }
    block -= gather_blocks;
    if (block < w1_blocks) {
        mlp_w1_tile<S, true>(w + l.w1, v + l.w1, l.in, l.hidden, lr, mu, w1t, block,
                             threadIdx.x % MLP_W1_TILE, threadIdx.x / MLP_W1_TILE);
        return;
    }
    block -= w1_blocks;
    mlp_update_range(w + l.b1, v + l.b1, (l.total - l.b1) / 4, lr, mu,
                     (size_t)block * MLP_UPDATE_THREADS + threadIdx.x,
                     (size_t)(gridDim.x - gather_blocks - w1_blocks) * MLP_UPDATE_THREADS);
}

/* The update of a tensor-core step, with the gather of up to `batch` rows from position
 * *cursor of `next` into dst, and W1t rewritten from the new W1. */
template <typename S>
static inline void launch_update_tc(float *w, float *v, const MlpLayout *l, float lr, float mu,
                                    const MlpSource *next, const int *cursor, int n_train,
                                    int batch, const MlpBatchOf<S> *dst, typename S::T *w1t)
{
    static_assert(MLP_W1_TILE * MLP_W1_ROWS == MLP_UPDATE_THREADS,
                  "a W1 tile is a block of 32 x 8 threads");
    int gather_blocks = mlp_gather_blocks(batch), w1_blocks = mlp_w1_tiles(l->in, l->hidden);
    int rest_blocks = vadd_grid((long long)((l->total - l->b1) / 4));
    mlp_update_tc<S><<<gather_blocks + w1_blocks + rest_blocks, MLP_UPDATE_THREADS>>>(
        w, v, *l, lr, mu, gather_blocks, w1_blocks, *next, cursor, n_train, batch, *dst, w1t);
    CHECK_LAUNCH();
}

/* mlp_make_w1t: W1t from W1, one tile a block, nothing updated. */
template <typename S> __global__ void __launch_bounds__(MLP_UPDATE_THREADS)
    mlp_make_w1t(float *w1, int in, int hidden, typename S::T *w1t)
{
    mlp_w1_tile<S, false>(w1, NULL, in, hidden, 0.0f, 1.0f, w1t, blockIdx.x,
                          threadIdx.x % MLP_W1_TILE, threadIdx.x / MLP_W1_TILE);
}

template <typename S>
static inline void launch_make_w1t(float *w1, const MlpLayout *l, typename S::T *w1t)
{
    mlp_make_w1t<S>
        <<<mlp_w1_tiles(l->in, l->hidden), MLP_UPDATE_THREADS>>>(w1, l->in, l->hidden, w1t);
    CHECK_LAUNCH();
}

#endif
