/* Chapter 05, part two, step 18 (sm_90a only): C read through shared memory, loaded by the
 * copy engine while the consumers still multiply.
 *
 *   tc_wgmma_cload_<t>  the persistent kernel (128x256 tiles, 4 stages of 48 KB) with two
 *                       16 KB buffers for C: 128 rows x 32 columns of fp32 a chunk, 8 chunks
 *                       a tile.
 *
 * With beta != 0 the epilogue reads the tile's C. In the persistent kernel every SM reads
 * its 128 KB at the same moment, with its tensor cores idle: with beta = 0 the kernel's cost
 * per tile falls from 0.14 to 0.06 of a tile's main loop (wide_tiles.md). Here a second
 * producer thread loads C's chunks with TMA (a 128-byte swizzled box, so that the consumers'
 * reads meet no bank conflicts) as soon as a buffer is free: the first NBUF chunks of a tile
 * arrive during its main loop, the rest while the consumers store the chunks before. The
 * epilogue reads C from shared memory. Only where beta != 0 and TMA can describe C
 * (N % 4 == 0, C 16-byte aligned: tc_cload_applies); elsewhere the epilogue is step 7's.
 * The lesson: tensor_cores/epilogue.md. */
#ifndef CH05_TENSOR_CORES_18_WGMMA_CLOAD_CUH
#define CH05_TENSOR_CORES_18_WGMMA_CLOAD_CUH

#include "05_matmul_tiled/tensor_cores/12_wgmma_prefetch.cuh"

#define TC_CHUNK_COLS 32 /* a chunk of C: 128 rows x 32 fp32, 128 bytes a row */
#define TC_CHUNK_BYTES (128 * TC_CHUNK_COLS * 4)

/* The byte of row `row`, byte `byte` of a 128-byte-swizzled box with 128-byte rows: the
 * 16-byte unit's index XOR the row's index modulo 8 (address bits 4-6 ^= bits 7-9). */
__device__ __forceinline__ int tc_swizzle128(int row, int byte)
{
    return row * 128 + ((((byte >> 4) ^ row) & 7) << 4) + (byte & 15);
}

/* A consumer warpgroup's epilogue through C's chunks: for each chunk, wait for its buffer,
 * read this thread's 16 values of C, hand the buffer back (after a proxy fence: the buffer's
 * next writer is the copy engine), store alpha * acc + beta * C. */
template <int BN, int NBUF>
__device__ __forceinline__ void tc_epilogue_chunks(const float (&d)[BN / 2], const uint8_t *cbuf,
                                                   uint64_t *cfull, uint64_t *cempty, int &g,
                                                   float *C, int M, int N, int lrow, int m0, int n0,
                                                   float alpha, float beta, bool pairs)
{
#ifdef TC_WGMMA_DEVICE
    const int t = threadIdx.x % 128;
    const int lr = lrow + 16 * (t / 32) + (t % 32) / 4, r = m0 + lr, c = n0 + 2 * (t % 4);
#pragma unroll
    for (int i = 0; i < BN / TC_CHUNK_COLS; i++, g++) {
        const int b = g % NBUF;
        const uint8_t *cb = cbuf + b * TC_CHUNK_BYTES;
        tc_mbar_wait(&cfull[b], (g / NBUF) & 1);
        float2 old[8];
#pragma unroll
        for (int jj = 0; jj < 4; jj++) {
            const int byte = 8 * (t % 4) + 32 * jj;
            old[2 * jj] = *(const float2 *)(cb + tc_swizzle128(lr, byte));
            old[2 * jj + 1] = *(const float2 *)(cb + tc_swizzle128(lr + 8, byte));
        }
        tc_fence_proxy_async(); /* the reads above before the next TMA into this buffer */
        tc_mbar_arrive(&cempty[b]);
#pragma unroll
        for (int jj = 0; jj < 4; jj++) {
            const int j = 4 * i + jj, col = c + 8 * j;
            const float *q = &d[4 * j];
            const float2 o0 = old[2 * jj], o1 = old[2 * jj + 1];
            tc_put_pair(C, M, N, r, col,
                        make_float2(alpha * q[0] + beta * o0.x, alpha * q[1] + beta * o0.y), pairs);
            tc_put_pair(C, M, N, r + 8, col,
                        make_float2(alpha * q[2] + beta * o1.x, alpha * q[3] + beta * o1.y), pairs);
        }
    }
#endif
}

