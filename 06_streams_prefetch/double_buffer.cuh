/* Double buffering: two device slots, so that filling one overlaps using the other.
 *
 * A slot is filled by one stream (a host-to-device copy of the next batch, or a kernel
 * writing results) and used by another (a kernel reading the batch, or a device-to-host
 * copy of the results). Two events per slot keep them apart without ever blocking the host:
 *
 *   filled[s]  recorded by the filling stream when slot s holds new data;
 *              the using stream waits for it before it reads the slot;
 *   used[s]    recorded by the using stream when it is done with slot s;
 *              the next fill of slot s waits for it before it overwrites the slot.
 *
 * Slots are taken in turn (0, 1, 0, 1, ...), so batch b lives in slot b % 2 and the fill of
 * batch b + 1 runs while batch b is being used. Input side, as chapter 07 feeds minibatches:
 *
 *     DoubleBuffer db;
 *     double_buffer_create(&db, batch_bytes);
 *     for (int b = 0; b < batches; b++) {
 *         int s = double_buffer_begin_fill(&db, copy_stream);    // waits until s is free
 *         CUDA_CHECK(cudaMemcpyAsync(db.slot[s], host + b * batch_bytes, batch_bytes,
 *                                    cudaMemcpyHostToDevice, copy_stream));
 *         double_buffer_end_fill(&db, s, copy_stream);
 *         const float *x = (const float *)double_buffer_begin_use(&db, s, compute_stream);
 *         ... kernels on compute_stream that read x ...
 *         double_buffer_end_use(&db, s, compute_stream);
 *     }
 *     double_buffer_destroy(&db);   // synchronizes the device first
 *
 * The host source must be pinned (cudaMallocHost or cudaHostRegister): from pageable memory
 * cudaMemcpyAsync returns only after the copy, and nothing overlaps. The two streams must
 * be different ones, and the same ones for every batch. For results going back, a kernel
 * on the compute stream is the filler and a device-to-host copy on a second copy stream is
 * the user (06_streams_prefetch/kernels.cuh, pipeline_double_buffer, does both). */
#ifndef CH06_DOUBLE_BUFFER_CUH
#define CH06_DOUBLE_BUFFER_CUH

#include "common/cuda_utils.cuh"

typedef struct {
    void *slot[2]; /* device memory, slot_bytes each */
    size_t slot_bytes;
    cudaEvent_t filled[2];
    cudaEvent_t used[2];
    int next; /* the slot the next fill takes */
} DoubleBuffer;

static inline void double_buffer_create(DoubleBuffer *db, size_t slot_bytes)
{
    db->slot_bytes = slot_bytes;
    db->next = 0;
    for (int s = 0; s < 2; s++) {
        CUDA_CHECK(cudaMalloc(&db->slot[s], slot_bytes));
        CUDA_CHECK(cudaEventCreateWithFlags(&db->filled[s], cudaEventDisableTiming));
        CUDA_CHECK(cudaEventCreateWithFlags(&db->used[s], cudaEventDisableTiming));
    }
}

static inline void double_buffer_destroy(DoubleBuffer *db)
{
    CUDA_CHECK(cudaDeviceSynchronize());
    for (int s = 0; s < 2; s++) {
        CUDA_CHECK(cudaFree(db->slot[s]));
        CUDA_CHECK(cudaEventDestroy(db->filled[s]));
        CUDA_CHECK(cudaEventDestroy(db->used[s]));
    }
}

/* Takes the next slot for filling on `stream`: the stream waits until the slot's previous
 * user is done with it (no wait the first time: an event never recorded is complete).
 * Returns the slot index; enqueue the fill into db->slot[index] on `stream` next. */
static inline int double_buffer_begin_fill(DoubleBuffer *db, cudaStream_t stream)
{
    int s = db->next;
    db->next ^= 1;
    CUDA_CHECK(cudaStreamWaitEvent(stream, db->used[s], 0));
    return s;
}

/* Marks slot s filled once the work enqueued so far on `stream` has run. */
static inline void double_buffer_end_fill(DoubleBuffer *db, int s, cudaStream_t stream)
{
    CUDA_CHECK(cudaEventRecord(db->filled[s], stream));
}

/* Makes `stream` wait until slot s is filled; returns the slot's device pointer. */
static inline void *double_buffer_begin_use(DoubleBuffer *db, int s, cudaStream_t stream)
{
    CUDA_CHECK(cudaStreamWaitEvent(stream, db->filled[s], 0));
    return db->slot[s];
}

/* Frees slot s for its next fill once the work enqueued so far on `stream` has run. */
static inline void double_buffer_end_use(DoubleBuffer *db, int s, cudaStream_t stream)
{
    CUDA_CHECK(cudaEventRecord(db->used[s], stream));
}

#endif
