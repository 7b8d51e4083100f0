/* Chapter 07: the persistent trainer's products in fp32 (part4_persistent/02_products.cuh
 * says what a PstProduct is and what both precisions share). */
#ifndef CH07_KERNELS_PERSISTENT_FP32_CUH
#define CH07_KERNELS_PERSISTENT_FP32_CUH

#include "07_mnist_mlp/part4_persistent/02_products.cuh"

template <> struct PstProduct<MlpFp32> {
    typedef float T;
    typedef float Z;                      /* the forward's partial sums (PstChunk) */
    typedef float D;                      /* dz1, the dW1 product's operand */
    typedef unsigned long long ShareWord; /* z2's shares: fp32 and the step's number (PstShares) */
    static constexpr int QUANTUM = 4;     /* pixels: slices of 96 or 100 */
    static constexpr int MAX_SLICE = 100;
    static constexpr int X_ROW = MAX_SLICE; /* floats of a row of x: rows 4 banks apart */
    /* the dW1 product's sums use x's (part4_persistent/09_kernel.cuh) */
    static constexpr int X_BUFFERS = 1;
    static constexpr int W_ROW = PST_UNITS; /* of a row of W1 (one pixel, 72 units) */
    static constexpr int D_ROW = PST_UNITS; /* of a row of dz1 */
    static constexpr int GRANULE = 8;
    static constexpr int UG = PST_UNITS / 8;      /* dW1's groups of 8 units: 9 */
    static constexpr int W1S = MAX_SLICE * W_ROW; /* elements of the block's w1s */
    float v[4][8]; /* velocity of pixels 4 pg + i, units 8 ug + j (thread UG pg + ug) */

    /* A row of the batch on its way in: the 16-byte words that hold the slice's bytes (its
       start is a multiple of 4 bytes, so skip words of 4 come first) */
    struct Row {
        uint4 chunk[(MAX_SLICE + 12 + 15) / 16];
        int skip;
    };

    /* The velocity's tile (W1's SGD step, after the dW1 product): thread t owns pixels
       4 (t / 9) .., units 8 (t % 9) ..; threads past the slice's ks / 4 groups have none */
    static __device__ __forceinline__ bool owns_dw1(int ks)
    {
        return (int)threadIdx.x < UG * (ks / 4);
    }

    /* The slice of W1 into shared memory (units past H: 0), its velocity into registers. */
    __device__ __forceinline__ void load(const float *w1, const float *v1, int hidden, int k0,
                                         int ks, int u0, float *w1s)
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
    static __device__ __forceinline__ void forward(const T *xs, const T *w1s, Z *part, int ks,
                                                   PstSplit sp, float, float)
    {
        const float4 *xs4 = (const float4 *)xs;
        int t = threadIdx.x, p = t / sp.per;
        if (p >= sp.parts) return;
        int rg = sp.per / 8, ty = t % sp.per / 8, tx = t % 8;
        int q0, q1;
        pst_part_steps(sp, p, ks / 4, q0, q1);
        float acc[8][9];
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 9; j++) acc[i][j] = 0.0f;
#pragma unroll 2 /* ptxas overlaps the next 4 pixels' loads with these FMAs */
        for (int q = q0; q < q1; q++) {
            float4 xa[8];
#pragma unroll
            for (int i = 0; i < 8; i++) xa[i] = xs4[(ty + rg * i) * (X_ROW / 4) + q];
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                const float *wr = w1s + (4 * q + kk) * W_ROW;
                float4 wa = *(const float4 *)(wr + 4 * tx),
                       wb = *(const float4 *)(wr + 32 + 4 * tx);
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

    /* dW1's product tile: thread (h, pg, ug) owns pixels 10 pg .. 10 pg + 9 by units 4 ug ..,
       32 + 4 ug .. (4 each) and 64 + ug (the forward's 9-unit pattern) over third h of the
       batch rows: 10 groups of 10 pixels x 8 x 3 thirds = 240 threads. Each third's sums:
       MAX_SLICE x 72 floats. (A 96-pixel slice's last group reads 4 pixels past it, which
       put() leaves at 0; their sums are never read.) */
    static constexpr int DW_PARTS = 3, DW_PX = 10, DW_GROUPS = MAX_SLICE / DW_PX,
                         DW_PART = DW_GROUPS * 8;
    static_assert(DW_GROUPS * DW_PX == MAX_SLICE && DW_PARTS * DW_PART <= PST_THREADS,
                  "three parts of the rows");
    static_assert(DW_PARTS * MAX_SLICE * PST_UNITS <= PST_MAX_ROWS * X_ROW,
                  "the parts' sums fit in x");

    /* dW1 of the slice from x and dz1 (rows x 72, D_ROW floats a row), then the SGD step of
       the thread's 4 x 8 weights in w1s. Shared memory serves a warp's loads 128 bytes (one
       wavefront) at a time: a quarter-warp's 16-byte loads, a half-warp's 8-byte ones, so a
       warp pays one wavefront per 4 bytes a thread loads, whatever the threads share: a
       thread tile of a x b costs a + b wavefronts a warp and row for a b FMA instructions,
       and the SM issues 4 FMA instructions to 1 wavefront. The velocity's tile (4 x 8: 12
       wavefronts for 32 FMAs, and its 8 units at 32-byte strides put threads 0, 4 and 8 of
       a quarter on the same banks: 20) would leave the FMA pipe mostly idle. So the product
       takes 10 x 9 tiles (19 wavefronts for 90 FMAs: 4.7), a quarter-warp on one pixel group
       (x: one address, a broadcast) and its 8 unit groups 16 bytes apart (no two on the same
       banks), over a third of the rows each; the thirds' sums meet in x's shared memory
       (free once the product has read it, and refilled with the next batch after), where
       the velocity's owners add them in order and step. */
    __device__ __forceinline__ void dw1_step(T *xs, const void *dz1, T *w1s, int ks, int rows,
                                             float lr, float mu, float, float)
    {
        const float *d = (const float *)dz1;
        const int t = threadIdx.x, h = t / DW_PART, pg = t % DW_PART / 8, ug = t % 8;
        const bool tile = h < DW_PARTS && DW_PX * pg < ks;
        const int third = (rows + DW_PARTS - 1) / DW_PARTS, r0 = h * third;
        const int r1 = r0 + third < rows ? r0 + third : rows;
        float acc[DW_PX][9];
#pragma unroll
        for (int i = 0; i < DW_PX; i++)
#pragma unroll
            for (int j = 0; j < 9; j++) acc[i][j] = 0.0f;
        if (tile) {
#pragma unroll 2
            for (int r = r0; r < r1; r++) {
                const float2 *xr = (const float2 *)(xs + r * X_ROW + DW_PX * pg);
                const float *dr = d + r * D_ROW;
                float x[DW_PX];
#pragma unroll
                for (int i = 0; i < DW_PX / 2; i++) {
                    float2 v2 = xr[i];
                    x[2 * i] = v2.x;
                    x[2 * i + 1] = v2.y;
                }
                float4 da = *(const float4 *)(dr + 4 * ug),
                       db = *(const float4 *)(dr + 32 + 4 * ug);
                const float dz[9] = {da.x, da.y, da.z, da.w, db.x, db.y, db.z, db.w, dr[64 + ug]};
#pragma unroll
                for (int i = 0; i < DW_PX; i++)
#pragma unroll
                    for (int j = 0; j < 9; j++) acc[i][j] = fmaf(x[i], dz[j], acc[i][j]);
            }
        }
        __syncthreads(); /* x read: its space holds the thirds' sums, g[h][pixel][unit] */
        float *g = xs + (size_t)h * MAX_SLICE * PST_UNITS;
        if (tile)
#pragma unroll
            for (int i = 0; i < DW_PX; i++) {
                float *o = g + (DW_PX * pg + i) * PST_UNITS;
                *(float4 *)(o + 4 * ug) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
                *(float4 *)(o + 32 + 4 * ug) =
                    make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
                o[64 + ug] = acc[i][8];
            }
        __syncthreads();
        if (!owns_dw1(ks)) return;
        int vg = threadIdx.x / UG, vu = threadIdx.x % UG;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float *g0 = xs + (4 * vg + i) * PST_UNITS + 8 * vu,
                        *g1 = g0 + MAX_SLICE * PST_UNITS;
            const float *g2 = g1 + MAX_SLICE * PST_UNITS;
            float4 *w = (float4 *)(w1s + (4 * vg + i) * W_ROW + 8 * vu);
#pragma unroll
            for (int q = 0; q < 2; q++) {
                float4 a = *(const float4 *)(g0 + 4 * q), b = *(const float4 *)(g1 + 4 * q);
                float4 c = *(const float4 *)(g2 + 4 * q), old = w[q];
                const float sum[4] = {a.x + b.x + c.x, a.y + b.y + c.y, a.z + b.z + c.z,
                                      a.w + b.w + c.w};
                float nw[4] = {old.x, old.y, old.z, old.w};
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    int j = 4 * q + e;
                    v[i][j] = fmaf(mu, v[i][j], sum[e]);
                    nw[e] -= lr * v[i][j];
                }
                w[q] = make_float4(nw[0], nw[1], nw[2], nw[3]);
            }
        }
    }

    /* Batch row r's slice: its image's bytes k0 .. k0 + ks, loaded ahead in the 16-byte words
       that hold them (up to 7; an image's 784 bytes start on 16). Loaded 4 bytes at a time,
       25 loads a thread would fill the load queue and hold up the phase that issues them
       (small_step). */
    static __device__ __forceinline__ void fetch(Row &row, const unsigned char *image, int k0,
                                                 int ks)
    {
        row.skip = (k0 & 15) / 4;
        pst_fetch_words(row.chunk, image, k0 & ~15, (k0 & 15) + ks);
    }

    /* The slice's words (4 pixels each) in order, to put(i, word): word i of the slice is word
       i + SKIP of the row (SKIP a constant, so the words stay in registers). */
    template <int SKIP, typename Put>
    static __device__ __forceinline__ void each_word_at(const Row &row, int ks, Put put)
    {
#pragma unroll
        for (int i = 0; i < MAX_SLICE / 4; i++) {
            if (4 * i >= ks) break;
            const uint4 c = row.chunk[(i + SKIP) / 4];
            const int e = (i + SKIP) % 4;
            put(i, e == 0 ? c.x : e == 1 ? c.y : e == 2 ? c.z : c.w);
        }
    }
    template <typename Put>
    static __device__ __forceinline__ void each_word(const Row &row, int ks, Put put)
    {
        switch (row.skip) {
            case 0: each_word_at<0>(row, ks, put); break;
            case 1: each_word_at<1>(row, ks, put); break;
            case 2: each_word_at<2>(row, ks, put); break;
            default: each_word_at<3>(row, ks, put); break;
        }
    }

    /* ... and into x, normalized as p * scale + shift (valid false: zeros, a row past the batch) */
    static __device__ __forceinline__ void put(T *xs, int r, const Row &row, int ks, bool valid,
                                               float scale, float shift)
    {
        float4 *xs4 = (float4 *)xs + r * (X_ROW / 4);
        if (!valid) {
            for (int i = 0; i < X_ROW / 4; i++) xs4[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            return;
        }
        each_word(row, ks, [&](int i, unsigned w) {
            xs4[i] = make_float4(
                fmaf(pst_byte_float(w, 0), scale, shift), fmaf(pst_byte_float(w, 1), scale, shift),
                fmaf(pst_byte_float(w, 2), scale, shift), fmaf(pst_byte_float(w, 3), scale, shift));
        });
        if (ks < X_ROW)
            xs4[ks / 4] = make_float4(0.0f, 0.0f, 0.0f, 0.0f); /* dW1's last 10 pixels */
    }

    /* Partial sum (and dz1) of row r, unit u: rows of 72. */
    static constexpr int PART_SIZE = PST_MAX_ROWS * PST_UNITS;
    static constexpr bool CHUNK_MAJOR = false;
    static __host__ __device__ __forceinline__ int part_at(int r, int u) { return r * D_ROW + u; }

    /* dz1 row r, units u .. u + 3, into the product's operand in a block of the cluster
       (dz1: its shared::cluster address; full: that block's dz1 mbarrier): one 16-byte
       st.async. */
    static constexpr int DZ1_UNITS = 4;
    static __device__ __forceinline__ void put_dz1(uint32_t dz1, int r, int u, const float *v,
                                                   uint32_t full)
    {
        pst_st_async16(dz1 + 4 * (uint32_t)part_at(r, u),
                       make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]),
                                  __float_as_uint(v[2]), __float_as_uint(v[3])),
                       full);
    }
};

#endif
