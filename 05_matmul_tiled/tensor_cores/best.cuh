/* Chapter 05, part two: tc_best_bf16 and tc_best_tf32, the tensor-core versions to call
 * (chapter 07's tensor-core trainers do). Same contract as every tensor-core version
 * (common.cuh): any M, N, K >= 1, any pointers. For each shape they ask the model of
 * model.h which way to run it is fastest on this GPU, and run that:
 *   - on a Hopper GPU with an sm_90a build, one of the wgmma kernels: wgmma's 128x128 tiles,
 *     wgmma_ws's 128x256 or 128x128, the persistent kernel (step 7's or, where the epilogue
 *     reads C, step 18's), the cluster kernel, or split-K with 64x128 tiles and a split
 *     count of the model's; or two launches, the tile rows that fill whole rounds of one
 *     kernel and then the rows left over;
 *   - where TMA cannot describe A or Bt (K not a multiple of 8 for bf16 or 4 for TF32, an
 *     unaligned pointer), the same on padded copies of the operands TMA refuses
 *     (10_wgmma_padded.cuh), or an mma.sync kernel on the operands as they are (the pipeline,
 *     or, in TF32, the skinny kernel with its split count: 15_mma_skinny.cuh), whichever
 *     the model predicts faster (the pipeline always during a CUDA graph capture, which
 *     cannot allocate the copies' buffers);
 *   - everywhere else (an older GPU, a build without sm_90a): the mma.sync pipeline.
 * The model needs the GPU's SM count, clock and memory bandwidth and each kernel's blocks
 * per SM, asked of the CUDA runtime here, and two fitted numbers per kernel and input type
 * (best_params.h, written by records/tc_calibrate.py from a sweep's measurements). Plans are
 * remembered per shape, so a program calling the same shapes (chapter 07) pays for the
 * model once per shape. */
#ifndef CH05_TENSOR_CORES_BEST_CUH
#define CH05_TENSOR_CORES_BEST_CUH

#include "05_matmul_tiled/tensor_cores/04_mma_pipeline.cuh"
#include "05_matmul_tiled/tensor_cores/05_wgmma.cuh"
#include "05_matmul_tiled/tensor_cores/07_wgmma_persistent.cuh"
#include "05_matmul_tiled/tensor_cores/08_wgmma_cluster.cuh"
#include "05_matmul_tiled/tensor_cores/09_wgmma_splitk.cuh"
#include "05_matmul_tiled/tensor_cores/10_wgmma_padded.cuh"
#include "05_matmul_tiled/tensor_cores/11_wgmma_ws_128x128.cuh"
#include "05_matmul_tiled/tensor_cores/15_mma_skinny.cuh"
#include "05_matmul_tiled/tensor_cores/18_wgmma_cload.cuh"
#include "05_matmul_tiled/tensor_cores/best_params.h"
#include "05_matmul_tiled/tensor_cores/model.h"

/* Per input type: one SM's dense tensor-core flops a clock on sm_90 (bf16 twice TF32's), and
 * the fitted parameters. */
template <typename T> struct TcBestType;
template <> struct TcBestType<bf16> {
    static constexpr int FLOPS_PER_CLOCK = 4096;
    static const TcParams *params(void) { return &TC_PARAMS_BF16; }
};
template <> struct TcBestType<float> {
    static constexpr int FLOPS_PER_CLOCK = 2048;
    static const TcParams *params(void) { return &TC_PARAMS_TF32; }
};

/* Blocks per SM of `kernel` with `threads` threads and `smem` bytes of dynamic shared
 * memory (its limit raised first, as its launcher does). */
template <typename Kernel> static inline int tc_best_occupancy(Kernel kernel, int threads, int smem)
{
    int blocks = 0;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, smem));
    return blocks;
}

/* What the model knows of this GPU and input type, asked once (only where the wgmma
 * kernels can run). */
