/* Chapter 05, sgemm_best: the launcher to call (chapter 07 does). For each shape it asks
 * the model of model.h which way to run it is fastest on this GPU, and runs that:
 *   - one of six tiles of the pipelined kernel: hopper's 128x256, splitk_8x8's 64x128,
 *     hopper_small's 64x64, thin_m's 32x128, thin_n's 128x32 and thin_n_8x8's 128x64;
 *   - K split into ranges (split-K) when the tiles alone cannot fill the SMs, or, for a
 *     product with no more tiles than one round of the tile, stream-K (02_streamk.cuh):
 *     every slot gets the same number of k steps;
 *   - or two launches: the tile rows that fill whole waves of one tile, then the rows
 *     left over (the remainder wave) with whatever suits them;
 *   - gemv's untiled kernel for a C of at most 8 rows (04_gemv.cuh);
 *   - and, before any of it, B copied into rows padded to a multiple of 4 floats when N is
 *     not one and the product is large enough to pay for the copy (16-byte copies of B).
 * The model needs the GPU's SM count, clock and memory bandwidth and each kernel's
 * occupancy, all asked of the CUDA runtime here; nothing in it is tuned per GPU. Plans are
 * remembered per shape, so a program calling the same shapes (chapter 07) pays for the
 * model once per shape. */
#ifndef CH05_ANY_SHAPE_BEST_CUH
#define CH05_ANY_SHAPE_BEST_CUH

#include <stdlib.h>

#include "05_matmul_tiled/fp32/00_common.cuh"
#include "05_matmul_tiled/any_shape/04_gemv.cuh"
#include "05_matmul_tiled/any_shape/model.h"
#include "05_matmul_tiled/fp32/10_hopper.cuh"
#include "05_matmul_tiled/any_shape/01_splitk.cuh"
#include "05_matmul_tiled/any_shape/02_streamk.cuh"
#include "05_matmul_tiled/any_shape/03_thin.cuh"

/* One launch of tile t with `splits` K ranges: the launcher of each SGEMM_TILE_*. */
typedef void (*SgemmTileLauncher)(int M, int N, int K, float alpha, const float *A, const float *B,
                                  int ldb, float beta, float *C, int splits);
static const SgemmTileLauncher SGEMM_TILE_LAUNCHERS[SGEMM_NTILES] = {
    sgemm_pipelined_launch<SgemmHopperCfg>, sgemm_pipelined_launch<SgemmSplitWideCfg>,
    sgemm_pipelined_launch<SgemmSmallCfg>,  sgemm_pipelined_launch<SgemmThinMCfg>,
    sgemm_pipelined_launch<SgemmThinNCfg>,  sgemm_pipelined_launch<SgemmThinN8x8Cfg>};
/* ... and with the stream-K schedule. */
static const SgemmTileLauncher SGEMM_TILE_STREAMK_LAUNCHERS[SGEMM_NTILES] = {
    sgemm_streamk_launch<SgemmHopperCfg>, sgemm_streamk_launch<SgemmSplitWideCfg>,
    sgemm_streamk_launch<SgemmSmallCfg>,  sgemm_streamk_launch<SgemmThinMCfg>,
    sgemm_streamk_launch<SgemmThinNCfg>,  sgemm_streamk_launch<SgemmThinN8x8Cfg>};

/* The tile's geometry as compiled (sweep.sh rebuilds hopper with other values), and the
 * blocks per SM of its unsplit, split and stream-K kernels. */
template <typename Cfg> static inline void sgemm_best_tile(SgemmMachine *m, int t)
{
    m->tiles[t] = SGEMM_TILES[t];
    m->tiles[t].bm = Cfg::BM, m->tiles[t].bn = Cfg::BN, m->tiles[t].bk = Cfg::BK;
    m->tiles[t].warps = Cfg::THREADS / 32;
    m->occupancy[t] = sgemm_pipelined_occupancy<Cfg, SGEMM_EPI_STORE>();
    m->split_occupancy[t] = sgemm_pipelined_occupancy<Cfg, SGEMM_EPI_ATOMIC4>();
    m->streamk_occupancy[t] = sgemm_streamk_occupancy<Cfg>();
}

