/* Chapter 07: what a trainer is.
 *
 *   Impl          a row of the table of trainers (driver/trainer_table.cuh): a name, the family of
 *                 steps it takes, and the choices that tell it from its neighbours
 *   StepFamily    a family of steps (each *_steps.cuh: part1_fused/01_unfused_steps.cuh,
 *                 04_fused_steps.cuh, 05_fed_steps.cuh and 08_three_launch_steps.cuh,
 *                 part2_tensor_cores/01_tc_steps.cuh, part4_persistent/11_persistent_steps.cuh):
 *                 the buffers its steps need, one step (or a whole epoch in one launch), how it
 *                 evaluates, where it cannot run, what --check and --bench may do with it
 *   Trainer       one trainer's state: the data on the GPU, the parameters and velocity,
 *                 the activations every family uses, the epoch's order and losses
 *
 * Also here: the matrix products every family calls (chapter 05's or cuBLAS's, as the row
 * says), creating, filling and freeing a trainer, and the fp32 evaluation of the test set.
 * How a trainer runs its epochs (graphs included) is driver/epochs.cuh. */
#ifndef CH07_TRAINER_CUH
#define CH07_TRAINER_CUH

#include <cublas_v2.h>
#include <math.h>

#include "common/cuda_utils.cuh"
#include "common/host.h"
#include "common/versions.h"
#include "07_mnist_mlp/part1_fused/04_gemm_tune.cuh"
#include "07_mnist_mlp/kernels.cuh"

typedef struct Trainer Trainer;

enum { GEMM_NAIVE, GEMM_BEST, GEMM_CUBLAS, GEMM_TENSOR_CORES, GEMM_OWN };
enum { GRAPH_NONE, GRAPH_STEP, GRAPH_EPOCH };
enum { FEED_RESIDENT, FEED_COPY, FEED_DOUBLE_BUFFER };

/* How far --check lets a family's results be from the double-precision CPU steps: the
 * epoch's loss (relative), and normwise the last step's z1 and dz2, the velocity of the
 * hidden layer (W1, b1) and of the output layer (W2, b2), the updated parameters.
 * driver/check.cuh holds the fp32 ones, and why each is that size. */
typedef struct {
    double loss, z1, dz2, v_hidden, v_output, params;
} CheckTolerances;

#define MAX_STAGES 8 /* launches of a step the bench may time one by one */

/* A step's launches, for the bench to time one by one; or, for a step that is no launch of
 * its own (a persistent kernel's), its phases, measured inside an epoch. */
typedef struct {
    int count; /* at most MAX_STAGES */
    const char *const *names;
    void (*run)(Trainer *t, int stage);      /* launch `stage` alone (NULL: measure instead) */
    void (*measure)(Trainer *t, double *us); /* every stage's us a step at once */
} StepStages;

/* A family of steps. A new family is a file that defines one of these (and the functions
 * it points to), included by driver/trainer_table.cuh, plus its rows in IMPLS there. */
typedef struct {
    /* --check: the fused step's conventions: z1 holds no bias (it is added where z1 is
       read), and the update leaves mu v in the velocity, not v */
    int fused;
    /* its steps only enqueue GPU work and read the batch position from t->cursor, so a
       step or a whole epoch can be captured in a CUDA graph (a row's graph != GRAPH_NONE) */
    int capturable;
    /* its buffers beyond trainer_create's, kept behind t->own (NULL: none); create runs
       last in trainer_create, destroy first in trainer_destroy */
    void (*create)(Trainer *t);
    void (*destroy)(Trainer *t);
    /* before an epoch's first step, after its counters are cleared (NULL: nothing) */
    void (*begin_epoch)(Trainer *t);
    /* step s of the epoch: `batch` images, order[s * t->batch ...]. With lr 0 and mu 1 it
       must leave the parameters as they are (the warm-up before a capture relies on it) */
    void (*step)(Trainer *t, int s, int batch, float lr, float mu);
    /* test accuracy in percent, and the mean test loss into *loss if loss is not NULL */
    double (*evaluate)(Trainer *t, double *loss);
    const CheckTolerances *tolerances; /* NULL: fp32's */
    const StepStages *stages;          /* --bench: the launches it times (NULL: none) */
    /* a whole epoch in one launch, after the epoch's counters are cleared (NULL: the epoch
       is its steps, one by one or in a graph); such a family has no `step` */
    void (*epoch)(Trainer *t);
    /* why it cannot train H hidden units in batches of B on this GPU: 1 and the reason in
       why, or 0 if it can (NULL: it always can) */
    int (*unsupported)(int hidden, int batch, char *why, size_t len);
    /* --check: x's row times W1's column j as its forward sums it (NULL: one sum, as the CPU's) */
    RefZ1Sum z1_sum;
    /* after run_epoch has drawn the next epoch's order (h_next_order), while this epoch is on
       the GPU: work for the next epoch that can start now (NULL: none). A family that has
       it takes each epoch's order to the GPU itself: run_epoch leaves t->order alone */
    void (*next_order_drawn)(Trainer *t);
} StepFamily;

