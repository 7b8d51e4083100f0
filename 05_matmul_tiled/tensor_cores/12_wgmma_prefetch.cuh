/* Chapter 05, part two, step 12: C on its way to the L2 before the epilogue (sm_90a only).
 *
 *   tc_wgmma_prefetch_<t>  the persistent kernel (07_wgmma_persistent.cuh: 128x256 tiles, one
 *                          producer and two consumer warpgroups, one block per SM) whose
 *                          producer, when it loads a tile's k-slice TC_PREFETCH_AHEAD slices
 *                          before the tile's last, also asks the copy engine to bring the
 *                          tile's C into the L2 (cp.async.bulk.prefetch.tensor: no shared
 *                          memory, no barrier, nothing waits for it).
 *
 * What it changes: with beta != 0 the epilogue reads C, 128 KB a tile, and writes it back.
 * In the persistent kernel every SM reaches its epilogue at about the same time, so 132 SMs
 * ask the DRAM for 17 MB of C at once while their tensor cores stand idle; the epilogue
 * reads in batches of 16 pairs a thread (tc_store_pairs), each batch a full DRAM latency
 * under that load. Prefetched, the reads of C are spread over the last slices of the main
 * loop, when the DRAM has bandwidth to spare, and the epilogue's reads hit the L2.
 * Prediction: a round of tiles (one tile on every SM) moves 17 MB of C in and 17 MB out;
 * at the DRAM's 3.35 TB/s that is some ten microseconds in which the tensor cores wait, per
 * round. With the reads of C taken off the epilogue, it is the writes alone, into the L2:
 * 5-10% less time at 4096^3 (4 rounds), 3-6% at 8192^3 (16 rounds, K twice as long). What
 * to measure: time against wgmma_persistent_bf16 in the same run, and with ncu the
 * consumers' stalls on the loads of C and the L2 hit rate of those loads.
 * Only where beta != 0 (else C is not read) and TMA can describe C (N % 4 == 0, C 16-byte
 * aligned); elsewhere it is the persistent kernel. */
#ifndef CH05_TENSOR_CORES_11_WGMMA_PREFETCH_CUH
#define CH05_TENSOR_CORES_11_WGMMA_PREFETCH_CUH

#include <string.h>

#include "05_matmul_tiled/tensor_cores/07_wgmma_persistent.cuh"
#include "05_matmul_tiled/tensor_cores/pingpong.h"

/* How many k-slices before a tile's last one its C is prefetched. A slice is 1024 tensor-core
 * cycles of a 128x256 tile in bf16 or e4m3 (512 of a 128x128 tile), and the producer runs
 * STAGES slices ahead of the consumers: some 10 microseconds of main loop left when C is
 * asked for, time for the DRAM to deliver every SM's tile without a burst, and short enough
 * that the L2 (50 MB, shared with A and B) still holds it when the epilogue comes. */
#define TC_PREFETCH_AHEAD 16

/* Asks the copy engine to bring one box of a tensor map into the L2: C's tile at column c0,
 * row c1. */
__device__ __forceinline__ void tc_prefetch_l2(const CUtensorMap *map, int c0, int c1)
{
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\n"
                 :
                 : "l"((uint64_t)map), "r"(c0), "r"(c1)
                 : "memory");
}

/* The producer thread of steps 12 and 13: every tile of this block (tile = blockIdx.x,
 * + gridDim.x, ...), every k-slice through the ring, and C's tile prefetched at slice
 * tc_prefetch_slice. */
template <int STAGES, int BM, int BN, int BK> __device__ __forceinline__ void
tc_produce_prefetch(uint8_t *smem, uint64_t *full, uint64_t *empty, const CUtensorMap *map_a,
                    const CUtensorMap *map_b, const CUtensorMap *map_c, bool prefetch, int tiles_m,
                    int tiles_n, int k_count)
{
#ifdef TC_WGMMA_DEVICE
    constexpr int A_BYTES = BM * TC_ROW_BYTES, STAGE_BYTES = A_BYTES + BN * TC_ROW_BYTES;
    const int k_prefetch = tc_prefetch_slice(k_count, TC_PREFETCH_AHEAD);
    int it = 0;
    for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
        int m0, n0;
        tc_tile_origin(tile, tiles_m, tiles_n, BM, BN, &m0, &n0);
        for (int kt = 0; kt < k_count; kt++, it++) {
            int s = it % STAGES;
            uint8_t *st = smem + s * STAGE_BYTES;
            tc_mbar_wait(&empty[s], tc_empty_parity(it, STAGES));
            tc_mbar_arrive_expect(&full[s], STAGE_BYTES);
            tc_tma_load(st, map_a, &full[s], kt * BK, m0);
            tc_tma_load(st + A_BYTES, map_b, &full[s], kt * BK, n0);
            if (prefetch && kt == k_prefetch) tc_prefetch_l2(map_c, n0, m0);
        }
    }
#endif
}

/* Step 7's kernel (tc_wgmma_ws_kernel with 128x256 tiles, two consumers, a persistent grid)
 * with the producer of tc_produce_prefetch. */
