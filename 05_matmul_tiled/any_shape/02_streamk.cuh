/* Chapter 05, stream-K: the pipelined kernel's tiles dealt out by k steps instead of by
 * tiles, so that no SM waits on a remainder wave.
 *
 * Why: split-K evens out the SMs only in whole blocks. 1025^3 in splitk_8x8's 64x128 tiles
 * is 17 x 9 = 153 tiles; split three ways, 459 blocks meet 132 SMs of 4 slots each, so some
 * SMs run 4 blocks and others 3, and the kernel lasts as long as the busiest: 4 / 3.48 =
 * 15% longer than the work needs. Stream-K numbers every (tile, K slice) pair of the
 * product, tile after tile, and gives each of exactly (SMs x blocks an SM) blocks an equal
 * run of them. A block's run starts inside one tile and ends inside another: it multiplies
 * the slices of each tile it touches (a segment), adds its partial product into C with
 * split-K's atomics, and goes on to the next tile. Every SM gets the same number of k steps,
 * to within one slice, whatever the shape. The price: a segment boundary costs a pipeline
 * fill and an epilogue of atomics, C is first scaled by beta in a launch of its own (as for
 * split-K; on sm_90 the stream-K launch overlaps it, see sgemm_scale_kernel), and the
 * result's last bits depend on the order of the atomics.
 *
 * All of a launch's blocks are on the GPU at once (one round), and no block waits for
 * another: the atomics need no order. */
#ifndef CH05_ANY_SHAPE_02_STREAMK_CUH
#define CH05_ANY_SHAPE_02_STREAMK_CUH

#include <limits.h>

#include "05_matmul_tiled/fp32/10_hopper.cuh"
#include "05_matmul_tiled/any_shape/01_splitk.cuh"

/* The stream-K kernel's configuration of a tile: the tile's own, except for the two tiles
 * of 8x8 outputs a thread in 128 threads (splitk_8x8's 64x128, thin_n_8x8's 128x64). Held
 * to 128 registers for 4 blocks an SM, those cannot load the next k step's fragments while
 * this one's FMAs run (FRAG_PIPE spills there). With 3 blocks an SM they have 168
 * registers, and the fragment-pipelined loop fits without spills, which makes the stream-K
 * kernel faster. (In the plain and split-K kernels 3 blocks an SM would change their waves,
 * so they keep 4.) */
template <typename Cfg> struct SgemmStreamkCfg : Cfg {
    static constexpr bool RETUNED = Cfg::THREADS == 128 && Cfg::TM * Cfg::TN == 64;
    static constexpr bool FRAG_PIPE = RETUNED || Cfg::FRAG_PIPE;
    static constexpr int MIN_BLOCKS = RETUNED ? 3 : Cfg::MIN_BLOCKS;
    /* thin_n_8x8's 128x64 tile here keeps the row order of the FMAs (sgemm_fma_step): it
       measured slower in the column order, every other kernel as fast or faster */
    static constexpr bool FMA_BY_ROWS = RETUNED && Cfg::BM == 128;
};

/* Block b of G owns k steps [total * b / G, total * (b + 1) / G) of the product's `total`
 * (tile, slice) pairs, tile t's slices being t * slices ... (t + 1) * slices - 1 and the
 * tiles in row-major order, tiles_n to a row. */
template <typename Cfg, bool PITCHED_B = false>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS)
    sgemm_streamk_kernel(int M, int N, int K, float alpha, const float *A, const float *B,
                         int ldb_arg, float *C, bool b_vec, bool c_vec, int tiles_n, int slices,
                         int total)
{
    const int ldb = PITCHED_B ? ldb_arg : N;
    extern __shared__ float4 sgemm_dynamic_smem[];
    float *smem = (float *)sgemm_dynamic_smem;
    int row, col;
    sgemm_thread_origin<Cfg>(threadIdx.x, &row, &col);
    __shared__ int run_end; /* where this block's run ends, read again after each segment */
    int step = (int)((long long)total * blockIdx.x / gridDim.x);
    if (threadIdx.x == 0) run_end = (int)((long long)total * (blockIdx.x + 1) / gridDim.x);
    __syncthreads();
    while (step < run_end) {
        int tile = step / slices, first = step % slices;
        int count = min(slices - first, run_end - step);
        int m0 = (tile / tiles_n) * Cfg::BM, n0 = (tile % tiles_n) * Cfg::BN;
        SgemmCopyPlan plan = sgemm_copy_plan<Cfg>(A, B, M, N, ldb, K, m0, n0, b_vec);
        float acc[Cfg::TM][Cfg::TN] = {{0.0f}};
        __syncthreads(); /* every warp is done with the last segment's stages */
        if (Cfg::FRAG_PIPE)
            sgemm_mainloop_frag_pipe<Cfg>(smem, plan, A, B, ldb, K, first * Cfg::BK, count, acc,
                                          row, col);
        else
            sgemm_mainloop<Cfg>(smem, plan, A, B, ldb, K, first * Cfg::BK, count, acc, row, col);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        asm volatile("griddepcontrol.wait;" ::: "memory"); /* C = beta * C has finished */
#endif
        sgemm_tile_atomic_add4<Cfg>(C, M, N, alpha, c_vec, acc, m0 + row, n0 + col);
        step += count;
    }
}

