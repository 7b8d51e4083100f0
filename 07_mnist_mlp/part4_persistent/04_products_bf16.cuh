/* Chapter 07: the persistent trainer's products in bf16 on tensor cores
 * (part4_persistent/02_products.cuh says what a PstProduct is and what both precisions share). */
#ifndef CH07_KERNELS_PERSISTENT_BF16_CUH
#define CH07_KERNELS_PERSISTENT_BF16_CUH

/* TC_WGMMA_DEVICE, wgmma's fence, commit and wait */
#include "05_matmul_tiled/tensor_cores/hopper_primitives.cuh"
#include "07_mnist_mlp/part4_persistent/02_products.cuh"

/* Two 8 x 8 matrices of 16-bit elements (rows addressed by lanes 0-15), each lane's pair
 * taken down a column: the ninth n-tile of a 72-unit B operand. */
__device__ __forceinline__ void pst_ldsm_x2_trans(uint32_t (&r)[2], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(addr));
}

/* d (36 floats a thread: m64n72's accumulators) += A (64 x 16) . B (16 x 72), both read from
 * shared memory through their descriptors (pst_desc); TA, TB: 1 where the operand is stored
 * MN-major (its rows, M or N, contiguous), 0 where K-major. sm_90a only. */
#ifdef TC_WGMMA_DEVICE
#define PST_D4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
template <int TA, int TB>
__device__ __forceinline__ void pst_wgmma_n72(float (&d)[36], uint64_t a, uint64_t b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n72k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, "
                 "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, "
                 "%34, %35}, %36, %37, 1, 1, 1, %38, %39;\n"
                 : PST_D4(0), PST_D4(4), PST_D4(8), PST_D4(12), PST_D4(16), PST_D4(20), PST_D4(24),
                   PST_D4(28), PST_D4(32)
                 : "l"(a), "l"(b), "n"(TA), "n"(TB));
}
#undef PST_D4
#endif

/* The descriptor of an operand in shared memory (PTX's matrix descriptor): its start, lbo and
 * sbo (bytes from one 8 x 8 block of the operand to the next along K, and along M or N, for
 * the layout without swizzle: 8 rows of 16 contiguous bytes a block), and the swizzle (0
 * none, 1 the 128-byte swizzle: rows of 128 bytes, sbo the 1024 bytes from 8 rows to the
 * next 8). */
