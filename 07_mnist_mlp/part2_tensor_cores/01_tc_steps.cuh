/* Chapter 07: the tensor-core step of trainers tf32 and bf16: the fused step of
 * part1_fused/04_fused_steps.cuh (five launches, positions from the device cursor, the whole epoch
 * one CUDA graph) with its two big products on chapter 05's tensor-core GEMMs.
 *
 * Per step, in order:
 *   gemm_forward       z1 += x . W1          tc_best (M B, N H, K 784; A x, Bt W1t)
 *   output_layer       as in the fused step (fp32: z1, W2, b2, dz2, the loss)
 *   hidden_backward    as in the fused step, but dz1 goes out transposed and rounded: dz1t
 *   gemm_dW1           v(W1) += xt . dz1     tc_best (M 784, N H, K B; A xt, Bt dz1t)
 *   update_and_gather  mlp_update_tc: the next batch (x, xt rounded), W1 updated tile by
 *                      tile with W1t rewritten from it, then b1, W2, b2
 * and before an epoch's first step its batch is gathered and W1t made from W1.
 *
 * What is low precision: only the four operands of the two products (x, xt, W1t, dz1t):
 * bf16, or fp32 rounded to TF32. Everything else is the fp32 trainer's: the master weights
 * (W1 in its 784 x H layout), the velocity the gradients accumulate into, z1 and the
 * products' fp32 accumulation, the output layer. A step moves a weight by lr v, a small
 * part of the weight: added to a bf16 weight, any move below half a bf16 ulp (2^-9 of the
 * weight) would round away, every step again. So the update adds to fp32 weights and
 * makes the bf16 (or TF32) copy from them, every step. And --check, --save and the CPU
 * reference read the same fp32 buffers as for every other trainer. */
#ifndef CH07_STEPS_TC_CUH
#define CH07_STEPS_TC_CUH

#include <type_traits>

#include "07_mnist_mlp/part2_tensor_cores/01_tc_kernels.cuh"
#include "07_mnist_mlp/part1_fused/04_fused_steps.cuh"

/* The family's own buffers, in its precision S (MlpBf16 or MlpTf32). */
template <typename S> struct TcBuffers {
    /* the batch and its transpose: bf16 copies, or the trainer's fp32 x, xt */
    typename S::T *x, *xt;
    typename S::T *w1t;  /* W1 transposed: H x 784 */
    typename S::T *dz1t; /* dz1 transposed: H x batch (rows of this batch's length) */
    TunedTc tuned[2];    /* the two products' split counts, timed (part1_fused/04_gemm_tune.cuh) */
};

template <typename S> static TcBuffers<S> *tc_buffers(const Trainer *t)
{
    return (TcBuffers<S> *)t->own;
}

/* The buffers into b (the family's own, or the bf16 three-launch step's:
 * part1_fused/08_three_launch_steps.cuh), and the two products' split counts timed on them. */
template <typename S> static void tc_init(Trainer *t, TcBuffers<S> *b)
{
    typedef typename S::T T;
    size_t bx = (size_t)t->batch * IDX_PIXELS;
    if constexpr (std::is_same<T, float>::value) {
        b->x = t->x, b->xt = t->xt;
    } else {
        b->x = (T *)dalloc(bx * sizeof(T));
        b->xt = (T *)dalloc(bx * sizeof(T));
    }
    b->w1t = (T *)dalloc((size_t)t->hidden * IDX_PIXELS * sizeof(T));
    b->dz1t = (T *)dalloc((size_t)t->hidden * t->batch * sizeof(T));
    /* the two products' split counts, timed on these buffers, zeroed first */
    CUDA_CHECK(cudaMemset(b->x, 0, bx * sizeof(T)));
    CUDA_CHECK(cudaMemset(b->xt, 0, bx * sizeof(T)));
    CUDA_CHECK(cudaMemset(b->w1t, 0, (size_t)t->hidden * IDX_PIXELS * sizeof(T)));
    CUDA_CHECK(cudaMemset(b->dz1t, 0, (size_t)t->hidden * t->batch * sizeof(T)));
    b->tuned[0] = tc_tune(t->impl->name, t->batch, t->hidden, IDX_PIXELS, b->x, b->w1t);
    b->tuned[1] = tc_tune(t->impl->name, IDX_PIXELS, t->hidden, t->batch, b->xt, b->dz1t);
}

