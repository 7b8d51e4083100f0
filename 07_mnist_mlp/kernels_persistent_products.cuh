/* Chapter 07: the two matrix products of the persistent trainer's blocks
 * (kernels_persistent.cuh), and the SGD step of W1 that follows the second one.
 *
 * Block q of cluster g owns a slice of W1: pixels k0 .. k0 + ks of the 784 by the cluster's
 * 72 hidden units. Per step:
 *
 *   forward   part (rows x 72)  =  x slice (rows x ks)  .  W1 slice (ks x 72)      K = ks
 *   dW1       g (ks x 72)       =  x slice^T (ks x rows) .  dz1 (rows x 72)        K = rows
 *   step      v = mu v + g;  W1 -= lr v
 *
 * The slice of W1 lives in shared memory from the first step to the last, and its velocity
 * (and for bf16 its fp32 master copy) in the registers of the threads that compute its
 * gradient: no step reads or writes W1 in device memory. Two precisions, one struct each:
 *
 *   PstProduct<MlpFp32>   fp32 FMAs; slices of 96 or 100 pixels (the most that fit beside
 *                         the rest in 227 KB). Forward: a thread owns 8 rows x 9 units
 *                         (per 4 pixels, 8 float4 of x and 12 loads of W1 for 288 FMAs).
 *                         dW1: a thread owns 4 pixels x 8 units, 32 FMAs per batch row for
 *                         3 float4 loads; its 32 velocities stay in its registers. x is
 *                         stored row by row (k contiguous) in rows of 100 floats, so the 4
 *                         rows a warp reads at once start 4 banks apart.
 *   PstProduct<MlpBf16>   mma.sync m16n8k16 on bf16 operands (chapter 05, tc_mma.cuh);
 *                         slices of 96 or 112 pixels (whole k-steps). Forward: a warp owns
 *                         32 rows x 72 units (9 n-tiles); A from x with ldmatrix, B from W1
 *                         (k-major) with ldmatrix.trans. dW1: warp w owns pixels 16 w ..
 *                         16 w + 15 x 72 units; both operands k-major (a batch row at a
 *                         time), read with ldmatrix.trans as in kernels_backward_mma.cuh.
 *                         The fp32 master weights and velocities sit in the accumulators'
 *                         layout, and the step writes the bf16 copy the forward reads.
 *
 * At a small batch the forward alone leaves threads idle (32 rows are 4 of the fp32 row
 * tiles, one warp of bf16), so it splits K: `parts` groups of threads take a range of the
 * slice's pixels each and leave `parts` partial sums of `per` rows in `part`, which the
 * cluster's reduction adds with the others (PstSplit). */
#ifndef CH07_KERNELS_PERSISTENT_PRODUCTS_CUH
#define CH07_KERNELS_PERSISTENT_PRODUCTS_CUH

#include "kernels_backward_mma.cuh" /* MlpBf16, mlp_ldsm_x4_trans, chapter 05's tc_ldsm_x4 and tc_mma_16x8 */

#define PST_CLUSTER 8                              /* blocks in a cluster: the 784 pixels cut 8 ways */
#define PST_UNITS 72                               /* hidden units of a cluster: H = 1024 takes 15 */
#define PST_THREADS 256
#define PST_MAX_ROWS 256                           /* batch rows a step may have */
#define PST_OWN_ROWS (PST_MAX_ROWS / PST_CLUSTER)  /* rows whose z1 a block finishes: 32 */

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

template <typename S>
struct PstProduct;

/* ------------------------------------------------------------------ fp32 */

template <>
struct PstProduct<MlpFp32> {
    typedef float T;
    static constexpr int QUANTUM = 4;           /* pixels: slices of 96 or 100 */
    static constexpr int MAX_SLICE = 100;
    static constexpr int X_ROW = MAX_SLICE;     /* floats of a row of x: rows 4 banks apart */
    static constexpr int W_ROW = PST_UNITS;     /* of a row of W1 (one pixel, 72 units) */
    static constexpr int D_ROW = PST_UNITS;     /* of a row of dz1 */
    static constexpr int GRANULE = 8;
    static constexpr int UG = PST_UNITS / 8;    /* dW1's groups of 8 units: 9 */
    float v[4][8]; /* velocity of pixels 4 pg + i, units 8 ug + j (thread UG pg + ug) */

