/* Chapter 07, part three: one step of the data-parallel trainer, on the replicas of
 * part3_data_parallel/03_dp_trainer.cuh.
 *
 * One step, per GPU g (compute: g's per-thread default stream, where every launcher of the chapter
 * launches; comm: g's communication stream of part3_data_parallel/02_nccl_comm.cuh), --buckets 0:
 *
 *   compute (time flows down)              comm
 *   gemm_forward, output_layer,
 *   hidden_backward, gemm_dW1
 *                            [ready] ----> [wait] all-reduce(whole gradient)
 *   [wait] <------------------------------ [reduced]
 *   update_and_gather
 *
 * --buckets K (default 2): dW1, 784 x H and nearly all of the gradient, is computed in K
 * blocks of rows, and each block's all-reduce starts as soon as its rows are done, as
 * PyTorch's DDP starts a bucket's all-reduce when its gradients are ready. The last block's
 * all-reduce also carries b1, W2 and b2 (they follow W1 in the gradient buffer, and are
 * ready before it): K calls, since each call costs tens of µs whatever its size:
 *
 *   compute                                comm
 *   gemm_forward, output_layer,
 *   hidden_backward
 *   dW1 rows of bucket 0     [ready] ----> [wait] all-reduce(rows of bucket 0)
 *   dW1 rows of bucket 1     [ready] ----> [wait] all-reduce(rows of bucket 1)
 *   ...
 *   dW1 rows of bucket K-1   [ready] ----> [wait] all-reduce(last rows, b1, W2, b2)
 *   [wait] <------------------------------ [reduced]
 *   update_and_gather
 *
 * Each all-reduce is one ncclAllReduce per local GPU inside ncclGroupStart/End. The steps
 * are not captured in CUDA graphs: NCCL advises against graph capture when one thread
 * manages several GPUs (cudaGraphLaunch may block), so the host issues every launch, as for
 * the trainer `fused`.
 */
#ifndef CH07_DATA_PARALLEL_STEP_CUH
#define CH07_DATA_PARALLEL_STEP_CUH

#include "07_mnist_mlp/part3_data_parallel/03_dp_trainer.cuh"

#ifdef HAVE_NCCL

/* ------------------------------------------------------------------ one step */

static cudaStream_t dp_stream(const DataParallel *dp, int g, int row)
{
    return row == DP_ROW_COMM ? dp->c->stream[g] : cudaStreamPerThread;
}

/* An op of the timeline on GPU g (the current device), when one is being recorded. */
static int dp_op_begin(DataParallel *dp, int g, int row, const char *op, int chunk)
{
    DpTrace *tr = dp->trace;
    if (!tr || !tr->on) return -1;
    return sp_op_begin(tr->tl[g], dp_stream(dp, g, row), tr->row[g][row], op, chunk);
}

static void dp_op_end(DataParallel *dp, int g, int row, int op)
{
    if (op >= 0) sp_op_end(dp->trace->tl[g], op, dp_stream(dp, g, row));
}

/* GPU g's launches up to the small gradients (b2, W2, b1): the forward product, the output
 * layer with dz2 scaled by 1 / (the global batch's rows), the hidden backward. Its
 * `rows` rows are already in x, xt and y (gathered by the step before). */
static void dp_forward_backward(DataParallel *dp, int g, int rows, float inv_batch)
{
    Trainer *t = &dp->rep[g];
    const MlpLayout *l = &t->l;
    float *P = t->params, *grad = dp->grad[g];
    int H = dp->hidden;
    int op = dp_op_begin(dp, g, DP_ROW_COMPUTE, "forward", -1);
    gemm(t, rows, H, IDX_PIXELS, 1.0f, t->x, P + l->w1, 1.0f, t->z1); /* z1 cleared by the gather */
    dp_op_end(dp, g, DP_ROW_COMPUTE, op);
    op = dp_op_begin(dp, g, DP_ROW_COMPUTE, "output_layer", -1);
    mlp_output_layer<true><<<rows, MLP_OUT_THREADS>>>(
        t->z1, P + l->b1, P + l->w2, P + l->b2, t->y, H, inv_batch, t->dz2, grad + l->b2,
        t->step_loss, t->cursor, t->batch, NULL, NULL);
    CHECK_LAUNCH();
    dp_op_end(dp, g, DP_ROW_COMPUTE, op);
    op = dp_op_begin(dp, g, DP_ROW_COMPUTE, "hidden_backward", -1);
    launch_hidden_backward(t->z1, P + l->b1, t->dz2, P + l->w2, rows, H, t->dz1, grad + l->w2,
                           grad + l->b1, t->cursor);
    dp_op_end(dp, g, DP_ROW_COMPUTE, op);
}

/* Rows r0 .. r1 of dW1 = x^T dz1 on GPU g, added into its gradient (beta = 1). x^T is
 * 784 x rows, row-major, so its rows r0 .. r1 are one contiguous block, as are dW1's. */
