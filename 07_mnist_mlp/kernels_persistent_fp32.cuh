/* Chapter 07: the persistent trainer's products in fp32 (kernels_persistent_products.cuh
 * says what a PstProduct is and what both precisions share). */
#ifndef CH07_KERNELS_PERSISTENT_FP32_CUH
#define CH07_KERNELS_PERSISTENT_FP32_CUH

#include "kernels_persistent_products.cuh"

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
        pst_fetch_words(row.word, image, k0, ks);
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

#endif