__device__ __forceinline__ uint64_t pst_desc(const void *smem, uint32_t lbo, uint32_t sbo,
                                             uint64_t swizzle)
{
    uint64_t addr = (uint32_t)__cvta_generic_to_shared(smem);
    return ((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) |
           (swizzle << 62);
}

/* Rows of x in shared memory for a batch: rounded up to the 64 of a wgmma tile. */
static __host__ __device__ __forceinline__ int pst_x_rows(int batch)
{
    return (batch + 63) / 64 * 64;
}

/* bf16's operands in shared memory, laid out for wgmma (and read the same way by ldmatrix
 * where there is no wgmma):
 *
 *   x       two blocks of 64 pixels (the slice's first 64, then the rest and what follows
 *           it), each its rows of 128 bytes with the 128-byte swizzle: 16-byte chunk c of row
 *           r at chunk c ^ (r % 8), as the TMA copy lands it (pst_copy_batch). The forward
 *           reads it K-major (pixels along a row), the dW1 product MN-major (x^T: the same
 *           rows, pixels as M).
 *   W1      the slice's pixels (128 rows: 112, then zeros) by 72 units, in chunks of 8 units:
 *           chunk c holds units 8 c .. 8 c + 7 of every row, 16 bytes a row (MN-major).
 *   partial sums and dz1: 256 rows by 72 units, in chunks the same way, each chunk 16 bytes
 *           longer than its rows (P_PLANE), so that the chunks of one row start in different
 *           groups of banks. The cluster's loads and stores of them (pst_reduce_z1,
 *           put_dz1) take a chunk's rows together (pst_item): a warp's 16-byte accesses
 *           one run of bytes, where a row's chunks, 4 KB apart, were 8-way conflicts. */
template <> struct PstProduct<MlpBf16> {
    typedef bf16 T;
    typedef __half Z;                  /* the forward's partial sums (PstChunk) */
    typedef bf16 D;                    /* dz1, the dW1 product's operand */
    typedef unsigned ShareWord;        /* z2's shares: 16 bits of mantissa and a tag (PstShares) */
    static constexpr int QUANTUM = 16; /* pixels: one k-step; slices of 96 or 112 */
    static constexpr int MAX_SLICE = 112;
    static constexpr int X_BLOCK_ROW = 64; /* pixels of a row of an x block: 128 bytes */
    /* elements from x's first block to its second */
    static constexpr int X_BLOCK = PST_MAX_ROWS * X_BLOCK_ROW;
    static constexpr int X_ROW = 2 * X_BLOCK_ROW; /* x's pixels a row (PstShared's X_SIZE) */
    /* the next batch copied in during a step (part4_persistent/09_kernel.cuh) */
    static constexpr int X_BUFFERS = 2;
    static constexpr int GRANULE = 64;       /* a wgmma tile's rows */
    static constexpr int NT = PST_UNITS / 8; /* n-tiles and chunks of units: 9 */
    /* W1's rows past the slice: zeros */
    static constexpr int W_ROWS = 128, W1S = W_ROWS * PST_UNITS;
    /* elements from a chunk of partial sums to the next */
    static constexpr int P_PLANE = PST_MAX_ROWS * 8 + 8;
    static constexpr int PART_SIZE = NT * P_PLANE;
    static constexpr bool CHUNK_MAJOR = true; /* pst_item */
    /* master weights and velocity of warp w's pixels 16 w .., as its accumulators */
    float w[NT][4], v[NT][4];

    /* The next batch is copied into x's other buffer by the TMA unit (pst_copy_batch): no
       row to hold. */
    struct Row {
    };

    static __device__ __forceinline__ bool owns_dw1(int ks)
    {
        return (int)threadIdx.x / 32 < ks / 16;
    }
    static __host__ __device__ __forceinline__ int part_at(int r, int u)
    {
        return u / 8 * P_PLANE + r * 8 + u % 8;
    }
    static __device__ __forceinline__ int w_at(int k, int u)
    {
        return u / 8 * W_ROWS * 8 + k * 8 + u % 8;
    }
    /* The byte of x's 16-byte chunk c (0-15: 8 pixels) of row r, in the swizzle */
    static __device__ __forceinline__ uint32_t x_byte(int r, int c)
    {
        return (uint32_t)(c / 8 * X_BLOCK * 2 + r * 128 + ((c % 8) ^ (r % 8)) * 16);
    }

    /* Accumulator element (j, e) of lane l: pixel 16 warp + l / 4 + 8 (e / 2), unit
       8 j + 2 (l % 4) + e % 2 (mma.sync's m16n8 tile, and the same for wgmma's m64n72: warp
       w % 4 of a warpgroup owns rows 16 (w % 4) ..). */
    static __device__ __forceinline__ int acc_pixel(int e)
    {
        return threadIdx.x / 32 * 16 + threadIdx.x % 32 / 4 + 8 * (e / 2);
    }
    static __device__ __forceinline__ int acc_unit(int j, int e)
    {
        return 8 * j + 2 * (threadIdx.x % 4) + e % 2;
    }

    /* The bf16 copy the forward reads, stored by the threads (the generic proxy) and read by
       wgmma (the async proxy): the proxy fence puts the stores first (a barrier follows). */
    __device__ __forceinline__ void put_bf16_copy(T *w1s) const
    {
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e += 2)
                *(unsigned *)(w1s + w_at(acc_pixel(e), acc_unit(j, e))) =
                    MlpBf16::pack2(w[j][e], w[j][e + 1]);
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }

    /* Where accumulator element (j, e) lies in W1 (hidden floats a row); false past its last
       unit. */
    static __device__ __forceinline__ bool w1_at(int hidden, int k0, int u0, int j, int e,
                                                 size_t &at)
    {
        int u = u0 + acc_unit(j, e);
        at = (size_t)(k0 + acc_pixel(e)) * hidden + u;
        return u < hidden;
    }

    /* Every thread: W1's rows cleared (those past the slice stay zero), then the slice's. */
    __device__ __forceinline__ void load(const float *w1, const float *v1, int hidden, int k0,
                                         int ks, int u0, T *w1s)
    {
        for (int i = threadIdx.x; i < W1S / 8; i += PST_THREADS)
            ((uint4 *)w1s)[i] = make_uint4(0u, 0u, 0u, 0u);
        __syncthreads();
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

    __device__ __forceinline__ void store(float *w1, float *v1, int hidden, int k0, int ks, int u0,
                                          const T *) const
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

    /* B (k rows of 72 units) for one k-step of mma.sync, from chunks of 8 units (W1, dz1):
       n-tile j is chunk j, `chunk` bytes after chunk j - 1; n-tiles 0-7 as four
       ldmatrix.x4.trans, n-tile 8 as an x2; addr is the lane's row in chunk mat / 2 (mat =
       lane / 8), addr8 in chunk 8. (bf16x3's row-major pieces: its own load_b.) */
    static __device__ __forceinline__ void load_b_chunked(uint32_t (&b)[NT][2], uint32_t addr,
                                                          uint32_t addr8, uint32_t chunk)
    {
        uint32_t r[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            mlp_ldsm_x4_trans(r, addr + 2 * j * chunk);
            b[2 * j][0] = r[0], b[2 * j][1] = r[1], b[2 * j + 1][0] = r[2], b[2 * j + 1][1] = r[3];
        }
        pst_ldsm_x2_trans(b[8], addr8);
    }

    /* An accumulator tile's n-tile j (v: its 4 values, m16n8's layout, as wgmma's) into the
       partial sums in fp16: rows r and r + 8, units 8 j + 2 (lane % 4) and the next. */
    static __device__ __forceinline__ void put_part_pairs(Z *part, int r, int j, const float *v)
    {
        const int u = 8 * j + 2 * (threadIdx.x % 4);
        *(unsigned *)(part + part_at(r, u)) = PstChunk<Z>::pack2(v[0], v[1]);
        *(unsigned *)(part + part_at(r + 8, u)) = PstChunk<Z>::pack2(v[2], v[3]);
    }

#ifdef TC_WGMMA_DEVICE
    /* Warpgroup wg's two tiles of the forward with PARTS parts of the K split: each part's
       k-steps (as many in every part: a loop whose count ptxas cannot prove the same across
       the warpgroup serializes every wgmma of the kernel, its warning C7520, and a loop that
       is not unrolled is slower); a k-step past the part's multiplies x
       (finite) by W1's rows past the slice (zeros). */
    template <int PARTS> static __device__ __forceinline__ void
    forward_wgmma(float (&d)[2][36], const uint8_t *x, const T *w1s, int wg, int ks, PstSplit sp)
    {
        constexpr int MOST = (MAX_SLICE / 16 + PARTS - 1) / PARTS, TILES = 4 / PARTS;
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const int item = 2 * wg + i, p = item / TILES, t = item % TILES;
            int s0, s1;
            pst_part_steps(sp, p, ks / 16, s0, s1);
#pragma unroll
            for (int n = 0; n < MOST; n++) {
                const int s = min(s0 + n, MAX_SLICE / 16 - 1);
                pst_wgmma_n72<0, 1>(
                    d[i], pst_desc(x + x_byte(64 * t, 2 * s), 16, 1024, 1),
                    pst_desc(w1s + w_at(s0 + n < s1 ? 16 * s : MAX_SLICE, 0), 128, W_ROWS * 16, 0));
            }
        }
    }
#endif

    /* The forward. Part p of the K split (pst_split) is rows 0 .. per - 1 over its share of
       the k-steps; parts x per = 256 rows, four tiles of 64 rows, two a warpgroup (sm_90a:
       wgmma; elsewhere each warp 32 rows with mma.sync). Partial sums to `part` in fp16,
       part p's row r as row p per + r. */
    static __device__ __forceinline__ void forward(const T *xs, const T *w1s, Z *part, int ks,
                                                   PstSplit sp, float, float)
    {
        int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4;
        const uint8_t *x = (const uint8_t *)xs;
#ifdef TC_WGMMA_DEVICE
        /* wgmma: A = x (K-major, swizzled), B = W1 (MN-major): forward_wgmma */
        const int wg = warp / 4, tiles = 4 / sp.parts; /* per = 192: a fourth tile past the batch */
        float d[2][36];
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int e = 0; e < 36; e++) d[i][e] = 0.0f;
        tc_fence_regs(d[0]);
        tc_fence_regs(d[1]);
        tc_wgmma_fence();
        if (sp.parts == 1)
            forward_wgmma<1>(d, x, w1s, wg, ks, sp);
        else if (sp.parts == 2)
            forward_wgmma<2>(d, x, w1s, wg, ks, sp);
        else
            forward_wgmma<4>(d, x, w1s, wg, ks, sp);
        tc_wgmma_commit();
        tc_wgmma_wait<0>();
        tc_fence_regs(d[0]);
        tc_fence_regs(d[1]);
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const int item = 2 * wg + i, p = item / tiles, t = item % tiles;
            const int r = p * sp.per + 64 * t + 16 * (warp % 4) + g;
#pragma unroll
            for (int j = 0; j < NT; j++) put_part_pairs(part, r, j, d[i] + 4 * j);
        }
