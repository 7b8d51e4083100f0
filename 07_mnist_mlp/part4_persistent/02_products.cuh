/* Chapter 07: the two matrix products of the persistent trainer's blocks
 * (part4_persistent/09_kernel.cuh), and the SGD step of W1 that follows the second one: what the
 * products share (the tile sizes, the slices, the K split, a batch row's bytes), with one
 * file each: part4_persistent/03_products_fp32.cuh, part4_persistent/05_products_bf16x3.cuh and
 * part4_persistent/04_products_bf16.cuh.
 *
 * Block q of cluster g owns a slice of W1: pixels k0 .. k0 + ks of the 784 by the cluster's
 * 72 hidden units. Per step:
 *
 *   forward   part (rows x 72)  =  x slice (rows x ks)  .  W1 slice (ks x 72)      K = ks
 *   dW1       g (ks x 72)       =  x slice^T (ks x rows) .  dz1 (rows x 72)        K = rows
 *   step      v = mu v + g;  W1 -= lr v
 *
 * The slice of W1 lives in shared memory from the first step to the last, and its velocity
 * (and for bf16 and bf16x3 its fp32 master copy) in the registers of the threads that
 * compute its gradient: no step reads or writes W1 in device memory. One struct a product
 * (PstProduct<S>: its layout, the load and store of its slice, the two products, a batch
 * row into x, dz1 into the product's operand):
 *
 *   PstProduct<MlpFp32>   fp32 FMAs; slices of 96 or 100 pixels (the most that fit beside
 *                         the rest in 227 KB). Forward: a thread owns 8 rows x 9 units
 *                         (per 4 pixels, 8 float4 of x and 12 loads of W1 for 288 FMAs).
 *                         dW1: a thread owns 10 pixels x 9 units over a third of the
 *                         batch rows (the forward's 9-unit pattern: 90 FMAs per row for 5
 *                         float2 loads of x, 2 float4 and 1 float of dz1), the thirds
 *                         summed in x's space; the velocity stays in the registers of 225
 *                         threads, 4 pixels x 8 units each. x is stored row by row (k
 *                         contiguous) in rows of 100 floats, so the 4 rows a warp reads at
 *                         once start 4 banks apart.
 *   PstProduct<MlpBf16>   wgmma m64n72k16 on bf16 operands, both read from shared memory
 *                         (chapter 05's tensor_cores/05_wgmma.cuh; mma.sync where there is
 *                         no sm_90a code); slices of 96 or 112 pixels (whole k-steps).
 *                         Forward: each warpgroup two tiles of 64 rows x 72 units, A = x
 *                         (as the TMA copy lands it, 128-byte swizzle), B = W1 in chunks of
 *                         8 units. dW1: warpgroup g pixels 64 g .. 64 g + 63 x 72 units,
 *                         A = x^T (the same bytes read MN-major), B = dz1 in chunks of 8
 *                         units. The fp32
 *                         master weights and velocities sit in the accumulators' layout
 *                         (warp w: pixels 16 w ..), and the step writes the bf16 copy the
 *                         forward reads.
 *   PstProduct<MlpBf16x3> fp32's numbers on bf16's tensor cores: the pixels as bf16 (exact),
 *                         W1 and dz1 each as three bf16 pieces whose sum is the fp32 value,
 *                         three products into one fp32 accumulator; fp32's slices, partial
 *                         sums and dz1, bf16's tiles (part4_persistent/05_products_bf16x3.cuh).
 *
 * At a small batch the forward alone leaves threads idle (32 rows are 4 of the fp32 row
 * tiles, one warp of bf16), so it splits K: `parts` groups of threads take a range of the
 * slice's pixels each and leave `parts` partial sums of `per` rows in `part`, which the
 * block adds into one (pst_sum_parts) before the cluster's reduction (PstSplit). */
#ifndef CH07_KERNELS_PERSISTENT_PRODUCTS_CUH
#define CH07_KERNELS_PERSISTENT_PRODUCTS_CUH

#include <cuda_fp16.h>

/* MlpBf16, mlp_ldsm_x4_trans, chapter 05's tc_ldsm_x4 and tc_mma_16x8 */
#include "07_mnist_mlp/part2_tensor_cores/02_bf16_backward_mma.cuh"
#include "07_mnist_mlp/part4_persistent/01_cluster_sync.cuh" /* pst_st_async16: put_dz1 */

#define PST_CLUSTER 8     /* blocks in a cluster: the 784 pixels cut 8 ways */
#define PST_UNITS 72      /* hidden units of a cluster: H = 1024 takes 15 */
#define PST_MAX_GROUPS 16 /* clusters whose shares of z2 a block adds (H <= 1152) */
#define PST_THREADS 256
#define PST_MAX_ROWS 256                          /* batch rows a step may have */
#define PST_OWN_ROWS (PST_MAX_ROWS / PST_CLUSTER) /* rows whose z1 a block finishes: 32 */
#define PST_OWN_ROW (PST_UNITS + 4) /* their floats a row: rows 4 banks apart (pst_item) */
#define PST_ROW_GROUPS 3            /* softmax_backward: 3 x 72 threads share a block's rows */

