/* Chapter 05, part two, step 2: the tensor cores through PTX mma.sync and ldmatrix
 * (sm_80 and newer), and the kernel that steps 3 and 4 configure differently. Step 4's
 * version is what the chapter falls back to wherever the Hopper versions
 * (05_wgmma.cuh on) cannot run: another GPU, or a K or pointer TMA refuses.
 *
 *   tc_mma_bf16            (this file) mma.sync m16n8k16 with fragments loaded by ldmatrix
 *                          from a plain shared-memory tile; 128x128 block tile, 4 warps of
 *                          64x64
 *   tc_mma_swizzle_bf16    (03_mma_swizzle.cuh) the same with the XOR-swizzled tile:
 *                          ldmatrix without conflicts
 *   tc_mma_pipeline_bf16   (04_mma_pipeline.cuh) a 3-stage cp.async pipeline, 128x256 block
 *                          tile, 8 warps of 64x64
 *   tc_mma_pipeline_tf32   the same kernel with mma.sync m16n8k8 in TF32
 *
 * All follow common.cuh's contract; the copies into shared memory are 01_wmma.cuh's
 * (16-byte cp.async, zero-filled outside the matrix, element by element where K or a
 * pointer rules out 16-byte copies), so every shape works. TF32 inputs keep their low 13
 * bits (ignored by the tensor cores: 01_wmma.cuh says why).
 *
 * mma.sync is the instruction the WMMA API compiles to, with the fragment layout in the
 * open. m16n8k16 multiplies a 16 x 16 tile of A by a 16 x 8 tile of B into a 16 x 8 fp32
 * tile of C. Lane l of the warp: g = l / 4 (its "group", 0..7), q = l % 4. Each 32-bit
 * register of A and B holds two bf16 neighbours along k (the PTX ISA's elements 2i, 2i+1
 * of its table sit in register i, the lower k in the low half):
 *
 *   A: 16 x 16 (m x k), a[0..3]               B: 16 x 8 (k x n), b[0..1]
 *            k 0..7        k 8..15                     n 0..7
 *        +-------------+-------------+              +-------------------+
 *   m    | a[0]:       | a[2]:       |       k 0..7 | b[0]: n = g,      |
 *   0..7 | m = g       | m = g       |              |   k = 2q, 2q+1    |
 *        | k = 2q,2q+1 | k = 8+2q,+1 |              +-------------------+
 *        +-------------+-------------+      k 8..15 | b[1]: n = g,      |
 *   m    | a[1]:       | a[3]:       |              |   k = 8+2q, 8+2q+1|
 *   8..15| m = 8+g     | m = 8+g     |              +-------------------+
 *        +-------------+-------------+
 *
 *   C, D: 16 x 8 (m x n) fp32, c[0..3]: c[0], c[1] at m = g, n = 2q, 2q+1;
 *                                       c[2], c[3] at m = 8+g, the same n.
 *
 * Inside each 8 x 8 quadrant of A and C (and of B seen as Bt, rows n, columns k) the lanes
 * sit in row-major order, two elements a lane:
 *
 *          columns:  0 1 | 2 3 | 4 5 | 6 7
 *          row 0:     T0 |  T1 |  T2 |  T3
 *          row 1:     T4 |  T5 |  T6 |  T7
 *          ...
 *          row 7:    T28 | T29 | T30 | T31
 *
 * which is exactly what ldmatrix delivers: it reads an 8 x 8 matrix of 16-bit elements
 * (8 rows of 16 bytes, each row at its own address given by one lane) and hands lane T the
 * two elements of row T / 4 starting at 2 (T % 4). ldmatrix.x4 reads four such matrices, one
 * per register, the rows of matrix j addressed by lanes 8j .. 8j+7. B arrives as rows of Bt
 * (its columns n are contiguous along k), so the same non-transposed ldmatrix serves it:
 * b[0] is the 8 x 8 matrix (n 0..7) x (k 0..7) of Bt read row by row. The registers of one
 * ldmatrix.x4 are a[0..3] of a 16-row m-tile, or b[0], b[1] of two 8-column n-tiles; the
 * lane -> (row, 16-byte chunk) maps are swizzle.h's tc_ldsm_a_* and tc_ldsm_b_*.
 *
 * TF32, mma.sync m16n8k8 (16 x 8 of A times 8 x 8 of B), one fp32 element a register:
 *   a[0]: m = g, k = q;  a[1]: m = 8+g, k = q;  a[2]: m = g, k = 4+q;  a[3]: m = 8+g, k = 4+q;
 *   b[0]: k = q, n = g;  b[1]: k = 4+q, n = g;  C as above.
 * An 8 x 8 matrix of 16-bit elements is 8 rows of 16 bytes: 8 rows of 4 floats, and the 4
 * bytes ldmatrix gives lane T (row T / 4, bytes 4 (T % 4) ..) are the float at k = T % 4. So
 * a[0..3] are the four 8-row x 16-byte quadrants in the same order as for bf16, b[0], b[1]
 * likewise: byte for byte the same ldmatrix addresses serve both types (a k-step is 32
 * bytes either way). tests/host/test_05_swizzle.c checks all of this against the tables. */
