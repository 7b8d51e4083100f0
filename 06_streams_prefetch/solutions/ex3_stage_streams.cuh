/* Exercise 3 (practice): three streams, one per stage, for a kernel of any length.
 *
 * Asked: write a pipeline with three streams, one for the copies in, one for the kernels,
 * one for the copies out, over the whole device arrays (no double-buffer slots), correct
 * for any --work. Then run it with --work twice the balanced value the bench prints, so the
 * kernel takes twice as long as either copy, and predict the bound and the time first.
 *
 * Answer: each stage keeps its own stream, and an event per direction carries chunk c
 * from one stage to the next: the compute stream waits for chunk c's copy-in, the copy-out
 * stream for chunk c's kernel. One event can serve every chunk because cudaStreamWaitEvent
 * waits for the record that precedes it on the host, not for a later one. Nothing here
 * depends on which stage is the slowest: the copy-in stream runs ahead at link speed, each
 * kernel starts as soon as its chunk has arrived and the previous kernel is done, and the
 * copy-out follows. So the time is the slowest stage plus the fill (the first chunk's
 * copy-in) and the drain (the last chunk's copy-out), for any --work.
 *
 * With the kernel twice the copies (2T against T each), the bound is the kernel's 2T, and
 * the time should be about 2T + 2T/chunks: much closer to its bound than a balanced
 * pipeline gets, because each copy direction is busy only half the time, and the two
 * directions slow each other down (see h2d_d2h_together) for only part of the run. */
#ifndef CH06_EX3_STAGE_STREAMS_CUH
#define CH06_EX3_STAGE_STREAMS_CUH

#include "../kernels.cuh"

static inline void ex3_stage_streams(const Pipeline *p)
{
    const int in = 0, compute = 1, out = 2; /* indices into p->streams */
    cudaEvent_t copied, computed, finished;
    CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&computed, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&finished, cudaEventDisableTiming));
    int count = sp_chunk_count(p->n, p->chunks);
    for (int c = 0; c < count; c++) {
        sp_stage_h2d(p, c, in);
        CUDA_CHECK(cudaEventRecord(copied, p->streams[in]));
        CUDA_CHECK(cudaStreamWaitEvent(p->streams[compute], copied, 0));
        sp_stage_kernel(p, c, compute);
        CUDA_CHECK(cudaEventRecord(computed, p->streams[compute]));
        CUDA_CHECK(cudaStreamWaitEvent(p->streams[out], computed, 0));
        sp_stage_d2h(p, c, out);
    }
    /* A run issued right after this one must not overwrite d_in or d_out before this one
     * is done with them: its first copy-in waits for this run's last copy-out, and every
     * later stage of it waits for that copy-in. */
    CUDA_CHECK(cudaEventRecord(finished, p->streams[out]));
    CUDA_CHECK(cudaStreamWaitEvent(p->streams[in], finished, 0));
    /* Destroying an event whose record is still pending is allowed: it is released when
     * the work completes. */
    CUDA_CHECK(cudaEventDestroy(copied));
    CUDA_CHECK(cudaEventDestroy(computed));
    CUDA_CHECK(cudaEventDestroy(finished));
}

#endif