static_assert(PST_THREADS == PST_MAX_ROWS, "one thread a batch row when a batch is loaded");
static_assert(PST_UNITS == 72, "the thread and warp tiles below cover 72 units: 64 + 8");

/* Rank q's pixels: slices of whole quanta (4 pixels for fp32, 16 for bf16: one mma
 * k-step), quanta q * n / 8 .. (q + 1) * n / 8 of the n = 784 / quantum. */
static inline __host__ __device__ int pst_slice_begin(int rank, int quantum)
{
    return rank * (IDX_PIXELS / quantum) / PST_CLUSTER * quantum;
}

/* The forward's K split: `parts` partial sums of `per` rows each (per: the rows rounded up
 * to the thread tile's 8 (fp32) or the warp tile's 32 (bf16); parts * per <= 256). */
typedef struct {
    int per, parts;
} PstSplit;

static inline __host__ __device__ PstSplit pst_split(int rows, int granule)
{
    PstSplit s;
    s.per = (rows + granule - 1) / granule * granule;
    s.parts = PST_MAX_ROWS / s.per;
    return s;
}

/* Part p's share of the slice's n steps (bf16's k-steps of 16 pixels, fp32's quads of 4):
 * steps begin .. end. --check's CPU model of bf16's rounded sums takes the same parts
 * (part4_persistent/11_persistent_steps.cuh's pst_bf16_z1_sum). */
static inline __host__ __device__ void pst_part_steps(PstSplit sp, int p, int n, int &begin,
                                                      int &end)
{
    begin = p * n / sp.parts, end = (p + 1) * n / sp.parts;
}

template <typename S> struct PstProduct;

/* The forward's partial sums (Z: float for fp32, __half for bf16) in 16-byte chunks, as the
 * cluster's reduction loads them from the 8 blocks: add one chunk into N floats, pack N
 * floats into one. bf16's partial sums cross the cluster in fp16 (11 significant bits, 3
 * more than the bf16 operands they are made of): half the bytes of fp32, which that
 * reduction's time follows. */
template <typename Z> struct PstChunk;

template <> struct PstChunk<float> {
    static constexpr int N = 4;
    static __device__ __forceinline__ void add(float (&z)[N], uint4 c)
    {
        z[0] += __uint_as_float(c.x), z[1] += __uint_as_float(c.y);
        z[2] += __uint_as_float(c.z), z[3] += __uint_as_float(c.w);
    }
    static __device__ __forceinline__ uint4 pack(const float (&z)[N])
    {
        return make_uint4(__float_as_uint(z[0]), __float_as_uint(z[1]), __float_as_uint(z[2]),
                          __float_as_uint(z[3]));
    }
};

template <> struct PstChunk<__half> {
    static constexpr int N = 8;
    static __device__ __forceinline__ float2 unpack2(unsigned w)
    {
        return __half22float2(*(const __half2 *)&w);
    }
    static __device__ __forceinline__ unsigned pack2(float lo, float hi)
    {
        __half2 h = __floats2half2_rn(lo, hi);
        return *(const unsigned *)&h;
    }
    static __device__ __forceinline__ void add(float (&z)[N], uint4 c)
    {
        const unsigned w[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float2 f = unpack2(w[i]);
            z[2 * i] += f.x, z[2 * i + 1] += f.y;
        }
    }
    static __device__ __forceinline__ uint4 pack(const float (&z)[N])
    {
        return make_uint4(pack2(z[0], z[1]), pack2(z[2], z[3]), pack2(z[4], z[5]),
                          pack2(z[6], z[7]));
    }
};

/* A batch row's bytes k0 .. k0 + ks of its image, loaded ahead in words of type W (bf16's
 * slices start on 16-byte boundaries; fp32's, on 4, load the 16-byte words around them). */
template <typename W, int N> static __device__ __forceinline__ void
pst_fetch_words(W (&words)[N], const unsigned char *image, int k0, int ks)
{
    const W *src = (const W *)(image + k0);
#pragma unroll
    for (int i = 0; i < N; i++)
        if ((int)sizeof(W) * i < ks) words[i] = __ldg(src + i);
}

/* Byte k of word w as a float, exactly, without a conversion instruction: prmt puts the byte
 * under the exponent of 2^23 (the bits 0x4B0000bb are 2^23 + b) and one subtraction leaves b.
 * The batch's put converts 100-112 pixels a thread every step, and (float)b compiles to I2F,
 * a conversion, which the SM issues at a fraction of the rate of prmt and FADD. */
static __device__ __forceinline__ float pst_byte_float(unsigned w, int k)
{
    return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7540u + (unsigned)k)) - 8388608.0f;
}

#endif