/* What a trainer chooses within its family of steps. */
typedef struct {
    int gemm;              /* GEMM_*: the products of gemm() below, or GEMM_TENSOR_CORES: the
                          family's own (chapter 05's tensor-core GEMMs in the row's precision),
                          or GEMM_OWN: products inside the family's own kernel */
    int feed;              /* FEED_*: the training set on the GPU, or each batch gathered on the
                          host and copied (synchronously, or double-buffered as in chapter 06);
                          the copying is the family's: FEED_COPY the unfused step's,
                          FEED_DOUBLE_BUFFER the fed step's */
    int sync_each;         /* cudaDeviceSynchronize after every launch, loss read every step */
    int graph;             /* GRAPH_* */
    const char *vs;        /* --bench: the trainer it is measured against in epoch time and in
                          accuracy (and launch by launch where both have the same steps): its
                          steps with another GEMM, or the trainer it improves on (NULL: none) */
    const char *precision; /* of its products: "fp32", "tf32" or "bf16"; PyTorch in the same
                              precision is its ceiling */
} TrainerChoices;

/* A row of the table of trainers (common/versions.h's row): its name and role, what runs it
 * (`launch`: its family of steps) and its choices within the family. */
typedef Version<const StepFamily *, TrainerChoices> Impl;

struct Trainer {
    const Impl *impl;
    MlpLayout l;
    int hidden, batch, n_train, n_test;
    float lr, mu, mean, std;
    /* data: on the GPU (and on the host for the host-fed trainers) */
    const IdxDataset *train_host;
    unsigned char *pixels, *labels, *test_pixels, *test_labels;
    int *order, *test_order, *h_order, *h_next_order; /* this epoch's order, the next one's */
    Rng shuffle_rng;
    /* parameters, velocity */
    float *params, *vel;
    /* activations */
    float *x, *xt, *z1, *dz2, *dz1;
    int *y, *cursor, *correct;
    float *step_loss, *h_step_loss, *eval_loss;
    cudaGraphExec_t step_exec[2], epoch_exec;
    void *own; /* the family's own buffers (StepFamily.create) */
    /* the fused step's two products' plans, timed (part1_fused/04_gemm_tune.cuh) */
    TunedGemm tuned[2];
    int n_tuned;
};

static cublasHandle_t CUBLAS = NULL;

/* Row-major C = alpha A B + beta C through column-major cuBLAS: C^T = B^T A^T, so the
 * operands swap places and nothing is transposed. TF32 stays off (the default math mode). */
static void sgemm_cublas(int M, int N, int K, float alpha, const float *A, const float *B,
                         float beta, float *C)
{
    if (!CUBLAS) {
        if (cublasCreate(&CUBLAS) != CUBLAS_STATUS_SUCCESS ||
            cublasSetStream(CUBLAS, cudaStreamPerThread) != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "cuBLAS could not start\n");
            exit(1);
        }
    }
    if (cublasSgemm(CUBLAS, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N) !=
        CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasSgemm failed (M %d N %d K %d)\n", M, N, K);
        exit(1);
    }
}

