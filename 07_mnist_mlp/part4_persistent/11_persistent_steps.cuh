/* Chapter 07: the persistent trainers, `persistent` (fp32), `persistent_bf16x3` (fp32 on
 * tensor cores) and `persistent_bf16`: a whole epoch in one launch of
 * part4_persistent/09_kernel.cuh's mlp_persistent, the weights on the chip for all its steps,
 * and the test pass through the same kernel.
 *
 * What this file does around the kernel (part4_persistent/10_launch.cuh launches it, or says
 * why it cannot): makes its buffer of z2's shares (and for bf16 the images in bf16, each
 * epoch's in its order, written during the epoch before, with the tensor maps its TMA copies
 * read), and launches an epoch over the epoch's order (run_epoch uploads it; bf16 its own,
 * with its rows), or the test set.
 *
 * The kernel leaves the trainer's arrays as every other trainer's: the parameters and the
 * velocity v (not mu v: `fused` is 0), z1 of the last step with its bias, and its dz2, so
 * --check, --save and the other trainers' code read them unchanged. */
#ifndef CH07_STEPS_PERSISTENT_CUH
#define CH07_STEPS_PERSISTENT_CUH

#include "07_mnist_mlp/part4_persistent/10_launch.cuh"
/* TC_TOLERANCES: the bf16 trainer is checked as the tensor-core step is */
#include "07_mnist_mlp/part2_tensor_cores/01_tc_steps.cuh"
#include "07_mnist_mlp/driver/trainer.cuh"

/* bf16's rows of x (pst_bf16_rows): the images of `order` (NULL: in their own order) into rows (and
 * the order into order_copy, if not NULL), on the trainer's stream. The test set's once, when the
 * trainer is made; the training set's for every epoch, in the epoch's order (94 MB written, 47 MB
 * read), during the epoch before (pst_next_rows: `early`, a programmatic dependent launch) or, for
 * the first, before it. */
static void pst_make_rows(const Trainer *t, const unsigned char *pixels, const int *order,
                          int *order_copy, int images, bf16 *rows, int early)
{
    const PstArgs a = pst_args(t);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(mlp_blocks(images, 32)); /* 32 rows a block */
    cfg.blockDim = dim3(256);
    cfg.stream = cudaStreamPerThread;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = early ? 1 : 0;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, pst_bf16_rows, pixels, order, order_copy, images, a.scale,
                                  a.shift, (uint4 *)rows));
}

/* The tensor map of `images` rows of bf16 pixels, copied in boxes of the batch's rows (rounded
 * up to 64, x's rows in shared memory) x 64 pixels, 128 bytes a row with the 128-byte swizzle
 * (x's layout: PstProduct<MlpBf16>), zeros past the last row and pixel. */
static CUtensorMap pst_rows_map(const bf16 *rows, int images, int batch)
{
    typedef PstProduct<MlpBf16> P;
    CUtensorMap map;
    cuuint64_t dims[2] = {(cuuint64_t)IDX_PIXELS, (cuuint64_t)images};
    cuuint64_t strides[1] = {(cuuint64_t)IDX_PIXELS * sizeof(bf16)};
    cuuint32_t box[2] = {(cuuint32_t)P::X_BLOCK_ROW, (cuuint32_t)pst_x_rows(batch)};
    cuuint32_t step[2] = {1, 1};
    CUresult r =
        tc_encode_fn()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)rows, dims, strides, box,
                       step, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr,
                "cuTensorMapEncodeTiled failed (error %d) for %d rows of x in batches of %d\n",
                (int)r, images, batch);
        exit(1);
    }
    return map;
}