    /* A row of the batch on its way in: the slice's bytes, 4 a word (its start is a
       multiple of 4 bytes: no wider load is aligned) */
    struct Row {
        unsigned word[MAX_SLICE / 4];
    };

    /* dW1's thread tile: thread t owns pixels 4 (t / 9) .., units 8 (t % 9) ..; threads
       past the slice's ks / 4 groups have none */
    static __device__ __forceinline__ bool owns_dw1(int ks) { return (int)threadIdx.x < UG * (ks / 4); }

    /* The slice of W1 into shared memory (units past H: 0), its velocity into registers. */
    __device__ __forceinline__ void load(const float *w1, const float *v1, int hidden, int k0, int ks, int u0,
                                         float *w1s)
    {
        for (int i = threadIdx.x; i < ks * PST_UNITS; i += PST_THREADS) {
            int k = i / PST_UNITS, u = i % PST_UNITS;
            w1s[k * W_ROW + u] = u0 + u < hidden ? w1[(size_t)(k0 + k) * hidden + u0 + u] : 0.0f;
        }
        int pg = threadIdx.x / UG, ug = threadIdx.x % UG;
        bool mine = owns_dw1(ks);
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 8; j++) {
                int k = k0 + 4 * pg + i, u = u0 + 8 * ug + j;
                v[i][j] = mine && u < hidden ? v1[(size_t)k * hidden + u] : 0.0f;
            }
    }

    /* ... and back, after the last step. */
    __device__ __forceinline__ void store(float *w1, float *v1, int hidden, int k0, int ks, int u0,
                                          const float *w1s) const
    {
        for (int i = threadIdx.x; i < ks * PST_UNITS; i += PST_THREADS) {
            int k = i / PST_UNITS, u = i % PST_UNITS;
            if (u0 + u < hidden) w1[(size_t)(k0 + k) * hidden + u0 + u] = w1s[k * W_ROW + u];
        }
        if (!owns_dw1(ks)) return;
        int pg = threadIdx.x / UG, ug = threadIdx.x % UG;
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 8; j++) {
                int k = k0 + 4 * pg + i, u = u0 + 8 * ug + j;
                if (u < hidden) v1[(size_t)k * hidden + u] = v[i][j];
            }
    }

    /* part[p][r][u], p < parts, r < per: thread (p, ty, tx) of parts x per / 8 x 8 owns rows
       ty + (per / 8) i and units 4 tx .. 4 tx + 3, 32 + 4 tx .. 32 + 4 tx + 3 and 64 + tx
       (so that the 8 threads tx read contiguous pieces of a row of W1), over its share of
       the pixels: per 4 pixels, 8 float4 of x and 12 loads of W1 for 288 FMAs. */
    static __device__ __forceinline__ void forward(const T *xs, const T *w1s, float *part, int ks, PstSplit sp)
    {
        const float4 *xs4 = (const float4 *)xs;
        int t = threadIdx.x, p = t / sp.per;
        if (p >= sp.parts) return;
        int rg = sp.per / 8, ty = t % sp.per / 8, tx = t % 8;
        int quads = ks / 4, q0 = p * quads / sp.parts, q1 = (p + 1) * quads / sp.parts;
        float acc[8][9];
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 9; j++) acc[i][j] = 0.0f;
        for (int q = q0; q < q1; q++) {
            float4 xa[8];
#pragma unroll
            for (int i = 0; i < 8; i++) xa[i] = xs4[(ty + rg * i) * (X_ROW / 4) + q];
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                const float *wr = w1s + (4 * q + kk) * W_ROW;
                float4 wa = *(const float4 *)(wr + 4 * tx), wb = *(const float4 *)(wr + 32 + 4 * tx);
                const float w[9] = {wa.x, wa.y, wa.z, wa.w, wb.x, wb.y, wb.z, wb.w, wr[64 + tx]};
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    float x = kk == 0 ? xa[i].x : kk == 1 ? xa[i].y : kk == 2 ? xa[i].z : xa[i].w;
#pragma unroll
                    for (int j = 0; j < 9; j++) acc[i][j] = fmaf(x, w[j], acc[i][j]);
                }
            }
        }
        float *out = part + (size_t)p * sp.per * PST_UNITS;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float *o = out + (ty + rg * i) * PST_UNITS;
            *(float4 *)(o + 4 * tx) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
            *(float4 *)(o + 32 + 4 * tx) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
            o[64 + tx] = acc[i][8];
        }
    }

    /* dW1 of the slice from x and dz1 (rows x 72, D_ROW floats a row), then the SGD step of
       the thread's 4 x 8 weights in w1s: per batch row, 3 float4 loads for 32 FMAs. */
    __device__ __forceinline__ void dw1_step(const T *xs, const void *dz1, T *w1s, int ks, int rows, float lr,
                                             float mu)
    {
        if (!owns_dw1(ks)) return;
        const float4 *xs4 = (const float4 *)xs;
        const float *d = (const float *)dz1;
        int pg = threadIdx.x / UG, ug = threadIdx.x % UG;
        float acc[4][8];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
#pragma unroll 2
        for (int r = 0; r < rows; r++) {
            float4 xa = xs4[r * (X_ROW / 4) + pg];
            float4 da = *(const float4 *)(d + r * D_ROW + 8 * ug), db = *(const float4 *)(d + r * D_ROW + 8 * ug + 4);
            const float x[4] = {xa.x, xa.y, xa.z, xa.w}, dz[8] = {da.x, da.y, da.z, da.w, db.x, db.y, db.z, db.w};
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 8; j++) acc[i][j] = fmaf(x[i], dz[j], acc[i][j]);
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float4 *w = (float4 *)(w1s + (4 * pg + i) * W_ROW + 8 * ug);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float4 old = w[h];
                float nw[4] = {old.x, old.y, old.z, old.w};
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    int j = 4 * h + e;
                    v[i][j] = fmaf(mu, v[i][j], acc[i][j]);
                    nw[e] -= lr * v[i][j];
                }
                w[h] = make_float4(nw[0], nw[1], nw[2], nw[3]);
            }
        }
    }

    /* Batch row r's slice: its image's bytes k0 .. k0 + ks, loaded ahead ... */
    static __device__ __forceinline__ void fetch(Row &row, const unsigned char *image, int k0, int ks)
    {
        const unsigned *src = (const unsigned *)(image + k0);
#pragma unroll
        for (int i = 0; i < MAX_SLICE / 4; i++)
            if (4 * i < ks) row.word[i] = __ldg(src + i);
    }

    /* ... and into x, normalized as p * scale + shift (valid false: zeros, a row past the batch). */
    static __device__ __forceinline__ void put(T *xs, int r, const Row &row, int ks, bool valid, float scale,
                                               float shift)
    {
        float4 *xs4 = (float4 *)xs + r * (X_ROW / 4);
#pragma unroll
        for (int i = 0; i < MAX_SLICE / 4; i++) {
            if (4 * i >= ks) break;
            unsigned w = valid ? row.word[i] : 0u;
            xs4[i] = valid ? make_float4(fmaf((float)(w & 255u), scale, shift),
                                         fmaf((float)((w >> 8) & 255u), scale, shift),
                                         fmaf((float)((w >> 16) & 255u), scale, shift),
                                         fmaf((float)(w >> 24), scale, shift))
                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
    }

    /* dz1 row r, units 4 c4 .. 4 c4 + 3, into the product's operand in a block of the
       cluster (dz1: its shared::cluster address). */
    static __device__ __forceinline__ void put_dz1(uint32_t dz1, int r, int c4, float4 v)
    {
        asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n"
                     ::"r"(dz1 + 4 * (uint32_t)(r * D_ROW + 4 * c4)), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                     : "memory");
    }
};

