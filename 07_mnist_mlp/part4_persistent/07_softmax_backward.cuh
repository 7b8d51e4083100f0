/* Chapter 07: the persistent trainers' phases z2_shares and softmax_backward
 * (part4_persistent/09_kernel.cuh), between reduce_z1_z2 and small_step, on the block's rows of the
 * batch:
 *
 *   pst_z2_shares       z2 = b2 + the clusters' shares, waited for by their step numbers
 *   pst_softmax_rows    the softmax, the loss and the correct rows (pst_loss_sum adds
 *                       cluster 0's), dz2
 *   pst_backward_small  the block's shares of gW2, gb1, gb2 and dz1 in one pass over its rows
 *                       (pst_small_grads_dz1), dz1 stored into the whole cluster
 * What a launch is given and a block's shared memory: part4_persistent/06_phases.cuh. */
#ifndef CH07_KERNELS_PERSISTENT_SOFTMAX_CUH
#define CH07_KERNELS_PERSISTENT_SOFTMAX_CUH

#include "07_mnist_mlp/part4_persistent/06_phases.cuh"

#ifdef PST_DEVICE

/* ------------------------------------------------------------------ softmax_backward */

/* The softmax of the block's rows, z2 in sm.dz2, into the loss, the count of correct rows
 * and (training) dz2 = (p - onehot) / rows in place of z2: 8 lanes a row, lane l with
 * classes l and l + 8 (lanes 2-7 have one), so that a warp does four rows at once with
 * shuffles three deep (the maximum and argmax, the sum of the exponentials, the label's
 * logit). A warp a row, as the output layer does it (kernels.cuh), would leave each warp four
 * rows to do one after the other at batch 256, chains of shuffles five deep that nothing
 * else hides. Only cluster 0 counts the loss and the correct rows (every cluster computes the
 * same). dz2 takes one division a row, e x (1 / (sum x rows)), where (e / sum - onehot) /
 * rows would take two an element, on the phase's chain of dependent instructions. */
template <typename S> static __device__ __forceinline__ void
pst_softmax_rows(PstShared<S> &sm, const PstArgs &a, PstOwn o, int rows, int group, bool record)
{
    const int warp = threadIdx.x / 32, quarter = threadIdx.x % 32 / 8, lane = threadIdx.x % 8;
    float loss = 0.0f; /* lane 0 of each quarter: its rows' */
    int correct = 0;
    const float inv_rows = 1.0f / (float)rows;
    for (int base = 4 * warp; base < o.n; base += 4 * (PST_THREADS / 32)) {
        const int rl = base + quarter, r = o.r0 + rl;
        const bool row = rl < o.n, two = row && lane + 8 < MLP_CLASSES;
        const int label = row ? sm.y[rl] : 0;
        float *zr = sm.dz2 + rl * MLP_CLASSES; /* lane l alone reads and writes elements l, l + 8 */
        float za = row ? zr[lane] : -INFINITY, zb = two ? zr[lane + 8] : -INFINITY, zmax = za;
        int best = lane;
        if (zb > za) zmax = zb, best = lane + 8;
        for (int off = 4; off > 0; off /= 2) {
            float other = __shfl_xor_sync(0xffffffffu, zmax, off, 8);
            int other_best = __shfl_xor_sync(0xffffffffu, best, off, 8);
            if (other > zmax || (other == zmax && other_best < best))
                zmax = other, best = other_best;
        }
        float ea = row ? expf(za - zmax) : 0.0f, eb = two ? expf(zb - zmax) : 0.0f, sum = ea + eb;
        for (int off = 4; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off, 8);
        sum = __shfl_sync(0xffffffffu, sum, 0, 8);
        float zlabel = __shfl_sync(0xffffffffu, label < 8 ? za : zb, label % 8, 8);
        if (row && group == 0 && lane == 0) {
            loss += logf(sum) + zmax - zlabel;
            correct += best == label;
        }
        if (a.train && row) {
            const float scale = inv_rows / sum; /* p / rows = e x scale */
            float da = ea * scale - (lane == label ? inv_rows : 0.0f);
            zr[lane] = da;
            if (record && group == 0) a.dz2_last[(size_t)r * MLP_CLASSES + lane] = da;
            if (two) {
                float db = eb * scale - (lane + 8 == label ? inv_rows : 0.0f);
                zr[lane + 8] = db;
                if (record && group == 0) a.dz2_last[(size_t)r * MLP_CLASSES + lane + 8] = db;
            }
        }
    }
    if (group != 0) return;
    /* the warp's four quarters, then one slot a warp (pst_loss_sum adds them in order) */
    loss += __shfl_xor_sync(0xffffffffu, loss, 8);
    loss += __shfl_xor_sync(0xffffffffu, loss, 16);
    correct += __shfl_xor_sync(0xffffffffu, correct, 8);
    correct += __shfl_xor_sync(0xffffffffu, correct, 16);
    if (threadIdx.x % 32 == 0) sm.loss[warp] = loss, sm.correct[warp] = correct;
}

