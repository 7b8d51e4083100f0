/* Chapter 05, part two, step 3: step 2's mma.sync kernel (02_mma.cuh) reading from an
 * XOR-swizzled tile. */
#ifndef CH05_TENSOR_CORES_03_MMA_SWIZZLE_CUH
#define CH05_TENSOR_CORES_03_MMA_SWIZZLE_CUH

#include "05_matmul_tiled/tensor_cores/02_mma.cuh"

/* 3. swizzle: chunk c of row r stored at chunk c ^ (r % 8) (swizzle.h). The 8 rows of an
 * ldmatrix phase start at a multiple of 8, so r % 8 takes all 8 values and so does
 * c ^ (r % 8): 8 different bank groups, 1 wavefront per phase, 4 per ldmatrix.x4, no
 * conflict (tests/host/test_05_swizzle.c counts both layouts). The XOR only permutes the
 * chunks inside a row, so the copies stay conflict-free too. Prediction: 3-6x faster than
 * step 2 (the 8x excess of shared-memory traffic is gone); what remains is the rhythm of
 * copy, wait, multiply, with only the SM's other block to fill the waits. */
typedef TcMmaCfg<bf16, 128, 128, 1, true> TcMmaSwizzleCfg;

static inline void tc_mma_swizzle_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                       const bf16 *Bt, float beta, float *C)
{
    tc_mma_launch<TcMmaSwizzleCfg>(M, N, K, alpha, A, Bt, beta, C);
}

#endif