/* ------------------------------------------------------------------ bf16 */

/* Two 8 x 8 matrices of 16-bit elements (rows addressed by lanes 0-15), each lane's pair
 * taken down a column: the ninth n-tile of a 72-unit B operand. */
__device__ __forceinline__ void pst_ldsm_x2_trans(uint32_t (&r)[2], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(addr));
}

template <>
struct PstProduct<MlpBf16> {
    typedef bf16 T;
    static constexpr int QUANTUM = 16;          /* pixels: one k-step; slices of 96 or 112 */
    static constexpr int MAX_SLICE = 112;
    static constexpr int X_ROW = MAX_SLICE + 8; /* 120 bf16, 240 bytes: the 8 rows an ldmatrix reads */
    static constexpr int W_ROW = PST_UNITS;     /* 72 bf16, 144 bytes: both odd multiples of 16 bytes, */
    static constexpr int D_ROW = PST_UNITS;     /* so those rows fall in 8 different groups of 4 banks */
    static constexpr int GRANULE = 32;
    static constexpr int NT = PST_UNITS / 8;    /* n-tiles: 9 */
    float w[NT][4], v[NT][4]; /* master weights and velocity of warp w's pixels 16 w .., as its accumulators */

    struct Row {
        uint4 chunk[MAX_SLICE / 16];
    };