#ifndef CH05_TENSOR_CORES_02_MMA_CUH
#define CH05_TENSOR_CORES_02_MMA_CUH

#include "05_matmul_tiled/tensor_cores/01_wmma.cuh" /* the tile copy */

/* ------------------------------------------------------------------ the instructions */

__device__ __forceinline__ void tc_ldsm_x4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* The registers of both shapes' mma.sync: D, A, B, and C in D's registers. */
#define TC_MMA_REGS " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"

/* d += a * b for one 16 x 8 tile of C and one 32-byte k-step: m16n8k16 in bf16 or m16n8k8
 * in TF32, fp32 accumulators (C and D in the same registers). */
template <typename T> __device__ __forceinline__ void
tc_mma_16x8(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    if constexpr (sizeof(T) == 2)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" TC_MMA_REGS
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" TC_MMA_REGS
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* ------------------------------------------------------------------ the shared kernel */

/* A block computes BM x BN of C with warps of 64 x 64 (BM / 64 x BN / 64 of them), STAGES
 * K-slices of 128 bytes in shared memory, plain or swizzled. SKIP (step 15): a warp leaves
 * out the 16-row and 8-column tiles of C that lie wholly outside the matrix. */
template <typename T_, int BM_, int BN_, int STAGES_, bool SWIZZLE_, bool SKIP_ = false>
struct TcMmaCfg {
    typedef T_ T;
    static constexpr int BM = BM_, BN = BN_, STAGES = STAGES_;
    static constexpr bool SWIZZLE = SWIZZLE_, SKIP = SKIP_;
    static constexpr int BK = TC_TILE_ROW_BYTES / sizeof(T); /* 64 bf16 or 32 floats */
    static constexpr int WARPS_N = BN / 64, THREADS = 32 * (BM / 64) * WARPS_N;
    static constexpr int A_BYTES = BM * TC_TILE_ROW_BYTES;
    static constexpr int STAGE_BYTES = (BM + BN) * TC_TILE_ROW_BYTES;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;
    static constexpr int MIN_BLOCKS = THREADS <= 128 ? 2 : 1; /* register budget a block */
    static_assert(BM % 64 == 0 && BN % 64 == 0 && STAGES >= 1, "tile sizes");
};

/* One K-slice of the warp's work: its 64 rows of A (a_rows: the shared-memory address of
 * the first) times its 64 rows of Bt (b_rows) over 128 bytes of K, in 4 k-steps of 32
 * bytes. Per k-step: 4 ldmatrix.x4 for A (one per 16-row m-tile), 4 for B (one per pair of
 * 8-column n-tiles), then 4 x 8 = 32 mma on 128 fp32 accumulators a thread. The lane's
 * offsets are those of tile rows 0..15; the swizzle repeats every 8 rows, so whole 16-row
 * steps add 2048 bytes to them. MT < 4 or NT < 8 (step 15): only the first MT m-tiles
 * and NT n-tiles, where the rest of the warp's 64 x 64 lies outside C. */
template <typename T, bool SWZ, int MT = 4, int NT = 8> __device__ __forceinline__ void
tc_warp_slice(float (&acc)[4][8][4], uint32_t a_rows, uint32_t b_rows)
{
    unsigned lane = threadIdx.x % 32;
#pragma unroll
    for (unsigned s = 0; s < 4; s++) {
        uint32_t a[4][4], b[8][2], r[4];
        uint32_t a_off = tc_tile_offset(tc_ldsm_a_row(lane), tc_ldsm_a_chunk(lane, s), SWZ);
        uint32_t b_off = tc_tile_offset(tc_ldsm_b_row(lane), tc_ldsm_b_chunk(lane, s), SWZ);
#pragma unroll
        for (int i = 0; i < MT; i++) tc_ldsm_x4(a[i], a_rows + i * 16 * TC_TILE_ROW_BYTES + a_off);
#pragma unroll
        for (int j = 0; j < NT / 2; j++) {
            tc_ldsm_x4(r, b_rows + j * 16 * TC_TILE_ROW_BYTES + b_off);
            b[2 * j][0] = r[0], b[2 * j][1] = r[1], b[2 * j + 1][0] = r[2], b[2 * j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int j = 0; j < NT; j++) tc_mma_16x8<T>(acc[i][j], a[i], b[j]);
    }
}

/* Step 15: the warp's slice with only the tiles inside C, mt m-tiles (0..4) and nt n-tiles
 * (0..8, rounded up to 2, 4 or 8). One copy of the slice per case, chosen by a branch that
 * is the same for the whole warp: tiles left out are never issued (a tile switched off by a
 * predicate would still be issued). */
template <typename T, bool SWZ, int MT> __device__ __forceinline__ void
tc_warp_slice_cols(float (&acc)[4][8][4], uint32_t a_rows, uint32_t b_rows, int nt)
{
    if (nt > 4)
        tc_warp_slice<T, SWZ, MT, 8>(acc, a_rows, b_rows);
    else if (nt > 2)
        tc_warp_slice<T, SWZ, MT, 4>(acc, a_rows, b_rows);
    else if (nt > 0)
        tc_warp_slice<T, SWZ, MT, 2>(acc, a_rows, b_rows);
}
template <typename T, bool SWZ> __device__ __forceinline__ void
tc_warp_slice_inside(float (&acc)[4][8][4], uint32_t a_rows, uint32_t b_rows, int mt, int nt)
{
    switch (mt) {
        case 4: tc_warp_slice_cols<T, SWZ, 4>(acc, a_rows, b_rows, nt); break;
        case 3: tc_warp_slice_cols<T, SWZ, 3>(acc, a_rows, b_rows, nt); break;
        case 2: tc_warp_slice_cols<T, SWZ, 2>(acc, a_rows, b_rows, nt); break;
        case 1: tc_warp_slice_cols<T, SWZ, 1>(acc, a_rows, b_rows, nt); break;
        default: break;
    }
}

/* The slice of configuration Cfg: all of the warp's tiles, or (SKIP) those inside C. */
template <class Cfg> __device__ __forceinline__ void
tc_cfg_slice(float (&acc)[4][8][4], uint32_t a_rows, uint32_t b_rows, int mt, int nt)
{
    if constexpr (Cfg::SKIP)
        tc_warp_slice_inside<typename Cfg::T, Cfg::SWIZZLE>(acc, a_rows, b_rows, mt, nt);
    else
        tc_warp_slice<typename Cfg::T, Cfg::SWIZZLE>(acc, a_rows, b_rows);
}

/* The K loop over `slices` slices from slice kt0 (all of K but in a split-K layer, step 15).
 * STAGES == 1 (steps 2, 3): copy a slice, wait for it, multiply, and meet at a
 * barrier before the next copy overwrites it. STAGES > 1 (step 4): a ring of slices, as in
 * the fp32 ladder's sgemm_mainloop: while the warps multiply slice kt, the copies of slices
 * up to kt + STAGES - 1 are in flight, and one barrier per slice suffices (the slot being
 * refilled was finished by every warp before the barrier at the top of this iteration). */
template <class Cfg> __device__ __forceinline__ void
tc_mma_mainloop(float (&acc)[4][8][4], uint32_t smem, const TcCopyPlan &pa, const TcCopyPlan &pb,
                const typename Cfg::T *A, const typename Cfg::T *Bt, int K, int kt0, int slices,
                uint32_t a_rows, uint32_t b_rows, bool vec, int mt, int nt)
{
    typedef typename Cfg::T T;
    if constexpr (Cfg::STAGES == 1) {
        for (int kt = 0; kt < slices; kt++) {
            tc_copy_stage<T, Cfg::BM, Cfg::BN, Cfg::THREADS>(smem, pa, pb, A, Bt, K,
                                                             (kt0 + kt) * Cfg::BK, vec);
            tc_cp_async_commit();
            tc_cp_async_wait<0>();
            __syncthreads();
            tc_cfg_slice<Cfg>(acc, smem + a_rows, smem + b_rows, mt, nt);
            __syncthreads();
        }
    } else {
#pragma unroll
        for (int s = 0; s < Cfg::STAGES - 1; s++) {
            if (s < slices)
                tc_copy_stage<T, Cfg::BM, Cfg::BN, Cfg::THREADS>(
                    smem + s * Cfg::STAGE_BYTES, pa, pb, A, Bt, K, (kt0 + s) * Cfg::BK, vec);
            tc_cp_async_commit();
        }
        int read = 0, write = Cfg::STAGES - 1;
        for (int kt = 0; kt < slices; kt++) {
            tc_cp_async_wait<Cfg::STAGES - 2>(); /* slice kt has landed (this thread's part) */
            __syncthreads();                     /* everybody's part, and slot `write` is free */
            int next = kt + Cfg::STAGES - 1;
            if (next < slices)
                tc_copy_stage<T, Cfg::BM, Cfg::BN, Cfg::THREADS>(
                    smem + write * Cfg::STAGE_BYTES, pa, pb, A, Bt, K, (kt0 + next) * Cfg::BK, vec);
            tc_cp_async_commit();
            uint32_t stage = smem + read * Cfg::STAGE_BYTES;
            tc_cfg_slice<Cfg>(acc, stage + a_rows, stage + b_rows, mt, nt);
            read = read + 1 == Cfg::STAGES ? 0 : read + 1;
            write = write + 1 == Cfg::STAGES ? 0 : write + 1;
        }
    }
}

/* Steps 2-4 (and 15), by configuration. Tiles are numbered along a 1-D grid in
 * tc_tile_grouped's L2-friendly order. The epilogue writes each accumulator pair (c[0], c[1]
 * or c[2], c[3]: two neighbouring columns) as one 8-byte store where the row allows. With
 * EPI == TC_EPI_ADD (split-K, step 15) grid layer blockIdx.y multiplies the split_slices
 * slices of K from blockIdx.y * split_slices on, and adds alpha times its product into C. */
template <class Cfg, int EPI> __global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS)
    tc_mma_kernel(int M, int N, int K, float alpha, const typename Cfg::T *A,
                  const typename Cfg::T *Bt, float beta, float *C, bool vec, bool vec2,
                  int split_slices)
{
    typedef typename Cfg::T T;
    extern __shared__ __align__(128) uint8_t tc_mma_smem[];
    int tm, tn, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    tc_tile_grouped(blockIdx.x, (M + Cfg::BM - 1) / Cfg::BM, (N + Cfg::BN - 1) / Cfg::BN, &tm, &tn);
    int m0 = tm * Cfg::BM, n0 = tn * Cfg::BN;
    int wm = (warp / Cfg::WARPS_N) * 64, wn = (warp % Cfg::WARPS_N) * 64;
    TcCopyPlan pa =
        tc_copy_plan<T, Cfg::BM, Cfg::THREADS, Cfg::SWIZZLE>(A + (size_t)m0 * K, M - m0, K);
    TcCopyPlan pb =
        tc_copy_plan<T, Cfg::BN, Cfg::THREADS, Cfg::SWIZZLE>(Bt + (size_t)n0 * K, N - n0, K);
    float acc[4][8][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
            acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
    int kt0 = blockIdx.y * split_slices, slices = (K + Cfg::BK - 1) / Cfg::BK - kt0;
    /* the warp's m-tiles (16 rows) and n-tiles (8 columns) inside C, for SKIP */
    int mt = min(max((M - m0 - wm + 15) / 16, 0), 4), nt = min(max((N - n0 - wn + 7) / 8, 0), 8);
    tc_mma_mainloop<Cfg>(acc, tc_smem(tc_mma_smem), pa, pb, A, Bt, K, kt0,
                         slices < split_slices ? slices : split_slices, wm * TC_TILE_ROW_BYTES,
                         Cfg::A_BYTES + wn * TC_TILE_ROW_BYTES, vec, mt, nt);
    int r = m0 + wm + lane / 4, c = n0 + wn + 2 * (lane % 4);
    if constexpr (EPI == TC_EPI_ADD) {
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const float *d = acc[i][j];
                tc_add_pair(C, M, N, r + 16 * i, c + 8 * j, alpha * d[0], alpha * d[1], vec2);
                tc_add_pair(C, M, N, r + 16 * i + 8, c + 8 * j, alpha * d[2], alpha * d[3], vec2);
            }
    } else {
#pragma unroll
        for (int i = 0; i < 4; i++) { /* 16 pairs at a time: their reads of C in flight together */
            int rr[16], cc[16];
            float2 v[16];
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const float *d = acc[i][j];
                rr[2 * j] = r + 16 * i, rr[2 * j + 1] = r + 16 * i + 8;
                cc[2 * j] = cc[2 * j + 1] = c + 8 * j;
                v[2 * j] = make_float2(d[0], d[1]), v[2 * j + 1] = make_float2(d[2], d[3]);
            }
            tc_store_pairs<16>(C, M, N, rr, cc, v, alpha, beta, vec2);
        }
    }
}

