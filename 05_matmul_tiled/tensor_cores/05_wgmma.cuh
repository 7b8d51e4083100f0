/* Chapter 05, part two, Hopper: wgmma with operands loaded by TMA (sm_90a only).
 *
 *   tc_wgmma_<t>             the copy engine (TMA) loads K-slices of 128 bytes (64 bf16, 32
 *                            tf32) of A and Bt into shared memory, 4 stages deep, each stage's
 *                            arrival signalled on an mbarrier; two warpgroups each issue
 *                            wgmma.mma_async on their 64 rows of a 128x128 tile of C. Everyone
 *                            waits for the tensor cores and meets at a block barrier before a
 *                            stage is refilled.
 *   tc_wgmma_ws_<t>          warp specialization: a third warpgroup only issues TMA copies
 *                            (one thread), the two others only issue wgmma; stages are handed
 *                            back through "empty" mbarriers, so no block barrier remains and
 *                            one group of wgmma stays in flight while the next stage is checked.
 *                            128x256 tiles (the producer gives its registers to the consumers
 *                            with setmaxnreg: 128 accumulators a thread).
 *   tc_wgmma_persistent_<t>  the same with one block per SM walking the tiles in an L2-friendly
 *                            order: the producer loads the next tile while the consumers store
 *                            this one, and no block launch sits between tiles.
 *   tc_wgmma_splitk_<t>      64x128 tiles with K split over a grid layer per range and the
 *                            partial products added into C (small C, long K: chapter 07).
 * <t> is bf16 or tf32. The operands' layout is tc_common.cuh's contract (A and Bt both
 * K-contiguous).
 *
 * The primitives they use (TMA, mbarriers, wgmma and its shared-memory descriptors, the
 * tensor maps and the check of where they can run) are in tc_hopper.cuh, with what each does.
 * Built for anything but sm_90a, these kernels are empty and their launchers refuse:
 * tc_wgmma_unavailable() says why, and the driver skips them with that reason. */
#ifndef CH05_TC_WGMMA_CUH
#define CH05_TC_WGMMA_CUH

#include "05_matmul_tiled/tensor_cores/hopper_primitives.cuh"
#include "05_matmul_tiled/tensor_cores/swizzle.h"

/* How a tile leaves the kernel: stored as alpha * acc + beta * C, or (split-K) added. */
enum { TC_EPI_STORE, TC_EPI_ADD };

/* Split-K's epilogue: a pair added into C, with one 8-byte atomic where the row allows it.
 * (The float2 atomicAdd exists from sm_90 on; the other targets of the default build only
 * compile this, for kernels that are empty there.) */
__device__ __forceinline__ void tc_add_pair(float *C, int M, int N, int r, int c, float v0, float v1, bool pairs)
{
    if (r >= M || c >= N) return;
    float *p = C + (size_t)r * N + c;
#ifdef TC_WGMMA_DEVICE
    if (pairs && c + 1 < N) {
        atomicAdd((float2 *)p, make_float2(v0, v1));
        return;
    }
#endif
    (void)pairs;
    atomicAdd(p, v0);
    if (c + 1 < N) atomicAdd(p + 1, v1);
}

/* The warpgroup's 64 x BN accumulators to C, rows from row0, columns from col0: stored 16
 * pairs at a time (tc_store_pairs: their reads of C in flight together), or added. */
template <int BN, int EPI>
__device__ __forceinline__ void tc_epilogue(const float (&d)[BN / 2], float *C, int M, int N, int row0,
                                            int col0, float alpha, float beta, bool pairs)
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
            for (int p = 0; p < 16; p++) tc_add_pair(C, M, N, rr[p], cc[p], alpha * v[p].x, alpha * v[p].y, pairs);
        }
    }
}

/* Tile number -> origin, in tc_swizzle.h's groups of 8 tile rows: consecutive tiles (running
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

/* ------------------------------------------------------------------ step 5: wgmma + TMA */