template <typename S> static void tc_create(Trainer *t)
{
    TcBuffers<S> *b = (TcBuffers<S> *)xmalloc(sizeof *b);
    t->own = b;
    tc_init<S>(t, b);
}

/* C (M x N) += A (M x K) . Bt^T: with the tuned split count where this is a tuned shape,
 * else chapter 05's tc_best (tc_gemm_acc). */
template <typename S> static void tc_gemm(const Trainer *t, int M, int N, int K,
                                          const typename S::T *A, const typename S::T *Bt, float *C)
{
    for (const TunedTc &g : tc_buffers<S>(t)->tuned)
        if (g.splits > 0 && g.M == M && g.N == N && g.K == K) {
            tc_wgmma_splitk_by(M, N, K, 1.0f, A, Bt, 1.0f, C, g.splits);
            return;
        }
    tc_gemm_acc(M, N, K, A, Bt, C);
}

template <typename S> static void tc_release(Trainer *t, TcBuffers<S> *b)
{
    if ((void *)b->x != (void *)t->x) CUDA_CHECK(cudaFree(b->x));
    if ((void *)b->xt != (void *)t->xt) CUDA_CHECK(cudaFree(b->xt));
    CUDA_CHECK(cudaFree(b->w1t));
    CUDA_CHECK(cudaFree(b->dz1t));
}

template <typename S> static void tc_destroy(Trainer *t)
{
    tc_release<S>(t, tc_buffers<S>(t));
    free(t->own);
    t->own = NULL;
}

/* Where the gathers put a training batch: x and xt in S's precision, labels, z1 cleared. */
template <typename S> static MlpBatchOf<S> tc_batch(const Trainer *t)
{
    TcBuffers<S> *b = tc_buffers<S>(t);
    MlpBatchOf<S> d = {b->x, b->xt, t->y, t->z1, (size_t)t->batch * t->hidden};
    return d;
}

/* Before an epoch's first step: its batch, and W1t from W1 (the parameters may have been
 * uploaded since the last update wrote it). */
template <typename S> static void tc_begin_epoch(Trainer *t)
{
    MlpSource src = train_source(t);
    MlpBatchOf<S> dst = tc_batch<S>(t);
    launch_gather(&src, 0, batch_of_step(t, 0), &dst);
    launch_make_w1t<S>(t->params + t->l.w1, &t->l, tc_buffers<S>(t)->w1t);
}

/* The step's launches one by one; with `bench` set, as the bench times them alone (no
 * cursor read or advanced by the middle two, a whole batch, lr 0 and momentum 1). */
template <typename S>
static void tc_launch(Trainer *t, int stage, int batch, float lr, float mu, int bench)
{
    const MlpLayout *l = &t->l;
    TcBuffers<S> *b = tc_buffers<S>(t);
    int H = t->hidden;
    float *b1 = t->params + l->b1, *W2 = t->params + l->w2, *b2 = t->params + l->b2;
    int *cursor = bench ? NULL : t->cursor;
    MlpSource next = train_source(t);
    MlpBatchOf<S> dst = tc_batch<S>(t);
    switch (stage) {
        case 0:
            tc_gemm<S>(t, batch, H, IDX_PIXELS, b->x, b->w1t, t->z1);
            break; /* z1 cleared by the gather */
        case 1:
            launch_output_layer<true>(t->z1, b1, W2, b2, t->y, batch, H, t->dz2, t->vel + l->b2,
                                      t->step_loss, cursor, t->batch, NULL);
            break;
        case 2:
            launch_hidden_backward<S>(t->z1, b1, t->dz2, W2, batch, H, b->dz1t, t->vel + l->w2,
                                      t->vel + l->b1, cursor);
            break;
        case 3: tc_gemm<S>(t, IDX_PIXELS, H, batch, b->xt, b->dz1t, t->vel + l->w1); break;
        default:
            launch_update_tc<S>(t->params, t->vel, l, lr, mu, &next, t->cursor, t->n_train,
                                t->batch, &dst, b->w1t);
    }
}

#define TC_LAUNCHES 5

/* Step s reads its position from the cursor, not from s: captured once, it serves every step. */
template <typename S> static void tc_step(Trainer *t, int s, int batch, float lr, float mu)
{
    (void)s;
    for (int k = 0; k < TC_LAUNCHES; k++) tc_launch<S>(t, k, batch, lr, mu, 0);
}

template <typename S> static void tc_stage(Trainer *t, int stage)
{
    tc_launch<S>(t, stage, t->batch, 0.0f, 1.0f, 1);
}