template <typename T, int STAGES> __global__ void __launch_bounds__(384, 1)
    tc_wgmma_prefetch_kernel(const __grid_constant__ CUtensorMap map_a,
                             const __grid_constant__ CUtensorMap map_b,
                             const __grid_constant__ CUtensorMap map_c, int M, int N, int K,
                             float alpha, float beta, float *C, bool pairs, bool prefetch)
{
#ifdef TC_WGMMA_DEVICE
    constexpr int BM = 128, BN = 256, BK = TcWgType<T>::BK;
    constexpr int A_BYTES = BM * TC_ROW_BYTES, STAGE_BYTES = A_BYTES + BN * TC_ROW_BYTES;
    __shared__ uint64_t full[STAGES], empty[STAGES];
    extern __shared__ uint8_t tc_smem_raw[];
    uint8_t *smem = tc_align1024(tc_smem_raw);
    const int wg = threadIdx.x / 128;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, k_count = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
        tc_mbar_init_ring(full, empty, STAGES, 256); /* every thread of both consumers */
        tc_mbar_fence_init();
    }
    __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0)
            tc_produce_prefetch<STAGES, BM, BN, BK>(smem, full, empty, &map_a, &map_b, &map_c,
                                                    prefetch, tiles_m, tiles_n, k_count);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    int it = 0, rows = 64 * (wg - 1);
    for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
        int m0, n0;
        tc_tile_origin(tile, tiles_m, tiles_n, BM, BN, &m0, &n0);
        float d[BN / 2];
        tc_consume_tile<T, BN, STAGES>(d, smem, STAGE_BYTES, A_BYTES, rows, full, k_count, it,
                                       [&](int stage) { tc_mbar_arrive(&empty[stage]); });
        tc_epilogue<BN, TC_EPI_STORE>(d, C, M, N, m0 + rows, n0, alpha, beta, pairs);
    }
#endif
}

/* ------------------------------------------------------------------ host side */

/* The tensor map C is prefetched through: M x N fp32, row-major, in boxes of box_rows x
 * box_cols (no swizzle: nothing lands in shared memory). False, with *map zeroed, where
 * TMA cannot describe C (rows of N floats must be a multiple of 16 bytes, C 16-byte
 * aligned): the kernels then run without the prefetch. */
static inline bool tc_prefetch_map(CUtensorMap *map, const float *C, int M, int N, int box_rows,
                                   int box_cols)
{
    memset(map, 0, sizeof *map);
    if (N % 4 != 0 || !sgemm_aligned16(C)) return false;
    cuuint64_t dims[2] = {(cuuint64_t)N, (cuuint64_t)M};
    cuuint64_t strides[1] = {(cuuint64_t)N * sizeof(float)};
    cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
    cuuint32_t step[2] = {1, 1};
    CUresult r =
        tc_encode_fn()(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)C, dims, strides, box, step,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) memset(map, 0, sizeof *map);
    return r == CUDA_SUCCESS;
}

/* Launches a kernel of this step's signature (step 13's too): one block per SM (or per tile,
 * if fewer), 384 threads, STAGES stages of BM x BN tiles, and C's tensor map where the
 * prefetch applies. attr_set is the caller's: one per kernel. */
template <int BM, int BN, int STAGES, typename T, typename Kernel>
static inline void tc_persistent_c_launch(Kernel kernel, bool *attr_set, int M, int N, int K,
                                          float alpha, const T *A, const T *Bt, float beta,
                                          float *C)
{
    tc_wgmma_require(K, A, Bt);
    int smem = tc_stage_smem(BM, BN, STAGES);
    if (!*attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        *attr_set = true;
    }
    int tiles = sgemm_ceil_div(M, BM) * sgemm_ceil_div(N, BN), sms = sgemm_sm_count();
    int blocks = tiles < sms ? tiles : sms;
    CUtensorMap ma = tc_tensor_map(A, M, K, BM), mb = tc_tensor_map(Bt, N, K, BN), mc;
    bool prefetch = tc_prefetch_map(&mc, C, M, N, BM, BN) && beta != 0.0f;
    kernel<<<blocks, 384, smem>>>(ma, mb, mc, M, N, K, alpha, beta, C, tc_c_pairs(N, C), prefetch);
    CHECK_LAUNCH();
}

/* 128x256 tiles, TC_WS_STAGES stages of 48 KB. */
template <typename T> static inline void
tc_wgmma_prefetch(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta, float *C)
{
    static bool attr_set = false;
    tc_persistent_c_launch<128, 256, TC_WS_STAGES>(tc_wgmma_prefetch_kernel<T, TC_WS_STAGES>,
                                                   &attr_set, M, N, K, alpha, A, Bt, beta, C);
}

static inline void tc_wgmma_prefetch_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                          const bf16 *Bt, float beta, float *C)
{
    tc_wgmma_prefetch(M, N, K, alpha, A, Bt, beta, C);
}

#endif