static void gemm(const Trainer *t, int M, int N, int K, float alpha, const float *A, const float *B,
                 float beta, float *C)
{
    if (t->impl->extra.gemm == GEMM_NAIVE)
        sgemm_naive(M, N, K, alpha, A, B, beta, C);
    else if (t->impl->extra.gemm == GEMM_BEST) {
        for (int i = 0; i < t->n_tuned; i++) {
            const TunedGemm *g = &t->tuned[i];
            if (g->M == M && g->N == N && g->K == K && beta == 1.0f) {
                sgemm_best_run(&g->plan, M, N, K, alpha, A, B, beta, C);
                return;
            }
        }
        sgemm_best(M, N, K, alpha, A, B, beta, C);
    } else if (t->impl->extra.gemm == GEMM_CUBLAS)
        sgemm_cublas(M, N, K, alpha, A, B, beta, C);
    else {
        fprintf(stderr, "internal error: trainer %s has no fp32 products\n", t->impl->name);
        exit(1);
    }
}

/* The resident training set, in the epoch's shuffled order. */
static MlpSource train_source(const Trainer *t)
{
    MlpSource s = {t->pixels, t->labels, t->order, t->mean, t->std};
    return s;
}

/* Where the fused step's gathers put a batch: x, its transpose, the labels, and z1 cleared. */
static MlpBatch fused_batch(const Trainer *t)
{
    MlpBatch b = {t->x, t->xt, t->y, t->z1, (size_t)t->batch * t->hidden};
    return b;
}

/* Whether a trainer runs an epoch as one launch: its whole-epoch graph, or its family's
 * one kernel (the bench times all its epochs, and its stages inside them). */
static int epoch_in_one_launch(const Impl *impl)
{
    return impl->extra.graph == GRAPH_EPOCH || impl->launch->epoch;
}

/* Why trainer `impl` cannot train H hidden units in batches of B on this GPU: 1 and the
 * reason in why, or 0 if it can. */
static int impl_unsupported(const Impl *impl, int hidden, int batch, char *why, size_t len)
{
    return impl->launch->unsupported ? impl->launch->unsupported(hidden, batch, why, len) : 0;
}

static int steps_per_epoch(const Trainer *t) { return (t->n_train + t->batch - 1) / t->batch; }
static int batch_of_step(const Trainer *t, int s)
{
    int left = t->n_train - s * t->batch;
    return left < t->batch ? left : t->batch;
}

static void *dalloc(size_t bytes)
{
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 4));
    return p;
}

/* Device bytes a trainer needs (checked against free memory before allocating). */
static double trainer_bytes(int hidden, int batch, int n_train, int n_test)
{
    double act =
        (double)batch * (2.0 * IDX_PIXELS + 6.0 * hidden + 4.0 * MLP_CLASSES + 4) * sizeof(float);
    double par = 3.0 * mlp_layout(IDX_PIXELS, hidden).total * sizeof(float);
    double data = (double)(n_train + n_test) * (IDX_PIXELS + 1 + 2 * sizeof(int));
    return act + par + data + (double)hidden * MLP_CLASSES * sizeof(float);
}

/* The next epoch's batch order: this one shuffled again (one continuing stream, as in
 * peer/torch_reference.py). trainer_create draws the first epoch's; run_epoch draws each next
 * one on the CPU while the GPU trains on the current epoch (a few tenths of a ms for
 * 60,000 images). */
static void draw_next_order(Trainer *t)
{
    memcpy(t->h_next_order, t->h_order, (size_t)t->n_train * sizeof(int));
    mlp_shuffle(t->h_next_order, t->n_train, &t->shuffle_rng);
}

/* The fused step's two products, x W1 (batch x H x 784) and xt dz1 (784 x H x batch), get the plans
 * that run fastest inside a graph (part1_fused/04_gemm_tune.cuh), timed on the trainer's own
 * buffers, zeroed first (the parameters are uploaded later). */
static void tune_products(Trainer *t)
{
    size_t bx = (size_t)t->batch * IDX_PIXELS, bh = (size_t)t->batch * t->hidden;
    CUDA_CHECK(cudaMemset(t->x, 0, bx * sizeof(float)));
    CUDA_CHECK(cudaMemset(t->xt, 0, bx * sizeof(float)));
    CUDA_CHECK(cudaMemset(t->dz1, 0, bh * sizeof(float)));
    CUDA_CHECK(cudaMemset(t->params, 0, t->l.total * sizeof(float)));
    t->tuned[0] =
        gemm_tune(t->impl->name, t->batch, t->hidden, IDX_PIXELS, t->x, t->params + t->l.w1);
    t->tuned[1] = gemm_tune(t->impl->name, IDX_PIXELS, t->hidden, t->batch, t->xt, t->dz1);
    t->n_tuned = 2;
}