/* Two warpgroups, a 128 x BN tile, STAGES stages. Thread 0 keeps STAGES K-slices in flight;
 * each warpgroup multiplies a stage, waits for its own wgmma (wait_group 0), and the block
 * meets at __syncthreads before thread 0 refills the stage just read. */
template <typename T, int BN, int STAGES>
__global__ void __launch_bounds__(256, 1)
tc_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                int M, int N, int K, float alpha, float beta, float *C, bool pairs)
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

/* ------------------------------------------------------------------ steps 6-7: warp specialization */

/* A consumer warpgroup's K loop over one tile of the warp-specialized kernels: wait for
 * each stage, start its wgmma, and once the group of the stage before has finished
 * (wait_group 1: one group stays in flight) hand that stage back with release(stage).
 * `it` counts the stages used so far, across tiles: stage it % STAGES, phase it / STAGES. */
template <typename T, int BN, int STAGES, typename Release>
__device__ __forceinline__ void tc_consume_tile(float (&d)[BN / 2], uint8_t *smem, int stage_bytes, int a_bytes,
                                                int rows, uint64_t *full, int k_count, int &it, Release release)
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

/* Warpgroup 0 produces, warpgroups 1 .. CONSUMERS consume (64 rows of the tile each).
 * Tiles tile = blockIdx.x, + gridDim.x, ... (one when the grid has a block per tile; a
 * persistent grid has one block per SM). With EPI == TC_EPI_ADD, grid layer blockIdx.z
 * multiplies K-slices [z * split_tiles, (z + 1) * split_tiles) only and adds its partial
 * product into C. With 256-wide tiles the producer drops to 40 registers and the consumers
 * rise to 232 (setmaxnreg): 128 accumulators a thread plus addresses. */
template <typename T, int BN, int STAGES, int CONSUMERS, int EPI>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), CONSUMERS == 1 ? 2 : 1)
tc_wgmma_ws_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                   int M, int N, int K, float alpha, float beta, float *C, bool pairs, int split_tiles)
{
#ifdef TC_WGMMA_DEVICE
    constexpr int BM = 64 * CONSUMERS, BK = TcWgType<T>::BK;
    constexpr int A_BYTES = BM * TC_ROW_BYTES, STAGE_BYTES = A_BYTES + BN * TC_ROW_BYTES;
    constexpr bool SHIFT_REGS = BN == 256;
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
        for (int s = 0; s < STAGES; s++) {
            tc_mbar_init(&full[s], 1);
            tc_mbar_init(&empty[s], 128 * CONSUMERS);
        }
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

/* ------------------------------------------------------------------ host side */

/* Refuses (exit 1, with the reason) what the driver should have skipped. */
template <typename T>
static inline void tc_wgmma_require(int K, const T *A, const T *Bt)
{
    const char *why = tc_wgmma_unavailable();
    if (!why) why = tc_tma_refusal(K, sizeof(T), A, Bt);
    if (why) {
        fprintf(stderr, "wgmma version called where it cannot run: %s\n", why);
        exit(1);
    }
}

/* Dynamic shared memory of STAGES stages plus 1 KB to align them. */
static inline int tc_stage_smem(int bm, int bn, int stages) { return stages * (bm + bn) * TC_ROW_BYTES + 1024; }

#define TC_WGMMA_STAGES 4
#define TC_WS_STAGES 4

template <typename T>
static inline void tc_wgmma_launch(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta,
                                   float *C)
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
    tc_wgmma_kernel<T, BN, TC_WGMMA_STAGES><<<grid, 256, smem>>>(ma, mb, M, N, K, alpha, beta, C, tc_c_pairs(N, C));
    CHECK_LAUNCH();
}

/* The warp-specialized kernel: blocks = 0 gives one block per tile, else a persistent grid
 * of that many blocks; splits > 1 (64x128 tiles only) cuts K into that many grid layers. */