/* Cluster 0's blocks: the step's loss (training) or the test pass's loss and correct rows,
 * from the warps' slots, in warp order. A shared-memory float atomicAdd compiles to a loop
 * of compare-and-swap (ATOMS.CAST.SPIN): one a row, 32 of them on one word, would hold up
 * cluster 0's blocks every step. */
template <typename S>
static __device__ __forceinline__ void pst_loss_sum(const PstShared<S> &sm, const PstArgs &a, int s)
{
    float loss = 0.0f;
    int correct = 0;
#pragma unroll
    for (int w = 0; w < PST_THREADS / 32; w++) loss += sm.loss[w], correct += sm.correct[w];
    atomicAdd(a.train ? a.loss + s : a.loss, loss);
    if (!a.train) atomicAdd(a.correct, correct);
}

/* z2 = b2 + the clusters' shares of this rank's rows (in cluster order: every cluster gets
 * the same sums), into sm.dz2. Every thread loads the shares of its (row, class) pairs (at
 * most 2 x 15) all at once, and loads again those whose step number is not yet `stamp`,
 * until it has them all: the shares are the barrier between the clusters. A grid barrier
 * before them (a fence, an atomic on one count, acquire loads until all 120 blocks have
 * arrived, then these loads) would cost two more round trips to L2 a step. A share of step s is
 * never taken for step s + 2, which reuses its buffer (the numbers differ), and is not
 * overwritten before it is read: the block that stores step s + 2's share has read step
 * s + 1's from every block of its rank, whose values depend, through W1's step, on what
 * those blocks read at step s. */
template <typename S> static __device__ __forceinline__ void
pst_z2_shares(PstShared<S> &sm, const PstArgs &a, PstOwn o, int groups, int buf, int stamp)
{
    constexpr int MINE = (PST_OWN_ROWS * MLP_CLASSES + PST_THREADS - 1) / PST_THREADS,
                  G = PST_MAX_GROUPS;
    /* words from one cluster's shares to the next's */
    constexpr int NEXT_GROUP = PST_MAX_ROWS * MLP_CLASSES;
    typedef PstSharesOf<S> Sh;
    const typename Sh::W *in = pst_share_at<S>(a, buf, groups, 0, o.r0) + threadIdx.x;
    /* The slots a thread does not load (no pair, no cluster) start as a 0 of this step, so
       that the loop below tests one number a slot and nothing else: a pass is about 100
       instructions, where three tests a slot would make it about 500. */
    const unsigned key = Sh::key(stamp);
    const typename Sh::W none = Sh::word(0.0f, key);
    typename Sh::W share[MINE][G];
#pragma unroll
    for (int j = 0; j < MINE; j++) {
        const bool mine = threadIdx.x + j * PST_THREADS < o.n * MLP_CLASSES;
#pragma unroll
        for (int g = 0; g < G; g++)
            share[j][g] = mine && g < groups ? 0 : none; /* a 0: no step's */
    }
    bool missing;
    do {
#pragma unroll
        for (int j = 0; j < MINE; j++)
#pragma unroll
            for (int g = 0; g < G; g++)
                if (!Sh::is(share[j][g], key))
                    share[j][g] = Sh::get(in + j * PST_THREADS + g * NEXT_GROUP);
        missing = false;
#pragma unroll
        for (int j = 0; j < MINE; j++)
#pragma unroll
            for (int g = 0; g < G; g++) missing |= !Sh::is(share[j][g], key);
    } while (missing);
#pragma unroll
    for (int j = 0; j < MINE; j++) {
        const int i = threadIdx.x + j * PST_THREADS;
        float z = sm.b2[i % MLP_CLASSES];
#pragma unroll
        for (int g = 0; g < G; g++) z += Sh::value(share[j][g]); /* a 0 past the clusters */
        if (i < o.n * MLP_CLASSES) sm.dz2[i] = z;
    }
}

/* The block's share of the small gradients over its rows, and their dz1 in place of z1:
 *   gW2[u][c] = sum relu(z1[r][u]) dz2[r][c]    gb2[c] = sum dz2[r][c]
 *   dz1[r][u] = z1[r][u] > 0 ? sum_c dz2[r][c] W2[u][c] : 0    gb1[u] = sum dz1[r][u]
 * in one pass over the rows: thread (u, g) holds W2's row u in registers and takes rows
 * g, g + 3, ... (PST_ROW_GROUPS = 3 groups of 72 threads), and each row's dz2, loaded once
 * (the same words for the whole group: a broadcast), serves both gW2's ten sums and dz1's
 * dot product. One thread a (u, c) pair would load z1 and dz2 again for every one of the
 * ten sums and dz1's twenty operands for every row: about three times the loads from shared
 * memory. Groups 1 and 2 leave their sums in gsplit; pst_backward_small adds them to
 * group 0's, in group order. */
