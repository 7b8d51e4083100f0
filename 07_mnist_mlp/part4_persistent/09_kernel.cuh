/* Chapter 07: the persistent trainers' kernel, mlp_persistent: a whole epoch in one launch, with
 * the weights on the chip from its first step to its last (part4_persistent/11_persistent_steps.cuh
 * runs it). This file is its loop; the phases are part4_persistent/06_phases.cuh (z2_shares and
 * softmax_backward in part4_persistent/07_softmax_backward.cuh, the batch in
 * part4_persistent/08_batch.cuh), the two products part4_persistent/02_products.cuh, and how blocks
 * reach each other part4_persistent/01_cluster_sync.cuh.
 *
 * The three-launch step of `optimized` still hands everything over through memory: each
 * launch reads W1 (3.2 MB) or its velocity from L2 or DRAM, writes what the next one needs,
 * and waits for the one before to drain. Here one grid stays resident for all 235 steps:
 * clusters of 8 blocks (one block an SM: 15 clusters for H = 1024 on an H100), each cluster
 * 72 hidden units, each block of it a slice of the 784 pixels, and every block keeps its
 * piece of the model where it computes:
 *
 *                    units u0 .. u0+71 (cluster g)
 *                   +---------------------------+
 *   pixels  rank 0  |  W1 slice (96 x 72) smem  |  velocity (and bf16's fp32 weights):
 *   (784,   rank 1  |  W1 slice (96/100 x 72)   |  registers of the threads that
 *   cut in  ...     |  ...                      |  compute its gradient
 *   8)      rank 7  |  W1 slice (100/112 x 72)  |  + W2's rows u0.., b1 of them, b2:
 *                   +---------------------------+    a copy in every block
 *
 * One step, for block q of cluster g, in the phases the bench reports (PST_*):
 *
 *   forward           part = x[:, slice q] . W1[slice q, units g]    (rows x 72, PstProduct)
 *      -- cluster barrier --
 *   reduce_z1_z2      for its rows (an eighth of the batch): z1 = b1 + the 8 blocks' parts,
 *                     read from their shared memory (distributed shared memory; bf16's
 *                     parts in fp16, half the bytes: PstChunk); the
 *                     cluster's share of z2, relu(z1) W2[units g], to z2part in memory
 *                     (bf16: begun by each thread on the 8 units of z1 it adds)
 *   z2_shares         z2 = b2 + the 15 clusters' shares of its rows, each stored with its
 *                     step's number: a block loads them until it has them all (no other
 *                     barrier between the clusters)
 *   softmax_backward  softmax, loss, dz2; the block's share of
 *                     dW2, db1, db2; dz1 = relu'(z1) (dz2 W2^T) for its rows, stored into
 *                     all 8 blocks' shared memory (the dW1 product's operand; st.async,
 *                     waited for on an mbarrier before the product)
 *      -- cluster barrier --
 *   small_step        W2, b1, b2 stepped from the 8 blocks' shares, an eighth by each
 *                     block, which stores the new weights into all 8 (st.async; so every
 *                     copy stays the same; b2, whose gradient every cluster sums alike, in
 *                     every cluster); the velocities stay with the block that steps them
 *   dW1_step_next_x   g = x[:, slice q]^T dz1; v = mu v + g; W1 -= lr v (PstProduct); the
 *                     next batch's slice of x, its loads issued before the product (bf16,
 *                     with two buffers of x: a TMA copy)
 *
 * W1 and its velocity never leave the chip during the epoch; what crosses memory in a step
 * is the batch (each block its slice of the pixels: 25 KB at batch 256; bf16's, two TMA boxes
 * of 64 pixels, 64 KB) and z2's shares (20 KB a cluster, each value with its step's number;
 * bf16's, 10 KB: PstShares). z2part is double-buffered by the step's parity: a block may
 * write step s + 1's share while another still reads step s's, but not step s + 2's
 * (pst_z2_shares says why). Within a cluster, dz1's row r, stored by softmax_backward into
 * every block, lands on the same bytes as the partial sums' row r, which only row r's own
 * rank reads, before it stores (pst_dz1_on_part_rows): so the reduction and dz1's stores
 * need no barrier between them, and the next forward, which overwrites both, comes after
 * the block's wait for dz1. The two cluster barriers release what a block wrote into its own
 * shared memory (the partial sums, the small gradients' shares) and nothing more: what it
 * writes into the others' goes by st.async and is counted on their mbarriers
 * (pst_exchanges_expect), so no barrier needs a fence at GPU scope (pst_cluster_arrive).
 *
 * Blocks that wait for each other's shares are only safe if every block is running at
 * once: the launch is cooperative (the driver takes that with clusters), and
 * part4_persistent/10_launch.cuh refuses shapes whose grid cannot be resident
 * (cudaOccupancyMaxActiveClusters), GPUs without clusters (before sm_90), and batches over
 * 256 rows (the shared memory is sized for them). The test pass runs the same kernel with
 * train = 0: forward, reduce, z2's shares, softmax and the count of correct rows.
 *
 * x is normalized as p * scale + shift (one FMA a pixel) where the other trainers divide
 * twice ((p / 255 - mean) / std): within an ulp or two of theirs. */
