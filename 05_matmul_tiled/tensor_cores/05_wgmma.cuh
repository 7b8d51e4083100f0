/* Chapter 05, part two, step 5: wgmma with operands loaded by TMA (sm_90a only).
 *
 *   tc_wgmma_<t>             the copy engine (TMA) loads K-slices of 128 bytes (64 bf16, 32
 *                            tf32) of A and Bt into shared memory, 4 stages deep, each stage's
 *                            arrival signalled on an mbarrier; two warpgroups each issue
 *                            wgmma.mma_async on their 64 rows of a 128x128 tile of C. Everyone
 *                            waits for the tensor cores and meets at a block barrier before a
 *                            stage is refilled.
 * <t> is bf16 or tf32. The operands' layout is common.cuh's contract (A and Bt both
 * K-contiguous). This file also holds what the later Hopper steps (06_wgmma_ws.cuh to
 * 09_wgmma_splitk.cuh) share: the epilogue (stored, or added for split-K) and the host
 * side's checks and shared-memory size.
 *
 * The primitives they use (TMA, mbarriers, wgmma and its shared-memory descriptors, the
 * tensor maps and the check of where they can run) are in hopper_primitives.cuh, with what
 * each does.
 * Built for anything but sm_90a, these kernels are empty and their launchers refuse:
 * tc_wgmma_unavailable() says why, and the driver skips them with that reason. */
#ifndef CH05_TENSOR_CORES_05_WGMMA_CUH
#define CH05_TENSOR_CORES_05_WGMMA_CUH

#include "05_matmul_tiled/tensor_cores/hopper_primitives.cuh"
#include "05_matmul_tiled/tensor_cores/swizzle.h"

/* The warpgroup's 64 x BN accumulators to C, rows from row0, columns from col0: stored 16
 * pairs at a time (tc_store_pairs: their reads of C in flight together), or added. */
template <int BN, int EPI>
__device__ __forceinline__ void tc_epilogue(const float (&d)[BN / 2], float *C, int M, int N,
                                            int row0, int col0, float alpha, float beta, bool pairs)
{
    int t = threadIdx.x % 128;
    int r = row0 + 16 * (t / 32) + (t % 32) / 4, c = col0 + 2 * (t % 4);
#pragma unroll
    for (int j0 = 0; j0 < BN / 8; j0 += 8) {
        int rr[16], cc[16];
        float2 v[16];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float *q = &d[4 * (j0 + j)];
            rr[2 * j] = r, rr[2 * j + 1] = r + 8;
            cc[2 * j] = cc[2 * j + 1] = c + 8 * (j0 + j);
            v[2 * j] = make_float2(q[0], q[1]), v[2 * j + 1] = make_float2(q[2], q[3]);
        }
        if constexpr (EPI == TC_EPI_STORE) {
            tc_store_pairs<16>(C, M, N, rr, cc, v, alpha, beta, pairs);
        } else {
#pragma unroll
            for (int p = 0; p < 16; p++)
                tc_add_pair(C, M, N, rr[p], cc[p], alpha * v[p].x, alpha * v[p].y, pairs);
        }
    }
}

/* ------------------------------------------------------------------ step 5: wgmma + TMA */

/* Two warpgroups, a 128 x BN tile, STAGES stages. Thread 0 keeps STAGES K-slices in flight;
 * each warpgroup multiplies a stage, waits for its own wgmma (wait_group 0), and the block
 * meets at __syncthreads before thread 0 refills the stage just read. */
