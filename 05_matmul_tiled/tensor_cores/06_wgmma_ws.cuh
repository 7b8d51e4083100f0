/* Chapter 05, part two, step 6: warp specialization (sm_90a only).
 *
 *   tc_wgmma_ws_<t>          a third warpgroup only issues TMA copies (one thread), the two
 *                            others only issue wgmma; stages are handed back through "empty"
 *                            mbarriers, so no block barrier remains and one group of wgmma
 *                            stays in flight while the next stage is checked. 128x256 tiles
 *                            (the producer gives its registers to the consumers with
 *                            setmaxnreg: 128 accumulators a thread).
 * The same kernel walks several tiles a block (07_wgmma_persistent.cuh) and splits K
 * (09_wgmma_splitk.cuh); the cluster kernel (08_wgmma_cluster.cuh) uses its consumer loop. */
#ifndef CH05_TENSOR_CORES_06_WGMMA_WS_CUH
#define CH05_TENSOR_CORES_06_WGMMA_WS_CUH

#include "05_matmul_tiled/tensor_cores/05_wgmma.cuh"

/* ------------------------------------------------------------------ step 6: warp specialization */

/* Tile number -> origin, in swizzle.h's groups of 8 tile rows: consecutive tiles (running
 * on the SMs at the same time) share 8 row panels of A and a few column panels of Bt, which
 * stay in L2. */
__device__ __forceinline__ void tc_tile_origin(int tile, int tiles_m, int tiles_n, int bm, int bn,
                                               int *m0, int *n0)
{
    int tm, tn;
    tc_tile_grouped(tile, tiles_m, tiles_n, &tm, &tn);
    *m0 = tm * bm;
    *n0 = tn * bn;
}

/* A consumer warpgroup's K loop over one tile of the warp-specialized kernels: wait for
 * each stage, start its wgmma, and once the group of the stage before has finished
 * (wait_group 1: one group stays in flight) hand that stage back with release(stage).
 * `it` counts the stages used so far, across tiles: stage it % STAGES, phase it / STAGES. */
template <typename T, int BN, int STAGES, typename Release>
__device__ __forceinline__ void tc_consume_tile(float (&d)[BN / 2], uint8_t *smem, int stage_bytes,
                                                int a_bytes, int rows, uint64_t *full, int k_count,
                                                int &it, Release release)
{
#ifdef TC_WGMMA_DEVICE
#pragma unroll
    for (int i = 0; i < BN / 2; i++) d[i] = 0.0f;
    int prev = 0;
    for (int kt = 0; kt < k_count; kt++, it++) {
        int s = it % STAGES;
        uint8_t *st = smem + s * stage_bytes;
        tc_mbar_wait(&full[s], (it / STAGES) & 1);
        tc_fence_regs(d);
        tc_wgmma_fence();
        tc_wgmma_stage<T, BN>(d, st + rows * TC_ROW_BYTES, st + a_bytes);
        tc_wgmma_commit();
        tc_wgmma_wait<1>(); /* the previous stage's group is done: hand that stage back */
        tc_fence_regs(d);
        if (kt > 0) release(prev);
        prev = s;
    }
    tc_wgmma_wait<0>();
    tc_fence_regs(d);
    release(prev);
#endif
}

/* Rows of Bt a TMA box holds: a box has at most 256 rows, so a 320-row tile takes two. */
__host__ __device__ constexpr int tc_b_box(int bn) { return bn > 256 ? bn / 2 : bn; }

/* Warpgroup 0 produces, warpgroups 1 .. CONSUMERS consume (64 rows of the tile each).
 * Tiles tile = blockIdx.x, + gridDim.x, ... (one when the grid has a block per tile; a
 * persistent grid has one block per SM). With EPI == TC_EPI_ADD, grid layer blockIdx.z
 * multiplies K-slices [z * split_tiles, (z + 1) * split_tiles) only and adds its partial
 * product into C. With 256- or 320-wide tiles the producer drops to 40 registers and the
 * consumers rise to 232 (setmaxnreg): 128 or 160 accumulators a thread plus addresses. */
