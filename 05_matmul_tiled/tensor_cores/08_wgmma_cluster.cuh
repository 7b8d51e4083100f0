/* Chapter 05, part two, step 8: one load feeding two SMs, TMA multicast in a cluster (sm_90a).
 *
 *   tc_wgmma_cluster_<t>  the persistent warp-specialized kernel (07_wgmma_persistent.cuh),
 *                         launched in clusters of two blocks that always work on two vertically
 *                         adjacent 128x256 tiles of C. Both tiles need the same 256 rows of
 *                         Bt, so each block's producer loads its own 128 rows of A and *half*
 *                         of those 256 rows, multicast: the copy engine writes that half into
 *                         the shared memory of both blocks and counts its bytes on both
 *                         blocks' `full` barrier. A stage asks the L2 for 32 KB a block
 *                         instead of 48 KB: the aim is a third less traffic between the L2
 *                         and the SMs for the same arithmetic.
 *
 * What a cluster changes against the single block:
 *   - a stage may only be refilled when the consumers of *both* blocks are done with it
 *     (the peer's producer writes into our copy): each consumer warp arrives on its own
 *     block's `empty` barrier and on the other block's, which expects 2 x 8 warps;
 *   - the barriers are initialized before either block uses the other's (a cluster-wide
 *     barrier after the initialization), and neither block exits while the other may still
 *     write into its shared memory or arrive on its barriers (one more at the end);
 *   - the tiles are dealt in pairs: pair p is tile row 2 pm + rank, column tn, where (pm, tn)
 *     walks swizzle.h's grouped order over the pairs. With an odd number of tile rows
 *     the last pair's lower tile lies below C: TMA fills its A with zeros, it still loads
 *     its half of Bt for the other block, and it stores nothing.
 * The grid has as many clusters as fit at once (cudaOccupancyMaxActiveClusters: a cluster's
 * two blocks must sit in one GPC, so this can be fewer than SMs / 2). */
#ifndef CH05_TENSOR_CORES_08_WGMMA_CLUSTER_CUH
#define CH05_TENSOR_CORES_08_WGMMA_CLUSTER_CUH

#include "05_matmul_tiled/tensor_cores/07_wgmma_persistent.cuh"

#define TC_CLUSTER_BM 128
#define TC_CLUSTER_BN 256 /* the default; step 16 (16_wgmma_wide.cuh) launches 320 */

/* The end of a consumer warp's reads of stage s: it frees the stage in both blocks. */
__device__ __forceinline__ void tc_cluster_release(uint64_t *empty, unsigned peer)
{
    __syncwarp();
    if (threadIdx.x % 32 == 0) {
        tc_mbar_arrive(empty);
        tc_mbar_arrive_cluster(empty, peer);
    }
}

template <typename T, int STAGES, int BN = TC_CLUSTER_BN> __global__ void __launch_bounds__(384, 1)
    tc_wgmma_cluster_kernel(const __grid_constant__ CUtensorMap map_a,
                            const __grid_constant__ CUtensorMap map_b, int M, int N, int K,
                            float alpha, float beta, float *C, bool pairs)
{
#ifdef TC_WGMMA_DEVICE
    constexpr int BM = TC_CLUSTER_BM, BK = TcWgType<T>::BK;
    constexpr int A_BYTES = BM * TC_ROW_BYTES, HALF_B_BYTES = BN / 2 * TC_ROW_BYTES;
    constexpr int STAGE_BYTES = A_BYTES + 2 * HALF_B_BYTES;
    constexpr unsigned CONSUMER_WARPS = 8;
    __shared__ uint64_t full[STAGES], empty[STAGES];
    extern __shared__ uint8_t tc_smem_raw[];
    uint8_t *smem = tc_align1024(tc_smem_raw);
    const unsigned rank = tc_cluster_rank(), peer = rank ^ 1u;
    const int wg = threadIdx.x / 128;
    const int tiles_n = (N + BN - 1) / BN, pair_rows = ((M + BM - 1) / BM + 1) / 2,
              pair_tiles = pair_rows * tiles_n;
    const int cluster = blockIdx.x / 2, clusters = gridDim.x / 2, k_count = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
        tc_mbar_init_ring(full, empty, STAGES, 2 * CONSUMER_WARPS);
        tc_mbar_fence_init();
    }
    tc_cluster_sync();
    if (wg == 0) { /* the producer: thread 0 issues the copies, the others wait at the end */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        for (int p = cluster, it = 0; threadIdx.x == 0 && p < pair_tiles; p += clusters) {
            int pm, tn;
            tc_tile_grouped(p, pair_rows, tiles_n, &pm, &tn);
            int m0 = (2 * pm + (int)rank) * BM, n0 = tn * BN;
            for (int kt = 0; kt < k_count; kt++, it++) {
                int s = it % STAGES;
                uint8_t *st = smem + s * STAGE_BYTES;
                /* both blocks' consumers are done with the stage */
                tc_mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1);
                tc_mbar_arrive_expect(&full[s], STAGE_BYTES); /* own A, both halves of Bt */
                tc_tma_load(st, &map_a, &full[s], kt * BK, m0);
                tc_tma_load_multicast(st + A_BYTES + rank * HALF_B_BYTES, &map_b, &full[s], kt * BK,
                                      n0 + (int)rank * (BN / 2), 0x3);
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int rows = 64 * (wg - 1);
        for (int p = cluster, it = 0; p < pair_tiles; p += clusters) {
            int pm, tn;
            tc_tile_grouped(p, pair_rows, tiles_n, &pm, &tn);
            int m0 = (2 * pm + (int)rank) * BM, n0 = tn * BN;
            float d[BN / 2];
            tc_consume_tile<T, BN, STAGES>(
                d, smem, STAGE_BYTES, A_BYTES, rows, full, k_count, it,
                [&](int stage) { tc_cluster_release(&empty[stage], peer); });
            if (m0 + rows < M)
                tc_epilogue<BN, TC_EPI_STORE>(d, C, M, N, m0 + rows, n0, alpha, beta, pairs);
        }
    }
    tc_cluster_sync(); /* the other block may still be writing into this one */
#endif
}

