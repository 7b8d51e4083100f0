/* Exercise 3 (practice): step 5 with 16-byte global loads, and nothing else of step 6.
 *
 * Asked: step 6 (vectorized) changed two things at once against step 5 (blocktile_2d):
 * 16-byte loads of A and B from global memory, and A stored transposed in shared memory.
 * Write the version in between: step 5's kernel whose A and B tiles are loaded as float4
 * (one 16-byte load a thread for each, checked at the edges like step 6), A kept row-major
 * in shared memory, step 5's inner loop and epilogue unchanged. Predict its registers and
 * where its speed falls between step 5 and step 6; then read the SASS of the three loops
 * (`cuobjdump -sass`): which kinds of load does each use?
 *
 * Answer. The SASS answers the second question first: step 5's inner loop already reads
 * shared memory 16 bytes at a time (32 LDS.128 for its 512 FFMA a slice), because with the
 * k loop unrolled the compiler sees that it reads As[row][0..3] and As[row][4..7] of each
 * row and Bs[k][col..col+3], and merges them. So A's transposition buys step 6 no wider
 * shared loads; what differs is everything around the FMAs. Step 5 loads its 4 + 4
 * elements a slice with 4-byte loads whose indices are recomputed each time (/ and % by
 * the tile sizes): its loop is about 900 instructions for 512 FFMA, step 6's about 620, and
 * 162 registers against 117 (one block of 8 warps an SM against two). This version
 * replaces those loads with one float4 of A and one of B a thread, their indices fixed
 * outside the loop. The registers decide whether a second block of 256 fits (at most 128
 * a thread): left to itself ptxas gives this kernel 130-144 registers, one block an SM;
 * __launch_bounds__(256, 2) (EX3_MIN_BLOCKS) holds it to 128 without spills (-Xptxas -v).
 * Prediction: close to step 6, which is then mostly this change and its second block.
 * Check with `--bench --kernel blocktile_2d,ex3_vector_loads,vectorized`, and again with
 * EX3_MIN_BLOCKS 1. */
#ifndef CH05_SOLUTIONS_EX3_VECTOR_LOADS_CUH
#define CH05_SOLUTIONS_EX3_VECTOR_LOADS_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/00_common.cuh"
#include "05_matmul_tiled/fp32/05_blocktile_2d.cuh" /* the tile sizes SGEMM_2D_* */

/* blocks an SM asked of the register allocator (see above) */
#define EX3_MIN_BLOCKS 2

/* Step 5's 128x128 tile, 256 threads of 8x8, K slices of 8. Thread t loads the float4 of
 * A at row t / 2, columns 4 (t % 2) .. + 3 of the slice, and the float4 of B at row t / 32,
 * columns 4 (t % 32) .. + 3: 256 float4 each, the whole slice of A and of B. */
__global__ void __launch_bounds__(SGEMM_2D_THREADS, EX3_MIN_BLOCKS)
    ex3_vector_loads_kernel(int M, int N, int K, float alpha, const float *A, const float *B,
                            float beta, float *C, bool a_vec, bool b_vec)
{
    static_assert(SGEMM_2D_BM * SGEMM_2D_BK == 4 * SGEMM_2D_THREADS, "one float4 of A a thread");
    static_assert(SGEMM_2D_BK * SGEMM_2D_BN == 4 * SGEMM_2D_THREADS, "one float4 of B a thread");
    __shared__ __align__(16) float As[SGEMM_2D_BM][SGEMM_2D_BK];
    __shared__ __align__(16) float Bs[SGEMM_2D_BK][SGEMM_2D_BN];
    int tid = threadIdx.x;
    int m0 = blockIdx.y * SGEMM_2D_BM, n0 = blockIdx.x * SGEMM_2D_BN;
    int row0 = (tid / (SGEMM_2D_BN / SGEMM_2D_T)) * SGEMM_2D_T;
    int col0 = (tid % (SGEMM_2D_BN / SGEMM_2D_T)) * SGEMM_2D_T;
    int a_m = tid / (SGEMM_2D_BK / 4), a_k = (tid % (SGEMM_2D_BK / 4)) * 4;
    int b_k = tid / (SGEMM_2D_BN / 4), b_n = (tid % (SGEMM_2D_BN / 4)) * 4;
    float acc[SGEMM_2D_T][SGEMM_2D_T] = {{0.0f}};
    float a[SGEMM_2D_T], b[SGEMM_2D_T];
    for (int k0 = 0; k0 < K; k0 += SGEMM_2D_BK) {
        /* sgemm_load4: one 16-byte load inside the matrix when the rows allow it, else
           element by element, zeros outside */
        *(float4 *)&As[a_m][a_k] = sgemm_load4(A, m0 + a_m, k0 + a_k, M, K, a_vec);
        *(float4 *)&Bs[b_k][b_n] = sgemm_load4(B, k0 + b_k, n0 + b_n, K, N, b_vec);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < SGEMM_2D_BK; k++) {
#pragma unroll
            for (int i = 0; i < SGEMM_2D_T; i++) a[i] = As[row0 + i][k];
#pragma unroll
            for (int j = 0; j < SGEMM_2D_T; j++) b[j] = Bs[k][col0 + j];
#pragma unroll
            for (int i = 0; i < SGEMM_2D_T; i++)
#pragma unroll
                for (int j = 0; j < SGEMM_2D_T; j++) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < SGEMM_2D_T; i++) {
        int m = m0 + row0 + i;
        if (m >= M) break;
        for (int j = 0; j < SGEMM_2D_T; j++) {
            int n = n0 + col0 + j;
            if (n < N) {
                float *c = C + (size_t)m * N + n;
                *c = sgemm_axpby(alpha, acc[i][j], beta, c);
            }
        }
    }
}

static inline void ex3_vector_loads(int M, int N, int K, float alpha, const float *A,
                                    const float *B, float beta, float *C)
{
    dim3 grid(sgemm_ceil_div(N, SGEMM_2D_BN), sgemm_ceil_div(M, SGEMM_2D_BM));
    bool a_vec = K % 4 == 0 && sgemm_aligned16(A);
    bool b_vec = N % 4 == 0 && sgemm_aligned16(B);
    ex3_vector_loads_kernel<<<grid, SGEMM_2D_THREADS>>>(M, N, K, alpha, A, B, beta, C, a_vec,
                                                        b_vec);
    CHECK_LAUNCH();
}

#endif
