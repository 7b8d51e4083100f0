/* Chapter 05, the fp32 ladder, step 7: padded. Step 6's kernel with the transposed A tile
 * padded by 4 floats a row (06_vectorized.cuh holds the kernel template). */
#ifndef CH05_FP32_07_PADDED_CUH
#define CH05_FP32_07_PADDED_CUH

#include "05_matmul_tiled/fp32/06_vectorized.cuh"

/* 7. padded (APAD = 4). The transposed store writes 4 floats of one float4 to 4 rows of As;
 * with rows of 128 floats the two threads that share a row m hit the same bank. Padding
 * each row by 4 floats shifts row k by 4k banks: the 32 stores of a warp land in 32 banks. */
static inline void sgemm_padded(int M, int N, int K, float alpha, const float *A, const float *B,
                                float beta, float *C)
{
    sgemm_vectorized_launch<4>(M, N, K, alpha, A, B, beta, C);
}

#endif
