/* Chapter 05, the fp32 ladder, step 9: double_buffer, the first configuration of the
 * pipelined kernel that step 10 (10_hopper.cuh: hopper, hopper_small) and the any-shape
 * versions (any_shape/) run with other tiles. In order: the cp.async copies and the
 * per-thread copy plan, the two main loops (a ring of STAGES slices; the same ring with
 * the fragments of the next k step prefetched, which step 10 turns on), the kernel with its
 * epilogues (a plain store, staged through shared memory for an odd N by
 * any_shape/epilogue_staged.cuh, or split-K's atomic adds from any_shape/epilogue_splitk.cuh)
 * and its launch, and step 9's launcher. */
#ifndef CH05_FP32_09_DOUBLE_BUFFER_CUH
#define CH05_FP32_09_DOUBLE_BUFFER_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/00_common.cuh"
#include "05_matmul_tiled/any_shape/epilogue_splitk.cuh"
#include "05_matmul_tiled/any_shape/epilogue_staged.cuh"
#include "05_matmul_tiled/fp32/08_warptile.cuh"

/* ---------------------------------------------------------------------------------------
 * cp.async (sm_80+): a copy from global to shared memory that does not pass through
 * registers and does not block the thread; commit_group / wait_group say which copies
 * must have landed. src_bytes < size fills the rest with zeros: the edge path. */
__device__ __forceinline__ void sgemm_cp_async4(float *dst, const float *src)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(src));
}

/* valid == false copies nothing and writes a zero (src must still be a valid address). */
__device__ __forceinline__ void sgemm_cp_async4_zfill(float *dst, const float *src, bool valid)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :
                 : "r"(s), "l"(src), "r"(valid ? 4 : 0));
}

__device__ __forceinline__ void sgemm_cp_async16(float *dst, const float *src)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
}

/* valid == false copies nothing and writes 16 zero bytes (src must still be a valid address). */
__device__ __forceinline__ void sgemm_cp_async16_zfill(float *dst, const float *src, bool valid)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :
                 : "r"(s), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void sgemm_cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}

template <int N> __device__ __forceinline__ void sgemm_cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* What one thread copies, worked out once per block: the copies of a slice then cost a
 * few adds and compares, not a recomputed index each (steps 1-8 recompute everything in
 * the loop; at 512 FMAs a slice that overhead is a visible share of the instructions). */
typedef struct {
    const float *a_src, *b_src; /* this thread's first A and B element of the slice at k = 0 */
    size_t a_step, b_step;      /* between this thread's successive copies: rows of A, of B */
    int a_dst, b_dst;           /* their offsets inside a stage */
    int a_k, b_k;               /* their k within the slice */
    int b_col;                  /* the first of this thread's 4 columns of B */
    unsigned a_rows_ok;         /* bit l: copy l of A lies on a row < M */
    bool a_rows_all;            /* all of them do */
    bool b_fast;                /* its B columns lie inside B's rows, 16-byte copyable */
    bool b_zero;                /* a padded B, and all 4 columns past its rows: 16 zero bytes */
} SgemmCopyPlan;