/* What the model knows of this GPU, asked once. */
static inline const SgemmMachine *sgemm_best_machine(void)
{
    static SgemmMachine m;
    static bool ready = false;
    if (ready) return &m;
    DeviceInfo info; /* compute capability, memory peak from clock and bus width */
    get_device_info(&info);
    int clock_khz = current_device_attribute(cudaDevAttrClockRate);
    /* A GPU that reports no clock or memory numbers gets typical ones: only their ratio
     * to each other and to launch_us matters to the choice. */
    if (clock_khz <= 0) clock_khz = 1500000;
    double mem_gbs = info.peak_mem_gbs > 0.0 ? info.peak_mem_gbs : 1024.0;
    /* fp32 FMA lanes per SM: 64 on sm_70 and sm_80, 128 from sm_86 on (Hopper: 128). */
    int lanes = (info.major == 7 || (info.major == 8 && info.minor == 0)) ? 64 : 128;
    m.sms = sgemm_sm_count();
    m.fma_per_us = lanes * (clock_khz / 1e3);
    m.dram_bytes_per_us = mem_gbs * 1e3;
    m.launch_us = 2.0; /* measured: the C = beta * C launch of split-K */
    sgemm_best_tile<SgemmHopperCfg>(&m, SGEMM_TILE_HOPPER);
    sgemm_best_tile<SgemmSplitWideCfg>(&m, SGEMM_TILE_WIDE);
    sgemm_best_tile<SgemmSmallCfg>(&m, SGEMM_TILE_SMALL);
    sgemm_best_tile<SgemmThinMCfg>(&m, SGEMM_TILE_THIN_M);
    sgemm_best_tile<SgemmThinNCfg>(&m, SGEMM_TILE_THIN_N);
    sgemm_best_tile<SgemmThinN8x8Cfg>(&m, SGEMM_TILE_THIN_N_8X8);
    ready = true;
    return &m;
}

/* ---------------------------------------------------------------------------------------
 * B in padded rows: dst (K x ld, ld = N rounded up to SGEMM_PAD_LD) = B, zeros in the extra
 * columns, so every row starts 16-byte aligned (see SGEMM_PAD_LD). One thread per float4
 * of dst. It reads B once and writes it once: a small share of the product it serves. */
__global__ void sgemm_pad_rows_kernel(const float *B, int rows, int cols, float *dst, int ld)
{
    size_t quads = (size_t)rows * (ld / 4);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < quads;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / (ld / 4);
        int c = (int)(i % (ld / 4)) * 4;
        const float *src = B + r * cols;
        float4 v;
        v.x = c < cols ? src[c] : 0.0f;
        v.y = c + 1 < cols ? src[c + 1] : 0.0f;
        v.z = c + 2 < cols ? src[c + 2] : 0.0f;
        v.w = c + 3 < cols ? src[c + 3] : 0.0f;
        *(float4 *)(dst + r * ld + c) = v;
    }
}

/* The scratch buffers for the padded B, one per GPU (chapter 07's data-parallel trainer
 * launches on several from one thread): grown when a larger one is needed (which
 * synchronizes the GPU, so a timed loop meets it in its warm-up run), freed at exit. */
#define SGEMM_BEST_DEVICES 16
static float *sgemm_best_scratch[SGEMM_BEST_DEVICES];
static size_t sgemm_best_scratch_bytes[SGEMM_BEST_DEVICES];

static void sgemm_best_free_scratch(void)
{
    for (int d = 0; d < SGEMM_BEST_DEVICES; d++)
        if (sgemm_best_scratch[d]) cudaFree(sgemm_best_scratch[d]);
}

/* The padded copy of B on the current GPU, or NULL when there is none and none may be made
 * now (a CUDA graph is being captured: no allocation then; or a GPU past the 16th). */