static void trainer_create(Trainer *t, const Impl *impl, const IdxDataset *train, int n_train,
                           const IdxDataset *test, int hidden, int batch, float mean, float std,
                           unsigned long long seed)
{
    memset(t, 0, sizeof *t);
    t->impl = impl;
    t->hidden = hidden;
    t->batch = batch;
    t->n_train = n_train;
    t->n_test = test ? test->count : 0;
    t->mean = mean;
    t->std = std;
    t->l = mlp_layout(IDX_PIXELS, hidden);
    t->train_host = train;
    t->shuffle_rng.state = seed + 1;
    size_t bh = (size_t)batch * hidden * sizeof(float),
           bc = (size_t)batch * MLP_CLASSES * sizeof(float);
    size_t bx = (size_t)batch * IDX_PIXELS * sizeof(float), pb = t->l.total * sizeof(float);
    /* the whole training set as bytes: 47 MB for 60,000 images */
    if (impl->extra.feed == FEED_RESIDENT) {
        t->pixels = (unsigned char *)dalloc((size_t)n_train * IDX_PIXELS);
        t->labels = (unsigned char *)dalloc((size_t)n_train);
        CUDA_CHECK(cudaMemcpy(t->pixels, train->pixels, (size_t)n_train * IDX_PIXELS,
                              cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(t->labels, train->labels, (size_t)n_train, cudaMemcpyHostToDevice));
    }
    if (test) {
        t->test_pixels = (unsigned char *)dalloc((size_t)t->n_test * IDX_PIXELS);
        t->test_labels = (unsigned char *)dalloc((size_t)t->n_test);
        CUDA_CHECK(cudaMemcpy(t->test_pixels, test->pixels, (size_t)t->n_test * IDX_PIXELS,
                              cudaMemcpyHostToDevice));
        CUDA_CHECK(
            cudaMemcpy(t->test_labels, test->labels, (size_t)t->n_test, cudaMemcpyHostToDevice));
        int *ident = (int *)xmalloc((size_t)t->n_test * sizeof(int));
        for (int i = 0; i < t->n_test; i++) ident[i] = i;
        t->test_order = (int *)dalloc((size_t)t->n_test * sizeof(int));
        CUDA_CHECK(cudaMemcpy(t->test_order, ident, (size_t)t->n_test * sizeof(int),
                              cudaMemcpyHostToDevice));
        free(ident);
    }
    t->order = (int *)dalloc((size_t)n_train * sizeof(int));
    CUDA_CHECK(cudaMallocHost(&t->h_order, (size_t)n_train * sizeof(int)));
    CUDA_CHECK(cudaMallocHost(&t->h_next_order, (size_t)n_train * sizeof(int)));
    for (int i = 0; i < n_train; i++) t->h_order[i] = i;
    CUDA_CHECK(
        cudaMemcpy(t->order, t->h_order, (size_t)n_train * sizeof(int), cudaMemcpyHostToDevice));
    draw_next_order(t);
    t->params = (float *)dalloc(pb);
    t->vel = (float *)dalloc(pb);
    t->x = (float *)dalloc(bx);
    t->xt = (float *)dalloc(bx);
    t->z1 = (float *)dalloc(bh);
    t->dz2 = (float *)dalloc(bc);
    t->dz1 = (float *)dalloc(bh);
    t->y = (int *)dalloc((size_t)batch * sizeof(int));
    t->cursor = (int *)dalloc(sizeof(int));
    t->correct = (int *)dalloc(sizeof(int));
    t->eval_loss = (float *)dalloc(sizeof(float));
    int steps = (n_train + batch - 1) / batch;
    t->step_loss = (float *)dalloc((size_t)steps * sizeof(float));
    t->h_step_loss = (float *)xmalloc((size_t)steps * sizeof(float));
    CUDA_CHECK(cudaMemset(t->step_loss, 0, (size_t)steps * sizeof(float)));
    if (impl->extra.gemm == GEMM_BEST && impl->launch->fused) tune_products(t);
    if (impl->launch->create) impl->launch->create(t);
}

static void trainer_set_params(Trainer *t, const float *host_params, float lr, float mu)
{
    t->lr = lr;
    t->mu = mu;
    CUDA_CHECK(
        cudaMemcpy(t->params, host_params, t->l.total * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(t->vel, 0, t->l.total * sizeof(float)));
}

static void trainer_destroy(Trainer *t)
{
    if (t->impl->launch->destroy) t->impl->launch->destroy(t);
    void *dev[] = {t->pixels,     t->labels,    t->test_pixels, t->test_labels, t->order,
                   t->test_order, t->params,    t->vel,         t->x,           t->xt,
                   t->z1,         t->dz2,       t->dz1,         t->y,           t->cursor,
                   t->correct,    t->step_loss, t->eval_loss};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (dev[i]) CUDA_CHECK(cudaFree(dev[i]));
    for (int g = 0; g < 2; g++)
        if (t->step_exec[g]) CUDA_CHECK(cudaGraphExecDestroy(t->step_exec[g]));
    if (t->epoch_exec) CUDA_CHECK(cudaGraphExecDestroy(t->epoch_exec));
    CUDA_CHECK(cudaFreeHost(t->h_order));
    CUDA_CHECK(cudaFreeHost(t->h_next_order));
    free(t->h_step_loss);
    memset(t, 0, sizeof *t);
}

/* A test pass counts into t->correct and t->eval_loss: cleared first, read back after. */
static void test_pass_clear(Trainer *t)
{
    CUDA_CHECK(cudaMemsetAsync(t->correct, 0, sizeof(int), cudaStreamPerThread));
    CUDA_CHECK(cudaMemsetAsync(t->eval_loss, 0, sizeof(float), cudaStreamPerThread));
}

/* What a test pass left in t->correct and t->eval_loss: the accuracy in percent, and the
 * mean loss into *loss if loss is not NULL. */
static double test_pass_result(const Trainer *t, double *loss)
{
    int correct;
    float sum;
    CUDA_CHECK(cudaMemcpy(&correct, t->correct, sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&sum, t->eval_loss, sizeof(float), cudaMemcpyDeviceToHost));
    if (loss) *loss = sum / t->n_test;
    return 100.0 * correct / t->n_test;
}

/* The hidden layer of a test batch: `rows` images of src from `first`, gathered, their z1
 * (without its bias: the output layer adds it) into t->z1 and their labels into t->y. */
typedef void (*EvalForward)(Trainer *t, const MlpSource *src, int first, int rows);

/* Test accuracy (percent) and mean loss over the test set, in batches of t->batch: the
 * family's forward, then the output layer. */
static double evaluate_with(Trainer *t, double *loss, EvalForward forward)
{
    const MlpLayout *l = &t->l;
    test_pass_clear(t);
    MlpSource src = {t->test_pixels, t->test_labels, t->test_order, t->mean, t->std};
    for (int first = 0; first < t->n_test; first += t->batch) {
        int b = t->n_test - first < t->batch ? t->n_test - first : t->batch;
        forward(t, &src, first, b);
        launch_output_layer<false>(t->z1, t->params + l->b1, t->params + l->w2, t->params + l->b2,
                                   t->y, b, t->hidden, NULL, NULL, t->eval_loss, NULL, t->batch,
                                   t->correct);
    }
    return test_pass_result(t, loss);
}

/* The fp32 forward pass of every family but the tensor-core ones. */
static void forward_fp32(Trainer *t, const MlpSource *src, int first, int rows)
{
    MlpBatch dst = {t->x, NULL, t->y, NULL, 0};
    launch_gather(src, first, rows, &dst);
    gemm(t, rows, t->hidden, IDX_PIXELS, 1.0f, t->x, t->params + t->l.w1, 0.0f, t->z1);
}

static double evaluate_fp32(Trainer *t, double *loss)
{
    return evaluate_with(t, loss, forward_fp32);
}

#endif