template <typename Cfg>
__device__ __forceinline__ SgemmCopyPlan sgemm_copy_plan(const float *A, const float *B, int M,
                                                         int N, int ldb, int K, int m0, int n0,
                                                         bool b_vec)
{
    constexpr int A_ROWS = Cfg::THREADS / Cfg::BK;       /* rows of A covered per copy round */
    constexpr int B_ROWS = Cfg::THREADS / (Cfg::BN / 4); /* rows of B covered per copy round */
    constexpr int A_COPIES = Cfg::BM / A_ROWS;
    int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    SgemmCopyPlan p;
    /* A: each warp copies an 8 (k) x 4 (m) block per round, lane -> (k = lane % 8,
     * m = lane / 8). */
    p.a_k = (warp % (Cfg::BK / 8)) * 8 + lane % 8;
    int am = (warp / (Cfg::BK / 8)) * 4 + lane / 8;
    int bn = (tid % (Cfg::BN / 4)) * 4;
    p.b_k = tid / (Cfg::BN / 4);
    p.a_src = A + (size_t)(m0 + am) * K + p.a_k;
    p.b_src = B + (size_t)p.b_k * ldb + n0 + bn;
    p.a_step = (size_t)A_ROWS * K;
    p.b_step = (size_t)B_ROWS * ldb;
    p.a_dst = p.a_k * Cfg::AS + am;
    p.b_dst = Cfg::BK * Cfg::AS + p.b_k * Cfg::BN + bn;
    p.a_rows_ok = 0;
    for (int l = 0; l < A_COPIES; l++)
        if (m0 + am + l * A_ROWS < M) p.a_rows_ok |= 1u << l;
    p.a_rows_all = p.a_rows_ok == (A_COPIES == 32 ? ~0u : (1u << A_COPIES) - 1u);
    p.b_col = n0 + bn;
    /* Inside B's rows, not inside N: the columns N..ldb-1 of sgemm_best's padded B are
     * zeros, and a column past N only ever reaches the columns of C past N, which are never
     * stored. So with a padded B a block on the right edge of C copies like any other,
     * rather than 4 bytes at a time past column N on every slice (which would make those
     * blocks the slowest, and the kernel's time theirs). */
    p.b_fast = b_vec && p.b_col + 3 < ldb;
    p.b_zero = ldb != N && b_vec && p.b_col >= ldb; /* (false at compile time where ldb is N) */
    return p;
}

/* Starts the copies of the BK-slice at k0 into one stage. A goes element by element
 * (4-byte copies), since each lands transposed. A warp copies 8 neighbouring k of 4 rows
 * per round: the reads are four full 32-byte sectors, and the 32 stores land in 32
 * different banks (row k of As starts 4k banks further, rows m add m), for any BK.
 * B goes in 16-byte copies where it can. Only the last slice of K and the blocks on the
 * edges of C take the checked copies. B's rows are ldb floats apart: N, or more when
 * sgemm_best has copied B into padded rows (whose columns N..ldb-1 are zeros, so the
 * checked copies may read up to ldb). */
template <typename Cfg>
__device__ __forceinline__ void sgemm_load_stage_async(float *stage, const SgemmCopyPlan &p,
                                                       const float *A, const float *B, int ldb,
                                                       int K, int k0)
{
    constexpr int A_ROWS = Cfg::THREADS / Cfg::BK;
    constexpr int B_ROWS = Cfg::THREADS / (Cfg::BN / 4);
    constexpr int A_COPIES = Cfg::BM / A_ROWS;
    constexpr int B_COPIES = Cfg::BK / B_ROWS;
    bool k_full = k0 + Cfg::BK <= K;
    if (k_full && p.a_rows_all) {
#pragma unroll
        for (int l = 0; l < A_COPIES; l++)
            sgemm_cp_async4(stage + p.a_dst + l * A_ROWS, p.a_src + l * p.a_step + k0);
    } else {
        bool a_k_ok = k_full || k0 + p.a_k < K;
#pragma unroll
        for (int l = 0; l < A_COPIES; l++) {
            bool ok = a_k_ok && ((p.a_rows_ok >> l) & 1u);
            const float *src = p.a_src + l * p.a_step + k0;
            sgemm_cp_async4_zfill(stage + p.a_dst + l * A_ROWS, ok ? src : A, ok);
        }
    }
    if (k_full && p.b_fast) {
#pragma unroll
        for (int l = 0; l < B_COPIES; l++)
            sgemm_cp_async16(stage + p.b_dst + l * B_ROWS * Cfg::BN,
                             p.b_src + l * p.b_step + (size_t)k0 * ldb);
        return;
    }
#pragma unroll
    for (int l = 0; l < B_COPIES; l++) {
        const float *src = p.b_src + l * p.b_step + (size_t)k0 * ldb;
        float *dst = stage + p.b_dst + l * B_ROWS * Cfg::BN;
        bool k_ok = k_full || k0 + p.b_k + l * B_ROWS < K;
        if (p.b_fast && k_ok) {
            sgemm_cp_async16(dst, src);
        } else if (p.b_zero) {
            sgemm_cp_async16_zfill(dst, B, false);
        } else {
#pragma unroll
            for (int q = 0; q < 4; q++) {
                bool ok = k_ok && p.b_col + q < ldb;
                sgemm_cp_async4_zfill(dst + q, ok ? src + q : B, ok);
            }
        }
    }
}

