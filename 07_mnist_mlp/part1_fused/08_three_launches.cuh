/* Chapter 07: the step of the optimized and bf16 trainers, three launches (its buffers and
 * its launches; part1_fused/08_three_launch_steps.cuh makes the family of them):
 *
 *   gemm_forward        z1 += x W1                 chapter 05's sgemm_best (tuned plan), or
 *                                                  for bf16 its tensor-core GEMM (x, W1t bf16)
 *   output_layer        as in the fused step       kernels.cuh
 *   backward_and_update dz1, dW1, dW2, db1, the SGD step of every parameter, and the next
 *                       batch's gather, in one kernel (part1_fused/08_backward_kernel.cuh)
 *
 * where the fused step (part1_fused/04_fused_steps.cuh) takes five. The backward kernel reads this
 * step's x and z1 while its gather blocks write the next step's, so those two and the labels are
 * double-buffered: step s of an epoch uses half (steps - 1 - s) % 2, which makes the last step's
 * half the trainer's own x, y and z1 (what --check reads after an epoch, and what the evaluation
 * pass overwrites). So are b1, W2 and b2 with their velocity (the kernel reads them in every block
 * while it steps them): step s reads copy (steps - s) % 2 and writes the other, so that the last
 * step writes copy 0, the trainer's own parameters; when an epoch has an odd number of steps its
 * first reads copy 1, which the epoch begins by filling from copy 0. The halves are chosen when the
 * step is enqueued, so every step of an epoch is its own launches: the trainer runs as one
 * whole-epoch graph. Positions come from the step's number, not from the device cursor.
 *
 * The one kernel recomputes dz1 in every row of tiles of dW1 (13 to 25 times), which the
 * launches it replaces did once. Where that costs more than the two launches it saves (at
 * large batches), the backward runs as the fused step's three
 * launches instead (hidden backward, chapter 05's dW1 product, update), with x transposed
 * into xt by the gathers and every parameter stepped in place (copy 0 only). Which of the
 * two, the trainer decides by timing both inside a graph when it is made. With the three
 * launches, in a graph being captured, the output layer also makes dz1, and a second
 * stream, forked after it, runs what is left of the hidden backward (the sums for W2's and
 * b1's gradients) and then the next batch's gather: in the epoch graph a branch beside the
 * dW1 product and the update, joined before the update and before the next step
 * (three_branch); outside a capture the step is the fused step's chain.
 *
 * The bf16 trainer (S = MlpBf16) runs the same step with its batch in bf16: the kernel's product on
 * tensor cores, and W1t (the forward product's bf16 copy of W1) rewritten by the kernel from each
 * tile it steps. Where its timing prefers the launches, it runs the whole tensor-core step of
 * part2_tensor_cores/01_tc_steps.cuh instead (five launches, its buffers in `tc`). */
#ifndef CH07_STEPS_THREE_PARTS_CUH
#define CH07_STEPS_THREE_PARTS_CUH

#include <type_traits>

#include "07_mnist_mlp/part1_fused/04_gemm_tune.cuh"
#include "07_mnist_mlp/part1_fused/08_backward_kernel.cuh"
#include "07_mnist_mlp/part2_tensor_cores/01_tc_steps.cuh"
#include "07_mnist_mlp/driver/trainer.cuh"

/* The family's own buffers: the second half of the double buffers (the first is the
 * trainer's x, xt, y, z1 and parameters from b1 on; for bf16, tc's x), the backward
 * kernel's tickets and plan, and for the backward as three launches the positions their
 * gather reads. */
template <typename S> struct ThreeBuffersOf {
    /* MlpBf16: part2_tensor_cores/01_tc_steps.cuh's buffers (first, so tc_buffers<S> finds them) */
    TcBuffers<S> tc;
    typename S::T *x[2];
    float *xt[2], *z1[2]; /* xt: fp32 only */
    int *y[2];
    MlpSmall small[2];
    size_t small_count; /* floats of b1, W2, b2 (padding included) */
    int *tickets;
    MlpBwdPlan plan;
    int launches;      /* 1: the backward kernel; 3: the launches it replaces */
    int *starts;       /* starts[i] = i * batch, i = 0 .. steps: where step i's batch begins */
    cudaStream_t side; /* fp32 three launches: the branch's stream, forked and joined */
    /* fork and joins (edges of the graph when captured) */
    cudaEvent_t forked, small_done, gathered;
};

template <typename S> static constexpr bool three_bf16() { return std::is_same<S, MlpBf16>::value; }

template <typename S> static ThreeBuffersOf<S> *three_buffers(const Trainer *t)
{
    return (ThreeBuffersOf<S> *)t->own;
}