/* Blocks of the stream-K kernel that fit on one SM (sgemm_kernel_occupancy, which also sets
 * up its shared memory), asked of the kernel with SgemmStreamkCfg's configuration. */
template <typename Cfg, bool PITCHED_B = false> static inline int sgemm_streamk_occupancy(void)
{
    typedef SgemmStreamkCfg<Cfg> SK;
    static int blocks = -1;
    static unsigned long long set_on = 0;
    return sgemm_kernel_occupancy<SK>(sgemm_streamk_kernel<SK, PITCHED_B>, &blocks, &set_on);
}

/* Whether this GPU can start a launch before the one in front has finished (programmatic
 * dependent launch, compute capability 9.0 on), asked once as sgemm_sm_count is. */
static inline bool sgemm_programmatic_launch(void)
{
    static int major = 0;
    if (major == 0) major = current_device_attribute(cudaDevAttrComputeCapabilityMajor);
    return major >= 9;
}

/* One launch of the stream-K kernel; after C = beta * C (overlap) it may start before that
 * launch has finished (programmatic stream serialization, sm_90 and later). */
template <typename Cfg, bool PITCHED_B>
static inline void sgemm_streamk_run(int blocks, bool overlap, int M, int N, int K, float alpha,
                                     const float *A, const float *B, int ldb, float *C, bool b_vec,
                                     bool c_vec, int tiles_n, int slices, int total)
{
    typedef SgemmStreamkCfg<Cfg> SK;
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(SK::THREADS);
    cfg.dynamicSmemBytes = SK::SMEM_BYTES;
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr, cfg.numAttrs = overlap ? 1 : 0;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, sgemm_streamk_kernel<SK, PITCHED_B>, M, N, K, alpha, A, B,
                                  ldb, C, b_vec, c_vec, tiles_n, slices, total));
}

/* C = beta * C first (unless beta == 1), then one block per slot of the GPU: SMs x the
 * kernel's blocks an SM, or fewer when the product has fewer (tile, slice) pairs. */
template <typename Cfg> static inline void sgemm_streamk_launch(int M, int N, int K, float alpha,
                                                                const float *A, const float *B,
                                                                int ldb, float beta, float *C, int)
{
    int slices = sgemm_ceil_div(K, Cfg::BK), tiles_n = sgemm_ceil_div(N, Cfg::BN);
    long long total = (long long)sgemm_ceil_div(M, Cfg::BM) * tiles_n * slices;
    int occupancy =
        ldb == N ? sgemm_streamk_occupancy<Cfg, false>() : sgemm_streamk_occupancy<Cfg, true>();
    if (total > INT_MAX || occupancy < 1) { /* past the kernel's int counters (65536^3 in small
                                               tiles), or no block fits: plain tiles */
        sgemm_pipelined_launch<Cfg>(M, N, K, alpha, A, B, ldb, beta, C, 1);
        return;
    }
    bool b_vec = ldb % 4 == 0 && sgemm_aligned16(B);
    bool c_vec = N % 4 == 0 && sgemm_aligned16(C);
    if (beta != 1.0f) sgemm_scale(C, (size_t)M * N, beta);
    bool overlap = beta != 1.0f && sgemm_programmatic_launch();
    long long blocks = (long long)sgemm_sm_count() * occupancy;
    if (blocks > total) blocks = total;
    if (ldb == N)
        sgemm_streamk_run<Cfg, false>((int)blocks, overlap, M, N, K, alpha, A, B, ldb, C, b_vec,
                                      c_vec, tiles_n, slices, (int)total);
    else
        sgemm_streamk_run<Cfg, true>((int)blocks, overlap, M, N, K, alpha, A, B, ldb, C, b_vec,
                                     c_vec, tiles_n, slices, (int)total);
    CHECK_LAUNCH();
}

/* The ladder's stream-K version: splitk_8x8's 64x128 tiles (sgemm_best uses any tile). */
static inline void sgemm_streamk(int M, int N, int K, float alpha, const float *A, const float *B,
                                 float beta, float *C)
{
    sgemm_streamk_launch<SgemmSplitWideCfg>(M, N, K, alpha, A, B, N, beta, C, 0);
}

#endif
