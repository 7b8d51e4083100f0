/* Chapter 05, sgemm_best: the launcher to call (chapter 07 does). It picks one of the fp32
 * versions by the shape of C and what the GPU allows; the README's chapter-07 table says
 * which version wins on each of the MLP's shapes. */
#ifndef CH05_SGEMM_BEST_CUH
#define CH05_SGEMM_BEST_CUH

#include "sgemm_common.cuh"
#include "sgemm_pipelined.cuh"
#include "sgemm_splitk.cuh"

/* The large tiles when they make about a wave (3/4 of the SMs busy or more: the Hopper
 * configuration, or double_buffer's tiles on a GPU whose blocks cannot have the Hopper
 * configuration's shared memory); else, for a short K, the small tiles; else, when C has at least 64 columns, splitk_8x8; for
 * narrower C (the 10 classes of an MLP's output layer, where a 128-wide tile would be
 * mostly empty) the small tiles when they fill the SMs, else split-K over them. */
static inline void sgemm_best(int M, int N, int K, float alpha, const float *A, const float *B,
                              float beta, float *C)
{
    int sms = sgemm_sm_count();
    if (4 * sgemm_blocks(M, N, SgemmHopperCfg::BM, SgemmHopperCfg::BN) >= 3LL * sms) {
        if (SgemmHopperCfg::SMEM_BYTES <= sgemm_smem_limit())
            sgemm_hopper(M, N, K, alpha, A, B, beta, C);
        else
            sgemm_double_buffer(M, N, K, alpha, A, B, beta, C);
    } else if (K < 8 * SgemmSmallCfg::BK)
        sgemm_hopper_small(M, N, K, alpha, A, B, beta, C);
    else if (N >= 64)
        sgemm_splitk_8x8(M, N, K, alpha, A, B, beta, C);
    else if (sgemm_blocks(M, N, SgemmSmallCfg::BM, SgemmSmallCfg::BN) >= sms)
        sgemm_hopper_small(M, N, K, alpha, A, B, beta, C);
    else
        sgemm_splitk(M, N, K, alpha, A, B, beta, C);
}

#endif