template <typename T, int BN, int STAGES, int CONSUMERS, int EPI>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), CONSUMERS == 1 ? 2 : 1)
    tc_wgmma_ws_kernel(const __grid_constant__ CUtensorMap map_a,
                       const __grid_constant__ CUtensorMap map_b, int M, int N, int K, float alpha,
                       float beta, float *C, bool pairs, int split_tiles)
{
#ifdef TC_WGMMA_DEVICE
    constexpr int BM = 64 * CONSUMERS, BK = TcWgType<T>::BK;
    constexpr int A_BYTES = BM * TC_ROW_BYTES, STAGE_BYTES = A_BYTES + BN * TC_ROW_BYTES;
    constexpr bool SHIFT_REGS = BN >= 256;
    constexpr int B_BOX = tc_b_box(BN);
    __shared__ uint64_t full[STAGES], empty[STAGES];
    extern __shared__ uint8_t tc_smem_raw[];
    uint8_t *smem = tc_align1024(tc_smem_raw);
    int wg = threadIdx.x / 128;
    int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    int k_first = 0, k_count = (K + BK - 1) / BK;
    if (EPI == TC_EPI_ADD) {
        k_first = blockIdx.z * split_tiles;
        k_count = min(split_tiles, k_count - k_first);
    }
    if (threadIdx.x == 0) {
        tc_mbar_init_ring(full, empty, STAGES, 128 * CONSUMERS);
        tc_mbar_fence_init();
    }
    __syncthreads();
    if (wg == 0) { /* the producer */
        if (SHIFT_REGS) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x != 0) return;
        int it = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int m0, n0;
            tc_tile_origin(tile, tiles_m, tiles_n, BM, BN, &m0, &n0);
            for (int kt = 0; kt < k_count; kt++, it++) {
                int s = it % STAGES;
                uint8_t *st = smem + s * STAGE_BYTES;
                tc_mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1); /* first round: free */
                tc_mbar_arrive_expect(&full[s], STAGE_BYTES);
                tc_tma_load(st, &map_a, &full[s], (k_first + kt) * BK, m0);
                tc_tma_load(st + A_BYTES, &map_b, &full[s], (k_first + kt) * BK, n0);
                if (BN > B_BOX) /* a box has at most 256 rows: a 320-row tile takes two */
                    tc_tma_load(st + A_BYTES + B_BOX * TC_ROW_BYTES, &map_b, &full[s],
                                (k_first + kt) * BK, n0 + B_BOX);
            }
        }
        return;
    }
    if (SHIFT_REGS) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    int it = 0, rows = 64 * (wg - 1);
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        int m0, n0;
        tc_tile_origin(tile, tiles_m, tiles_n, BM, BN, &m0, &n0);
        float d[BN / 2];
        tc_consume_tile<T, BN, STAGES>(d, smem, STAGE_BYTES, A_BYTES, rows, full, k_count, it,
                                       [&](int stage) { tc_mbar_arrive(&empty[stage]); });
        tc_epilogue<BN, EPI>(d, C, M, N, m0 + rows, n0, alpha, beta, pairs);
    }
#endif
}

#define TC_WS_STAGES 4

/* The warp-specialized kernel: blocks = 0 gives one block per tile, else a persistent grid
 * of that many blocks; splits > 1 (64x128 tiles only) cuts K into that many grid layers. */
template <typename T, int BN, int CONSUMERS, int EPI>
static inline void tc_wgmma_ws_launch(int M, int N, int K, float alpha, const T *A, const T *Bt,
                                      float beta, float *C, int blocks, int splits)
{
    constexpr int BM = 64 * CONSUMERS, STAGES = TC_WS_STAGES;
    tc_wgmma_require(K, A, Bt);
    int smem = tc_stage_smem(BM, BN, STAGES);
    static bool attr_set = false;
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(tc_wgmma_ws_kernel<T, BN, STAGES, CONSUMERS, EPI>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        attr_set = true;
    }
    int tiles = sgemm_ceil_div(M, BM) * sgemm_ceil_div(N, BN);
    int split_tiles = tc_split_layers(sgemm_ceil_div(K, TcWgType<T>::BK), &splits);
    if (EPI == TC_EPI_ADD) tc_prescale(C, M, N, beta);
    CUtensorMap ma = tc_tensor_map(A, M, K, BM), mb = tc_tensor_map(Bt, N, K, tc_b_box(BN));
    dim3 grid(blocks > 0 && blocks < tiles ? blocks : tiles, 1, EPI == TC_EPI_ADD ? splits : 1);
    tc_wgmma_ws_kernel<T, BN, STAGES, CONSUMERS, EPI><<<grid, 128 * (CONSUMERS + 1), smem>>>(
        ma, mb, M, N, K, alpha, beta, C, tc_c_pairs(N, C), split_tiles);
    CHECK_LAUNCH();
}

static inline void tc_wgmma_ws_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                                    float beta, float *C)
{
    tc_wgmma_ws_launch<bf16, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
}
static inline void tc_wgmma_ws_tf32(int M, int N, int K, float alpha, const float *A,
                                    const float *Bt, float beta, float *C)
{
    tc_wgmma_ws_launch<float, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
}

#endif
