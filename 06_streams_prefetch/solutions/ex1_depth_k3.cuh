/* Exercise 1 (warm-up): depth first over three streams.
 *
 * Asked: add a row that runs pipeline_depth_first with K = 3 and predict, before running,
 * where its time falls between depth_k2 and depth_k4.
 *
 * Answer: one row, {"ex1_depth_k3", "exercise", ..., {3, 1}}; the launcher below only fixes
 * K. With K = 2 a stream's next copy-in waits behind its own copy-out, so two of the three
 * engines work at a time and the time is about 3/2 of the bound. With K = 3, chunk c + 3
 * goes to the stream of chunk c, whose copy-out runs while chunk c + 1 computes and chunk
 * c + 2 is copied in: in a schedule where every stage takes the same time, chunk c's
 * copy-out is done exactly when chunk c + 3's copy-in may start. So three streams are the
 * fewest that let all three stages overlap, and the time drops to the range of depth_k4
 * and depth_k8. It has no slack: a copy that takes a little longer than the kernel delays
 * the next copy-in of the same stream, where four or more streams absorb it. */
#ifndef CH06_EX1_DEPTH_K3_CUH
#define CH06_EX1_DEPTH_K3_CUH

#include "../kernels.cuh"

static inline void ex1_depth_k3(const Pipeline *p)
{
    Pipeline q = *p;
    q.nstreams = 3;
    pipeline_depth_first(&q);
}

#endif