template <typename T, int STAGES, int NBUF> __global__ void __launch_bounds__(384, 1)
    tc_wgmma_cload_kernel(const __grid_constant__ CUtensorMap map_a,
                          const __grid_constant__ CUtensorMap map_b,
                          const __grid_constant__ CUtensorMap map_c, int M, int N, int K,
                          float alpha, float beta, float *C, bool pairs, bool cload)
{
#ifdef TC_WGMMA_DEVICE
    constexpr int BM = 128, BN = 256, BK = TcWgType<T>::BK;
    constexpr int A_BYTES = BM * TC_ROW_BYTES, STAGE_BYTES = A_BYTES + BN * TC_ROW_BYTES;
    __shared__ uint64_t full[STAGES], empty[STAGES], cfull[NBUF], cempty[NBUF];
    extern __shared__ uint8_t tc_smem_raw[];
    uint8_t *smem = tc_align1024(tc_smem_raw);
    uint8_t *cbuf = smem + STAGES * STAGE_BYTES; /* 1024-byte aligned: the swizzle's atom */
    const int wg = threadIdx.x / 128;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, k_count = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
        tc_mbar_init_ring(full, empty, STAGES, 256);
        tc_mbar_init_ring(cfull, cempty, NBUF, 256); /* C's buffers, the same way */
        tc_mbar_fence_init();
    }
    __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) /* A and Bt, as step 7 */
            tc_produce_prefetch<STAGES, BM, BN, BK>(smem, full, empty, &map_a, &map_b, &map_c,
                                                    false, tiles_m, tiles_n, k_count);
        if (threadIdx.x == 32 && cload) { /* C, chunk after chunk, as buffers come free */
            int g = 0;
            for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
                int m0, n0;
                tc_tile_origin(tile, tiles_m, tiles_n, BM, BN, &m0, &n0);
                for (int i = 0; i < BN / TC_CHUNK_COLS; i++, g++) {
                    const int b = g % NBUF;
                    tc_mbar_wait(&cempty[b], tc_empty_parity(g, NBUF));
                    tc_mbar_arrive_expect(&cfull[b], TC_CHUNK_BYTES);
                    tc_tma_load(cbuf + b * TC_CHUNK_BYTES, &map_c, &cfull[b],
                                n0 + TC_CHUNK_COLS * i, m0);
                }
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    int it = 0, g = 0, rows = 64 * (wg - 1);
    for (int tile = blockIdx.x; tile < tiles_m * tiles_n; tile += gridDim.x) {
        int m0, n0;
        tc_tile_origin(tile, tiles_m, tiles_n, BM, BN, &m0, &n0);
        float d[BN / 2];
        tc_consume_tile<T, BN, STAGES>(d, smem, STAGE_BYTES, A_BYTES, rows, full, k_count, it,
                                       [&](int stage) { tc_mbar_arrive(&empty[stage]); });
        if (cload)
            tc_epilogue_chunks<BN, NBUF>(d, cbuf, cfull, cempty, g, C, M, N, rows, m0, n0, alpha,
                                         beta, pairs);
        else
            tc_epilogue<BN, TC_EPI_STORE>(d, C, M, N, m0 + rows, n0, alpha, beta, pairs);
    }
#endif
}

/* C's tensor map for the chunks: M x N fp32 in boxes of 128 rows x 32 columns, 128-byte
 * swizzled (N % 4 == 0 and C 16-byte aligned: TMA's 16-byte strides). False, and the map
 * zeroed, if the driver refuses it. */
static inline bool tc_chunk_map(CUtensorMap *map, const float *C, int M, int N)
{
    memset(map, 0, sizeof *map);
    cuuint64_t dims[2] = {(cuuint64_t)N, (cuuint64_t)M};
    cuuint64_t strides[1] = {(cuuint64_t)N * sizeof(float)};
    cuuint32_t box[2] = {TC_CHUNK_COLS, 128};
    cuuint32_t step[2] = {1, 1};
    CUresult r =
        tc_encode_fn()(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void *)C, dims, strides, box, step,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) memset(map, 0, sizeof *map);
    return r == CUDA_SUCCESS;
}

/* Whether step 18 reads C through shared memory in this call (else its epilogue is step 7's). */
static inline bool tc_cload_applies(int N, float beta, const float *C)
{
    return beta != 0.0f && N % 4 == 0 && sgemm_aligned16(C);
}

#define TC_CLOAD_STAGES 4 /* stages of A and Bt, 48 KB each */
#define TC_CLOAD_BUFS 2   /* buffers of C's chunks */

/* The kernel's dynamic shared memory: the stages, 1 KB to align them, the buffers. */
static inline int tc_cload_smem(void)
{
    return tc_stage_smem(128, 256, TC_CLOAD_STAGES) + TC_CLOAD_BUFS * TC_CHUNK_BYTES;
}

template <typename T> static inline void
tc_wgmma_cload(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta, float *C)
{
    constexpr int STAGES = TC_CLOAD_STAGES, NBUF = TC_CLOAD_BUFS;
    static bool attr_set = false;
    tc_wgmma_require(K, A, Bt);
    int smem = tc_cload_smem();
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(tc_wgmma_cload_kernel<T, STAGES, NBUF>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        attr_set = true;
    }
    int tiles = sgemm_ceil_div(M, 128) * sgemm_ceil_div(N, 256), sms = sgemm_sm_count();
    int blocks = tiles < sms ? tiles : sms;
    CUtensorMap ma = tc_tensor_map(A, M, K, 128), mb = tc_tensor_map(Bt, N, K, 256), mc;
    memset(&mc, 0, sizeof mc);
    bool cload = tc_cload_applies(N, beta, C) && tc_chunk_map(&mc, C, M, N);
    tc_wgmma_cload_kernel<T, STAGES, NBUF>
        <<<blocks, 384, smem>>>(ma, mb, mc, M, N, K, alpha, beta, C, tc_c_pairs(N, C), cload);
    CHECK_LAUNCH();
}

static inline void tc_wgmma_cload_bf16(int M, int N, int K, float alpha, const bf16 *A,
                                       const bf16 *Bt, float beta, float *C)
{
    tc_wgmma_cload(M, N, K, alpha, A, Bt, beta, C);
}

static inline void tc_wgmma_cload_tf32(int M, int N, int K, float alpha, const float *A,
                                       const float *Bt, float beta, float *C)
{
    tc_wgmma_cload(M, N, K, alpha, A, Bt, beta, C);
}

#endif