#else
        /* warp (p, mp) of parts x per / 32 takes rows 32 mp .. 32 mp + 31 */
        int pairs = sp.per / 32, p = warp / pairs, mp = warp % pairs;
        if (p >= sp.parts) return; /* per = 192: parts x per < 256 */
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
        /* A: lane l row (l % 8) + 8 (mat % 2), chunk 2 s + mat / 2; B (ldmatrix.trans) the
           same in W1 */
        const uint32_t x0 = (uint32_t)__cvta_generic_to_shared(x);
        uint32_t b_addr =
            (uint32_t)__cvta_generic_to_shared(w1s + w_at(row + mat % 2 * 8, mat / 2 * 8));
        uint32_t b8_addr = (uint32_t)__cvta_generic_to_shared(w1s + w_at(row + mat % 2 * 8, 64));
        for (int s = s0; s < s1; s++) {
            uint32_t a[2][4], b[NT][2];
#pragma unroll
            for (int i = 0; i < 2; i++)
                tc_ldsm_x4(a[i],
                           x0 + x_byte(32 * mp + 16 * i + row + mat % 2 * 8, 2 * s + mat / 2));
            load_b_chunked(b, b_addr + s * 16 * 16, b8_addr + s * 16 * 16, W_ROWS * 16);
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < NT; j++) tc_mma_16x8<bf16>(acc[i][j], a[i], b[j]);
        }
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < NT; j++)
                put_part_pairs(part, p * sp.per + 32 * mp + 16 * i + g, j, acc[i][j]);
