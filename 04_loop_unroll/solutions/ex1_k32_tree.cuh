/* Exercise 1 (warm-up): K = 32 data blocks per thread before the tree.
 *
 * Asked: add k32_tree (one line: unroll_launch_k_tree<32>). Before running, read its
 * registers (nvcc -Xptxas -v) and predict its time at 2^28 and at 2^24, where
 * 2^24 / (32 x 256) = 2048 blocks are less than two waves of 1056.
 *
 * Answer. ptxas gives unroll_k_tree<32> 32 registers, as for K = 16, so an SM still holds
 * 8 blocks. But the loads in flight do not double: the SASS issues the 32 loads in batches
 * of 4, 7, 7, 7 and 7, each batch's adds waiting for it before the next batch issues
 * (K = 16: 2, 7, 7; K = 8: 1, 7), so a thread never has more than 7 loads in flight,
 * as with K = 16. What K = 32 still halves is the number of blocks, trees and partials,
 * and k16_tree already spends little there (k16_last_warp and k16_template, which shorten
 * the tree, gain little). At 2^24, 2048 blocks make 1.94 waves of 1056, the second
 * one nearly full, so the tail costs little. Prediction: k16_tree's time within a few
 * percent at both sizes; more elements per thread help only while they add loads in
 * flight, and the compiler caps those. */
#ifndef CH04_EX1_K32_TREE_CUH
#define CH04_EX1_K32_TREE_CUH

#include "../kernels.cuh"

static inline void ex1_launch_k32_tree(const float *in, int n, float *out,
                                       const ReduceWorkspace *ws)
{
    unroll_launch_k_tree<32>(in, n, out, ws);
}

#endif
