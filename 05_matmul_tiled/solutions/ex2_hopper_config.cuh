/* Exercise 2 (warm-up): hopper with one parameter changed.
 *
 * Asked: build hopper's configuration (fp32/10_hopper.cuh, SgemmHopperCfg) twice more,
 * each with one change: (a) two stages instead of three; (b) FRAG_PIPE = 0, the plain
 * ring without the fragments of the next k step loaded during this one's FMAs. Before
 * running, predict for each: its shared memory per block, its registers, how many blocks
 * an SM holds, and its speed at 4096^3 against hopper.
 *
 * Answer. (a) A stage is 32 x (132 + 256) floats = 49,664 bytes, so two stages ask for
 * 99,328 bytes instead of 148,992: small enough for GPUs that give a block about 99 KB
 * (most GeForce cards), where hopper cannot run. The registers do not change (the loop is
 * the same), and they, not shared memory, keep hopper at one block an SM: 256 threads of
 * about 250 registers fill the SM's 65,536. So on an H100 the only change is the depth of
 * the ring. With FRAG_PIPE the copy of slice kt + 2 starts when slice kt is done and must
 * land before slice kt + 1 is: one slice of 32 k steps, 8 warps x 32 x 128 FFMA a slice
 * at 4 warp instructions a cycle, about 8,000 cycles, several times the latency of
 * DRAM. Prediction: as fast as hopper, within the run-to-run spread. A third
 * stage pays where a slice is short: BK = 8 or 16. (b) The plain ring (sgemm_mainloop)
 * needs TM + TN = 24 fewer fragment registers in its loop, yet ptxas reports 252 against
 * hopper's 254 (-Xptxas -v, CUDA 13.0): the loop no longer sets the count (the sweep's
 * builds of the same tile, before the epilogue read C in batches, had 226 and 248:
 * records/sweep_results.csv). Still one block an SM. Without the prefetch, every warp asks
 * for its first fragments right after the barrier and waits for them with nothing to
 * issue; the sweep measured the two loops on this tile in rounds 2 and 3 (same file).
 * Prediction: a few percent slower than hopper. Check with
 * `--bench -n 4096 --kernel hopper,ex2_hopper_2stages,ex2_hopper_no_prefetch`.
 *
 * Both run the chapter's pipelined kernel (fp32/09_double_buffer.cuh), so every shape is
 * handled as for hopper; only the unsplit, unpitched instance is launched here. */
#ifndef CH05_SOLUTIONS_EX2_HOPPER_CONFIG_CUH
#define CH05_SOLUTIONS_EX2_HOPPER_CONFIG_CUH

#include "05_matmul_tiled/fp32/10_hopper.cuh"

/* hopper's tile, 2 stages (the last parameter but one). */
typedef SgemmConfig<128, 256, 32, 8, 16, 8, 2, 1> Ex2TwoStagesCfg;
/* hopper's tile, no fragment prefetch (the last parameter). */
typedef SgemmConfig<128, 256, 32, 8, 16, 8, 3, 0> Ex2NoPrefetchCfg;

/* One launch of the pipelined kernel with its plain epilogue, as sgemm_pipelined_launch
 * does for one K range and B's rows N floats apart. */
template <typename Cfg> static inline void ex2_pipelined(int M, int N, int K, float alpha,
                                                         const float *A, const float *B, float beta,
                                                         float *C)
{
    dim3 grid(sgemm_ceil_div(N, Cfg::BN), sgemm_ceil_div(M, Cfg::BM));
    bool b_vec = N % 4 == 0 && sgemm_aligned16(B);
    bool c_vec = N % 4 == 0 && sgemm_aligned16(C);
    sgemm_pipelined_run<Cfg, SGEMM_EPI_STORE, false>(grid, M, N, K, alpha, A, B, N, beta, C, b_vec,
                                                     c_vec, sgemm_ceil_div(K, Cfg::BK));
    CHECK_LAUNCH();
}

static inline void ex2_hopper_2stages(int M, int N, int K, float alpha, const float *A,
                                      const float *B, float beta, float *C)
{
    ex2_pipelined<Ex2TwoStagesCfg>(M, N, K, alpha, A, B, beta, C);
}

static inline void ex2_hopper_no_prefetch(int M, int N, int K, float alpha, const float *A,
                                          const float *B, float beta, float *C)
{
    ex2_pipelined<Ex2NoPrefetchCfg>(M, N, K, alpha, A, B, beta, C);
}

#endif
