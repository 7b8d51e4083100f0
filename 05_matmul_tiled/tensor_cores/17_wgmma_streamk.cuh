/* Chapter 05, part two, step 17: stream-K on the persistent kernel (sm_90a only).
 *
 *   tc_wgmma_streamk_bf16  the persistent kernel's 128x256 tiles, one block an SM, with the
 *                          last round and a half dealt out by k-slices (streamk.h): every SM
 *                          has the same work to within a slice (no last round half empty).
 *                          Each block works on its stream-K run first, then its rounds, all
 *                          blocks in step.
 *   tc_wgmma_streamk_stagger_bf16  the same deal, each block's rounds right after the tail
 *                          of its run: since the tails differ in length, the blocks reach
 *                          their epilogues at different times instead of all at once.
 *
 * A stream-K tile is cut in at most two pieces: block b + 1's tail (slices k0 .. k_count),
 * which it works on first, and block b's head (slices 0 .. k0), which it works on last. The
 * tail's consumers write their fp32 accumulators to a workspace slot of their own
 * (coalesced: register r of the 256 consumer threads side by side) and raise the slot's flag
 * to this launch's number. Block b meets the same tile at the end of its work, waits for the
 * flag (long since raised), adds the slot to its accumulators, and stores the tile with
 * alpha and beta as any other: C is read and written once, by one block, and the sum does
 * not depend on timing. Shapes with fewer tiles than blocks go to the persistent kernel. */
#ifndef CH05_TENSOR_CORES_17_WGMMA_STREAMK_CUH
#define CH05_TENSOR_CORES_17_WGMMA_STREAMK_CUH

#include "05_matmul_tiled/tensor_cores/07_wgmma_persistent.cuh"
#include "05_matmul_tiled/tensor_cores/pingpong.h" /* tc_empty_parity */
#include "05_matmul_tiled/tensor_cores/streamk.h"

/* Named barrier 1 among the 256 consumer threads (the producer warpgroup is not in it). */
__device__ __forceinline__ void tc_consumers_sync(void)
{
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
}

