/* Exercise 4 (practice): a pipeline over memory pinned with cudaHostRegister.
 *
 * Asked: a row with pinned = 0 hands the pipeline the malloc'ed buffers of naive_pageable.
 * Write a pipeline that pins them with cudaHostRegister, runs depth first over 8 streams,
 * and makes them pageable again with cudaHostUnregister before it returns. Predict its time
 * against depth_k8 before running, and say what the difference measures.
 *
 * Answer: below. The registration must cover every byte the copies touch, and it may only
 * be undone once no copy uses the pages any more: hence the synchronization before
 * cudaHostUnregister (a pipeline normally returns with its work still queued). The
 * bandwidth sweep shows registered memory copying at the speed of cudaMallocHost memory,
 * so the pipeline itself runs as fast as depth_k8; everything above depth_k8's time is the
 * cost of pinning and unpinning both arrays (the OS faults in and locks every page and the
 * driver maps them for the GPU), paid on every run. A real program registers a buffer
 * once, where it is allocated or handed over (a file reader's, a library's), and keeps it
 * registered for as long as it streams from it. Registering a buffer twice fails
 * (cudaErrorHostMemoryAlreadyRegistered), which is another reason to do it in one place. */
#ifndef CH06_EX4_REGISTERED_CUH
#define CH06_EX4_REGISTERED_CUH

#include "../kernels.cuh"

static inline void ex4_registered(const Pipeline *p)
{
    size_t bytes = (size_t)p->n * sizeof(float);
    CUDA_CHECK(cudaHostRegister((void *)p->h_in, bytes, cudaHostRegisterDefault));
    CUDA_CHECK(cudaHostRegister(p->h_out, bytes, cudaHostRegisterDefault));
    Pipeline q = *p;
    q.nstreams = 8;
    pipeline_depth_first(&q);
    /* Every copy must be done before the pages may move again. */
    for (int s = 0; s < q.nstreams; s++) CUDA_CHECK(cudaStreamSynchronize(q.streams[s]));
    CUDA_CHECK(cudaHostUnregister((void *)p->h_in));
    CUDA_CHECK(cudaHostUnregister(p->h_out));
}

#endif