/* The kernel of configuration Cfg and epilogue EPI, its shared-memory limit raised on first
 * use. */
template <class Cfg, int EPI> static inline auto tc_mma_kernel_ready(void)
{
    static bool attr_set = false;
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(
            tc_mma_kernel<Cfg, EPI>, cudaFuncAttributeMaxDynamicSharedMemorySize, Cfg::SMEM_BYTES));
        attr_set = true;
    }
    return tc_mma_kernel<Cfg, EPI>;
}

/* splits > 1 (step 15): K in that many grid layers (rounded to a count that leaves no layer
 * empty), C = beta * C first and every layer's product added. */
template <class Cfg>
static inline void tc_mma_launch(int M, int N, int K, float alpha, const typename Cfg::T *A,
                                 const typename Cfg::T *Bt, float beta, float *C, int splits = 1)
{
    int tiles = sgemm_ceil_div(M, Cfg::BM) * sgemm_ceil_div(N, Cfg::BN);
    int slices = sgemm_ceil_div(K, Cfg::BK), per = tc_split_layers(slices, &splits);
    bool vec = tc_vec16(K, A, Bt), pairs = tc_c_pairs(N, C);
    if (splits <= 1) {
        tc_mma_kernel_ready<Cfg, TC_EPI_STORE>()<<<tiles, Cfg::THREADS, Cfg::SMEM_BYTES>>>(
            M, N, K, alpha, A, Bt, beta, C, vec, pairs, slices);
    } else {
        tc_prescale(C, M, N, beta);
        tc_mma_kernel_ready<Cfg,
                            TC_EPI_ADD>()<<<dim3(tiles, splits), Cfg::THREADS, Cfg::SMEM_BYTES>>>(
            M, N, K, alpha, A, Bt, beta, C, vec, pairs, per);
    }
    CHECK_LAUNCH();
}