template <typename S>
static __device__ __forceinline__ void pst_small_grads_dz1(PstShared<S> &sm, PstOwn o)
{
    constexpr int C = MLP_CLASSES;
    const int t = threadIdx.x, u = t % PST_UNITS, g = t / PST_UNITS;
    float w[C], acc[C], gb = 0.0f;
#pragma unroll
    for (int c = 0; c < C; c++) w[c] = sm.w2[u * C + c], acc[c] = 0.0f;
#pragma unroll 1
    for (int rl = g; rl < o.n; rl += PST_ROW_GROUPS) {
        float d[C];
#pragma unroll
        for (int c = 0; c < C; c += 2) {
            float2 pair = *(const float2 *)(sm.dz2 + rl * C + c);
            d[c] = pair.x, d[c + 1] = pair.y;
        }
        float z = sm.own[rl * PST_OWN_ROW + u], a = fmaxf(z, 0.0f);
#pragma unroll
        for (int c = 0; c < C; c++) acc[c] = fmaf(a, d[c], acc[c]);
        float dz = mlp_dz1_of(z, d, w);
        sm.own[rl * PST_OWN_ROW + u] = dz;
        gb += dz;
    }
    float *gw = g == 0 ? sm.gw2 : sm.gsplit[g - 1],
          *gbias = g == 0 ? sm.gb1 : sm.gsplit[g - 1] + PST_UNITS * C;
#pragma unroll
    for (int c = 0; c < C; c++) gw[u * C + c] = acc[c];
    gbias[u] = gb;
}

/* softmax_backward's second half: the sums above (and gb2 in the last warp), then dz1 of the
 * block's rows stored into every block's part, where the dW1 product reads all the batch's (bf16:
 * rounded), and last the row groups' sums of gW2 and gb1, added while those stores travel. Stores
 * to another SM's shared memory do not wait for an answer, as loads from it would; they are
 * st.async, and each block waits on its dz1_full for all of them before its dW1 product
 * (pst_exchanges_expect). They land on the partial sums of the same rows, which this block alone
 * has read, in pst_reduce_z1 (pst_dz1_on_part_rows). A store is 16 bytes (4 fp32 or 8 bf16 units):
 * 8-byte bf16 stores would be twice as many. The rows past the batch up to the next multiple of 16,
 * which bf16's product reads, are cleared by each block in its own part. */
template <typename S>
static __device__ __forceinline__ void pst_backward_small(PstShared<S> &sm, PstOwn o, int rows)
{
    static_assert(PST_ROW_GROUPS * PST_UNITS <= PST_THREADS - 32, "the last warp sums gb2");
    static_assert(MLP_CLASSES % 2 == 0 && PST_OWN_ROWS * MLP_CLASSES % 2 == 0, "dz2 read in pairs");
    const int t = threadIdx.x, last_warp = PST_THREADS - 32;
    if (t < PST_ROW_GROUPS * PST_UNITS) {
        pst_small_grads_dz1(sm, o);
    } else if (t >= last_warp && t - last_warp < MLP_CLASSES) {
        float acc = 0.0f;
        for (int rl = 0; rl < o.n; rl++) acc += sm.dz2[rl * MLP_CLASSES + t - last_warp];
        sm.gb2[t - last_warp] = acc;
    }
    __syncthreads();
    constexpr int N = PstProduct<S>::DZ1_UNITS, Q = PST_UNITS / N;
    for (int i = t; i < o.n * Q; i += PST_THREADS) {
        int rl, c;
        pst_item<S, Q>(i, o.n, rl, c);
        const int u = c * N;
        float d[N];
#pragma unroll
        for (int e = 0; e < N; e += 4)
            *(float4 *)(d + e) = *(const float4 *)(sm.own + rl * PST_OWN_ROW + u + e);
#pragma unroll
        for (int peer = 0; peer < PST_CLUSTER; peer++)
            PstProduct<S>::put_dz1(pst_peer(sm.part, peer), o.r0 + rl, u, d,
                                   pst_peer(&sm.dz1_full, peer));
    }
    const int padded = pst_dz1_rows<S>(rows);
    const float zeros[N] = {};
    for (int i = t; i < (padded - rows) * Q; i += PST_THREADS) {
        int r, c;
        pst_item<S, Q>(i, padded - rows, r, c);
        PstProduct<S>::put_dz1(pst_peer(sm.part, pst_rank()), rows + r, c * N, zeros,
                               pst_peer(&sm.dz1_full, pst_rank()));
    }
    constexpr int NW = PST_UNITS * MLP_CLASSES;
    for (int i = t; i < NW + PST_UNITS; i += PST_THREADS) {
        float *sum = i < NW ? sm.gw2 + i : sm.gb1 + (i - NW);
        float total = *sum;
#pragma unroll
        for (int g = 0; g < PST_ROW_GROUPS - 1; g++) total += sm.gsplit[g][i];
        *sum = total;
    }
}

#endif /* PST_DEVICE */

#endif
