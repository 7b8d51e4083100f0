/* Chapter 05, split-K for a small C: splitk (the 64x64 tiles of hopper_small with K cut
 * into ranges) and splitk_8x8 (64x128 tiles, 8x8 per thread, 16-byte atomics) with the
 * model that picks its split count. Both launch the pipelined kernel of
 * fp32/09_double_buffer.cuh with one of its atomic epilogues. */
#ifndef CH05_ANY_SHAPE_01_SPLITK_CUH
#define CH05_ANY_SHAPE_01_SPLITK_CUH

#include "05_matmul_tiled/fp32/00_common.cuh"
#include "05_matmul_tiled/fp32/10_hopper.cuh"

/* splitk: the small tiles, with K cut into ranges so that a small C (say 256 x 10 with
 * K = 1024: 4 blocks of 64x64) still puts about two blocks on every SM. The partial
 * products meet in C through atomicAdd, so the last bits of the result depend on the
 * order they arrive in: not bitwise reproducible from run to run. */
static inline void sgemm_splitk(int M, int N, int K, float alpha, const float *A, const float *B,
                                float beta, float *C)
{
    long long blocks = sgemm_blocks(M, N, SgemmSmallCfg::BM, SgemmSmallCfg::BN);
    long long want = (2LL * sgemm_sm_count() + blocks - 1) / blocks;
    int most = sgemm_ceil_div(K, SgemmSmallCfg::BK) / 4; /* keep >= 4 slices per range */
    int splits = (int)(want < most ? want : most);
    sgemm_pipelined_launch<SgemmSmallCfg, SGEMM_EPI_ATOMIC>(M, N, K, alpha, A, B, N, beta, C,
                                                            splits < 1 ? 1 : splits);
}

/* splitk_8x8: split-K rebuilt for the small C of an MLP layer (256 x 1024 with K = 784:
 * 32 tiles of 64x128). Three changes against sgemm_splitk:
 * - 64x128 tiles of 128 threads (4 warps), 8x8 outputs a thread: per k a thread reads
 *   4 float4 from shared memory for 64 FMAs, against 2 for 16 with 4x4, so shared
 *   memory no longer caps the FMA rate. 127 registers a thread (no spills) let 4 blocks
 *   share an SM. (The fragment prefetch of step 10 needs more than the 128 registers
 *   that 4 blocks leave a thread, spills, and measured no faster here: it is off.)
 * - the split count evens out the SMs: it keeps small the work of the busiest SM, its
 *   blocks times the slices each block multiplies plus a fixed cost of about two slices
 *   (sgemm_splitk_8x8_splits), instead of asking for "two blocks per SM".
 * - the partial sums go out as 16-byte vector atomics, and with beta == 1 (a gradient
 *   accumulated into C) there is no clearing launch in front. */
typedef SgemmConfig<64, 128, 16, 8, 8, 4, 3> SgemmSplitWideCfg;

static inline int sgemm_splitk_8x8_splits(int M, int N, int K)
{
    typedef SgemmSplitWideCfg Cfg;
    long long sms = sgemm_sm_count(), tiles = sgemm_blocks(M, N, Cfg::BM, Cfg::BN);
    int slices = sgemm_ceil_div(K, Cfg::BK), best = 1;
    long long best_cost = -1;
    for (int s = 1; s <= slices && s <= 64; s++) {
        int per_block = sgemm_ceil_div(slices, s);
        if (s > 1 && sgemm_ceil_div(slices, per_block) < s) continue; /* same as a smaller s */
        long long busiest = (tiles * s + sms - 1) / sms;
        if (busiest < 2) busiest = 2; /* one 4-warp block alone runs an SM at half speed */
        long long cost = busiest * (per_block + 2);
        if (best_cost < 0 || cost < best_cost) best_cost = cost, best = s;
    }
    return best;
}

static inline void sgemm_splitk_8x8(int M, int N, int K, float alpha, const float *A,
                                    const float *B, float beta, float *C)
{
    sgemm_pipelined_launch<SgemmSplitWideCfg, SGEMM_EPI_ATOMIC4>(M, N, K, alpha, A, B, N, beta, C,
                                                                 sgemm_splitk_8x8_splits(M, N, K));
}

#endif
