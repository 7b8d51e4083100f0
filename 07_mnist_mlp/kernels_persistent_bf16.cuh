/* Chapter 07: the persistent trainer's products in bf16 on tensor cores
 * (kernels_persistent_products.cuh says what a PstProduct is and what both precisions share). */
#ifndef CH07_KERNELS_PERSISTENT_BF16_CUH
#define CH07_KERNELS_PERSISTENT_BF16_CUH

#include "kernels_persistent_products.cuh"

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
    typedef __half Z; /* the forward's partial sums (PstChunk) */
    typedef bf16 D;   /* dz1, the dW1 product's operand */
    static constexpr int QUANTUM = 16;          /* pixels: one k-step; slices of 96 or 112 */
    static constexpr int MAX_SLICE = 112;
    static constexpr int X_ROW = MAX_SLICE + 8; /* 120 bf16, 240 bytes: the 8 rows an ldmatrix reads */
    static constexpr int X_BUFFERS = 2;         /* the next batch copied in during a step (kernels_persistent.cuh) */
    static constexpr int W_ROW = PST_UNITS;     /* 72 bf16, 144 bytes: both odd multiples of 16 bytes, */
    static constexpr int D_ROW = PST_UNITS;     /* so those rows fall in 8 different groups of 4 banks */
    static constexpr int GRANULE = 32;
    static constexpr int NT = PST_UNITS / 8;    /* n-tiles: 9 */
    static constexpr int W1S = MAX_SLICE * W_ROW; /* elements of the block's w1s */
    float w[NT][4], v[NT][4]; /* master weights and velocity of warp w's pixels 16 w .., as its accumulators */

    /* The next batch is copied into x's other buffer by the TMA unit (pst_copy_batch): no row to hold. */
    struct Row {};

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
                *(unsigned *)(w1s + acc_pixel(e) * W_ROW + acc_unit(j, e)) = MlpBf16::pack2(w[j][e], w[j][e + 1]);
    }

    /* Where accumulator element (j, e) lies in W1 (hidden floats a row); false past its last unit. */
    static __device__ __forceinline__ bool w1_at(int hidden, int k0, int u0, int j, int e, size_t &at)
    {
        int u = u0 + acc_unit(j, e);
        at = (size_t)(k0 + acc_pixel(e)) * hidden + u;
        return u < hidden;
    }

    __device__ __forceinline__ void load(const float *w1, const float *v1, int hidden, int k0, int ks, int u0,
                                         T *w1s)
    {
        if (!owns_dw1(ks)) return;
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                size_t at;
                bool in = w1_at(hidden, k0, u0, j, e, at);
                w[j][e] = in ? w1[at] : 0.0f;
                v[j][e] = in ? v1[at] : 0.0f;
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
                size_t at;
                if (w1_at(hidden, k0, u0, j, e, at)) w1[at] = w[j][e], v1[at] = v[j][e];
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
    static __device__ __forceinline__ void forward(const T *xs, const T *w1s, Z *part, int ks, PstSplit sp, float,
                                                   float)
    {
        int warp = threadIdx.x / 32, lane = threadIdx.x % 32, pairs = sp.per / 32;
        int p = warp / pairs, mp = warp % pairs;
        if (p >= sp.parts) return;
        int s0, s1;
        pst_part_steps(sp, p, ks / 16, s0, s1);
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
        Z *out = part + (size_t)p * sp.per * PST_UNITS;
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < NT; j++) {
                Z *o = out + (32 * mp + 16 * i + g) * PST_UNITS + 8 * j + 2 * q;
                *(unsigned *)o = PstChunk<Z>::pack2(acc[i][j][0], acc[i][j][1]);
                *(unsigned *)(o + 8 * PST_UNITS) = PstChunk<Z>::pack2(acc[i][j][2], acc[i][j][3]);
            }
    }

    /* dW1 for warp w's 16 pixels over the batch rows (rounded up to 16: the rows past the
       batch are zero in both operands), then the step, and the new weights' bf16 copy. */
    __device__ __forceinline__ void dw1_step(const T *xs, const void *dz1, T *w1s, int ks, int rows, float lr,
                                             float mu, float, float)
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

    /* dz1 row r, units u .. u + 7, rounded, into the product's operand in a block of the
       cluster (dz1: its shared::cluster address): one 16-byte store. */
    static constexpr int DZ1_UNITS = 8;
    static __device__ __forceinline__ void put_dz1(uint32_t dz1, int r, int u, const float *v)
    {
        asm volatile("st.shared::cluster.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dz1 + 2 * (uint32_t)(r * D_ROW + u)),
                     "r"(MlpBf16::pack2(v[0], v[1])), "r"(MlpBf16::pack2(v[2], v[3])),
                     "r"(MlpBf16::pack2(v[4], v[5])), "r"(MlpBf16::pack2(v[6], v[7])) : "memory");
    }
};

#endif