template <typename S> static void pst_create(Trainer *t)
{
    char why[200];
    int can = pst_max_clusters<S>();
    if (pst_refusal(t->hidden, t->batch, can, why, sizeof why)) { /* the callers ask first */
        fprintf(stderr, "internal error: trainer %s cannot run here: %s\n", t->impl->name, why);
        exit(1);
    }
    PstBuffers *b = (PstBuffers *)xmalloc(sizeof *b);
    t->own = b;
    b->groups = pst_groups(t->hidden);
    b->z2part = dalloc(pst_share_bytes<S>(b->groups));
    b->phase_cycles = (long long *)dalloc(PST_PHASES * sizeof(long long));
    b->stamps = 0;
    b->x_epoch[0] = b->x_epoch[1] = b->x_test = NULL;
    b->order[0] = b->order[1] = NULL;
    b->cur = b->ahead_ready = 0;
    if (PstProduct<S>::X_BUFFERS == 2) { /* bf16: pst_copy_batch */
        for (int i = 0; i < 2; i++) {
            b->x_epoch[i] = (bf16 *)dalloc((size_t)t->n_train * IDX_PIXELS * sizeof(bf16));
            b->map_epoch[i] = pst_rows_map(b->x_epoch[i], t->n_train, t->batch);
            b->order[i] = (int *)dalloc((size_t)t->n_train * sizeof(int));
        }
        if (t->n_test) {
            b->x_test = (bf16 *)dalloc((size_t)t->n_test * IDX_PIXELS * sizeof(bf16));
            pst_make_rows(t, t->test_pixels, NULL, NULL, t->n_test, b->x_test, 0);
            b->map_test = pst_rows_map(b->x_test, t->n_test, t->batch);
        }
    }
    /* A launch of no steps tells whether the driver takes a cooperative launch with clusters
       (which guarantees that every block is resident); else the occupancy check above is the
       guarantee. */
    PstArgs probe = pst_args(t);
    probe.steps = 0;
    b->cooperative = pst_try_launch<S>(probe, b->groups, 1) == cudaSuccess;
    if (!b->cooperative) {
        (void)cudaGetLastError();
        CUDA_CHECK(pst_try_launch<S>(probe, b->groups, 0));
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    printf(
        "  %s: %d clusters of %d blocks (the GPU holds %d at once), %zu bytes of shared memory a "
        "block, %s launch\n",
        t->impl->name, b->groups, PST_CLUSTER, can, sizeof(PstShared<S>),
        b->cooperative ? "cooperative" : "plain (resident by occupancy)");
}

static void pst_destroy(Trainer *t)
{
    PstBuffers *b = pst_buffers(t);
    CUDA_CHECK(cudaFree(b->z2part));
    CUDA_CHECK(cudaFree(b->phase_cycles));
    for (int i = 0; i < 2; i++) {
        CUDA_CHECK(cudaFree(b->x_epoch[i]));
        CUDA_CHECK(cudaFree(b->order[i]));
    }
    CUDA_CHECK(cudaFree(b->x_test));
    free(b);
    t->own = NULL;
}

/* This epoch's order on the GPU: run_epoch's upload (t->order), or bf16's own (which it
 * uploads with the epoch's rows: pst_next_rows). */
static const int *pst_epoch_order(const Trainer *t)
{
    const PstBuffers *b = pst_buffers(t);
    return b->order[0] ? b->order[b->cur] : t->order;
}

/* A training epoch's arguments: every step of it, over this epoch's order. */
static PstArgs pst_epoch_args(const Trainer *t, float lr, float mu)
{
    PstArgs a = pst_args(t);
    a.pixels = t->pixels, a.labels = t->labels, a.order = pst_epoch_order(t);
    a.rows = pst_buffers(t)->map_epoch[pst_buffers(t)->cur];
    a.images = t->n_train, a.steps = steps_per_epoch(t);
    a.lr = lr, a.mu = mu, a.train = 1;
    a.loss = t->step_loss;
    a.z1_last = t->z1, a.dz2_last = t->dz2;
    return a;
}

/* bf16: the epoch's rows of x, in its order, before its launch. */
template <typename S> static void pst_epoch_rows(const Trainer *t)
{
    PstBuffers *b = pst_buffers(t);
    if (PstProduct<S>::X_BUFFERS == 2)
        pst_make_rows(t, t->pixels, b->order[b->cur], NULL, t->n_train, b->x_epoch[b->cur], 0);
}

/* bf16: this epoch's order and rows were copied and written during the last epoch if its
 * order was drawn then (pst_next_rows); else (the first epoch) they are now. */
template <typename S> static void pst_epoch(Trainer *t)
{
    PstBuffers *b = pst_buffers(t);
    if (b->ahead_ready) {
        b->cur = 1 - b->cur, b->ahead_ready = 0;
    } else if (b->order[0]) {
        CUDA_CHECK(cudaMemcpyAsync(b->order[b->cur], t->h_order, (size_t)t->n_train * sizeof(int),
                                   cudaMemcpyHostToDevice, cudaStreamPerThread));
        pst_epoch_rows<S>(t);
    }
    pst_launch<S>(t, pst_epoch_args(t, t->lr, t->mu));
}

/* bf16 (StepFamily's next_order_drawn): the next epoch's order and rows, written while this
 * epoch trains, into the other buffers, so that neither is on the next epoch's path before
 * its launch. The persistent kernel holds 120 SMs
 * (15 clusters of 8 at H = 1024), and the rows kernel, launched after it on the same
 * stream, takes the GPU's others (12 on an H100 or H200): a programmatic dependent launch,
 * which may start once every block of the kernel before it has executed
 * griddepcontrol.launch_dependents (mlp_persistent does at its start). It reads the order
 * from the host's pinned memory, where run_epoch drew it, and copies it for the next
 * launch. The next launch on the stream waits for it as for any kernel before, and so does
 * the end of this epoch. (A second stream for the rows would run them alongside as well, but
 * leaves every launch after it slower for the rest of the process.) */
static void pst_next_rows(Trainer *t)
{
    PstBuffers *b = pst_buffers(t);
    int *order;
    CUDA_CHECK(cudaHostGetDevicePointer((void **)&order, t->h_next_order, 0));
    pst_make_rows(t, t->pixels, order, b->order[1 - b->cur], t->n_train, b->x_epoch[1 - b->cur], 1);
    b->ahead_ready = 1;
}

/* For the bench: where a step's time goes. One more epoch (lr 0, momentum 1: the weights
 * stay as they are) in which block 0 counts the clock cycles of each phase; its time a step,
 * shared out in proportion (us[k], PST_PHASES of them). */
template <typename S> static void pst_phase_times(Trainer *t, double *us)
{
    PstBuffers *b = pst_buffers(t);
    PstArgs a = pst_epoch_args(t, 0.0f, 1.0f);
    a.phase_cycles = b->phase_cycles;
    pst_epoch_rows<S>(t); /* before the clock: the phases are the launch's */
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start, cudaStreamPerThread));
    pst_launch<S>(t, a);
    CUDA_CHECK(cudaEventRecord(stop, cudaStreamPerThread));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms;
    long long cycles[PST_PHASES], total = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    CUDA_CHECK(cudaMemcpy(cycles, b->phase_cycles, sizeof cycles, cudaMemcpyDeviceToHost));
    for (int k = 0; k < PST_PHASES; k++) total += cycles[k];
    for (int k = 0; k < PST_PHASES; k++)
        us[k] = total > 0 ? 1e3 * ms / a.steps * (double)cycles[k] / total : 0.0;
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
}