    static __device__ __forceinline__ bool owns_dw1(int ks) { return (int)threadIdx.x / 32 < ks / 16; }

    /* Accumulator element (j, e) of lane l: pixel 16 warp + l / 4 + 8 (e / 2), unit 8 j + 2 (l % 4) + e % 2. */
    static __device__ __forceinline__ int acc_pixel(int e)
    {
        return threadIdx.x / 32 * 16 + threadIdx.x % 32 / 4 + 8 * (e / 2);
    }
    static __device__ __forceinline__ int acc_unit(int j, int e) { return 8 * j + 2 * (threadIdx.x % 4) + e % 2; }

    __device__ __forceinline__ void put_bf16_copy(T *w1s) const
    {
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e += 2)
                *(unsigned *)(w1s + acc_pixel(e) * W_ROW + acc_unit(j, e)) = mlp_pack_bf16x2(w[j][e], w[j][e + 1]);
    }

    __device__ __forceinline__ void load(const float *w1, const float *v1, int hidden, int k0, int ks, int u0,
                                         T *w1s)
    {
        if (!owns_dw1(ks)) return;
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int u = u0 + acc_unit(j, e);
                size_t at = (size_t)(k0 + acc_pixel(e)) * hidden + u;
                w[j][e] = u < hidden ? w1[at] : 0.0f;
                v[j][e] = u < hidden ? v1[at] : 0.0f;
            }
        put_bf16_copy(w1s);
    }

    __device__ __forceinline__ void store(float *w1, float *v1, int hidden, int k0, int ks, int u0, const T *) const
    {
        if (!owns_dw1(ks)) return;
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int u = u0 + acc_unit(j, e);
                size_t at = (size_t)(k0 + acc_pixel(e)) * hidden + u;
                if (u < hidden) w1[at] = w[j][e], v1[at] = v[j][e];
            }
    }

    /* B (k rows of 72 units, k-major) for one k-step: n-tiles 0-7 as four ldmatrix.x4.trans
       (a pair each: (k 0-7), (k 8-15) of the first, then of the second), n-tile 8 as an x2. */
    static __device__ __forceinline__ void load_b(uint32_t (&b)[NT][2], uint32_t addr)
    {
        uint32_t r[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            mlp_ldsm_x4_trans(r, addr + j * 16 * 2);
            b[2 * j][0] = r[0], b[2 * j][1] = r[1], b[2 * j + 1][0] = r[2], b[2 * j + 1][1] = r[3];
        }
        pst_ldsm_x2_trans(b[8], addr + 64 * 2);
    }

    /* Warp (p, mp) of parts x per / 32: rows 32 mp .. 32 mp + 31, its share of the k-steps. */
    static __device__ __forceinline__ void forward(const T *xs, const T *w1s, float *part, int ks, PstSplit sp)
    {
        int warp = threadIdx.x / 32, lane = threadIdx.x % 32, pairs = sp.per / 32;
        int p = warp / pairs, mp = warp % pairs;
        if (p >= sp.parts) return;
        int steps = ks / 16, s0 = p * steps / sp.parts, s1 = (p + 1) * steps / sp.parts;
        int mat = lane / 8, row = lane % 8;
        float acc[2][NT][4];
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
        /* A (rows x pixels, row-major): ldmatrix, lane l the row (l % 8) + 8 (mat % 2), column 8 (mat / 2);
           B (pixels x units, row-major = k-major): ldmatrix.trans, row (l % 8) + 8 (mat % 2), column 8 (mat / 2) */
        uint32_t a_addr = (uint32_t)__cvta_generic_to_shared(xs + (32 * mp + row + mat % 2 * 8) * X_ROW + mat / 2 * 8);
        uint32_t b_addr = (uint32_t)__cvta_generic_to_shared(w1s + (row + mat % 2 * 8) * W_ROW + mat / 2 * 8);
        for (int s = s0; s < s1; s++) {
            uint32_t a[2][4], b[NT][2];
#pragma unroll
            for (int i = 0; i < 2; i++) tc_ldsm_x4(a[i], a_addr + (i * 16 * X_ROW + s * 16) * 2);
            load_b(b, b_addr + s * 16 * W_ROW * 2);
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < NT; j++) tc_mma_16x8<bf16>(acc[i][j], a[i], b[j]);
        }
        int g = lane / 4, q = lane % 4;
        float *out = part + (size_t)p * sp.per * PST_UNITS;
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < NT; j++) {
                float *o = out + (32 * mp + 16 * i + g) * PST_UNITS + 8 * j + 2 * q;
                *(float2 *)o = make_float2(acc[i][j][0], acc[i][j][1]);
                *(float2 *)(o + 8 * PST_UNITS) = make_float2(acc[i][j][2], acc[i][j][3]);
            }
    }

    /* dW1 for warp w's 16 pixels over the batch rows (rounded up to 16: the rows past the
       batch are zero in both operands), then the step, and the new weights' bf16 copy. */
    __device__ __forceinline__ void dw1_step(const T *xs, const void *dz1, T *w1s, int ks, int rows, float lr,
                                             float mu)
    {
        if (!owns_dw1(ks)) return;
        const T *d = (const T *)dz1;
        int warp = threadIdx.x / 32, lane = threadIdx.x % 32, mat = lane / 8, row = lane % 8;
        float acc[NT][4];
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[j][e] = 0.0f;
        /* A = x^T: x rows are k; the four 8 x 8 matrices (k 0-7 | 8-15) x (m 0-7 | 8-15) taken
           down their columns; B = dz1 as the forward's B */
        uint32_t a_addr =
            (uint32_t)__cvta_generic_to_shared(xs + (row + mat / 2 * 8) * X_ROW + 16 * warp + mat % 2 * 8);
        uint32_t b_addr = (uint32_t)__cvta_generic_to_shared(d + (row + mat % 2 * 8) * D_ROW + mat / 2 * 8);
        for (int k = 0; k < rows; k += 16) {
            uint32_t a[4], b[NT][2];
            mlp_ldsm_x4_trans(a, a_addr + k * X_ROW * 2);
            load_b(b, b_addr + k * D_ROW * 2);
#pragma unroll
            for (int j = 0; j < NT; j++) tc_mma_16x8<bf16>(acc[j], a, b[j]);
        }
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                v[j][e] = fmaf(mu, v[j][e], acc[j][e]);
                w[j][e] -= lr * v[j][e];
            }
        put_bf16_copy(w1s);
    }

    static __device__ __forceinline__ void fetch(Row &row, const unsigned char *image, int k0, int ks)
    {
        const uint4 *src = (const uint4 *)(image + k0);
#pragma unroll
        for (int c = 0; c < MAX_SLICE / 16; c++)
            if (16 * c < ks) row.chunk[c] = __ldg(src + c);
    }

    static __device__ __forceinline__ void put(T *xs, int r, const Row &row, int ks, bool valid, float scale,
                                               float shift)
    {
        uint4 *dst = (uint4 *)(xs + r * X_ROW);
#pragma unroll
        for (int c = 0; c < MAX_SLICE / 16; c++) {
            if (16 * c >= ks) break;
            if (!valid) {
                dst[2 * c] = dst[2 * c + 1] = make_uint4(0u, 0u, 0u, 0u);
                continue;
            }
            const unsigned wd[4] = {row.chunk[c].x, row.chunk[c].y, row.chunk[c].z, row.chunk[c].w};
            unsigned out[8];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                out[2 * i] = mlp_pack_bf16x2(fmaf((float)(wd[i] & 255u), scale, shift),
                                             fmaf((float)((wd[i] >> 8) & 255u), scale, shift));
                out[2 * i + 1] = mlp_pack_bf16x2(fmaf((float)((wd[i] >> 16) & 255u), scale, shift),
                                                 fmaf((float)(wd[i] >> 24), scale, shift));
            }
            dst[2 * c] = make_uint4(out[0], out[1], out[2], out[3]);
            dst[2 * c + 1] = make_uint4(out[4], out[5], out[6], out[7]);
        }
    }

    static __device__ __forceinline__ void put_dz1(uint32_t dz1, int r, int c4, float4 v)
    {
        asm volatile("st.shared::cluster.v2.b32 [%0], {%1, %2};\n" ::"r"(dz1 + 2 * (uint32_t)(r * D_ROW + 4 * c4)),
                     "r"(mlp_pack_bf16x2(v.x, v.y)), "r"(mlp_pack_bf16x2(v.z, v.w)) : "memory");
    }
};

#endif