/* The launch of tc_wgmma_cluster_kernel<T>: 384 threads, the stages, clusters of two. */
template <typename T, int BN = TC_CLUSTER_BN> struct TcClusterLaunch {
    cudaLaunchAttribute cluster_dim;
    cudaLaunchConfig_t cfg;
    void (*kernel)(const CUtensorMap, const CUtensorMap, int, int, int, float, float, float *,
                   bool);
    TcClusterLaunch()
    {
        kernel = tc_wgmma_cluster_kernel<T, TC_WS_STAGES, BN>;
        cluster_dim.id = cudaLaunchAttributeClusterDimension;
        cluster_dim.val.clusterDim.x = 2;
        cluster_dim.val.clusterDim.y = 1;
        cluster_dim.val.clusterDim.z = 1;
        cfg = cudaLaunchConfig_t{};
        cfg.blockDim = dim3(384);
        cfg.dynamicSmemBytes = tc_stage_smem(TC_CLUSTER_BM, BN, TC_WS_STAGES);
        cfg.attrs = &cluster_dim;
        cfg.numAttrs = 1;
    }
};

/* How many clusters of two blocks are resident at once on this GPU (a cluster's blocks must
 * sit in one GPC, so this can be fewer than SMs / 2); the first call sets the kernel's
 * shared-memory limit. */
template <typename T, int BN = TC_CLUSTER_BN> static inline int tc_wgmma_cluster_fit(void)
{
    static int fit = 0;
    if (!fit) {
        TcClusterLaunch<T, BN> l;
        CUDA_CHECK(cudaFuncSetAttribute(l.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)l.cfg.dynamicSmemBytes));
        l.cfg.gridDim = dim3(2 * sgemm_sm_count());
        CUDA_CHECK(cudaOccupancyMaxActiveClusters(&fit, l.kernel, &l.cfg));
        if (fit < 1) {
            fprintf(stderr,
                    "wgmma_cluster: no cluster of two blocks of %zu bytes fits on this GPU\n",
                    l.cfg.dynamicSmemBytes);
            exit(1);
        }
    }
    return fit;
}

/* Launches as many clusters of two as fit at once, or fewer when C has fewer tile pairs. */
template <typename T, int BN = TC_CLUSTER_BN> static inline void
tc_wgmma_cluster(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta, float *C)
{
    tc_wgmma_require(K, A, Bt);
    int fit = tc_wgmma_cluster_fit<T, BN>();
    TcClusterLaunch<T, BN> l;
    int pair_tiles = (sgemm_ceil_div(M, TC_CLUSTER_BM) + 1) / 2 * sgemm_ceil_div(N, BN);
    l.cfg.gridDim = dim3(2 * (pair_tiles < fit ? pair_tiles : fit));
    CUtensorMap ma = tc_tensor_map(A, M, K, TC_CLUSTER_BM), mb = tc_tensor_map(Bt, N, K, BN / 2);
    CUDA_CHECK(
        cudaLaunchKernelEx(&l.cfg, l.kernel, ma, mb, M, N, K, alpha, beta, C, tc_c_pairs(N, C)));
    CHECK_LAUNCH();
}

static inline void tc_wgmma_cluster_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                         const bf16 *Bt, float beta, float *C)
{
    tc_wgmma_cluster(M, N, K, alpha, A, Bt, beta, C);
}
static inline void tc_wgmma_cluster_tf32(int M, int N, int K, float alpha, const float *A,
                                         const float *Bt, float beta, float *C)
{
    tc_wgmma_cluster(M, N, K, alpha, A, Bt, beta, C);
}

#endif
