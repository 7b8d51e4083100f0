/* Chapter 07: the persistent trainer `persistent_bf16x3`: fp32's trainer with both of its
 * products on tensor cores, still to fp32's accuracy (part4_persistent/02_products.cuh says
 * what a PstProduct is).
 *
 * fp32's two products are most of its step: 256 x 100 x 72 FMAs each a block, at best 14.4 k cycles
 * of the SM's 128 FMA lanes, and more in practice. A bf16 tensor-core product does the same sums
 * many times faster, but rounds its operands to 8 significant bits. Two facts make it exact here:
 *
 *   - x = p scale + shift, where p is the pixel, an integer 0..255: exactly a bf16. So
 *     x . W = scale (p . W) + shift (W's column sums), and only p meets the tensor cores;
 *     likewise x^T dz1 = scale (p^T dz1) + shift (dz1's column sums).
 *   - An fp32 value (24 significant bits) is exactly hi + mid + lo, three bf16 (8 bits each:
 *     pst_split3_pair). So p . W = p . Whi + p . Wmid + p . Wlo, three bf16 products into
 *     one fp32 accumulator, and each product of a pixel and a piece is exact (16 bits).
 *
 * What is left is rounding in the fp32 sums, as in fp32's own FMAs; --check holds the
 * trainer to fp32's tolerances. The price is three products for one. The block keeps W1's
 * slice as the three pieces (the forward's B operand) and in fp32 in the registers of the
 * threads whose dW1 accumulators cover it, as bf16's trainer keeps its master weights; dz1
 * arrives in fp32 (fp32's stores, fp32's rows) and each warp splits it as it loads it. x
 * takes 2 bytes a pixel instead of fp32's 4, which leaves room for the pieces. */
#ifndef CH07_KERNELS_PERSISTENT_BF16X3_CUH
#define CH07_KERNELS_PERSISTENT_BF16X3_CUH

#include "07_mnist_mlp/part4_persistent/04_products_bf16.cuh"
#include "07_mnist_mlp/part4_persistent/03_products_fp32.cuh"

/* The trainer's tag: fp32 numbers, products as three bf16 ones. */
struct MlpBf16x3 {
};

/* Two fp32 values as three bf16 pairs (hi, mid, lo: words of two bf16, the first value in
 * the low half) whose sums are the values exactly: each piece is the remainder rounded to
 * bf16, and a remainder minus its rounding is exact in fp32. */
static __device__ __forceinline__ void pst_split3_pair(float w0, float w1, unsigned (&pieces)[3])
{
#pragma unroll
    for (int i = 0; i < 3; i++) {
        pieces[i] = MlpBf16::pack2(w0, w1);
        w0 -= __uint_as_float(pieces[i] << 16);
        w1 -= __uint_as_float(pieces[i] & 0xffff0000u);
    }
}