/* ------------------------------------------------------------------ step 2 */

/* 2. mma: the fragments in the open. 4 warps of 64 x 64 (step 1: 32 x 32): per k-step a
 * warp loads 8 x 512 bytes with ldmatrix for 32 mma, each A fragment feeding 8 of them and
 * each B fragment 4, so shared memory delivers 128 bytes per mma (4096 flops) where WMMA
 * needed 256. 210 registers a thread (128 of them accumulators): 2 blocks per SM. The tile
 * is plain: rows 128 bytes apart, so chunk c of every row sits in the same 4 banks
 * (4c .. 4c+3), and the 8 rows one ldmatrix phase reads (8 lanes, 8 rows, the same chunk)
 * all hit the same bank group: an 8-way conflict, 8 shared-memory wavefronts where 1 would
 * do. An ldmatrix.x4 costs 32 wavefronts instead of 4 (28 conflicts), a k-step's 8 of them
 * 256 instead of 32: 8 cycles of shared memory (one 128-byte wavefront a cycle per SM) per
 * mma, which an SM's tensor cores finish in about one. Bound by bank conflicts, and `ncu`
 * counts them (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld). The copies are not
 * the problem: 8 threads write the 8 chunks of one row, 8 different bank groups. */
typedef TcMmaCfg<bf16, 128, 128, 1, false> TcMmaPlainCfg;

static inline void tc_mma_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                               float beta, float *C)
{
    tc_mma_launch<TcMmaPlainCfg>(M, N, K, alpha, A, Bt, beta, C);
}

#endif