template <typename T, int BN, int STAGES> __global__ void __launch_bounds__(256, 1)
    tc_wgmma_kernel(const __grid_constant__ CUtensorMap map_a,
                    const __grid_constant__ CUtensorMap map_b, int M, int N, int K, float alpha,
                    float beta, float *C, bool pairs)
{
#ifdef TC_WGMMA_DEVICE
    constexpr int BM = 128, BK = TcWgType<T>::BK;
    constexpr int A_BYTES = BM * TC_ROW_BYTES, STAGE_BYTES = A_BYTES + BN * TC_ROW_BYTES;
    __shared__ uint64_t full[STAGES];
    extern __shared__ uint8_t tc_smem_raw[];
    uint8_t *smem = tc_align1024(tc_smem_raw);
    int wg = threadIdx.x / 128, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    int k_tiles = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) tc_mbar_init(&full[s], 1);
        tc_mbar_fence_init();
        for (int kt = 0; kt < STAGES && kt < k_tiles; kt++) {
            uint8_t *st = smem + kt * STAGE_BYTES;
            tc_mbar_arrive_expect(&full[kt], STAGE_BYTES);
            tc_tma_load(st, &map_a, &full[kt], kt * BK, m0);
            tc_tma_load(st + A_BYTES, &map_b, &full[kt], kt * BK, n0);
        }
    }
    __syncthreads();
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) d[i] = 0.0f;
    for (int kt = 0; kt < k_tiles; kt++) {
        int s = kt % STAGES;
        uint8_t *st = smem + s * STAGE_BYTES;
        tc_mbar_wait(&full[s], (kt / STAGES) & 1);
        tc_fence_regs(d);
        tc_wgmma_fence();
        tc_wgmma_stage<T, BN>(d, st + wg * 64 * TC_ROW_BYTES, st + A_BYTES);
        tc_wgmma_commit();
        tc_wgmma_wait<0>();
        tc_fence_regs(d);
        __syncthreads(); /* both warpgroups are done with stage s */
        if (threadIdx.x == 0 && kt + STAGES < k_tiles) {
            tc_mbar_arrive_expect(&full[s], STAGE_BYTES);
            tc_tma_load(st, &map_a, &full[s], (kt + STAGES) * BK, m0);
            tc_tma_load(st + A_BYTES, &map_b, &full[s], (kt + STAGES) * BK, n0);
        }
    }
    tc_epilogue<BN, TC_EPI_STORE>(d, C, M, N, m0 + 64 * wg, n0, alpha, beta, pairs);
#endif
}

/* ------------------------------------------------------------------ host side */

/* Refuses (exit 1, with the reason) what the driver should have skipped. */
template <typename T> static inline void tc_wgmma_require(int K, const T *A, const T *Bt)
{
    const char *why = tc_wgmma_unavailable();
    if (!why) why = tc_tma_refusal(K, sizeof(T), A, Bt);
    if (why) {
        fprintf(stderr, "wgmma version called where it cannot run: %s\n", why);
        exit(1);
    }
}

/* Dynamic shared memory of STAGES stages plus 1 KB to align them. */
static inline int tc_stage_smem(int bm, int bn, int stages)
{
    return stages * (bm + bn) * TC_ROW_BYTES + 1024;
}

#define TC_WGMMA_STAGES 4

template <typename T> static inline void
tc_wgmma_launch(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta, float *C)
{
    constexpr int BN = 128;
    tc_wgmma_require(K, A, Bt);
    int smem = tc_stage_smem(128, BN, TC_WGMMA_STAGES);
    static bool attr_set = false;
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(tc_wgmma_kernel<T, BN, TC_WGMMA_STAGES>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        attr_set = true;
    }
    CUtensorMap ma = tc_tensor_map(A, M, K, 128), mb = tc_tensor_map(Bt, N, K, BN);
    dim3 grid(sgemm_ceil_div(N, BN), sgemm_ceil_div(M, 128));
    tc_wgmma_kernel<T, BN, TC_WGMMA_STAGES>
        <<<grid, 256, smem>>>(ma, mb, M, N, K, alpha, beta, C, tc_c_pairs(N, C));
    CHECK_LAUNCH();
}

/* ------------------------------------------------------------------ the launchers */

static inline void tc_wgmma_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                                 float beta, float *C)
{
    tc_wgmma_launch(M, N, K, alpha, A, Bt, beta, C);
}
static inline void tc_wgmma_tf32(int M, int N, int K, float alpha, const float *A, const float *Bt,
                                 float beta, float *C)
{
    tc_wgmma_launch(M, N, K, alpha, A, Bt, beta, C);
}

#endif