#ifndef CH07_KERNELS_PERSISTENT_CUH
#define CH07_KERNELS_PERSISTENT_CUH

#include "07_mnist_mlp/part4_persistent/08_batch.cuh"
#include "07_mnist_mlp/part4_persistent/07_softmax_backward.cuh"

/* ------------------------------------------------------------------ the kernel */

/* One block of 256 threads per SM (its shared memory is nearly all of the SM's), in
 * clusters of 8 (the launch sets the cluster size). */
template <typename S> __global__ void __launch_bounds__(PST_THREADS, 1)
    mlp_persistent(const __grid_constant__ PstArgs a)
{
#ifdef PST_DEVICE
    typedef PstProduct<S> P;
    extern __shared__ __align__(16) unsigned char pst_smem[];
    PstShared<S> &sm = *(PstShared<S> *)pst_smem;
    /* a kernel launched after this one as a programmatic dependent (bf16's next rows:
       part4_persistent/11_persistent_steps.cuh) may start now, on the SMs this grid leaves free */
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    if (a.steps == 0) return;
    const int rank = pst_rank(), group = blockIdx.x / PST_CLUSTER, groups = gridDim.x / PST_CLUSTER;
    const int k0 = pst_slice_begin(rank, P::QUANTUM),
              ks = pst_slice_begin(rank + 1, P::QUANTUM) - k0;
    const int u0 = group * PST_UNITS;
    P prod;
    prod.load(a.params + a.w1, a.vel + a.w1, a.hidden, k0, ks, u0, sm.w1s);
    pst_load_small(sm, a, u0);
    pst_exchanges_init(sm);
    constexpr bool TWO_BUFFERS = P::X_BUFFERS == 2;
    typename P::Row row;
    int label = 0;
    pst_batch_load<S>(row, label, a, pst_image(a, 0), k0, ks);
    if (TWO_BUFFERS) pst_first_copy(sm, a, k0);
    pst_batch_put<S>(sm, sm.xs, row, label, a, pst_rows(a, 0), rank, ks);
    __syncthreads();
    /* block 0, thread 0 counts the cycles of each phase (a clock read after each) */
    const bool stamp = a.phase_cycles && blockIdx.x == 0 && threadIdx.x == 0;
    long long cycles[PST_PHASES] = {}, last = clock64();
#define PST_STAMP(phase)                               \
    do {                                               \
        if (stamp) {                                   \
            long long now_ = clock64();                \
            cycles[phase] += now_ - last, last = now_; \
        }                                              \
    } while (0)
    /* With two buffers of x (bf16: PstProduct's X_BUFFERS), the next batch goes into the other one
       during the step: its rows, in bf16 and in the epoch's order
       (part4_persistent/11_persistent_steps.cuh), are two boxes of a tensor map, which one thread
       asks the TMA unit to copy just before the dW1 product; they land during it and are waited for
       at the step's end, so that the next forward follows at once. With one buffer (fp32, bf16x3:
       no room for two), the loads are issued in small_step and the put follows the dW1 product,
       which reads x until its end. */
    for (int s = 0; s < a.steps; s++) {
        const int rows = pst_rows(a, s), buf = s & 1;
        const bool record = a.train && s == a.steps - 1;
        const PstOwn o = pst_own(rows, rank);
        const PstSplit sp = pst_split(rows, P::GRANULE);
        typename P::T *x = sm.xs + (TWO_BUFFERS ? buf : 0) * sm.X_SIZE,
                      *x_next = sm.xs + (TWO_BUFFERS ? 1 - buf : 0) * sm.X_SIZE;
        /* the next step's image, for the fetch */
        int ahead = TWO_BUFFERS ? pst_image(a, s + 1) : 0;
        if (TWO_BUFFERS) pst_prefetch_batch(a, s + 2, k0, group, groups); /* into L2 for its copy */
        /* forward */
        P::forward(x, sm.w1s, sm.part, ks, sp, a.scale, a.shift);
        if (sp.parts > 1) {
            __syncthreads();
            pst_sum_parts<S>(sm.part, sp);
        }
        if (TWO_BUFFERS) {
            pst_cluster_arrive();
            if (s + 1 < a.steps) pst_batch_load<S>(row, label, a, ahead, k0, ks);
            pst_cluster_wait();
        } else {
            pst_cluster_sync();
        }
        if (a.train) pst_exchanges_expect(sm, rows, s);
        PST_STAMP(PST_FORWARD);
        /* reduce_z1_z2 */
        /* bf16: z2's share in parts, a chunk of z1's units each, in x's other buffer: free
           until the next batch's copy, issued before the dW1 product, which writes over
           these bytes (360 a row of this rank's, 45 a batch row: within the rows a copy
           writes) */
        pst_reduce_z1(sm, a, o, u0, record, (float *)x_next);
        __syncthreads();
        if constexpr (TWO_BUFFERS)
            pst_z2_share_sum<S>((const float *)x_next, a, o, group, groups, buf,
                                (int)(a.stamp0 + s + 1));
        else
            pst_z2_share(sm, a, o, group, groups, buf, (int)(a.stamp0 + s + 1));
        __syncthreads();
        PST_STAMP(PST_REDUCE);
        /* z2_shares: they are the barrier between the clusters */
        /* with one buffer, the index is loaded here, not live through the forward, where
           fp32's registers are all in use */
        if (!TWO_BUFFERS) ahead = pst_image(a, s + 1);
        const bool next = s + 1 < a.steps;
        pst_z2_shares(sm, a, o, groups, buf, (int)(a.stamp0 + s + 1));
        __syncthreads();
        PST_STAMP(PST_Z2_SHARES);
        /* softmax_backward */
        pst_softmax_rows(sm, a, o, rows, group, record);
        __syncthreads();
        if (group == 0 && threadIdx.x == 0) pst_loss_sum(sm, a, s);
        if (a.train) {
            pst_backward_small(sm, o, rows);
            if (TWO_BUFFERS) {
                pst_cluster_arrive();
                if (next) pst_put_label(sm, label, pst_rows(a, s + 1), rank);
                pst_cluster_wait();
            } else {
                pst_cluster_sync();
            }
            PST_STAMP(PST_SOFTMAX);
            /* small_step */
            pst_step_small(sm, a.lr, a.mu);
        } else if (TWO_BUFFERS && next) {
            pst_put_label(sm, label, pst_rows(a, s + 1), rank);
        }
        /* dW1_step_next_x: with one buffer, the next batch's loads in flight during the product */
        if (!TWO_BUFFERS && next) pst_batch_load<S>(row, label, a, ahead, k0, ks);
        __syncthreads();
        PST_STAMP(PST_SMALL_STEP);
        if (TWO_BUFFERS && next) pst_copy_batch(sm, x_next, a, (s + 1) * a.batch, k0);
        if (a.train) {
            tc_mbar_wait(&sm.dz1_full, (unsigned)s & 1u);
            prod.dw1_step(x, sm.part, sm.w1s, ks, rows, a.lr, a.mu, a.scale, a.shift);
        }
        if (TWO_BUFFERS && next) pst_batch_landed(sm, s + 1);
        __syncthreads();
        if (!TWO_BUFFERS) {
            if (next) pst_batch_put<S>(sm, x_next, row, label, a, pst_rows(a, s + 1), rank, ks);
            __syncthreads();
        }
        PST_STAMP(PST_DW1);
    }
#undef PST_STAMP
    if (stamp)
        for (int k = 0; k < PST_PHASES; k++) a.phase_cycles[k] = cycles[k];
    if (a.train) {
        /* the last step's small weights */
        tc_mbar_wait(&sm.small_full, (unsigned)(a.steps - 1) & 1u);
        prod.store(a.params + a.w1, a.vel + a.w1, a.hidden, k0, ks, u0, sm.w1s);
        pst_store_small(sm, a, u0, rank);
    }
    tc_cluster_sync(); /* no block leaves while another may still read its shared memory */
#endif
}

#endif
