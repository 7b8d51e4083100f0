/* Exercise 6 (stretch): four streams whose copies take the engines in chunk order.
 *
 * Asked: the timeline of depth_k4 shows the copy engine serving the four streams' first
 * copies-in in the order 3, 2, 0, 1, so chunk 1's stream waits while the others run ahead.
 * Make depth first over four streams issue each copy direction in chunk order, with
 * events and cudaStreamWaitEvent, and predict whether it closes the gap between depth_k4
 * and the best pipeline.
 *
 * Answer: one event per direction. After chunk c's copy-in its stream records copied_in;
 * the stream of chunk c + 1 waits for that record before its own copy-in, so the copies in
 * run strictly in chunk order, one at a time, whichever stream they sit in; the same for
 * the copies out with copied_out. (Each wait is issued before the next record, and
 * cudaStreamWaitEvent waits for the record that precedes it on the host: one event serves
 * every chunk.) The kernels keep only their own stream's order. The engine has no choice
 * left to make, so no stream falls behind, and the pipeline should reach depth_k8's time
 * with half the streams. The price is a short gap between two copies of one direction
 * while the GPU sees the event and starts the next copy, once per chunk. */
#ifndef CH06_EX6_ORDERED_K4_CUH
#define CH06_EX6_ORDERED_K4_CUH

#include "../kernels.cuh"

static inline void ex6_ordered_k4(const Pipeline *p)
{
    Pipeline q = *p;
    q.nstreams = 4;
    cudaEvent_t copied_in, copied_out;
    CUDA_CHECK(cudaEventCreateWithFlags(&copied_in, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&copied_out, cudaEventDisableTiming));
    int count = sp_chunk_count(q.n, q.chunks);
    for (int c = 0; c < count; c++) {
        int si = c % q.nstreams;
        cudaStream_t s = q.streams[si];
        /* For c = 0 the events were never recorded: a wait for them returns at once. */
        CUDA_CHECK(cudaStreamWaitEvent(s, copied_in, 0));
        sp_stage_h2d(&q, c, si);
        CUDA_CHECK(cudaEventRecord(copied_in, s));
        sp_stage_kernel(&q, c, si);
        CUDA_CHECK(cudaStreamWaitEvent(s, copied_out, 0));
        sp_stage_d2h(&q, c, si);
        CUDA_CHECK(cudaEventRecord(copied_out, s));
    }
    CUDA_CHECK(cudaEventDestroy(copied_in));
    CUDA_CHECK(cudaEventDestroy(copied_out));
}

#endif
