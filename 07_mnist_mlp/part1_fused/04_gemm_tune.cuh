/* Chapter 07: the plans of the fused step's two products, chosen by timing them inside a CUDA
 * graph. Chapter 05's model picks a tile and a split count from each product's shape, fitted to
 * products timed one launch at a time, where a launch costs more and every extra block of a split
 * costs its share. Inside the epoch graph a launch costs less, and the model's choice is not always
 * the fastest there: a thinner tile split more ways, or more K ranges than the model's, can win.
 * So, as torch.compile's max-autotune does for its kernels, a trainer times a few plans next to the
 * model's, each as 20 launches in a row captured in one graph, and keeps the fastest. Any plan
 * computes the same product (only the order of the sums changes), so the choice can only change the
 * time. A product the model gives to gemv, to two launches or to a padded B keeps the model's plan.
 * The tensor-core trainers' products (tc_tune, below) are timed the same way over the one choice
 * chapter 05's wgmma split-K leaves: how many K ranges. */
#ifndef CH07_GEMM_TUNE_CUH
#define CH07_GEMM_TUNE_CUH

#include <stdio.h>

#include "05_matmul_tiled/kernels.cuh"
#include "common/cuda_utils.cuh"

#define GEMM_TUNE_LAUNCHES 20
#define GEMM_TUNE_REPLAYS 3
#define GEMM_TUNE_WARM_MS 20.0 /* replays before the timed ones: the GPU at its clock */
#define GEMM_TUNE_MAX 12

/* --check sets it: its trainers keep the model's plans (the other plans are other tiles and
 * split counts of chapter 05's kernels; timing them under compute-sanitizer takes minutes). */
static int gemm_tune_off = 0;

/* One product's shape and the plan it runs. */
typedef struct {
    int M, N, K;
    SgemmPlan plan;
} TunedGemm;

/* Stream capture on the per-thread default stream (where every launch of the chapter
 * goes), and the executable graph of what was captured; driver/epochs.cuh builds the step and
 * epoch graphs with the same two. */
static void begin_capture(void)
{
    CUDA_CHECK(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeThreadLocal));
}

static cudaGraphExec_t end_capture(void)
{
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamEndCapture(cudaStreamPerThread, &g));
    CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    CUDA_CHECK(cudaGraphDestroy(g));
    return exec;
}

static void gemm_tune_replay(void *exec)
{
    CUDA_CHECK(cudaGraphLaunch(*(cudaGraphExec_t *)exec, cudaStreamPerThread));
}

/* Microseconds of one launch(ctx): the median of GEMM_TUNE_REPLAYS replays of a graph of
 * GEMM_TUNE_LAUNCHES launches in a row, divided by the launches, after GEMM_TUNE_WARM_MS of
 * replays: the tuning runs as a trainer is made, often the first GPU work of the process,
 * and without them the first candidates could be timed before the GPU has left its idle
 * clock. The first launch, outside the capture, does any one-time set-up. */
static double graph_us_per_launch(void (*launch)(const void *), const void *ctx)
{
    launch(ctx);
    begin_capture();
    for (int i = 0; i < GEMM_TUNE_LAUNCHES; i++) launch(ctx);
    cudaGraphExec_t exec = end_capture();
    for (double t0 = wall_ms(); wall_ms() - t0 < GEMM_TUNE_WARM_MS;) {
        gemm_tune_replay(&exec);
        CUDA_CHECK(cudaStreamSynchronize(cudaStreamPerThread));
    }
    float ms = time_median_ms(gemm_tune_replay, &exec, 1, GEMM_TUNE_REPLAYS);
    CUDA_CHECK(cudaGraphExecDestroy(exec));
    return ms * 1e3 / GEMM_TUNE_LAUNCHES;
}

/* C += A B with plan p, into a scratch C. */
typedef struct {
    const SgemmPlan *p;
    int M, N, K;
    const float *A, *B;
    float *C;
} SgemmCall;

static void sgemm_call(const void *ctx)
{
    const SgemmCall *c = (const SgemmCall *)ctx;
    sgemm_best_run(c->p, c->M, c->N, c->K, 1.0f, c->A, c->B, 1.0f, c->C);
}

/* A zeroed M x N scratch C for the timings. */
static float *gemm_tune_scratch(int M, int N)
{
    float *C = NULL;
    CUDA_CHECK(cudaMalloc(&C, (size_t)M * N * sizeof(float)));
    CUDA_CHECK(cudaMemset(C, 0, (size_t)M * N * sizeof(float)));
    return C;
}

/* The plans tried next to the model's p0: its tile and three others (splitk_8x8's 64x128,
 * thin_m's 32x128, hopper_small's 64x64), each with p0's split count, half and twice it. */