/* The bf16 trainer running part2_tensor_cores/01_tc_steps.cuh's step instead of its own. */
template <typename S> static bool three_runs_tc(const Trainer *t)
{
    return three_bf16<S>() && three_buffers<S>(t)->launches != 1;
}

static int three_half(const Trainer *t, int s) { return (steps_per_epoch(t) - 1 - s) & 1; }

/* The copy of b1, W2, b2 that step s reads (the backward kernel writes the other). */
template <typename S> static int three_small_in(const Trainer *t, int s)
{
    return three_buffers<S>(t)->launches == 1 ? (steps_per_epoch(t) - s) & 1 : 0;
}

/* Where a gather into half h goes: its x (and xt, for the fp32 three launches) and y, and
 * its z1 cleared. */
template <typename S> static MlpBatchOf<S> three_half_batch(const Trainer *t, int h)
{
    ThreeBuffersOf<S> *b = three_buffers<S>(t);
    MlpBatchOf<S> d = {b->x[h], NULL, b->y[h], b->z1[h], (size_t)t->batch * t->hidden};
    if constexpr (!three_bf16<S>())
        if (b->launches != 1) d.xt = b->xt[h];
    return d;
}

/* ... and the gather of step s's batch. */
template <typename S> static MlpBatchOf<S> three_batch(const Trainer *t, int s)
{
    return three_half_batch<S>(t, three_half(t, s));
}

/* The forward product of a batch of `rows` in half h: z1 += x W1 (z1 cleared by the gather). */
template <typename S> static void three_forward(Trainer *t, int h, int rows)
{
    ThreeBuffersOf<S> *b = three_buffers<S>(t);
    if constexpr (three_bf16<S>())
        tc_gemm<S>(t, rows, t->hidden, IDX_PIXELS, b->x[h], b->tc.w1t, b->z1[h]);
    else
        gemm(t, rows, t->hidden, IDX_PIXELS, 1.0f, b->x[h], t->params + t->l.w1, 1.0f, b->z1[h]);
}

/* The output layer of a batch of `rows` in half h, reading copy c of b1, W2, b2 (the
 * b2 gradient into its velocity), its loss into slot `slot`; with dz1 (the branch below)
 * it also makes dz1. */
template <typename S>
static void three_output(Trainer *t, int h, int c, int rows, int slot, bool dz1 = false)
{
    const MlpLayout *l = &t->l;
    ThreeBuffersOf<S> *b = three_buffers<S>(t);
    const MlpSmall *in = &b->small[c];
    size_t w2 = l->w2 - l->b1, b2 = l->b2 - l->b1;
    launch_output_layer<true>(b->z1[h], in->p, in->p + w2, in->p + b2, b->y[h], rows, t->hidden,
                              t->dz2, in->v + b2, t->step_loss + slot, NULL, t->batch, NULL,
                              dz1 ? t->dz1 : NULL);
}

/* The backward kernel on a batch of `rows` in half h, reading copy c of b1, W2, b2 and
 * writing the other, with plan p; it gathers batch `next` (if there is one) into *dst. */
template <typename S> static void three_backward_kernel(Trainer *t, const MlpBwdPlan *p, int h,
                                                        int c, int rows, float lr, float mu,
                                                        int next, const MlpBatchOf<S> *dst)
{
    const MlpLayout *l = &t->l;
    ThreeBuffersOf<S> *b = three_buffers<S>(t);
    MlpBwdArgsOf<S> a = {};
    a.x = b->x[h], a.z1 = b->z1[h], a.dz2 = t->dz2;
    a.w1 = t->params + l->w1, a.v1 = t->vel + l->w1;
    if constexpr (three_bf16<S>()) a.w1t = b->tc.w1t;
    a.in = b->small[c], a.out = b->small[c ^ 1];
    a.hidden = t->hidden, a.w2 = (int)(l->w2 - l->b1), a.b2 = (int)(l->b2 - l->b1);
    a.rows = rows, a.lr = lr, a.mu = mu, a.tickets = b->tickets;
    a.src = train_source(t), a.next = *dst;
    a.next_start = next * t->batch,
    a.next_rows = next < steps_per_epoch(t) ? batch_of_step(t, next) : 0;
    launch_backward_sgd(p, a);
}

/* The same as the fused step's three launches (copy 0 of the parameters, stepped in place; the
 * update's gather, where dst is not NULL, reads batch `next`'s position from starts, none past the
 * last); for bf16, those of part2_tensor_cores/01_tc_steps.cuh's step as the bench runs them
 * (cursor neither read nor advanced by the first two). */