/* The main loop of steps 9 and 10: STAGES shared-memory slices in a ring. While the warps
 * multiply slice kt, the copies of slices up to kt + STAGES - 1 are in flight, so the load
 * latency hides behind the FMAs, and one __syncthreads per slice suffices: the slice being
 * overwritten was finished by every warp before the barrier at the top of this iteration. */
template <typename Cfg> __device__ __forceinline__ void
sgemm_mainloop(float *smem, const SgemmCopyPlan &plan, const float *A, const float *B, int ldb,
               int K, int k_first, int tiles, float (&acc)[Cfg::TM][Cfg::TN], int row, int col)
{
#pragma unroll
    for (int s = 0; s < Cfg::STAGES - 1; s++) {
        if (s < tiles)
            sgemm_load_stage_async<Cfg>(smem + s * Cfg::STAGE_FLOATS, plan, A, B, ldb, K,
                                        k_first + s * Cfg::BK);
        sgemm_cp_async_commit();
    }
    int read_stage = 0, write_stage = Cfg::STAGES - 1;
    for (int kt = 0; kt < tiles; kt++) {
        sgemm_cp_async_wait<Cfg::STAGES - 2>();
        __syncthreads();
        int next = kt + Cfg::STAGES - 1;
        if (next < tiles)
            sgemm_load_stage_async<Cfg>(smem + write_stage * Cfg::STAGE_FLOATS, plan, A, B, ldb, K,
                                        k_first + next * Cfg::BK);
        sgemm_cp_async_commit();
        const float *As = smem + read_stage * Cfg::STAGE_FLOATS;
        sgemm_tile_multiply<Cfg>(As, As + Cfg::BK * Cfg::AS, acc, row, col);
        read_stage = read_stage + 1 == Cfg::STAGES ? 0 : read_stage + 1;
        write_stage = write_stage + 1 == Cfg::STAGES ? 0 : write_stage + 1;
    }
}

/* How many k steps of a slice the fragment-pipelined loop unrolls at a time: all of them
 * (the default: one straight run of BK steps between barriers), or fewer for a shorter
 * loop body with the same slices (a smaller footprint in the instruction cache). */
#ifndef SGEMM_K_UNROLL
#define SGEMM_K_UNROLL 1024
#endif

/* One k step's fragments: TM values of A and TN of B from shared memory into registers. */
template <typename Cfg>
__device__ __forceinline__ void sgemm_load_fragments(const float *stage, int k, int row, int col,
                                                     float (&a)[Cfg::TM], float (&b)[Cfg::TN])
{
    const float *As = stage, *Bs = stage + Cfg::BK * Cfg::AS;
#pragma unroll
    for (int i = 0; i < Cfg::TM / 4; i++)
        *(float4 *)&a[4 * i] = *(const float4 *)&As[k * Cfg::AS + row + sgemm_acc_row<Cfg>(4 * i)];
#pragma unroll
    for (int j = 0; j < Cfg::TN / 4; j++)
        *(float4 *)&b[4 * j] = *(const float4 *)&Bs[k * Cfg::BN + col + sgemm_acc_col<Cfg>(j)];
}

