/* Exercise 2 (warm-up): depth_k8 from pageable memory.
 *
 * Asked: copy depth_k8's row and change one field, pinned = 0, so that the pipeline copies
 * from and to the malloc'ed buffers naive_pageable uses. Predict its time against
 * naive_pageable and depth_k8 before running.
 *
 * Answer: the row {"ex2_depth_k8_pageable", "exercise", ..., {8, 0}}; the launcher below
 * only fixes K. Nothing overlaps any more. A copy-in from pageable memory goes through the
 * driver's pinned staging buffer: the CPU copies the chunk into it piece by piece while the
 * copy engine empties it, and cudaMemcpyAsync returns once the CPU has handed over the last
 * piece. A copy-out to pageable memory returns only when it is complete, which needs the
 * chunk's kernel to have run. So the host issues the next chunk only after the previous
 * one has gone all the way through, and the eight streams never hold work at the same time.
 * The time is that of naive_pageable's three stages in a row, with one difference: the
 * copies are now 64 small ones, and the bandwidth sweep shows that pageable copies of a few
 * MiB run faster than one of 1 GiB. So it lands near naive_pageable, maybe below it, and
 * far above depth_k8: streams cannot overlap a copy the CPU has to do itself. */
#ifndef CH06_EX2_DEPTH_K8_PAGEABLE_CUH
#define CH06_EX2_DEPTH_K8_PAGEABLE_CUH

#include "../kernels.cuh"

static inline void ex2_depth_k8_pageable(const Pipeline *p)
{
    Pipeline q = *p;
    q.nstreams = 8;
    pipeline_depth_first(&q);
}

#endif