template <typename T> static inline const TcMachine *tc_best_machine(void)
{
    static TcMachine m;
    static bool ready = false;
    if (ready) return &m;
    memset(&m, 0, sizeof m);
    DeviceInfo info; /* memory peak from clock and bus width */
    get_device_info(&info);
    int clock_khz = current_device_attribute(cudaDevAttrClockRate);
    /* A GPU that reports no clock or memory numbers gets typical ones. */
    if (clock_khz <= 0) clock_khz = 1500000;
    double mem_gbs = info.peak_mem_gbs > 0.0 ? info.peak_mem_gbs : 1024.0;
    m.sms = sgemm_sm_count();
    m.flops_per_us = TcBestType<T>::FLOPS_PER_CLOCK * (clock_khz / 1e3);
    m.dram_bytes_per_us = mem_gbs * 1e3;
    m.elem_bytes = (int)sizeof(T);
    m.bk = TcWgType<T>::BK;
    m.p = *TcBestType<T>::params();
    constexpr int S = TC_WS_STAGES;
    m.occupancy[TC_CAND_WGMMA] = tc_best_occupancy(tc_wgmma_kernel<T, 128, TC_WGMMA_STAGES>, 256,
                                                   tc_stage_smem(128, 128, TC_WGMMA_STAGES));
    m.occupancy[TC_CAND_WS] = tc_best_occupancy(tc_wgmma_ws_kernel<T, 256, S, 2, TC_EPI_STORE>, 384,
                                                tc_stage_smem(128, 256, S));
    m.occupancy[TC_CAND_WS_128] = tc_best_occupancy(tc_wgmma_ws_kernel<T, 128, S, 2, TC_EPI_STORE>,
                                                    384, tc_stage_smem(128, 128, S));
    m.occupancy[TC_CAND_PERSISTENT] = m.occupancy[TC_CAND_WS]; /* the same kernel */
    m.cluster_fit = tc_wgmma_cluster_fit<T>();
    m.occupancy[TC_CAND_CLUSTER] = m.cluster_fit > 0 ? 1 : 0;
    m.occupancy[TC_CAND_SPLITK] = tc_best_occupancy(tc_wgmma_ws_kernel<T, 128, S, 1, TC_EPI_ADD>,
                                                    256, tc_stage_smem(64, 128, S));
    m.occupancy[TC_CAND_PIPELINE] =
        tc_best_occupancy(tc_mma_kernel<TcMmaPipeCfg<T>, TC_EPI_STORE>, TcMmaPipeCfg<T>::THREADS,
                          TcMmaPipeCfg<T>::SMEM_BYTES);
    /* bf16 never: its element-wise copy waits for its loads (15_mma_skinny.cuh) */
    m.occupancy[TC_CAND_SKINNY] = sizeof(T) == 4 ? tc_mma_skinny_occupancy<T>() : 0;
    m.occupancy[TC_CAND_CLOAD] = tc_best_occupancy(
        tc_wgmma_cload_kernel<T, TC_CLOAD_STAGES, TC_CLOAD_BUFS>, 384, tc_cload_smem());
    ready = true;
    return &m;
}

/* The model's plan for a shape, remembered: the last TC_BEST_CACHE shapes asked, per input
 * type. a_ok, b_ok: TMA can describe A, Bt as they are. */
#define TC_BEST_CACHE 32
typedef struct {
    int M, N, K, beta_kind, a_ok, b_ok; /* beta_kind: 0 for beta == 0, 1 for beta == 1, else 2 */
    TcPlan plan;
} TcCachedPlan;

template <typename T>
static inline TcPlan tc_best_plan(int M, int N, int K, float beta, int a_ok, int b_ok)
{
    static TcCachedPlan cache[TC_BEST_CACHE];
    static int used = 0, next = 0;
    int beta_kind = beta == 0.0f ? 0 : (beta == 1.0f ? 1 : 2);
    for (int i = 0; i < used; i++) {
        const TcCachedPlan *c = &cache[i];
        if (c->M == M && c->N == N && c->K == K && c->beta_kind == beta_kind && c->a_ok == a_ok &&
            c->b_ok == b_ok)
            return c->plan;
    }
    TcPlan plan = tc_model_plan(tc_best_machine<T>(), M, N, K, beta, a_ok, b_ok);
    TcCachedPlan c = {M, N, K, beta_kind, a_ok, b_ok, plan};
    cache[next] = c;
    next = (next + 1) % TC_BEST_CACHE;
    if (used < TC_BEST_CACHE) used++;
    return plan;
}

/* What tc_best runs for this call on a GPU where the wgmma kernels run (the bench prints it
 * next to the prediction). */
template <typename T>
static inline TcPlan tc_best_plan_for(int M, int N, int K, float beta, const T *A, const T *Bt)
{
    int stride_ok = ((size_t)K * sizeof(T)) % 16 == 0;
    return tc_best_plan<T>(M, N, K, beta, stride_ok && sgemm_aligned16(A),
                           stride_ok && sgemm_aligned16(Bt));
}