template <typename S>
static void three_backward_launches(Trainer *t, int h, int rows, float lr, float mu, int next,
                                    const MlpBatchOf<S> *dst, bool beside = false)
{
    if constexpr (three_bf16<S>()) {
        for (int k = 2; k < TC_LAUNCHES; k++) tc_launch<S>(t, k, rows, lr, mu, 1);
    } else {
        const MlpLayout *l = &t->l;
        ThreeBuffersOf<S> *b = three_buffers<S>(t);
        float *P = t->params, *V = t->vel;
        if (!beside)
            launch_hidden_backward(b->z1[h], P + l->b1, t->dz2, P + l->w2, rows, t->hidden, t->dz1,
                                   V + l->w2, V + l->b1, NULL);
        gemm(t, IDX_PIXELS, t->hidden, rows, 1.0f, b->xt[h], t->dz1, 1.0f, V + l->w1);
        if (beside) CUDA_CHECK(cudaStreamWaitEvent(cudaStreamPerThread, b->small_done, 0));
        MlpSource src = train_source(t);
        launch_update(P, V, l->total, lr, mu, dst ? &src : NULL, b->starts + next, t->n_train,
                      t->batch, dst);
    }
}

/* The branch of a step with the three launches: forked after the output layer (which has
 * made dz1), a second stream runs the rest of the hidden backward (the sums for W2's and
 * b1's gradients, no dz1) and then the gather of batch `next` into *dst. The main stream
 * runs the dW1 product meanwhile, waits for the sums (small_done) before the update, and
 * for the gather (three_join_gather) before the next step. Captured, the events are edges:
 * the branch runs on the SMs the dW1 product and the update leave idle. Not in the update's
 * grid (as in the fused step), where the gather's chain of dependent loads makes the update
 * longer; and not forked before the forward product, where the gather takes SMs from the
 * product's blocks. */
template <typename S>
static void three_branch(Trainer *t, int h, int rows, int next, const MlpBatchOf<S> *dst)
{
    ThreeBuffersOf<S> *b = three_buffers<S>(t);
    const MlpLayout *l = &t->l;
    float *P = t->params, *V = t->vel;
    MlpSource src = train_source(t);
    CUDA_CHECK(cudaEventRecord(b->forked, cudaStreamPerThread));
    CUDA_CHECK(cudaStreamWaitEvent(b->side, b->forked, 0));
    launch_hidden_backward(b->z1[h], P + l->b1, t->dz2, P + l->w2, rows, t->hidden, (float *)NULL,
                           V + l->w2, V + l->b1, NULL, b->side);
    CUDA_CHECK(cudaEventRecord(b->small_done, b->side));
    launch_gather(&src, next * t->batch, batch_of_step(t, next), dst, b->side);
    CUDA_CHECK(cudaEventRecord(b->gathered, b->side));
}

template <typename S> static void three_join_gather(Trainer *t)
{
    CUDA_CHECK(cudaStreamWaitEvent(cudaStreamPerThread, three_buffers<S>(t)->gathered, 0));
}

static bool capturing(void)
{
    cudaStreamCaptureStatus status;
    CUDA_CHECK(cudaStreamIsCapturing(cudaStreamPerThread, &status));
    return status == cudaStreamCaptureStatusActive;
}

/* Whether the step before batch `next` takes the branch (three_branch): the fp32 three
 * launches, a next batch to gather, and a graph being captured, where the fork and the
 * joins become edges. Outside one (the steps before the capture, the bench's launches one
 * by one) the step is the chain of the fused step, the gather riding in the update: a
 * stream that has waited for another stream's event outside a capture leaves every later
 * epoch graph of the process slower. */
template <typename S> static bool three_beside(const Trainer *t, int next)
{
    return !three_bf16<S>() && three_buffers<S>(t)->launches != 1 && next < steps_per_epoch(t) &&
           capturing();
}

/* The backward of a batch in half h and the gather of batch `next` (if there is one) into
 * *dst: in the backward kernel's grid, or with the three launches, in the chain or with
 * the branch (beside: the output layer has made dz1). */
template <typename S> static void three_backward(Trainer *t, int h, int c, int rows, float lr,
                                                 float mu, int next, const MlpBatchOf<S> *dst,
                                                 bool beside)
{
    ThreeBuffersOf<S> *b = three_buffers<S>(t);
    if (b->launches == 1) {
        three_backward_kernel<S>(t, &b->plan, h, c, rows, lr, mu, next, dst);
        return;
    }
    if (beside) three_branch<S>(t, h, rows, next, dst);
    three_backward_launches<S>(t, h, rows, lr, mu, next, beside ? NULL : dst, beside);
    if (beside) three_join_gather<S>(t);
}

#endif