static const char *const PST_PHASE_NAMES[PST_PHASES] = {
    "forward", "reduce_z1_z2", "z2_shares", "softmax_backward", "small_step", "dW1_step_next_x"};
static const StepStages PERSISTENT_STAGES = {PST_PHASES, PST_PHASE_NAMES, NULL,
                                             pst_phase_times<MlpFp32>};
static const StepStages PERSISTENT_BF16_STAGES = {PST_PHASES, PST_PHASE_NAMES, NULL,
                                                  pst_phase_times<MlpBf16>};
static const StepStages PERSISTENT_BF16X3_STAGES = {PST_PHASES, PST_PHASE_NAMES, NULL,
                                                    pst_phase_times<MlpBf16x3>};

/* The test pass: the same kernel without the backward pass, in batches of t->batch. */
template <typename S> static double pst_evaluate(Trainer *t, double *loss)
{
    PstArgs a = pst_args(t);
    a.pixels = t->test_pixels, a.labels = t->test_labels, a.order = t->test_order,
    a.rows = pst_buffers(t)->map_test;
    a.images = t->n_test, a.steps = (t->n_test + t->batch - 1) / t->batch;
    a.loss = t->eval_loss, a.correct = t->correct;
    test_pass_clear(t);
    pst_launch<S>(t, a);
    return test_pass_result(t, loss);
}

