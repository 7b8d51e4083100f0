/* Chapter 07: the batch of a training step: where it comes from (MlpSource), how it is stored for
 * the matrix product that reads it (MlpFp32 here; the tensor-core stores in
 * part2_tensor_cores/01_tc_kernels.cuh), where it goes (MlpBatchOf), and mlp_gather, which builds
 * it from the resident data set: rows in the step's order, normalized, with a transposed copy for
 * the dW1 product, through shared memory as chapter 02's transpose does. kernels.cuh's update
 * launch gathers the next batch with the same tiles. */
#ifndef CH07_KERNELS_BATCH_CUH
#define CH07_KERNELS_BATCH_CUH

#include "common/cuda_utils.cuh"
#include "07_mnist_mlp/driver/idx.h"

#define MLP_TILE 32
#define MLP_GATHER_ROWS 8

static inline unsigned mlp_blocks(long long n, int per_block)
{
    return (unsigned)((n + per_block - 1) / per_block);
}

/* Where a batch comes from: uint8 images (784 bytes each) and labels; batch row b is
 * image order[start + b], or image b when order is NULL (a batch copied in by the host).
 * Pixels are scaled to (p / 255 - mean) / std. */
typedef struct {
    const unsigned char *pixels, *labels;
    const int *order;
    float mean, std;
} MlpSource;

/* How the fused kernels store the operands of a matrix product they prepare (the batch, dz1): as
 * fp32, unchanged, in the fp32 trainers. The tensor-core trainers store them rounded to bf16 or
 * TF32 and laid out for chapter 05's tensor-core contract (part2_tensor_cores/01_tc_kernels.cuh): T
 * the stored type, cvt the rounding, TC whether dz1 goes out transposed. */
struct MlpFp32 {
    typedef float T;
    static constexpr bool TC = false;
    static __device__ __forceinline__ float cvt(float v) { return v; }
};

/* Where it goes: x (rows x 784) and, if xt is not NULL, its transpose xt (784 x rows) for
 * the dW1 product, in the store's type; labels to y. zero[0 .. zero_count) is cleared on
 * the way (z1 in the fused step: the forward GEMM then accumulates into it with beta = 1,
 * and chapter 05's split-K needs no clearing launch of its own). */
template <typename S> struct MlpBatchOf {
    typename S::T *x, *xt;
    int *y;
    float *zero;
    size_t zero_count;
};
typedef MlpBatchOf<MlpFp32> MlpBatch;

#define MLP_GATHER_THREADS (MLP_TILE * MLP_GATHER_ROWS)

static inline int mlp_gather_blocks(int rows)
{
    return (int)(mlp_blocks(IDX_PIXELS, MLP_TILE) * mlp_blocks(rows, MLP_TILE));
}

/* One 32 x 32 tile of a gather, tile `tile` of mlp_gather_blocks(rows): pixels k0 .. k0+31
 * of batch rows b0 .. b0+31. The tile passes through shared memory (s_tile) as in chapter
 * 02's transpose, so the stores of x and of xt are both coalesced. Thread (tx, ty) of
 * 32 x ROWS. */
template <typename S, int ROWS> __device__ __forceinline__ void
mlp_gather_tile_in(float (*s_tile)[MLP_TILE + 1], const MlpSource src, int start, int rows,
                   const MlpBatchOf<S> dst, int tile, int tx, int ty)
{
    int tiles_k = (IDX_PIXELS + MLP_TILE - 1) / MLP_TILE;
    int k0 = tile % tiles_k * MLP_TILE, b0 = tile / tiles_k * MLP_TILE;
#pragma unroll
    for (int r = ty; r < MLP_TILE; r += ROWS) {
        int b = b0 + r, k = k0 + tx;
        if (b < rows && k < IDX_PIXELS) {
            int img = src.order ? src.order[start + b] : b;
            float v =
                ((float)src.pixels[(size_t)img * IDX_PIXELS + k] / 255.0f - src.mean) / src.std;
            dst.x[(size_t)b * IDX_PIXELS + k] = S::cvt(v);
            s_tile[r][tx] = v;
        }
    }
    if (k0 == 0 && ty == 0 && b0 + tx < rows)
        dst.y[b0 + tx] = src.labels[src.order ? src.order[start + b0 + tx] : b0 + tx];
    if (!dst.xt) return;
    __syncthreads();
#pragma unroll
    for (int r = ty; r < MLP_TILE; r += ROWS) {
        int k = k0 + r, b = b0 + tx;
        if (b < rows && k < IDX_PIXELS) dst.xt[(size_t)k * rows + b] = S::cvt(s_tile[tx][r]);
    }
}

/* The same for a block of 32 x 8 threads, with a shared tile of its own. */
template <typename S>
__device__ __forceinline__ void mlp_gather_tile(const MlpSource src, int start, int rows,
                                                const MlpBatchOf<S> dst, int tile, int tx, int ty)
{
    __shared__ float s_tile[MLP_TILE][MLP_TILE + 1];
    mlp_gather_tile_in<S, MLP_GATHER_ROWS>(s_tile, src, start, rows, dst, tile, tx, ty);
}

/* Clears dst.zero with `threads` threads, this one being number `thread`. */
template <typename S>
__device__ __forceinline__ void mlp_clear(const MlpBatchOf<S> dst, size_t thread, size_t threads)
{
    for (size_t i = thread; i < dst.zero_count; i += threads) dst.zero[i] = 0.0f;
}

/* mlp_gather: batch rows start .. start + rows of the source, one tile a block. */
template <typename S> __global__ void __launch_bounds__(MLP_GATHER_THREADS)
    mlp_gather(const MlpSource src, int start, int rows, const MlpBatchOf<S> dst)
{
    mlp_clear(dst, (size_t)blockIdx.x * MLP_GATHER_THREADS + threadIdx.x,
              (size_t)gridDim.x * MLP_GATHER_THREADS);
    mlp_gather_tile(src, start, rows, dst, blockIdx.x, threadIdx.x % MLP_TILE,
                    threadIdx.x / MLP_TILE);
}

template <typename S> static inline void launch_gather(const MlpSource *src, int start, int rows,
                                                       const MlpBatchOf<S> *dst,
                                                       cudaStream_t stream = cudaStreamPerThread)
{
    mlp_gather<S>
        <<<mlp_gather_blocks(rows), MLP_GATHER_THREADS, 0, stream>>>(*src, start, rows, *dst);
    CHECK_LAUNCH();
}

#endif