/* The same ring, software-pipelined one k step deep across slice boundaries: the fragments
 * of step k + 1 are loaded while step k's FMAs run, and the barrier moves to the last step
 * of a slice, so that the first fragments of slice kt + 1 load during the last FMAs of
 * slice kt. The plain loop above waits for them right after its barrier (ncu: "short
 * scoreboard" stalls on the first FMAs of each slice). Costs TM + TN registers. Here all
 * STAGES slices are filled before the loop, and slice kt's buffer is refilled (with slice
 * kt + STAGES) once its last fragments are in registers. */
template <typename Cfg> __device__ __forceinline__ void
sgemm_mainloop_frag_pipe(float *smem, const SgemmCopyPlan &plan, const float *A, const float *B,
                         int ldb, int K, int k_first, int tiles, float (&acc)[Cfg::TM][Cfg::TN],
                         int row, int col)
{
#pragma unroll
    for (int s = 0; s < Cfg::STAGES; s++) {
        if (s < tiles)
            sgemm_load_stage_async<Cfg>(smem + s * Cfg::STAGE_FLOATS, plan, A, B, ldb, K,
                                        k_first + s * Cfg::BK);
        sgemm_cp_async_commit();
    }
    sgemm_cp_async_wait<Cfg::STAGES - 1>();
    __syncthreads();
    float a[2][Cfg::TM], b[2][Cfg::TN];
    sgemm_load_fragments<Cfg>(smem, 0, row, col, a[0], b[0]);
    int stage = 0;
    for (int kt = 0; kt < tiles; kt++) {
        const float *cur = smem + stage * Cfg::STAGE_FLOATS;
        int next_stage = stage + 1 == Cfg::STAGES ? 0 : stage + 1;
        /* the slice's k steps in groups of U, each group unrolled (U even, so that a step's
           fragment buffer, k % 2 = u % 2, stays a compile-time index); the last group holds
           the slice's last step, which waits for the next slice */
        constexpr int U = SGEMM_K_UNROLL < Cfg::BK ? SGEMM_K_UNROLL : Cfg::BK;
        static_assert(U % 2 == 0 && Cfg::BK % U == 0, "whole, even groups of k steps");
#pragma unroll 1
        for (int k0 = 0; k0 < Cfg::BK - U; k0 += U) {
#pragma unroll
            for (int u = 0; u < U; u++) {
                sgemm_load_fragments<Cfg>(cur, k0 + u + 1, row, col, a[(u + 1) % 2],
                                          b[(u + 1) % 2]);
                sgemm_fma_step<Cfg>(acc, a[u % 2], b[u % 2]);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            int k = Cfg::BK - U + u;
            if (k == Cfg::BK - 1) {
                sgemm_cp_async_wait<Cfg::STAGES - 2>(); /* slice kt + 1 has landed */
                __syncthreads();                        /* and nobody reads slice kt any more */
                if (kt + Cfg::STAGES < tiles)
                    sgemm_load_stage_async<Cfg>(smem + stage * Cfg::STAGE_FLOATS, plan, A, B, ldb,
                                                K, k_first + (kt + Cfg::STAGES) * Cfg::BK);
                sgemm_cp_async_commit();
                if (kt + 1 < tiles)
                    sgemm_load_fragments<Cfg>(smem + next_stage * Cfg::STAGE_FLOATS, 0, row, col,
                                              a[(u + 1) % 2], b[(u + 1) % 2]);
            } else {
                sgemm_load_fragments<Cfg>(cur, k + 1, row, col, a[(u + 1) % 2], b[(u + 1) % 2]);
            }
            sgemm_fma_step<Cfg>(acc, a[u % 2], b[u % 2]);
        }
        stage = next_stage;
    }
}

/* How a block leaves its tile: stored with alpha and beta, or (split-K) added into C. */
enum { SGEMM_EPI_STORE, SGEMM_EPI_ATOMIC, SGEMM_EPI_ATOMIC4 };

/* 9. double_buffer (STAGES = 2) and 10. hopper (the sweep's choice): the pipelined main
 * loop above and the warp-tiled epilogue. With an atomic EPI, block z multiplies only
 * slices [z * split_tiles, (z + 1) * split_tiles) and adds its partial product into C
 * with atomics (sgemm_splitk and sgemm_splitk_8x8 in any_shape/01_splitk.cuh). B's rows are N
 * floats apart, or with PITCHED_B (sgemm_best's padded copy of B) ldb_arg >= N floats: a
 * kernel of its own, because a row length other than N costs the tuned kernel 4 registers
 * (252 instead of 248) even where it equals N. */
template <typename Cfg, int EPI, bool PITCHED_B = false>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS)
    sgemm_pipelined_kernel(int M, int N, int K, float alpha, const float *A, const float *B,
                           int ldb_arg, float beta, float *C, bool b_vec, bool c_vec,
                           int split_tiles)
{
    const int ldb = PITCHED_B ? ldb_arg : N;
    extern __shared__ float4 sgemm_dynamic_smem[];
    float *smem = (float *)sgemm_dynamic_smem;
    int m0 = blockIdx.y * Cfg::BM, n0 = blockIdx.x * Cfg::BN;
    int row, col;
    sgemm_thread_origin<Cfg>(threadIdx.x, &row, &col);
    SgemmCopyPlan plan = sgemm_copy_plan<Cfg>(A, B, M, N, ldb, K, m0, n0, b_vec);
    int tiles = (K + Cfg::BK - 1) / Cfg::BK, k_first = 0;
    if (EPI != SGEMM_EPI_STORE) {
        k_first = blockIdx.z * split_tiles * Cfg::BK;
        tiles = min(split_tiles, tiles - blockIdx.z * split_tiles);
    }
    float acc[Cfg::TM][Cfg::TN] = {{0.0f}};
    if (Cfg::FRAG_PIPE)
        sgemm_mainloop_frag_pipe<Cfg>(smem, plan, A, B, ldb, K, k_first, tiles, acc, row, col);
    else
        sgemm_mainloop<Cfg>(smem, plan, A, B, ldb, K, k_first, tiles, acc, row, col);
    if (EPI == SGEMM_EPI_ATOMIC)
        sgemm_tile_atomic_add<Cfg>(C, M, N, alpha, acc, m0 + row, n0 + col);
    else if (EPI == SGEMM_EPI_ATOMIC4)
        sgemm_tile_atomic_add4<Cfg>(C, M, N, alpha, c_vec, acc, m0 + row, n0 + col);
    else
        sgemm_tile_store_plain<Cfg, PITCHED_B>(smem, C, M, N, alpha, beta, c_vec, acc, m0, n0, row,
                                               col);
}