template <typename T, int BN, int CONSUMERS, int EPI>
static inline void tc_wgmma_ws_launch(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta,
                                      float *C, int blocks, int splits)
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
    int k_tiles = sgemm_ceil_div(K, TcWgType<T>::BK), split_tiles = sgemm_ceil_div(k_tiles, splits);
    splits = sgemm_ceil_div(k_tiles, split_tiles); /* no empty layer */
    if (EPI == TC_EPI_ADD) tc_prescale(C, M, N, beta);
    CUtensorMap ma = tc_tensor_map(A, M, K, BM), mb = tc_tensor_map(Bt, N, K, BN);
    dim3 grid(blocks > 0 && blocks < tiles ? blocks : tiles, 1, EPI == TC_EPI_ADD ? splits : 1);
    tc_wgmma_ws_kernel<T, BN, STAGES, CONSUMERS, EPI><<<grid, 128 * (CONSUMERS + 1), smem>>>(
        ma, mb, M, N, K, alpha, beta, C, tc_c_pairs(N, C), split_tiles);
    CHECK_LAUNCH();
}

/* The split count for 64x128 tiles: about two blocks per SM in all (a 64-row tile keeps one
 * consumer warpgroup busy, so two of them share an SM), each layer at least 2 K-slices. */
static inline int tc_wgmma_splits(int M, int N, int K, int bk)
{
    int tiles = sgemm_ceil_div(M, 64) * sgemm_ceil_div(N, 128), k_tiles = sgemm_ceil_div(K, bk);
    int want = sgemm_ceil_div(2 * sgemm_sm_count(), tiles), most = k_tiles / 2;
    int s = want < most ? want : most;
    return s < 1 ? 1 : s;
}

/* ------------------------------------------------------------------ the launchers */

static inline void tc_wgmma_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt, float beta,
                                 float *C)
{
    tc_wgmma_launch(M, N, K, alpha, A, Bt, beta, C);
}
static inline void tc_wgmma_tf32(int M, int N, int K, float alpha, const float *A, const float *Bt,
                                 float beta, float *C)
{
    tc_wgmma_launch(M, N, K, alpha, A, Bt, beta, C);
}

static inline void tc_wgmma_ws_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                                    float beta, float *C)
{
    tc_wgmma_ws_launch<bf16, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
}
static inline void tc_wgmma_ws_tf32(int M, int N, int K, float alpha, const float *A, const float *Bt,
                                    float beta, float *C)
{
    tc_wgmma_ws_launch<float, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
}

static inline void tc_wgmma_persistent_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                                            float beta, float *C)
{
    tc_wgmma_ws_launch<bf16, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, sgemm_sm_count(), 1);
}
static inline void tc_wgmma_persistent_tf32(int M, int N, int K, float alpha, const float *A,
                                            const float *Bt, float beta, float *C)
{
    tc_wgmma_ws_launch<float, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, sgemm_sm_count(), 1);
}

/* 64x128 tiles, K split into `splits` grid layers (one layer: a plain store); the launch
 * rounds the count to one that leaves no layer empty. */
template <typename T>
static inline void tc_wgmma_splitk_by(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta,
                                      float *C, int splits)
{
    if (splits <= 1)
        tc_wgmma_ws_launch<T, 128, 1, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
    else
        tc_wgmma_ws_launch<T, 128, 1, TC_EPI_ADD>(M, N, K, alpha, A, Bt, beta, C, 0, splits);
}

/* The same with tc_wgmma_splits' count. */
template <typename T>
static inline void tc_wgmma_splitk(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta, float *C)
{
    tc_wgmma_splitk_by(M, N, K, alpha, A, Bt, beta, C, tc_wgmma_splits(M, N, K, TcWgType<T>::BK));
}
static inline void tc_wgmma_splitk_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                                        float beta, float *C)
{
    tc_wgmma_splitk(M, N, K, alpha, A, Bt, beta, C);
}
static inline void tc_wgmma_splitk_tf32(int M, int N, int K, float alpha, const float *A, const float *Bt,
                                        float beta, float *C)
{
    tc_wgmma_splitk(M, N, K, alpha, A, Bt, beta, C);
}

#endif