static void dp_dw1_rows(DataParallel *dp, int g, int rows, int r0, int r1, int chunk)
{
    Trainer *t = &dp->rep[g];
    int op = dp_op_begin(dp, g, DP_ROW_COMPUTE, "dW1", chunk);
    gemm(t, r1 - r0, dp->hidden, rows, 1.0f, t->xt + (size_t)r0 * rows, t->dz1, 1.0f,
         dp->grad[g] + t->l.w1 + (size_t)r0 * dp->hidden);
    dp_op_end(dp, g, DP_ROW_COMPUTE, op);
}

/* What GPU g's compute stream has enqueued so far is a finished part of the gradient:
 * its communication stream waits for it (event `ready[g][k]`). */
static void dp_hand_over(DataParallel *dp, int g, int k)
{
    CUDA_CHECK(cudaEventRecord(dp->ready[g][k], cudaStreamPerThread));
    CUDA_CHECK(cudaStreamWaitEvent(dp->c->stream[g], dp->ready[g][k], 0));
}

/* Gradient floats offset .. offset + count summed over the GPUs, in place on each. */
static void dp_allreduce(DataParallel *dp, size_t offset, size_t count, const char *op_name,
                         int chunk)
{
    const DpComm *c = dp->c;
    int op[DP_MAX_GPUS];
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        op[g] = dp_op_begin(dp, g, DP_ROW_COMM, op_name, chunk);
    }
    dp_allreduce_group(c, (void *const *)dp->grad, offset, count, ncclFloat);
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        dp_op_end(dp, g, DP_ROW_COMM, op[g]);
    }
}

static void dp_launch_update(DataParallel *dp, int g, float lr, float mu)
{
    Trainer *t = &dp->rep[g];
    MlpSource src = train_source(t);
    MlpBatch dst = fused_batch(t);
    int gather_blocks = mlp_gather_blocks(t->batch);
    dp_update_and_gather<<<gather_blocks + vadd_grid((long long)(t->l.total / 4)),
                           MLP_UPDATE_THREADS>>>(t->params, t->vel, dp->grad[g], t->l.total, lr, mu,
                                                 gather_blocks, src, t->cursor, dp->n_local[g],
                                                 t->batch, dst);
    CHECK_LAUNCH();
}

/* Probe event `which` of step s, on local GPU 0 (the current device), when steps are
 * measured. */
static void dp_probe(const DataParallel *dp, int s, int which, cudaStream_t stream)
{
    if (dp->probe && s < dp->probe->count)
        CUDA_CHECK(cudaEventRecord(dp->probe->ev[which][s], stream));
}

/* Step s of the epoch on every local GPU: launches, hand-overs and all-reduces in the order
 * of the diagram at the top, issued GPU after GPU. */
static void dp_step(DataParallel *dp, int s, float lr, float mu)
{
    const DpComm *c = dp->c;
    const MlpLayout *l = &dp->rep[0].l;
    int K = dp->buckets, H = dp->hidden;
    float inv_batch = 1.0f / (float)dp_batch_rows(dp->n_train, dp->batch, s);
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        int rows = dp_slice(dp, s, g).rows;
        if (rows > 0) {
            dp_forward_backward(dp, g, rows, inv_batch);
            if (K == 0) dp_dw1_rows(dp, g, rows, 0, IDX_PIXELS, -1);
        }
        if (K > 0) continue;
        if (g == 0) dp_probe(dp, s, DP_GRAD_DONE, cudaStreamPerThread);
        dp_hand_over(dp, g, 0);
        if (g == 0) dp_probe(dp, s, DP_AR_BEGIN, c->stream[0]);
    }
    if (K == 0) {
        dp_allreduce(dp, 0, l->total, "allreduce", -1);
    } else {
        for (int k = 0; k < K; k++) {
            int r0 = dp->bucket_row[k], r1 = dp->bucket_row[k + 1];
            for (int g = 0; g < c->local; g++) {
                CUDA_CHECK(cudaSetDevice(c->dev[g]));
                int rows = dp_slice(dp, s, g).rows;
                if (rows > 0) dp_dw1_rows(dp, g, rows, r0, r1, k);
                if (g == 0 && k == K - 1) dp_probe(dp, s, DP_GRAD_DONE, cudaStreamPerThread);
                dp_hand_over(dp, g, k);
                if (g == 0 && k == 0) dp_probe(dp, s, DP_AR_BEGIN, c->stream[0]);
            }
            size_t first = l->w1 + (size_t)r0 * H,
                   end = k == K - 1 ? l->total : l->w1 + (size_t)r1 * H;
            dp_allreduce(dp, first, end - first, "allreduce", k); /* the last: with b1, W2, b2 */
        }
    }
    for (int g = 0; g < c->local; g++) {
        CUDA_CHECK(cudaSetDevice(c->dev[g]));
        if (g == 0) dp_probe(dp, s, DP_AR_END, c->stream[0]);
        CUDA_CHECK(cudaEventRecord(dp->reduced[g], c->stream[g]));
        CUDA_CHECK(cudaStreamWaitEvent(cudaStreamPerThread, dp->reduced[g], 0));
        int op = dp_op_begin(dp, g, DP_ROW_COMPUTE, "update", -1);
        dp_launch_update(dp, g, lr, mu);
        dp_op_end(dp, g, DP_ROW_COMPUTE, op);
    }
    CUDA_CHECK(cudaSetDevice(c->dev[0]));
}

#endif /* HAVE_NCCL */

#endif