/* Sets up a kernel of configuration Cfg (the dynamic shared memory it asks for) once per
 * GPU, and returns how many of its blocks fit on one SM, as the CUDA runtime computes it
 * from the kernel's registers and shared memory (0: its tiles need more shared memory than
 * the GPU gives a block). sgemm_best's model asks it for every tile it considers. The
 * attribute belongs to the current device, so it is set on each GPU a program launches on
 * (chapter 07's data-parallel trainer drives several from one thread); the occupancy is
 * asked once, of the first, as the GPUs of one run are of one kind. *blocks (-1 at first)
 * and *set_on (bit d: set up on device d) are the kernel's own. */
template <typename Cfg, typename Kernel>
static inline int sgemm_kernel_occupancy(Kernel kernel, int *blocks, unsigned long long *set_on)
{
    int dev;
    CUDA_CHECK(cudaGetDevice(&dev));
    bool fits = Cfg::SMEM_BYTES <= sgemm_smem_limit();
    if (fits && (dev >= 64 || !(*set_on >> dev & 1))) {
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        Cfg::SMEM_BYTES));
        if (dev < 64) *set_on |= 1ULL << dev;
    }
    if (*blocks < 0) {
        *blocks = 0;
        if (fits)
            CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, kernel, Cfg::THREADS,
                                                                     Cfg::SMEM_BYTES));
    }
    return *blocks;
}