static inline const float *sgemm_best_padded_b(const float *B, int K, int N, int ld)
{
    static bool registered = false;
    size_t bytes = (size_t)K * ld * sizeof(float);
    int dev;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev >= SGEMM_BEST_DEVICES) return NULL;
    if (bytes > sgemm_best_scratch_bytes[dev]) {
        cudaStreamCaptureStatus capturing;
        CUDA_CHECK(cudaStreamIsCapturing(0, &capturing));
        if (capturing != cudaStreamCaptureStatusNone) return NULL;
        if (!registered) atexit(sgemm_best_free_scratch), registered = true;
        if (sgemm_best_scratch[dev]) CUDA_CHECK(cudaFree(sgemm_best_scratch[dev]));
        CUDA_CHECK(cudaMalloc(&sgemm_best_scratch[dev], bytes));
        sgemm_best_scratch_bytes[dev] = bytes;
    }
    size_t quads = (size_t)K * (ld / 4), blocks = (quads + 255) / 256;
    sgemm_pad_rows_kernel<<<(int)(blocks < 4096 ? blocks : 4096), 256>>>(
        B, K, N, sgemm_best_scratch[dev], ld);
    CHECK_LAUNCH();
    return sgemm_best_scratch[dev];
}

/* ---------------------------------------------------------------------------------------
 * The model's plan for a shape, remembered: the last SGEMM_BEST_CACHE shapes asked. */
#define SGEMM_BEST_CACHE 32
typedef struct {
    int M, N, K, beta_kind, b_aligned; /* beta_kind: 0 for beta == 0, 1 for beta == 1, else 2 */
    SgemmPlan plan;
} SgemmCachedPlan;

static inline SgemmPlan sgemm_best_plan(int M, int N, int K, float beta, int b_aligned)
{
    static SgemmCachedPlan cache[SGEMM_BEST_CACHE];
    static int used = 0, next = 0;
    int beta_kind = beta == 0.0f ? 0 : (beta == 1.0f ? 1 : 2);
    for (int i = 0; i < used; i++) {
        const SgemmCachedPlan *c = &cache[i];
        if (c->M == M && c->N == N && c->K == K && c->beta_kind == beta_kind &&
            c->b_aligned == b_aligned)
            return c->plan;
    }
    SgemmPlan plan = sgemm_model_plan(sgemm_best_machine(), M, N, K, beta, b_aligned);
    SgemmCachedPlan c = {M, N, K, beta_kind, b_aligned, plan};
    cache[next] = c;
    next = (next + 1) % SGEMM_BEST_CACHE;
    if (used < SGEMM_BEST_CACHE) used++;
    return c.plan;
}

/* What sgemm_best runs for this call (the bench prints it next to the prediction). */
static inline SgemmPlan sgemm_best_plan_for(int M, int N, int K, float beta, const float *B)
{
    return sgemm_best_plan(M, N, K, beta, N % 4 == 0 && sgemm_aligned16(B));
}

/* Runs plan p for this shape: the model's (sgemm_best below), or another one a caller has
 * chosen for the same shape (chapter 07 times a few inside a CUDA graph:
 * 07_mnist_mlp/part1_fused/04_gemm_tune.cuh). */
static inline void sgemm_best_run(const SgemmPlan *plan, int M, int N, int K, float alpha,
                                  const float *A, const float *B, float beta, float *C)
{
    SgemmPlan p = *plan;
    if (p.gemv_splits > 0) {
        sgemm_gemv_rows(M, N, K, alpha, A, B, beta, C);
        return;
    }
    int ldb = N;
    if (p.pack_b) {
        int ld = sgemm_padded_ld(N);
        const float *padded = sgemm_best_padded_b(B, K, N, ld);
        if (padded) B = padded, ldb = ld;
    }
    if (p.top_rows > 0)
        SGEMM_TILE_LAUNCHERS[p.top.tile](p.top_rows, N, K, alpha, A, B, ldb, beta, C, 1);
    const SgemmTileLauncher *rest =
        p.rest.streamk ? SGEMM_TILE_STREAMK_LAUNCHERS : SGEMM_TILE_LAUNCHERS;
    rest[p.rest.tile](M - p.top_rows, N, K, alpha, A + (size_t)p.top_rows * K, B, ldb, beta,
                      C + (size_t)p.top_rows * N, p.rest.splits);
}

static inline void sgemm_best(int M, int N, int K, float alpha, const float *A, const float *B,
                              float beta, float *C)
{
    SgemmPlan p = sgemm_best_plan_for(M, N, K, beta, B);
    sgemm_best_run(&p, M, N, K, alpha, A, B, beta, C);
}

#endif