template <> struct PstProduct<MlpBf16x3> {
    typedef PstProduct<MlpFp32> F; /* fp32's slices, rows on their way in, partial sums and dz1 */
    typedef PstProduct<MlpBf16> B; /* bf16's n-tiles and accumulator layout */
    typedef bf16 T;                /* x (the pixels p, then a column of ones) and W1's pieces */
    typedef float Z;
    typedef float D;
    typedef unsigned long long ShareWord; /* fp32's numbers */
    typedef F::Row Row;
    static constexpr int QUANTUM = F::QUANTUM, MAX_SLICE = F::MAX_SLICE; /* slices of 96 or 100 */
    static constexpr int M_TILES = 7; /* dW1's 16-pixel tiles, one a warp: 112 pixels */
    static_assert(16 * M_TILES > MAX_SLICE, "a pixel past the slice for the ones");
    static constexpr int X_ROW = 16 * M_TILES + 8; /* 120 bf16, 240 bytes, as bf16's */
    static constexpr int X_BUFFERS = 1;            /* no room for two */
    static constexpr int W_ROW = PST_UNITS, D_ROW = F::D_ROW;
    /* bf16 of a piece (pixels past the slice: 0) */
    static constexpr int PIECE = 16 * M_TILES * W_ROW;
    static constexpr int GRANULE = 32; /* a warp's rows in the forward */
    static constexpr int NT = B::NT;
    static constexpr int DZ1_UNITS = F::DZ1_UNITS;
    /* w1s: the pieces hi, mid, lo; each warp's column sums of W1 (M_TILES x 72 floats); the
       slice's column sums (72 floats); dz1's column sums over the batch (72 floats) */
    static constexpr int WARP_SUMS_AT = 3 * PIECE, SUMS_AT = WARP_SUMS_AT + 2 * M_TILES * PST_UNITS;
    static constexpr int DZ1_SUMS_AT = SUMS_AT + 2 * PST_UNITS, W1S = DZ1_SUMS_AT + 2 * PST_UNITS;
    static_assert(WARP_SUMS_AT % 8 == 0 && SUMS_AT % 8 == 0, "16-byte aligned floats");
    /* weights and velocity of warp w's pixels 16 w .., as dW1's accumulators */
    float w[NT][4], v[NT][4];

    static __device__ __forceinline__ bool owns_dw1(int) { return (int)threadIdx.x / 32 < M_TILES; }

    /* dW1's n-tiles take the units in an order that gives a lane four of its B columns in 16
       bytes of a dz1 row: column c of n-tile j < 8 is unit 32 (j / 4) + 4 c + j % 4; of
       n-tile 8, 64 + c. So lane (g, q)'s accumulators of n-tiles 4a .. 4a + 3 hold units
       32 a + 8 q .. 32 a + 8 q + 7 of its two pixels. */
    static __device__ __forceinline__ int dw1_unit(int j, int c)
    {
        return j < 8 ? 32 * (j / 4) + 4 * c + j % 4 : 64 + c;
    }
    /* Accumulator element (j, e) of lane l: pixel 16 warp + l / 4 + 8 (e / 2), as bf16's, and
       unit dw1_unit(j, 2 (l % 4) + e % 2). */
    static __device__ __forceinline__ int acc_pixel(int e) { return B::acc_pixel(e); }
    static __device__ __forceinline__ int acc_unit(int j, int e)
    {
        return dw1_unit(j, 2 * (threadIdx.x % 4) + e % 2);
    }

    /* B (k rows of 72 units, k-major, W_ROW bf16 a row: a piece of W1) for one k-step: n-tiles
       0-7 as four ldmatrix.x4.trans (a pair each: (k 0-7), (k 8-15) of the first, then of the
       second), n-tile 8 as an x2. */
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

    /* Weights w[8] of pixel k, units u .. u + 7 (u a multiple of 8), as pieces. */
    static __device__ __forceinline__ void put8(T *w1s, int k, int u, const float (&w8)[8])
    {
        unsigned p[4][3];
#pragma unroll
        for (int j = 0; j < 4; j++) pst_split3_pair(w8[2 * j], w8[2 * j + 1], p[j]);
#pragma unroll
        for (int i = 0; i < 3; i++)
            *(uint4 *)(w1s + i * PIECE + k * W_ROW + u) =
                make_uint4(p[0][i], p[1][i], p[2][i], p[3][i]);
    }

    /* The lane's weights (both pixels, all 18 units) into the pieces. */
    __device__ __forceinline__ void put_pieces(T *w1s) const
    {
        const int q = threadIdx.x % 4;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int k = acc_pixel(2 * h);
#pragma unroll
            for (int a = 0; a < 2; a++) {
                float w8[8];
#pragma unroll
                for (int i = 0; i < 8; i++) w8[i] = w[4 * a + i % 4][2 * h + i / 4];
                put8(w1s, k, 32 * a + 8 * q, w8);
            }
            unsigned p[3];
            pst_split3_pair(w[8][2 * h], w[8][2 * h + 1], p);
#pragma unroll
            for (int i = 0; i < 3; i++)
                *(unsigned *)(w1s + i * PIECE + k * W_ROW + 64 + 2 * q) = p[i];
        }
    }

    /* The slice's column sums of W1, which the forward's shift term takes: each warp's over
       its 16 pixels by shuffles, then the warps' in order. Visible after the caller's next
       barrier. */
    __device__ __forceinline__ void sum_columns(T *w1s) const
    {
        float *warp_sums = (float *)(w1s + WARP_SUMS_AT);
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        if (warp < M_TILES)
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    float s = w[j][c] + w[j][c + 2];
                    s += __shfl_xor_sync(0xffffffffu, s, 4);
                    s += __shfl_xor_sync(0xffffffffu, s, 8);
                    s += __shfl_xor_sync(0xffffffffu, s, 16);
                    if (lane < 4) warp_sums[warp * PST_UNITS + acc_unit(j, c)] = s;
                }
        __syncthreads();
        if (threadIdx.x < PST_UNITS) {
            float s = 0.0f;
            for (int i = 0; i < M_TILES; i++) s += warp_sums[i * PST_UNITS + threadIdx.x];
            ((float *)(w1s + SUMS_AT))[threadIdx.x] = s;
        }
    }

    /* The slice of W1 and its velocity into the owners' registers (units past H, pixels past
       the slice: 0), W1's pieces and column sums into shared memory. */
    __device__ __forceinline__ void load(const float *w1, const float *v1, int hidden, int k0,
                                         int ks, int u0, T *w1s)
    {
        if (owns_dw1(ks)) {
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int k = acc_pixel(e), u = u0 + acc_unit(j, e);
                    const bool in = k < ks && u < hidden;
                    const size_t at = (size_t)(k0 + k) * hidden + u;
                    w[j][e] = in ? w1[at] : 0.0f;
                    v[j][e] = in ? v1[at] : 0.0f;
                }
            put_pieces(w1s);
        }
        sum_columns(w1s);
    }

    __device__ __forceinline__ void store(float *w1, float *v1, int hidden, int k0, int ks, int u0,
                                          const T *) const
    {
        if (!owns_dw1(ks)) return;
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int k = acc_pixel(e), u = u0 + acc_unit(j, e);
                if (k < ks && u < hidden) {
                    const size_t at = (size_t)(k0 + k) * hidden + u;
                    w1[at] = w[j][e], v1[at] = v[j][e];
                }
            }
    }

    /* bf16's forward (warp (p, mp): rows 32 mp .., its share of the k-steps) with W1's three
       pieces into one accumulator, lo first; then part = scale acc + shift (column sums), the
       second term in part 0 only. */
    static __device__ __forceinline__ void forward(const T *xs, const T *w1s, float *part, int ks,
                                                   PstSplit sp, float scale, float shift)
    {
        int warp = threadIdx.x / 32, lane = threadIdx.x % 32, pairs = sp.per / 32;
        int p = warp / pairs, mp = warp % pairs;
        if (p >= sp.parts) return;
        int s0, s1;
        pst_part_steps(sp, p, (ks + 15) / 16, s0, s1);
        int mat = lane / 8, row = lane % 8;
        float acc[2][NT][4];
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;
        uint32_t a_addr = (uint32_t)__cvta_generic_to_shared(
            xs + (32 * mp + row + mat % 2 * 8) * X_ROW + mat / 2 * 8);
        uint32_t b_addr =
            (uint32_t)__cvta_generic_to_shared(w1s + (row + mat % 2 * 8) * W_ROW + mat / 2 * 8);
        for (int s = s0; s < s1; s++) {
            uint32_t a[2][4];
#pragma unroll
            for (int i = 0; i < 2; i++) tc_ldsm_x4(a[i], a_addr + (i * 16 * X_ROW + s * 16) * 2);
#pragma unroll
            for (int piece = 2; piece >= 0; piece--) {
                uint32_t b[NT][2];
                load_b(b, b_addr + (piece * PIECE + s * 16 * W_ROW) * 2);
#pragma unroll
                for (int i = 0; i < 2; i++)
#pragma unroll
                    for (int j = 0; j < NT; j++) tc_mma_16x8<bf16>(acc[i][j], a[i], b[j]);
            }
        }
        const float *sums = (const float *)(w1s + SUMS_AT);
        int g = lane / 4, q = lane % 4;
        float *out = part + (size_t)p * sp.per * PST_UNITS;
#pragma unroll
        for (int j = 0; j < NT; j++) {
            const int u = 8 * j + 2 * q;
            const float c0 = p == 0 ? shift * sums[u] : 0.0f,
                        c1 = p == 0 ? shift * sums[u + 1] : 0.0f;
#pragma unroll
            for (int i = 0; i < 2; i++) {
                float *o = out + (32 * mp + 16 * i + g) * PST_UNITS + u;
                *(float2 *)o =
                    make_float2(fmaf(scale, acc[i][j][0], c0), fmaf(scale, acc[i][j][1], c1));
                *(float2 *)(o + 8 * PST_UNITS) =
                    make_float2(fmaf(scale, acc[i][j][2], c0), fmaf(scale, acc[i][j][3], c1));
            }
        }
    }

    /* Three mma of one B column pair (rows of k-index 2q, 2q + 1 in d0, d1; 2q + 8, 2q + 9 in
       d2, d3), split into pieces on the way, lo first. */
    static __device__ __forceinline__ void mma3(float (&acc)[4], const uint32_t (&a)[4], float d0,
                                                float d1, float d2, float d3)
    {
        unsigned first[3], second[3];
        pst_split3_pair(d0, d1, first);
        pst_split3_pair(d2, d3, second);
#pragma unroll
        for (int piece = 2; piece >= 0; piece--) {
            const uint32_t b[2] = {first[piece], second[piece]};
            tc_mma_16x8<bf16>(acc, a, b);
        }
    }

    /* dW1 = x^T dz1 = scale p^T dz1 + shift (dz1's column sums) on tensor cores, warp w's 16
       pixels over the batch rows (rounded up to 16: x's rows past the batch are 0). A = p^T
       as bf16's dW1 loads x^T, B = dz1 in fp32, split into three pieces as it loads: every
       warp splits all of dz1, seven times over, where a split copy would not fit beside x
       and W1's pieces. The rows of each 8 go in the order 0 4 1 5 2 6 3 7 (k-indices 2t,
       2t + 1 are rows t, t + 4), which puts a quarter-warp's 16-byte loads of dz1 (rows 288
       bytes apart) on 8 different bank groups. dz1's column sums come with the product: x's
       column of ones (pixel ks) sums dz1 into one accumulator row. Then the step, W1's
       pieces and its column sums. */
    __device__ __forceinline__ void dw1_step(const T *xs, const void *dz1, T *w1s, int ks, int rows,
                                             float lr, float mu, float scale, float shift)
    {
        const float *d = (const float *)dz1;
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
        const bool owner = owns_dw1(ks);
        float acc[NT][4];
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[j][e] = 0.0f;
        if (owner) {
            const int mat = lane / 8, row = lane % 8, k_row = row / 2 + 4 * (row % 2);
            const uint32_t a_addr = (uint32_t)__cvta_generic_to_shared(
                xs + (k_row + mat / 2 * 8) * X_ROW + 16 * warp + mat % 2 * 8);
            for (int k = 0; k < rows; k += 16) {
                uint32_t a[4];
                mlp_ldsm_x4_trans(a, a_addr + k * X_ROW * 2);
                const float *dr = d + (k + q) * D_ROW; /* rows k + q + 4 i, i < 4 */
#pragma unroll
                for (int half = 0; half < 2; half++) {
                    float4 f[4];
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        f[i] = *(const float4 *)(dr + 4 * i * D_ROW + 32 * half + 4 * g);
                    mma3(acc[4 * half], a, f[0].x, f[1].x, f[2].x, f[3].x);
                    mma3(acc[4 * half + 1], a, f[0].y, f[1].y, f[2].y, f[3].y);
                    mma3(acc[4 * half + 2], a, f[0].z, f[1].z, f[2].z, f[3].z);
                    mma3(acc[4 * half + 3], a, f[0].w, f[1].w, f[2].w, f[3].w);
                }
                mma3(acc[8], a, dr[64 + g], dr[4 * D_ROW + 64 + g], dr[8 * D_ROW + 64 + g],
                     dr[12 * D_ROW + 64 + g]);
            }
        }
        float *dz1_sums = (float *)(w1s + DZ1_SUMS_AT);
        if (owner && warp == ks / 16 && g == ks % 8)
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int c = 0; c < 2; c++)
                    dz1_sums[acc_unit(j, c)] = ks % 16 < 8 ? acc[j][c] : acc[j][2 + c];
        __syncthreads();
        if (owner) {
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (acc_pixel(e) < ks) {
                        const float grad = fmaf(scale, acc[j][e], shift * dz1_sums[acc_unit(j, e)]);
                        v[j][e] = fmaf(mu, v[j][e], grad);
                        w[j][e] -= lr * v[j][e];
                    }
            put_pieces(w1s);
        }
        sum_columns(w1s);
    }

    static __device__ __forceinline__ void fetch(Row &row, const unsigned char *image, int k0,
                                                 int ks)
    {
        F::fetch(row, image, k0, ks);
    }

    /* The row's pixels as bf16 (exact: integers up to 255), a 1 at pixel ks (dz1's column
       sums in dW1), zeros after it (valid false: all zeros, a row past the batch). */
    static __device__ __forceinline__ void put(T *xs, int r, const Row &row, int ks, bool valid,
                                               float, float)
    {
        uint2 *x4 = (uint2 *)(xs + r * X_ROW);
        if (valid)
            F::each_word(row, ks, [&](int i, unsigned wd) {
                x4[i] = make_uint2(MlpBf16::pack2(pst_byte_float(wd, 0), pst_byte_float(wd, 1)),
                                   MlpBf16::pack2(pst_byte_float(wd, 2), pst_byte_float(wd, 3)));
            });
        for (int i = valid ? ks / 4 : 0; i < 4 * M_TILES; i++)
            x4[i] = make_uint2(valid && i == ks / 4 ? MlpBf16::pack2(1.0f, 0.0f) : 0u, 0u);
    }

    static constexpr int PART_SIZE = F::PART_SIZE;
    static constexpr bool CHUNK_MAJOR = false;
    static __host__ __device__ __forceinline__ int part_at(int r, int u)
    {
        return F::part_at(r, u);
    }
    static __device__ __forceinline__ void put_dz1(uint32_t dz1, int r, int u, const float *val,
                                                   uint32_t full)
    {
        F::put_dz1(dz1, r, u, val, full);
    }
};

#endif
