/* Chapter 07: how a batch reaches the persistent trainers' kernel (part4_persistent/09_kernel.cuh):
 *
 *   bf16's rows       pst_bf16_rows, a kernel of its own: the epoch's images in bf16, in the
 *                     epoch's order (part4_persistent/11_persistent_steps.cuh launches it, for the
 *                     next epoch during this one)
 *   the next batch    a row's pixels loaded ahead (pst_fetch_row) and put into x (pst_put_row),
 *                     or (bf16) the batch copied into x's other buffer (pst_copy_batch, its
 *                     rows asked of L2 ahead by pst_prefetch_batch); labels
 * What a launch is given and a block's shared memory: part4_persistent/06_phases.cuh. */
#ifndef CH07_KERNELS_PERSISTENT_BATCH_CUH
#define CH07_KERNELS_PERSISTENT_BATCH_CUH

#include "07_mnist_mlp/part4_persistent/06_phases.cuh"

/* 8 pixels into bf16: (p * scale + shift), rounded. */
static __device__ __forceinline__ void pst_bf16_chunk(const unsigned char *from, float scale,
                                                      float shift, uint4 *to)
{
    const uint2 p = *(const uint2 *)from;
    const unsigned w[2] = {p.x, p.y};
    unsigned h[4];
#pragma unroll
    for (int k = 0; k < 4; k++)
        h[k] = MlpBf16::pack2(fmaf(pst_byte_float(w[k / 2], 2 * (k % 2)), scale, shift),
                              fmaf(pst_byte_float(w[k / 2], 2 * (k % 2) + 1), scale, shift));
    *to = make_uint4(h[0], h[1], h[2], h[3]);
}

/* bf16's rows of x for its TMA copies (part4_persistent/11_persistent_steps.cuh): image order[i] of
 * a set (image i where order is NULL) as row i, every pixel p as bf16(p * scale + shift),
 * normalized as every persistent trainer does (one FMA) and rounded to nearest (cvt.rn). With the
 * rows in the order the steps take them, a block's slice of a batch is one box of a 2-D tensor map,
 * one request, where rows from 256 images are 256. A block takes 32 rows at a time: their images
 * first (one load a row, from the host's pinned memory when the order is the next epoch's, still
 * there: pst_next_rows), also copied to order_copy if it is not NULL; then 8 pixels (16 bytes) a
 * thread. */
__global__ void pst_bf16_rows(const unsigned char *pixels, const int *order, int *order_copy,
                              int rows, float scale, float shift, uint4 *out)
{
    constexpr int CHUNKS = IDX_PIXELS / 8, GROUP = 32;
    __shared__ int images[GROUP];
    for (int r0 = blockIdx.x * GROUP; r0 < rows; r0 += gridDim.x * GROUP) {
        const int n = rows - r0 < GROUP ? rows - r0 : GROUP;
        __syncthreads(); /* the last group's images are read */
        if (threadIdx.x < n) {
            const int image = order ? order[r0 + threadIdx.x] : r0 + threadIdx.x;
            images[threadIdx.x] = image;
            if (order_copy) order_copy[r0 + threadIdx.x] = image;
        }
        __syncthreads();
        for (int i = threadIdx.x; i < n * CHUNKS; i += blockDim.x)
            pst_bf16_chunk(pixels + (size_t)images[i / CHUNKS] * IDX_PIXELS + 8 * (i % CHUNKS),
                           scale, shift, out + (size_t)r0 * CHUNKS + i);
    }
}

#ifdef PST_DEVICE

/* The image of thread r's batch row at step s, or -1 past the epoch or the batch. The
 * kernel loads it right after reduce_z1_z2 of step s - 1, two phases before it fetches
 * the row's pixels (small_step), which need it: loaded there, it would make small_step wait
 * for one more round trip to memory. */
static __device__ __forceinline__ int pst_image(const PstArgs &a, int s)
{
    int r = threadIdx.x;
    return s < a.steps && r < pst_rows(a, s) ? __ldg(a.order + (size_t)s * a.batch + r) : -1;
}

/* The products with one buffer of x (fp32, bf16x3): thread r's row of a batch, loaded ahead
 * into registers (its slice's pixels of image img, as bytes) and put into x, converted,
 * once the dW1 product has read x to its end. */
template <typename S> static __device__ __forceinline__ void
pst_fetch_row(typename PstProduct<S>::Row &row, const PstArgs &a, int img, int k0, int ks)
{
    if (img >= 0) PstProduct<S>::fetch(row, a.pixels + (size_t)img * IDX_PIXELS, k0, ks);
}

/* ... into x (rows past the batch: zeros, which the products may read). */
template <typename S>
static __device__ __forceinline__ void pst_put_row(typename PstProduct<S>::T *x,
                                                   const typename PstProduct<S>::Row &row,
                                                   const PstArgs &a, int rows, int ks)
{
    int r = threadIdx.x;
    PstProduct<S>::put(x, r, row, ks, r < rows, a.scale, a.shift);
}