#endif
    }

    /* dW1 for warp w's 16 pixels over the batch rows (rounded up to 16: the rows past the
       batch are zero in dz1), then the step, and the new weights' bf16 copy. sm_90a: each
       warpgroup 64 pixels (x^T: x's block, MN-major) by the 72 units (dz1, MN-major) with
       wgmma; elsewhere each warp with mma.sync. */
    __device__ __forceinline__ void dw1_step(const T *xs, const void *dz1, T *w1s, int ks, int rows,
                                             float lr, float mu, float, float)
    {
        const T *d = (const T *)dz1;
        const uint8_t *x = (const uint8_t *)xs;
        int warp = threadIdx.x / 32;
        float acc[NT][4];
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[j][e] = 0.0f;
#ifdef TC_WGMMA_DEVICE
        float(&flat)[36] = *(float(*)[36]) & acc[0][0];
        const int wg = warp / 4;
        tc_fence_regs(flat);
        /* dz1 was stored by the threads of the cluster (the generic proxy), and waited for on
           dz1_full; wgmma reads it through the async proxy: the proxy fence orders the two here,
           on the reading side (on the storing side, after the stores, it costs more) */
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        tc_wgmma_fence();
        /* batch rows k .. k + 15 */
        const auto k_step = [&](int k) {
            pst_wgmma_n72<1, 1>(flat, pst_desc(x + x_byte(k, 8 * wg), X_BLOCK * 2, 1024, 1),
                                pst_desc(d + part_at(k, 0), 128, P_PLANE * 2, 0));
        };
        if (rows == PST_MAX_ROWS) { /* unrolled: the loop's count known */
#pragma unroll
            for (int k = 0; k < PST_MAX_ROWS; k += 16) k_step(k);
        } else {
            for (int k = 0; k < rows; k += 16) k_step(k);
        }
        tc_wgmma_commit();
        tc_wgmma_wait<0>();
        tc_fence_regs(flat);
        if (!owns_dw1(ks)) return;
#else
        if (!owns_dw1(ks)) return;
        int lane = threadIdx.x % 32, mat = lane / 8, row = lane % 8;
        /* A = x^T: the four 8 x 8 matrices (k 0-7 | 8-15) x (m 0-7 | 8-15) taken down their
           columns; B = dz1 as the forward's B */
        const uint32_t x0 = (uint32_t)__cvta_generic_to_shared(x);
        uint32_t b_addr =
            (uint32_t)__cvta_generic_to_shared(d + part_at(row + mat % 2 * 8, mat / 2 * 8));
        uint32_t b8_addr = (uint32_t)__cvta_generic_to_shared(d + part_at(row + mat % 2 * 8, 64));
        for (int k = 0; k < rows; k += 16) {
            uint32_t a[4], b[NT][2];
            mlp_ldsm_x4_trans(a, x0 + x_byte(k + row + mat / 2 * 8, 2 * warp + mat % 2));
            load_b_chunked(b, b_addr + k * 16, b8_addr + k * 16, P_PLANE * 2);
#pragma unroll
            for (int j = 0; j < NT; j++) tc_mma_16x8<bf16>(acc[j], a, b[j]);
        }
#endif
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
       cluster (dz1: its shared::cluster address; full: that block's dz1 mbarrier): one
       16-byte st.async, a chunk's row (the dW1 product's proxy fence makes it visible to
       wgmma). */
    static constexpr int DZ1_UNITS = 8;
    static __device__ __forceinline__ void put_dz1(uint32_t dz1, int r, int u, const float *v,
                                                   uint32_t full)
    {
        pst_st_async16(dz1 + 2 * (uint32_t)part_at(r, u),
                       make_uint4(MlpBf16::pack2(v[0], v[1]), MlpBf16::pack2(v[2], v[3]),
                                  MlpBf16::pack2(v[4], v[5]), MlpBf16::pack2(v[6], v[7])),
                       full);
    }
};

#endif