static const StepFamily PERSISTENT_STEPS = {
    .fused = 0,
    .capturable = 0,
    .create = pst_create<MlpFp32>,
    .destroy = pst_destroy,
    .begin_epoch = NULL,
    .step = NULL,
    .evaluate = pst_evaluate<MlpFp32>,
    .tolerances = NULL,
    .stages = &PERSISTENT_STAGES,
    .epoch = pst_epoch<MlpFp32>,
    .unsupported = pst_unsupported<MlpFp32>,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};

/* bf16x3: fp32's numbers (part4_persistent/05_products_bf16x3.cuh), checked as fp32 is. */
static const StepFamily PERSISTENT_BF16X3_STEPS = {
    .fused = 0,
    .capturable = 0,
    .create = pst_create<MlpBf16x3>,
    .destroy = pst_destroy,
    .begin_epoch = NULL,
    .step = NULL,
    .evaluate = pst_evaluate<MlpBf16x3>,
    .tolerances = NULL,
    .stages = &PERSISTENT_BF16X3_STAGES,
    .epoch = pst_epoch<MlpBf16x3>,
    .unsupported = pst_unsupported<MlpBf16x3>,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};

/* x's row times W1's column j as the bf16 kernel sums it (StepFamily's z1_sum, for --check):
 * each block's slice of the pixels, rounded to fp16 as it crosses the cluster (PstChunk),
 * and at a batch of 128 rows or fewer the slice's K parts first, each rounded, then their
 * sum (pst_sum_parts). The blocks' pieces are then added in fp32; here in double. */
static double pst_bf16_z1_sum(const float *xb, const double *w1, int hidden, int j, int batch)
{
    typedef PstProduct<MlpBf16> P;
    const PstSplit sp = pst_split(batch, P::GRANULE);
    double z = 0.0;
    for (int q = 0; q < PST_CLUSTER; q++) {
        const int k0 = pst_slice_begin(q, P::QUANTUM),
                  steps = (pst_slice_begin(q + 1, P::QUANTUM) - k0) / P::QUANTUM;
        double slice = 0.0;
        for (int p = 0; p < sp.parts; p++) {
            int s0, s1;
            pst_part_steps(sp, p, steps, s0, s1);
            double part = 0.0;
            for (int k = k0 + s0 * P::QUANTUM; k < k0 + s1 * P::QUANTUM; k++)
                part += (double)xb[k] * w1[(size_t)k * hidden + j];
            slice += mlp_round_fp16((float)part);
        }
        z += sp.parts > 1 ? mlp_round_fp16((float)slice) : slice;
    }
    return z;
}

/* bf16: checked as part2_tensor_cores/01_tc_steps.cuh's step is (TC_TOLERANCES: against CPU steps
 * on the same rounded operands: x and W1 in the forward product, x and dz1 in dW1), with z1's sums
 * rounded where the kernel rounds them (pst_bf16_z1_sum). z2's shares, which cross L2 with 16 bits
 * of mantissa (PstShares: 2^-17 of a share at most), are not rounded here: what they add to
 * --check's errors (at worst a ReLU flip in the second step) stays well inside the tolerances. */
static const StepFamily PERSISTENT_BF16_STEPS = {
    .fused = 0,
    .capturable = 0,
    .create = pst_create<MlpBf16>,
    .destroy = pst_destroy,
    .begin_epoch = NULL,
    .step = NULL,
    .evaluate = pst_evaluate<MlpBf16>,
    .tolerances = &TC_TOLERANCES,
    .stages = &PERSISTENT_BF16_STAGES,
    .epoch = pst_epoch<MlpBf16>,
    .unsupported = pst_unsupported<MlpBf16>,
    .z1_sum = pst_bf16_z1_sum,
    .next_order_drawn = pst_next_rows,
};

#endif