/* The pipelined kernel's occupancy, once per instance. */
template <typename Cfg, int EPI, bool PITCHED_B = false>
static inline int sgemm_pipelined_occupancy(void)
{
    static int blocks = -1;
    static unsigned long long set_on = 0;
    return sgemm_kernel_occupancy<Cfg>(sgemm_pipelined_kernel<Cfg, EPI, PITCHED_B>, &blocks,
                                       &set_on);
}

/* One launch of the kernel with epilogue EPI, B's rows N floats apart or (PITCHED_B) ldb. */
template <typename Cfg, int EPI, bool PITCHED_B>
static inline void sgemm_pipelined_run(dim3 grid, int M, int N, int K, float alpha, const float *A,
                                       const float *B, int ldb, float beta, float *C, bool b_vec,
                                       bool c_vec, int split_tiles)
{
    sgemm_pipelined_occupancy<Cfg, EPI, PITCHED_B>(); /* sets the shared memory up */
    sgemm_pipelined_kernel<Cfg, EPI, PITCHED_B><<<grid, Cfg::THREADS, Cfg::SMEM_BYTES>>>(
        M, N, K, alpha, A, B, ldb, beta, C, b_vec, c_vec, split_tiles);
}

/* splits > 1: K cut into that many ranges, one grid layer (blockIdx.z) each, whose
 * partial products meet in C through atomics of kind SPLIT_EPI (16-byte ones unless the
 * launcher asks for SGEMM_EPI_ATOMIC, as splitk does). C first becomes beta * C
 * in a launch of its own, except (SGEMM_EPI_ATOMIC4 only) when beta == 1: then C already
 * is beta * C and the atomics can add into it as it stands. B's rows are ldb >= N floats
 * apart (the launchers of the ladder pass N). */
template <typename Cfg, int SPLIT_EPI = SGEMM_EPI_ATOMIC4>
static inline void sgemm_pipelined_launch(int M, int N, int K, float alpha, const float *A,
                                          const float *B, int ldb, float beta, float *C, int splits)
{
    int tiles = sgemm_ceil_div(K, Cfg::BK);
    int split_tiles = sgemm_ceil_div(tiles, splits);
    splits = sgemm_ceil_div(tiles, split_tiles); /* no empty layer */
    dim3 grid(sgemm_ceil_div(N, Cfg::BN), sgemm_ceil_div(M, Cfg::BM), splits);
    bool b_vec = ldb % 4 == 0 && sgemm_aligned16(B);
    bool c_vec = N % 4 == 0 && sgemm_aligned16(C);
    if (splits > 1 && !(SPLIT_EPI == SGEMM_EPI_ATOMIC4 && beta == 1.0f))
        sgemm_scale(C, (size_t)M * N, beta);
    if (splits == 1 && ldb == N)
        sgemm_pipelined_run<Cfg, SGEMM_EPI_STORE, false>(grid, M, N, K, alpha, A, B, ldb, beta, C,
                                                         b_vec, c_vec, tiles);
    else if (splits == 1)
        sgemm_pipelined_run<Cfg, SGEMM_EPI_STORE, true>(grid, M, N, K, alpha, A, B, ldb, beta, C,
                                                        b_vec, c_vec, tiles);
    else if (ldb == N)
        sgemm_pipelined_run<Cfg, SPLIT_EPI, false>(grid, M, N, K, alpha, A, B, ldb, beta, C, b_vec,
                                                   c_vec, split_tiles);
    else
        sgemm_pipelined_run<Cfg, SPLIT_EPI, true>(grid, M, N, K, alpha, A, B, ldb, beta, C, b_vec,
                                                  c_vec, split_tiles);
    CHECK_LAUNCH();
}

static inline void sgemm_double_buffer(int M, int N, int K, float alpha, const float *A,
                                       const float *B, float beta, float *C)
{
    sgemm_pipelined_launch<SgemmWarptileCfg>(M, N, K, alpha, A, B, N, beta, C, 1);
}

#endif