template <typename T, int STAGES> __global__ void __launch_bounds__(384, 1)
    tc_wgmma_streamk_kernel(const __grid_constant__ CUtensorMap map_a,
                            const __grid_constant__ CUtensorMap map_b, int M, int N, int K,
                            float alpha, float beta, float *C, bool pairs, float *work,
                            unsigned *flags, unsigned launch, int stagger)
{
#ifdef TC_WGMMA_DEVICE
    constexpr int BM = 128, BN = 256, BK = TcWgType<T>::BK;
    constexpr int A_BYTES = BM * TC_ROW_BYTES, STAGE_BYTES = A_BYTES + BN * TC_ROW_BYTES;
    constexpr int REGS = BN / 2; /* accumulators a consumer thread */
    __shared__ uint64_t full[STAGES], empty[STAGES];
    extern __shared__ uint8_t tc_smem_raw[];
    uint8_t *smem = tc_align1024(tc_smem_raw);
    const int wg = threadIdx.x / 128;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const TcStreamk plan =
        tc_streamk_plan(tiles_m * tiles_n, gridDim.x, (K + BK - 1) / BK, stagger);
    const int pieces = tc_streamk_pieces(&plan, blockIdx.x);
    if (threadIdx.x == 0) {
        tc_mbar_init_ring(full, empty, STAGES, 256);
        tc_mbar_fence_init();
    }
    __syncthreads();
    if (wg == 0) { /* the producer: the block's slices, piece after piece */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x != 0) return;
        int it = 0;
        for (int i = 0; i < pieces; i++) {
            TcPiece pc = tc_streamk_piece(&plan, blockIdx.x, i);
            int m0, n0;
            tc_tile_origin(pc.tile, tiles_m, tiles_n, BM, BN, &m0, &n0);
            for (int kt = pc.k0; kt < pc.k1; kt++, it++) {
                int st_i = it % STAGES;
                uint8_t *st = smem + st_i * STAGE_BYTES;
                tc_mbar_wait(&empty[st_i], tc_empty_parity(it, STAGES));
                tc_mbar_arrive_expect(&full[st_i], STAGE_BYTES);
                tc_tma_load(st, &map_a, &full[st_i], kt * BK, m0);
                tc_tma_load(st + A_BYTES, &map_b, &full[st_i], kt * BK, n0);
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int rows = 64 * (wg - 1), t = threadIdx.x - 128; /* t: 0 .. 255 among consumers */
    int it = 0;
    for (int i = 0; i < pieces; i++) {
        TcPiece pc = tc_streamk_piece(&plan, blockIdx.x, i);
        int m0, n0;
        tc_tile_origin(pc.tile, tiles_m, tiles_n, BM, BN, &m0, &n0);
        float d[REGS];
        tc_consume_tile<T, BN, STAGES>(d, smem, STAGE_BYTES, A_BYTES, rows, full, pc.k1 - pc.k0, it,
                                       [&](int stage) { tc_mbar_arrive(&empty[stage]); });
        if (pc.k0 > 0) { /* a tail: block b - 1 finishes this tile */
            float *slot = work + (size_t)blockIdx.x * REGS * 256;
#pragma unroll
            for (int r = 0; r < REGS; r++) slot[r * 256 + t] = d[r];
            __threadfence();
            tc_consumers_sync();
            if (t == 0) atomicExch(&flags[blockIdx.x], launch);
            continue;
        }
        if (pc.k1 < plan.k_count) { /* a head: block b + 1 computed the rest of this tile */
            if (t == 0) {
                while (atomicAdd(&flags[blockIdx.x + 1], 0u) != launch) __nanosleep(256);
                __threadfence();
            }
            tc_consumers_sync();
            const float *slot = work + (size_t)(blockIdx.x + 1) * REGS * 256;
#pragma unroll
            for (int r = 0; r < REGS; r++) d[r] += __ldcg(&slot[r * 256 + t]);
        }
        tc_epilogue<BN, TC_EPI_STORE>(d, C, M, N, m0 + rows, n0, alpha, beta, pairs);
    }
#endif
}

/* The workspace (one 128 KB slot a block) and the flags (tc_scratch_reserve), and a launch
 * number no flag holds yet: flags start at 0 when (re)allocated, and are cleared again when
 * the number wraps. False where no workspace can be had (a graph capture). */
static inline bool tc_streamk_reserve(int blocks, float **work, unsigned **flags, unsigned *launch)
{
    static unsigned launches[TC_SCRATCH_DEVICES];
    void *w, *f;
    bool grown;
    if (!tc_scratch_reserve<TC_SCRATCH_STREAMK>((size_t)blocks * 128 * 256 * sizeof(float),
                                                (size_t)blocks * sizeof(unsigned), &w, &f, &grown))
        return false;
    int dev;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (grown || ++launches[dev] == 0) {
        CUDA_CHECK(cudaMemset(f, 0, (size_t)blocks * sizeof(unsigned)));
        launches[dev] = 1;
    }
    *work = (float *)w, *flags = (unsigned *)f, *launch = launches[dev];
    return true;
}

/* One block an SM; the persistent kernel where there are fewer tiles than blocks or no
 * workspace can be had. */
static inline void tc_wgmma_streamk_launch(int M, int N, int K, float alpha, const bf16 *A,
                                           const bf16 *Bt, float beta, float *C, int stagger)
{
    constexpr int STAGES = TC_WS_STAGES;
    int blocks = sgemm_sm_count();
    int tiles = sgemm_ceil_div(M, 128) * sgemm_ceil_div(N, 256);
    float *work;
    unsigned *flags, launch;
    if (tiles < blocks || !tc_streamk_reserve(blocks, &work, &flags, &launch)) {
        tc_wgmma_persistent_bf16(M, N, K, alpha, A, Bt, beta, C);
        return;
    }
    tc_wgmma_require(K, A, Bt);
    int smem = tc_stage_smem(128, 256, STAGES);
    static bool attr_set = false;
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(tc_wgmma_streamk_kernel<bf16, STAGES>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        attr_set = true;
    }
    CUtensorMap ma = tc_tensor_map(A, M, K, 128), mb = tc_tensor_map(Bt, N, K, 256);
    /* Block b waits for block b + 1: a cooperative launch starts all blocks at once or fails
     * with an error (another kernel holding SMs), never leaving a block waiting on one that
     * cannot start. */
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute coop;
    coop.id = cudaLaunchAttributeCooperative;
    coop.val.cooperative = 1;
    cfg.gridDim = dim3(blocks), cfg.blockDim = dim3(384), cfg.dynamicSmemBytes = smem;
    cfg.attrs = &coop, cfg.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, tc_wgmma_streamk_kernel<bf16, STAGES>, ma, mb, M, N, K,
                                  alpha, beta, C, tc_c_pairs(N, C), work, flags, launch, stagger));
}

/* The stream-K tiles first, then the rounds: every block starts its rounds at once. */
static inline void tc_wgmma_streamk_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                         const bf16 *Bt, float beta, float *C)
{
    tc_wgmma_streamk_launch(M, N, K, alpha, A, Bt, beta, C, 0);
}

/* The rounds right after the tail: block b's tiles start a fraction of a tile after b - 1's. */
static inline void tc_wgmma_streamk_stagger_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                                 const bf16 *Bt, float beta, float *C)
{
    tc_wgmma_streamk_launch(M, N, K, alpha, A, Bt, beta, C, 1);
}

#endif