/* bf16, with two buffers of x: the next batch's slice, rows s0 .. s0 + pst_x_rows(batch) - 1 of
 * a.rows (the batch rounded up to 64, a wgmma tile: the rows past it are the next batch's or, past
 * the last row, zeros) by 128 pixels from pixel k0 (the slice and whatever follows it; past the
 * last pixel, zeros), copied into the other buffer by the TMA unit in two boxes of 64 pixels (128
 * bytes a row, swizzled: PstProduct<MlpBf16>'s x_byte), counted on sm.x_full; its thread waits for
 * nothing. The copies land while the step goes on. */
template <typename S> static __device__ __forceinline__ void
pst_copy_batch(PstShared<S> &sm, typename PstProduct<S>::T *x, const PstArgs &a, int s0, int k0)
{
    typedef PstProduct<MlpBf16> B; /* the products with two buffers: bf16's */
    if (threadIdx.x != 0) return;
    /* the buffer held z2_parts (pst_reduce_z1), stored and loaded by the threads: the proxy
       fence puts those accesses, ordered before this thread's by the barrier before it,
       ahead of the copy's */
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    tc_mbar_arrive_expect(&sm.x_full,
                          (unsigned)(2 * pst_x_rows(a.batch) * B::X_BLOCK_ROW * sizeof(B::T)));
    for (int b = 0; b < 2; b++)
        tc_tma_load(x + b * B::X_BLOCK, &a.rows, &sm.x_full, k0 + b * B::X_BLOCK_ROW, s0);
}

/* bf16: step s's rows, the boxes pst_copy_batch will copy, asked of L2 two steps ahead, so
 * that its copy finds them there and not in DRAM (the epoch's rows, 94 MB, are more than L2
 * holds): one cluster a step (s modulo the clusters), each block its own two boxes; every
 * block asking for its boxes of every step would flood L2 with requests. */
static __device__ __forceinline__ void pst_prefetch_batch(const PstArgs &a, int s, int k0,
                                                          int group, int groups)
{
    typedef PstProduct<MlpBf16> B;
    if (threadIdx.x != 0 || s >= a.steps || s % groups != group) return;
    for (int b = 0; b < 2; b++)
        asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\n"
                     :
                     : "l"((uint64_t)&a.rows), "r"(k0 + b * B::X_BLOCK_ROW), "r"(s * a.batch)
                     : "memory");
}

/* ... and every thread's wait for copy number `copy` (0 the first batch's, s + 1 step s's). */
template <typename S>
static __device__ __forceinline__ void pst_batch_landed(PstShared<S> &sm, int copy)
{
    tc_mbar_wait(&sm.x_full, (unsigned)copy & 1u);
}

/* The first batch: both buffers of x cleared (rows past the batch must read as zeros, and a
 * copy writes only the batch's rows), the copies' mbarrier made, and the first copy, landed.
 * The clearing stores are the threads' own (the generic proxy), the copies the TMA unit's
 * (the async proxy): the proxy fence puts the stores first. */
template <typename S>
static __device__ __forceinline__ void pst_first_copy(PstShared<S> &sm, const PstArgs &a, int k0)
{
    if (tc_smem_addr(sm.xs) % 1024 != 0) __trap(); /* the swizzle's blocks (PstShared) */
    uint4 *xs = (uint4 *)sm.xs;
    for (int i = threadIdx.x; i < (int)(sizeof sm.xs / 16); i += PST_THREADS)
        xs[i] = make_uint4(0u, 0u, 0u, 0u);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    if (threadIdx.x == 0) {
        tc_mbar_init(&sm.x_full, 1);
        tc_mbar_fence_init();
    }
    __syncthreads();
    pst_copy_batch(sm, sm.xs, a, 0, k0);
    pst_batch_landed(sm, 0);
}

/* The label of thread r's row (img: its image, -1 past the batch), and where the rank keeps
 * its rows' labels. */
static __device__ __forceinline__ int pst_label(const PstArgs &a, int img)
{
    return img >= 0 ? (int)__ldg(a.labels + img) : 0;
}

template <typename S> static __device__ __forceinline__ void
pst_put_label(PstShared<S> &sm, int label, int rows, int rank)
{
    int r = threadIdx.x;
    PstOwn o = pst_own(rows, rank);
    if (r >= o.r0 && r < o.r0 + o.n) sm.y[r - o.r0] = label;
}

/* The next batch in two halves, each where the kernel has room for it: its loads (one
 * buffer: into registers; two: pst_copy_batch instead) and the labels' loads, then its put
 * into x (one buffer) and the rank's labels. */
template <typename S>
static __device__ __forceinline__ void pst_batch_load(typename PstProduct<S>::Row &row, int &label,
                                                      const PstArgs &a, int img, int k0, int ks)
{
    if constexpr (PstProduct<S>::X_BUFFERS == 1) pst_fetch_row<S>(row, a, img, k0, ks);
    label = pst_label(a, img);
}

template <typename S>
static __device__ __forceinline__ void pst_batch_put(PstShared<S> &sm, typename PstProduct<S>::T *x,
                                                     const typename PstProduct<S>::Row &row,
                                                     int label, const PstArgs &a, int rows,
                                                     int rank, int ks)
{
    if constexpr (PstProduct<S>::X_BUFFERS == 1) pst_put_row<S>(x, row, a, rows, ks);
    pst_put_label(sm, label, rows, rank);
}

#endif /* PST_DEVICE */

#endif
