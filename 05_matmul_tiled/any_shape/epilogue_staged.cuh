/* Chapter 05: the pipelined kernel's plain epilogue for a C whose rows cannot take 16-byte
 * stores (N % 4 != 0): hopper's tile goes through the free stage buffers and is written
 * row by row. fp32/09_double_buffer.cuh's kernel calls sgemm_tile_store_plain, which picks this
 * or the register epilogue of fp32/08_warptile.cuh. */
#ifndef CH05_ANY_SHAPE_EPILOGUE_STAGED_CUH
#define CH05_ANY_SHAPE_EPILOGUE_STAGED_CUH

#include "05_matmul_tiled/fp32/08_warptile.cuh"

/* The plain epilogue when C's rows do not allow 16-byte stores (N % 4 != 0), for hopper's
 * tile: the tile goes through shared memory, and the block writes it row by row,
 * neighbouring threads on neighbouring columns. From registers, each 4-byte store of a
 * warp touches 16 sectors (its lanes' columns lie 4 floats apart), four times the L2
 * traffic of the same floats stored in a row. The stage buffers are free once the main loop
 * is done; old C is read EPI_BATCH floats a thread at a time before any is written (see
 * sgemm_tile_store). Only where a thread may use all 255 registers (MIN_BLOCKS == 1):
 * in splitk_8x8's kernel, held to 128 registers for 4 blocks an SM, the same code made
 * ptxas spill, and the kernel slower, odd N or not; double_buffer's two slices of 8 are
 * too small to hold its tile. */
template <typename Cfg> struct SgemmStagedFits {
    static constexpr bool value =
        Cfg::MIN_BLOCKS == 1 && Cfg::BM * (Cfg::BN + 4) <= Cfg::STAGES * Cfg::STAGE_FLOATS;
};

template <typename Cfg>
__device__ __forceinline__ void sgemm_tile_store_staged(float *smem, float *C, int M, int N,
                                                        float alpha, float beta,
                                                        float (&acc)[Cfg::TM][Cfg::TN])
{
    /* the block's and this thread's place in C, from the indices */
    int m0 = blockIdx.y * Cfg::BM, n0 = blockIdx.x * Cfg::BN, row, col;
    sgemm_thread_origin<Cfg>(threadIdx.x, &row, &col);
    constexpr int LD = Cfg::BN + 4; /* a padded row: the float4 writes below spread over banks */
    constexpr int PER_THREAD = Cfg::BM * Cfg::BN / Cfg::THREADS;
    constexpr int EPI_BATCH = PER_THREAD < 16 ? PER_THREAD : 16;
    static_assert(PER_THREAD % EPI_BATCH == 0, "whole batches");
    static_assert(SgemmStagedFits<Cfg>::value, "the tile fits in the stage buffers");
    static_assert(Cfg::THREADS % Cfg::BN == 0, "whole rows per pass");
    __syncthreads(); /* every warp is done with the stage buffers */
#pragma unroll
    for (int i = 0; i < Cfg::TM; i++)
#pragma unroll
        for (int j = 0; j < Cfg::TN / 4; j++)
            *(float4 *)&smem[(row + sgemm_acc_row<Cfg>(i)) * LD + col + sgemm_acc_col<Cfg>(j)] =
                make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
    __syncthreads();
    /* thread t writes column t % BN of rows t / BN, t / BN + THREADS / BN, ... */
    constexpr int ROW_STEP = Cfg::THREADS / Cfg::BN;
    int c = threadIdx.x % Cfg::BN, r0 = threadIdx.x / Cfg::BN;
    bool col_ok = n0 + c < N;
    float *dst = C + (size_t)(m0 + r0) * N + n0 + c;
    const float *src = smem + r0 * LD + c;
    for (int i0 = 0; i0 < PER_THREAD; i0 += EPI_BATCH) {
        float old[EPI_BATCH];
#pragma unroll
        for (int q = 0; q < EPI_BATCH; q++) {
            int i = (i0 + q) * ROW_STEP;
            old[q] = beta != 0.0f && col_ok && m0 + r0 + i < M ? dst[(size_t)i * N] : 0.0f;
        }
#pragma unroll
        for (int q = 0; q < EPI_BATCH; q++) {
            int i = (i0 + q) * ROW_STEP;
            float v = alpha * src[i * LD];
            if (col_ok && m0 + r0 + i < M)
                dst[(size_t)i * N] = beta != 0.0f ? v + beta * old[q] : v;
        }
    }
}

/* The plain epilogue. The pitched kernel (PITCHED_B: sgemm_best's padded B, so N % 4 != 0
 * and C's rows never take 16-byte stores) goes through shared memory where the tile fits
 * there and otherwise moves each float4 across the lanes of its row first
 * (sgemm_tile_store_rows); the other kernels staged where C's rows are not 16-byte aligned
 * and the tile fits, else from registers (sgemm_tile_store). Only the pitched kernel gets
 * the lane exchange: in the others, which also serve every even N, the same code made
 * ptxas schedule splitk_8x8's main loop differently, and slower. */
template <typename Cfg, bool PITCHED_B> __device__ __forceinline__ void
sgemm_tile_store_plain(float *smem, float *C, int M, int N, float alpha, float beta, bool c_vec,
                       float (&acc)[Cfg::TM][Cfg::TN], int m0, int n0, int row, int col)
{
    if constexpr (SgemmStagedFits<Cfg>::value) {
        if (PITCHED_B || !c_vec) {
            sgemm_tile_store_staged<Cfg>(smem, C, M, N, alpha, beta, acc);
            return;
        }
    }
    if constexpr (PITCHED_B)
        sgemm_tile_store_rows<Cfg>(C, M, N, alpha, beta, acc, m0 + row, n0 + col);
    else
        sgemm_tile_store<Cfg>(C, M, N, alpha, beta, c_vec, acc, m0 + row, n0 + col);
}

#endif