/* One launch of a plan: candidate p->cand on M x N x K (A and Bt rows K elements long). */
template <typename T> static inline void tc_best_launch(const TcPart *p, int M, int N, int K,
                                                        float alpha, const T *A, const T *Bt,
                                                        float beta, float *C)
{
    switch (p->cand) {
        case TC_CAND_WGMMA: tc_wgmma_launch(M, N, K, alpha, A, Bt, beta, C); break;
        case TC_CAND_WS:
            tc_wgmma_ws_launch<T, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
            break;
        case TC_CAND_WS_128:
            tc_wgmma_ws_launch<T, 128, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
            break;
        case TC_CAND_PERSISTENT:
            tc_wgmma_ws_launch<T, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C,
                                                        sgemm_sm_count(), 1);
            break;
        case TC_CAND_CLOAD: tc_wgmma_cload(M, N, K, alpha, A, Bt, beta, C); break;
        case TC_CAND_CLUSTER: tc_wgmma_cluster(M, N, K, alpha, A, Bt, beta, C); break;
        case TC_CAND_SPLITK: tc_wgmma_splitk_by(M, N, K, alpha, A, Bt, beta, C, p->splits); break;
        case TC_CAND_SKINNY: tc_mma_skinny_by(M, N, K, alpha, A, Bt, beta, C, p->splits); break;
        default: tc_mma_pipeline_launch(M, N, K, alpha, A, Bt, beta, C); break;
    }
}

/* Runs plan p for this shape: the model's (tc_best below), or another one a caller has
 * chosen for the same shape. The operands TMA refuses are copied first; where the copies'
 * buffers cannot be had (a graph capture), the mma.sync pipeline runs instead. */
template <typename T> static inline void tc_best_run(const TcPlan *plan, int M, int N, int K,
                                                     float alpha, const T *A, const T *Bt,
                                                     float beta, float *C)
{
    const TcPlan p = *plan;
    if (p.pad_a || p.pad_b) {
        const T *pa, *pb;
        if (!tc_pad_operands(M, N, K, p.k, A, Bt, p.pad_a != 0, p.pad_b != 0, &pa, &pb)) {
            tc_mma_pipeline_launch(M, N, K, alpha, A, Bt, beta, C);
            return;
        }
        A = pa, Bt = pb, K = p.k;
    }
    if (p.top_rows > 0) tc_best_launch(&p.top, p.top_rows, N, K, alpha, A, Bt, beta, C);
    tc_best_launch(&p.rest, M - p.top_rows, N, K, alpha, A + (size_t)p.top_rows * K, Bt, beta,
                   C + (size_t)p.top_rows * N);
}

template <typename T> static inline void tc_best(int M, int N, int K, float alpha, const T *A,
                                                 const T *Bt, float beta, float *C)
{
    if (tc_wgmma_unavailable()) {
        tc_mma_pipeline_launch(M, N, K, alpha, A, Bt, beta, C);
        return;
    }
    TcPlan p = tc_best_plan_for<T>(M, N, K, beta, A, Bt);
    tc_best_run(&p, M, N, K, alpha, A, Bt, beta, C);
}

/* The split count tc_best gives this product, with beta == 1 (chapter 07 accumulates into
 * C), where it runs it as one tc_wgmma_splitk launch on the operands as they are; 0 where it
 * takes another path. (Chapter 07 times the counts around it inside its epoch's graph.) */
template <typename T> static inline int tc_best_splits(int M, int N, int K, const T *A, const T *Bt)
{
    if (tc_wgmma_unavailable()) return 0;
    TcPlan p = tc_best_plan_for<T>(M, N, K, 1.0f, A, Bt);
    if (p.pad_a || p.pad_b || p.top_rows > 0 || p.rest.cand != TC_CAND_SPLITK) return 0;
    return p.rest.splits;
}

static inline void tc_best_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                                float beta, float *C)
{
    tc_best(M, N, K, alpha, A, Bt, beta, C);
}

static inline void tc_best_tf32(int M, int N, int K, float alpha, const float *A, const float *Bt,
                                float beta, float *C)
{
    tc_best(M, N, K, alpha, A, Bt, beta, C);
}

#endif
