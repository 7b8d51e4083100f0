/* Chapter 07: the fused step fed from the host through chapter 06's double buffer
 * (trainer fed): no resident data set; the CPU gathers each batch into pinned memory
 * while the GPU still trains on the one before. The host work in every step keeps it out
 * of CUDA graphs. */
#ifndef CH07_STEPS_FED_CUH
#define CH07_STEPS_FED_CUH

#include "06_streams_prefetch/double_buffer.cuh"
#include "07_mnist_mlp/part1_fused/04_fused_steps.cuh"

/* What the fed step keeps beyond the Trainer's buffers. */
typedef struct {
    DoubleBuffer feed;      /* two device slots of one batch */
    unsigned char *h_stage; /* ... and the two pinned host halves they are copied from */
    cudaStream_t copy_stream;
} FedBuffers;

static void fed_create(Trainer *t)
{
    FedBuffers *f = (FedBuffers *)xmalloc(sizeof *f);
    memset(f, 0, sizeof *f);
    t->own = f;
    size_t slot = (size_t)t->batch * (IDX_PIXELS + 1); /* pixels, then labels */
    double_buffer_create(&f->feed, slot);
    CUDA_CHECK(cudaMallocHost(&f->h_stage, 2 * slot));
    CUDA_CHECK(cudaStreamCreateWithFlags(&f->copy_stream, cudaStreamNonBlocking));
}

static void fed_destroy(Trainer *t)
{
    FedBuffers *f = (FedBuffers *)t->own;
    double_buffer_destroy(&f->feed);
    CUDA_CHECK(cudaFreeHost(f->h_stage));
    CUDA_CHECK(cudaStreamDestroy(f->copy_stream));
    free(f);
    t->own = NULL;
}

/* The fused step fed through chapter 06's double buffer: the host gathers batch s into
 * one pinned half while the GPU still works on batch s - 1, a copy stream moves it into
 * a device slot, and the step's kernels wait for that copy only. */
static void step_fed(Trainer *t, int step, int batch, float lr, float mu)
{
    FedBuffers *f = (FedBuffers *)t->own;
    DoubleBuffer *db = &f->feed;
    int first = step * t->batch;
    int s = double_buffer_begin_fill(db, f->copy_stream);
    size_t label_at = (size_t)t->batch * IDX_PIXELS;
    unsigned char *stage = f->h_stage + s * db->slot_bytes, *slot = (unsigned char *)db->slot[s];
    CUDA_CHECK(cudaEventSynchronize(db->filled[s])); /* the last copy out of this half is done */
    for (int b = 0; b < batch; b++) {
        int img = t->h_order[first + b];
        memcpy(stage + (size_t)b * IDX_PIXELS, t->train_host->pixels + (size_t)img * IDX_PIXELS,
               IDX_PIXELS);
        stage[label_at + b] = t->train_host->labels[img];
    }
    CUDA_CHECK(cudaMemcpyAsync(slot, stage, (size_t)batch * IDX_PIXELS, cudaMemcpyHostToDevice,
                               f->copy_stream));
    CUDA_CHECK(cudaMemcpyAsync(slot + label_at, stage + label_at, (size_t)batch,
                               cudaMemcpyHostToDevice, f->copy_stream));
    double_buffer_end_fill(db, s, f->copy_stream);
    double_buffer_begin_use(db, s, cudaStreamPerThread);
    MlpSource src = {slot, slot + label_at, NULL, t->mean, t->std};
    MlpBatch dst = fused_batch(t);
    launch_gather(&src, 0, batch, &dst);
    double_buffer_end_use(db, s, cudaStreamPerThread); /* the gather was the slot's only reader */
    step_fused_core(t, batch, lr, mu, NULL);
}

static const StepFamily FED_STEPS = {
    .fused = 1,
    .capturable = 0,
    .create = fed_create,
    .destroy = fed_destroy,
    .begin_epoch = NULL,
    .step = step_fed,
    .evaluate = evaluate_fp32,
    .tolerances = NULL,
    .stages = NULL,
    .epoch = NULL,
    .unsupported = NULL,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};

#endif