/* The test pass's forward: the training forward (rounded batch, W1t, tensor cores), with
 * z1 cleared by the gather. W1t is current: every update rewrites it. */
template <typename S> static void tc_forward(Trainer *t, const MlpSource *src, int first, int rows)
{
    TcBuffers<S> *b = tc_buffers<S>(t);
    MlpBatchOf<S> dst = {b->x, NULL, t->y, t->z1, (size_t)rows * t->hidden};
    launch_gather(src, first, rows, &dst);
    tc_gemm<S>(t, rows, t->hidden, IDX_PIXELS, b->x, b->w1t, t->z1);
}

template <typename S> static double tc_evaluate(Trainer *t, double *loss)
{
    return evaluate_with(t, loss, tc_forward<S>);
}

/* --check runs these trainers against CPU steps in double whose two big products take the same
 * rounded operands (driver/cpu_reference.h's ref_step_rounded with
 * part2_tensor_cores/01_roundings.h's roundings): x and W1 (rounded from its fp32 value) in the
 * forward product, x and dz1 in dW1.
 *
 * Why not the unrounded steps the fp32 trainers are checked against: there the rounding
 * would be most of what the check sees. Round to nearest leaves each operand off by up to
 * 2^-8 (bf16) or 2^-11 (TF32) of itself, about 0.21 ulp(1) in RMS (ulp(1) / sqrt(12), times
 * sqrt(E[1/m^2]) = 0.74 for significands m spread over [1, 2)): bf16 1.7e-3, TF32 2.1e-4. A
 * z1 entry, 784 terms x W each off by x W (d + e), is then off by about sqrt(2) of that
 * normwise (bf16 2.4e-3, TF32 3e-4), and every entry of z1 + b1 closer to 0 than that lands
 * on the other side of the ReLU than in double, moving a whole term of the dW1 and db1
 * sums. tests/host/test_07_lowp.c runs a model of the trainer (its two steps in fp32
 * arithmetic, the operands rounded as the kernels round them) over the check's three
 * shapes and 341 seeds: against the unrounded steps it is off by up to 0.11 (bf16) and
 * 0.095 (TF32) in v(W1): tolerances that wide would pass a trainer that got a whole row of
 * a gradient wrong.
 *
 * Against the rounded steps what remains is what the fp32 trainers see (fp32 sums in other orders,
 * about 1e-7 relative; a ReLU flip now and then), and one effect of its own: where the GPU's fp32
 * dz1, or in the second step its fp32 W1 after the first update, and the CPU's double value lie on
 * two sides of a rounding boundary, that operand differs by a whole low-precision ulp. Crossings
 * are rare (about 1e-7 / 2^-8 of the bf16 operands), but in the 1x3 case a single one in the three
 * sums of z1 moves it by about 2^-8 / sqrt(784) = 1.4e-4. The model against the rounded steps stays
 * below: loss 2e-5, z1 5e-5, dz2 9e-5, v(W1) and v(b1) 8.4e-5, v(W2) and v(b2) 5e-5, parameters
 * 2.1e-5 (the larger of TF32 and bf16; TF32, with its finer grid, crosses more often). The
 * tolerances are 5 to 10x those, and 3e-3 for v(W1) and v(b1), which a single ReLU flip can move by
 * 3e-4 to 4e-4 at 256x1024 (driver/check.cuh's fp32 tolerances say so) and in the small shapes by
 * more: 1e-4, 5e-4, 5e-4, 3e-3, 5e-4, 2e-4 in CheckTolerances' order,
 * part2_tensor_cores/01_roundings.h's MLP_TC_TOLERANCES, which the host test holds the model to
 * (within half of each). */
static const CheckTolerances TC_TOLERANCES = {MLP_TC_TOLERANCES};

static const StepStages TF32_STAGES = {TC_LAUNCHES, FUSED_STAGE_NAMES, tc_stage<MlpTf32>, NULL};

static const StepFamily TF32_STEPS = {
    .fused = 1,
    .capturable = 1,
    .create = tc_create<MlpTf32>,
    .destroy = tc_destroy<MlpTf32>,
    .begin_epoch = tc_begin_epoch<MlpTf32>,
    .step = tc_step<MlpTf32>,
    .evaluate = tc_evaluate<MlpTf32>,
    .tolerances = &TC_TOLERANCES,
    .stages = &TF32_STAGES,
    .epoch = NULL,
    .unsupported = NULL,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};

#endif
