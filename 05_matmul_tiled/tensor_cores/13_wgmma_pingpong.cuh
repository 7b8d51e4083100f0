/* Chapter 05, part two, step 13: two consumers taking turns, one epilogue hidden behind the
 * other's main loop (sm_90a only).
 *
 *   tc_wgmma_pingpong_<t>  step 12 (12_wgmma_prefetch.cuh: persistent, C prefetched into the
 *                          L2) with 128x128 tiles, each computed whole by one consumer
 *                          warpgroup (two m64n128 wgmma a k-step, 128 accumulators a thread);
 *                          the two consumers take the block's tiles in turn, 0, 1, 0, 1, ...
 *
 * What it changes: in steps 7-11 both consumers work on one tile, so both reach its
 * epilogue together and the tensor cores idle while C is read and written. Here one
 * warpgroup stores its tile while the other multiplies the next one; the tensor cores stay
 * busy as long as an epilogue is shorter than a main loop (at 4096^3, a 128x128x4096 tile
 * takes some 32k tensor-core cycles and its epilogue a fraction of that).
 * Nothing forces the turns: the ring hands out slices in order, tile after tile, so the
 * second warpgroup's first slice only arrives when the first warpgroup is some STAGES slices
 * from the end of its tile; from then on they alternate. The one rule to keep is that of
 * the parity waits (pingpong.h): a warpgroup may only start waiting on its tile's slices
 * once the other warpgroup has passed its last wait of the tile before, which the `turn`
 * mbarriers say.
 * The cost: a 128x128 tile loads 32 KB from the L2 per 1M multiply-adds against 48 KB per 2M
 * for 128x256 (a third more L2 traffic for the same work), and each m64n128 wgmma reads A
 * again for half the work of an m64n256. Prediction: the epilogues hidden (a few percent at
 * 4096^3, as much again for e4m3, whose main loop is twice as fast) minus what the L2 traffic
 * costs; a loss, if the L2 cannot feed it. What to measure: time against
 * wgmma_prefetch_bf16; with ncu, the L2 throughput and the tensor pipes' active cycles. */
#ifndef CH05_TENSOR_CORES_12_WGMMA_PINGPONG_CUH
#define CH05_TENSOR_CORES_12_WGMMA_PINGPONG_CUH

#include "05_matmul_tiled/tensor_cores/12_wgmma_prefetch.cuh"

#define TC_PINGPONG_STAGES 6 /* 6 x 32 KB: as much shared memory as steps 7-11's 4 x 48 KB */

/* One k-slice of a 128x128 tile by one warpgroup: its rows 0-63 into d0, 64-127 into d1,
 * against the same 128 rows of Bt, 4 k-steps of 32 bytes. */
template <typename T> __device__ __forceinline__ void
tc_pingpong_stage(float (&d0)[64], float (&d1)[64], const uint8_t *st, int a_bytes)
{
#pragma unroll
    for (int k = 0; k < TC_K_STEPS; k++) {
        uint64_t b = tc_desc(st + a_bytes + 32 * k);
        tc_wgmma<T, 128>(d0, tc_desc(st + 32 * k), b);
        tc_wgmma<T, 128>(d1, tc_desc(st + 64 * TC_ROW_BYTES + 32 * k), b);
    }
}

/* Warpgroup 0 produces (tc_produce_prefetch); consumer w = 0, 1 (warpgroups 1, 2) computes
 * the block's tiles i = w, w + 2, ... (tile blockIdx.x + i * gridDim.x), slices
 * it = i * k_count onward. */
template <typename T, int STAGES> __global__ void __launch_bounds__(384, 1)
    tc_wgmma_pingpong_kernel(const __grid_constant__ CUtensorMap map_a,
                             const __grid_constant__ CUtensorMap map_b,
                             const __grid_constant__ CUtensorMap map_c, int M, int N, int K,
                             float alpha, float beta, float *C, bool pairs, bool prefetch)
{
#ifdef TC_WGMMA_DEVICE
    constexpr int BM = 128, BN = 128, BK = TcWgType<T>::BK;
    constexpr int A_BYTES = BM * TC_ROW_BYTES, STAGE_BYTES = A_BYTES + BN * TC_ROW_BYTES;
    __shared__ uint64_t full[STAGES], empty[STAGES], turn[2];
    extern __shared__ uint8_t tc_smem_raw[];
    uint8_t *smem = tc_align1024(tc_smem_raw);
    const int wg = threadIdx.x / 128;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, k_count = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
        tc_mbar_init_ring(full, empty, STAGES, 128); /* the one consumer of the slice */
        tc_mbar_init(&turn[0], 128);
        tc_mbar_init(&turn[1], 128);
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
    const int w = wg - 1;
    for (int i = w, tile = blockIdx.x + w * gridDim.x; tile < tiles_m * tiles_n;
         i += 2, tile += 2 * gridDim.x) {
        int m0, n0;
        tc_tile_origin(tile, tiles_m, tiles_n, BM, BN, &m0, &n0);
        /* the other warpgroup has passed its last wait on tile i - 1 */
        if (i > 0) tc_mbar_wait(&turn[w], tc_turn_parity(i));
        float d0[64], d1[64];
#pragma unroll
        for (int j = 0; j < 64; j++) d0[j] = d1[j] = 0.0f;
        int prev = 0;
        for (int kt = 0, it = i * k_count; kt < k_count; kt++, it++) {
            int s = it % STAGES;
            uint8_t *st = smem + s * STAGE_BYTES;
            tc_mbar_wait(&full[s], tc_full_parity(it, STAGES));
            if (kt == k_count - 1) tc_mbar_arrive(&turn[1 - w]); /* the other may start */
            tc_fence_regs(d0);
            tc_fence_regs(d1);
            tc_wgmma_fence();
            tc_pingpong_stage<T>(d0, d1, st, A_BYTES);
            tc_wgmma_commit();
            tc_wgmma_wait<1>(); /* the slice before is read: hand its slot back */
            tc_fence_regs(d0);
            tc_fence_regs(d1);
            if (kt > 0) tc_mbar_arrive(&empty[prev]);
            prev = s;
        }
        tc_wgmma_wait<0>();
        tc_fence_regs(d0);
        tc_fence_regs(d1);
        tc_mbar_arrive(&empty[prev]);
        tc_epilogue<128, TC_EPI_STORE>(d0, C, M, N, m0, n0, alpha, beta, pairs);
        tc_epilogue<128, TC_EPI_STORE>(d1, C, M, N, m0 + 64, n0, alpha, beta, pairs);
    }
#endif
}

/* 128x128 tiles, TC_PINGPONG_STAGES stages of 32 KB, launched as step 12's kernel is. */
template <typename T> static inline void
tc_wgmma_pingpong(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta, float *C)
{
    static bool attr_set = false;
    tc_persistent_c_launch<128, 128, TC_PINGPONG_STAGES>(
        tc_wgmma_pingpong_kernel<T, TC_PINGPONG_STAGES>, &attr_set, M, N, K, alpha, A, Bt, beta, C);
}

static inline void tc_wgmma_pingpong_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                          const bf16 *Bt, float beta, float *C)
{
    tc_wgmma_pingpong(M, N, K, alpha, A, Bt, beta, C);
}

#endif