static int gemm_tune_candidates(const SgemmPlan *p0, SgemmPlan *out)
{
    const SgemmMachine *m = sgemm_best_machine();
    const int tiles[] = {p0->rest.tile, SGEMM_TILE_WIDE, SGEMM_TILE_THIN_M, SGEMM_TILE_SMALL};
    int s = p0->rest.splits, splits[] = {s, s / 2, 2 * s}, n = 0;
    for (int a = 0; a < 4; a++) {
        if (m->occupancy[tiles[a]] <= 0 || (a > 0 && tiles[a] == p0->rest.tile)) continue;
        for (int b = 0; b < 3 && n < GEMM_TUNE_MAX; b++) {
            if (splits[b] < 1 || (b > 0 && splits[b] == s)) continue;
            SgemmPlan c = *p0;
            c.rest.tile = tiles[a];
            c.rest.splits = splits[b];
            c.rest.streamk = 0;
            out[n++] = c;
        }
    }
    return n;
}

/* The fastest of the candidates for C (M x N) += A (M x K) B, timed on the given operands
 * into a scratch C; prints what it chose next to the model's choice. */
static TunedGemm gemm_tune(const char *who, int M, int N, int K, const float *A, const float *B)
{
    TunedGemm t = {M, N, K, sgemm_best_plan_for(M, N, K, 1.0f, B)};
    const SgemmPlan p0 = t.plan;
    if (gemm_tune_off || p0.gemv_splits > 0 || p0.top_rows > 0 || p0.pack_b) return t;
    SgemmPlan cand[GEMM_TUNE_MAX];
    int n = gemm_tune_candidates(&p0, cand);
    float *C = gemm_tune_scratch(M, N);
    double best_us = 0.0, model_us = 0.0;
    for (int i = 0; i < n; i++) {
        SgemmCall call = {&cand[i], M, N, K, A, B, C};
        double us = graph_us_per_launch(sgemm_call, &call);
        if (i == 0) model_us = us;
        if (i == 0 || us < best_us) best_us = us, t.plan = cand[i];
    }
    CUDA_CHECK(cudaFree(C));
    char chosen[96], model[96];
    sgemm_model_describe(sgemm_best_machine(), &t.plan, chosen, sizeof chosen);
    sgemm_model_describe(sgemm_best_machine(), &p0, model, sizeof model);
    printf("  %s: %dx%dx%d in a graph: %s, %.2f us (the model's %s: %.2f us)\n", who, M, N, K,
           chosen, best_us, model, model_us);
    return t;
}

/* ---------------------------------------- the tensor-core products (tf32, bf16 trainers) */

/* One tensor-core product's shape and its split count (0: tc_best's own choice, which is
 * not split-K for this shape). */
typedef struct {
    int M, N, K, splits;
} TunedTc;

/* C += A . Bt^T with tc_wgmma_splitk_by(splits), into a scratch C. */
template <typename T> struct TcCall {
    int M, N, K, splits;
    const T *A, *Bt;
    float *C;
};

template <typename T> static void tc_call(const void *ctx)
{
    const TcCall<T> *c = (const TcCall<T> *)ctx;
    tc_wgmma_splitk_by(c->M, c->N, c->K, 1.0f, c->A, c->Bt, 1.0f, c->C, c->splits);
}

/* Where tc_best splits K (tc_best_splits), every split count that gives a different number
 * of K ranges, from 1 to one K-slice a range, timed in a graph; the fastest is kept. At
 * B = 256 chapter 05's count (about two 64x128 blocks an SM, at least two K-slices a range)
 * is the same kind of guess as the fp32 model's. */
template <typename T>
static TunedTc tc_tune(const char *who, int M, int N, int K, const T *A, const T *Bt)
{
    TunedTc t = {M, N, K, tc_best_splits(M, N, K, A, Bt)};
    if (gemm_tune_off || t.splits == 0) return t;
    int k_tiles = sgemm_ceil_div(K, TcWgType<T>::BK), model = t.splits, last = 0;
    float *C = gemm_tune_scratch(M, N);
    double best_us = 0.0, model_us = 0.0;
    for (int s = 1; s <= k_tiles; s++) {
        /* what the launch makes of s */
        int ranges = sgemm_ceil_div(k_tiles, sgemm_ceil_div(k_tiles, s));
        if (ranges == last && s != model) continue;
        last = ranges;
        TcCall<T> call = {M, N, K, s, A, Bt, C};
        double us = graph_us_per_launch(tc_call<T>, &call);
        if (s == model) model_us = us;
        if (best_us == 0.0 || us < best_us) best_us = us, t.splits = s;
    }
    CUDA_CHECK(cudaFree(C));
    printf(
        "  %s: %dx%dx%d in a graph: wgmma split-K with %d splits, %.2f us (chapter 05's %d: %.2f "
        "us)\n",
        who, M, N, K, t.splits, best_us, model, model_us);
    return t;
}

#endif
