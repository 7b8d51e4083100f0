/* Chapter 07: the persistent trainers' kernel (part4_persistent/09_kernel.cuh) in parts:
 * what a launch is given (PstArgs), a block's shared memory (PstShared), and every phase of
 * a step but the two products (part4_persistent/02_products.cuh and 03_products_fp32.cuh to
 * 05_products_bf16x3.cuh) and the batch (part4_persistent/08_batch.cuh):
 *
 *   the small params   W2's rows, b1, b2 and their velocities in and out
 *   reduce_z1_z2       pst_reduce_z1 (the cluster's partial sums), pst_z2_share or (bf16)
 *                      pst_z2_share_sum
 *   small_step         pst_step_small
 * z2_shares and softmax_backward, the phases between them, are
 * part4_persistent/07_softmax_backward.cuh; how the blocks reach each other,
 * part4_persistent/01_cluster_sync.cuh. */
#ifndef CH07_KERNELS_PERSISTENT_PHASES_CUH
#define CH07_KERNELS_PERSISTENT_PHASES_CUH

#include "07_mnist_mlp/part4_persistent/05_products_bf16x3.cuh"
#include "07_mnist_mlp/part4_persistent/01_cluster_sync.cuh"

/* One launch: a training epoch (train = 1) or the test pass (train = 0). */
typedef struct {
    const unsigned char *pixels, *labels;
    const int *order;           /* batch row b of step s is image order[s * batch + b] */
    int images, batch, steps;   /* steps = ceil(images / batch); 0: the launch does nothing */
    float scale, shift;         /* x = pixel * scale + shift */
    float *params, *vel;        /* driver/cpu_reference.h's layout: W1 | b1 | W2 | b2 */
    int hidden, w1, b1, w2, b2; /* H and the offsets (floats) */
    float lr, mu;
    int train;
    void *z2part; /* [2][groups][256][10]: each cluster's share of z2 with its
                                   step's number (PstShares, in PstProduct's ShareWord) */
    /* step s's number is stamp0 + s + 1: each launch's numbers are new
       (part4_persistent/11_persistent_steps.cuh counts them), so no share left by an earlier
       launch passes for one of this launch's */
    unsigned stamp0;
    float *loss;               /* train: one sum a step; test: the total */
    int *correct;              /* test: rows whose largest logit is the label */
    float *z1_last, *dz2_last; /* train: the last step's z1 (bias included, rows x H) and dz2 */
    CUtensorMap rows;          /* bf16 (two buffers of x): the batch's rows in bf16, in step order
                                   (pst_bf16_rows), as a 2-D tensor map: x comes in two TMA boxes */
    long long *phase_cycles;   /* NULL, or PST_PHASES sums: block 0's clock cycles in each phase */
} PstArgs;

/* The phases of a step, as the bench reports them (phase_cycles). */
enum { PST_FORWARD, PST_REDUCE, PST_Z2_SHARES, PST_SOFTMAX, PST_SMALL_STEP, PST_DW1, PST_PHASES };

/* A block's shared memory. xs holds the batch's slice of x (bf16: two buffers, the step's
 * and the next's, by the step's parity); part holds the forward's partial sums, then (from
 * softmax_backward on) dz1 of every row of the batch in the product's type; own holds z1
 * of the block's rows, then their dz1. The small parameters: W2's rows of the cluster's
 * units, b1 of them, b2, each with its velocity (v...) and the block's share of its
 * gradient (g...); gsplit holds softmax_backward's row groups 1 and 2's sums of gW2 and gb1
 * (PST_ROW_GROUPS). */
template <typename S> struct PstShared {
    typedef typename PstProduct<S>::T T;
    /* elements of a buffer of x */
    static constexpr int X_SIZE = PST_MAX_ROWS * PstProduct<S>::X_ROW;
    /* bf16: the 128-byte swizzle repeats every 1024 */
    alignas(1024) T xs[PstProduct<S>::X_BUFFERS * X_SIZE];
    alignas(16) typename PstProduct<S>::Z part[PstProduct<S>::PART_SIZE];
    alignas(16) T w1s[PstProduct<S>::W1S];
    alignas(16) float own[PST_OWN_ROWS * PST_OWN_ROW];
    alignas(16) float w2[PST_UNITS * MLP_CLASSES], vw2[PST_UNITS * MLP_CLASSES],
        gw2[PST_UNITS * MLP_CLASSES];
    alignas(16) float b1[PST_UNITS], vb1[PST_UNITS], gb1[PST_UNITS];
    float b2[16], vb2[16], gb2[16];
    float gsplit[PST_ROW_GROUPS - 1][PST_UNITS * (MLP_CLASSES + 1)]; /* gW2 | gb1 */
    alignas(16) float dz2[PST_OWN_ROWS * MLP_CLASSES];               /* read in pairs (float2) */
    int y[PST_OWN_ROWS];
    float loss[PST_THREADS / 32]; /* each warp's sum of its rows' losses (cluster 0) */
    int correct[PST_THREADS / 32];
    uint64_t x_full;               /* bf16: its batch's TMA copy (pst_copy_batch) */
    uint64_t dz1_full, small_full; /* a training step's dz1 and new small weights, stored here by
                                      the cluster's blocks with st.async (pst_exchanges_expect) */
};
/* dz1's row r lies on the partial sums' row r (the same bytes: put_dz1 stores element (r, u)
 * at part_at(r, u), in elements of the partial sums' size), which only the rank that owns
 * row r reads (pst_reduce_z1) and stores dz1 into: so no other rank's dz1 can land on partial
 * sums a block has not read yet (part4_persistent/09_kernel.cuh). */
template <typename S> constexpr bool pst_dz1_on_part_rows(void)
{
    return sizeof(typename PstProduct<S>::D) == sizeof(typename PstProduct<S>::Z);
}
static_assert(pst_dz1_on_part_rows<MlpFp32>() && pst_dz1_on_part_rows<MlpBf16>() &&
                  pst_dz1_on_part_rows<MlpBf16x3>(),
              "dz1's rows are the parts' rows");

/* Batch rows of step s, and the rows a rank finishes (R of them from R q; R = ceil(rows / 8)). */
static inline __host__ __device__ int pst_rows(const PstArgs &a, int s)
{
    int left = a.images - s * a.batch;
    return left < a.batch ? left : a.batch;
}

typedef struct {
    /* rows per rank, the first of this rank's, how many it has (0 for the last ranks of a tiny
       batch) */
    int R, r0, n;
} PstOwn;

static inline __host__ __device__ PstOwn pst_own(int rows, int rank)
{
    PstOwn o;
    o.R = (rows + PST_CLUSTER - 1) / PST_CLUSTER;
    o.r0 = rank * o.R;
    o.n = rows - o.r0 < o.R ? rows - o.r0 : o.R;
    if (o.n < 0) o.n = 0;
    return o;
}

#ifdef PST_DEVICE

/* The shares of z2 of trainer S (PstShares, in its product's ShareWord), and where in z2part
 * those of (buffer buf, cluster group, batch row) begin, class 0 first. */
template <typename S> using PstSharesOf = PstShares<typename PstProduct<S>::ShareWord>;

template <typename S> static __device__ __forceinline__ typename PstSharesOf<S>::W *
pst_share_at(const PstArgs &a, int buf, int groups, int group, int row)
{
    return (typename PstSharesOf<S>::W *)a.z2part +
           (((size_t)buf * groups + group) * PST_MAX_ROWS + row) * MLP_CLASSES;
}

/* ------------------------------------------------------------------ the small parameters */

/* Element i of the small parameters (W2's rows | b1 | b2): its weight, velocity and this
 * block's share of its gradient. */
template <typename S> static __device__ __forceinline__ void
pst_small_at(PstShared<S> &sm, int i, float *&w, float *&v, float *&g)
{
    constexpr int NW = PST_UNITS * MLP_CLASSES, NB = NW + PST_UNITS;
    w = i < NW ? sm.w2 + i : i < NB ? sm.b1 + (i - NW) : sm.b2 + (i - NB);
    v = i < NW ? sm.vw2 + i : i < NB ? sm.vb1 + (i - NW) : sm.vb2 + (i - NB);
    g = i < NW ? sm.gw2 + i : i < NB ? sm.gb1 + (i - NW) : sm.gb2 + (i - NB);
}

/* The small parameters rank q of a cluster steps: elements N q / 8 .. N (q + 1) / 8 of the
 * N = 802 (100 or 101 of them). */
static __device__ __forceinline__ void pst_small_range(int rank, int &lo, int &hi)
{
    constexpr int N = PST_UNITS * (MLP_CLASSES + 1) + MLP_CLASSES;
    lo = rank * N / PST_CLUSTER, hi = (rank + 1) * N / PST_CLUSTER;
}

/* W2's rows of units u0 .. u0+71, b1 of them and b2, with their velocities (units past H: 0). */
template <typename S>
static __device__ __forceinline__ void pst_load_small(PstShared<S> &sm, const PstArgs &a, int u0)
{
    for (int i = threadIdx.x; i < PST_UNITS * MLP_CLASSES; i += PST_THREADS) {
        bool ok = u0 + i / MLP_CLASSES < a.hidden;
        size_t at = (size_t)u0 * MLP_CLASSES + i;
        sm.w2[i] = ok ? a.params[a.w2 + at] : 0.0f;
        sm.vw2[i] = ok ? a.vel[a.w2 + at] : 0.0f;
    }
    int t = threadIdx.x;
    if (t < PST_UNITS) {
        bool ok = u0 + t < a.hidden;
        sm.b1[t] = ok ? a.params[a.b1 + u0 + t] : 0.0f;
        sm.vb1[t] = ok ? a.vel[a.b1 + u0 + t] : 0.0f;
    }
    if (t < 16) {
        sm.b2[t] = t < MLP_CLASSES ? a.params[a.b2 + t] : 0.0f;
        sm.vb2[t] = t < MLP_CLASSES ? a.vel[a.b2 + t] : 0.0f;
    }
}

/* ... and back: each rank its range of them (pst_small_range), whose velocities only it
 * keeps (pst_step_small); b2 from cluster 0. */
template <typename S> static __device__ __forceinline__ void
pst_store_small(PstShared<S> &sm, const PstArgs &a, int u0, int rank)
{
    constexpr int NW = PST_UNITS * MLP_CLASSES, NB = NW + PST_UNITS;
    int lo, hi;
    pst_small_range(rank, lo, hi);
    for (int i = lo + (int)threadIdx.x; i < hi; i += PST_THREADS) {
        float *w, *v, *g;
        pst_small_at(sm, i, w, v, g);
        size_t at;
        bool mine;
        if (i < NW)
            at = a.w2 + (size_t)u0 * MLP_CLASSES + i, mine = u0 + i / MLP_CLASSES < a.hidden;
        else if (i < NB)
            at = a.b1 + (size_t)u0 + (i - NW), mine = u0 + (i - NW) < a.hidden;
        else
            at = a.b2 + (size_t)(i - NB), mine = blockIdx.x < PST_CLUSTER;
        if (mine) a.params[at] = *w, a.vel[at] = *v;
    }
}

/* ------------------------------------------------------------------ reduce_z1_z2 */

/* Item i of n rows x Q chunks of 16 bytes (a row's partial sums or dz1) as (row r, chunk c):
 * chunk by chunk where the product keeps a chunk's rows together (PstProduct::CHUNK_MAJOR:
 * bf16), so that a warp's 16-byte loads or stores, here or in another block of the cluster,
 * are one run of bytes; row by row otherwise. */
template <typename S, int Q>
static __device__ __forceinline__ void pst_item(int i, int n, int &r, int &c)
{
    if (PstProduct<S>::CHUNK_MAJOR)
        r = i % n, c = i / n;
    else
        r = i / Q, c = i % Q;
}

/* The forward's K split (pst_split: batches of 128 rows or fewer) leaves `parts` partial sums of
 * `per` rows; each block adds its own, in part order, into part 0 before the cluster barrier, so
 * that the cluster's reduction loads one part from every block, not `parts` of them. That reduction
 * costs the bytes it moves between SMs, which without this sum would be as many at a small batch as
 * at a large one. The parts are added in fp32, in chunks of 16 bytes (PstChunk: 4 fp32 or 8 fp16
 * partial sums). */
template <typename S>
static __device__ __forceinline__ void pst_sum_parts(typename PstProduct<S>::Z *part, PstSplit sp)
{
    typedef PstProduct<S> P;
    typedef PstChunk<typename P::Z> C;
    constexpr int Q = PST_UNITS / C::N; /* chunks of C::N units a row */
    for (int i = threadIdx.x; i < sp.per * Q; i += PST_THREADS) {
        int r, c;
        pst_item<S, Q>(i, sp.per, r, c);
        const int u = c * C::N;
        float z[C::N] = {};
        for (int p = 0; p < sp.parts; p++)
            C::add(z, *(const uint4 *)(part + P::part_at(p * sp.per + r, u)));
        *(uint4 *)(part + P::part_at(r, u)) = C::pack(z);
    }
}

/* bf16: a chunk's part of z2's share, relu(z[e]) W2[u + e][k] summed over its N units e, for
 * the 10 classes k: 10 chains of N FMAs, W2's rows loaded in pairs (a broadcast: a warp's
 * lanes share the chunk at batch 256). */
template <typename S, int N> static __device__ __forceinline__ void
pst_z2_chunk(const PstShared<S> &sm, const float (&z)[N], int u, float *to)
{
    float p[MLP_CLASSES] = {};
#pragma unroll
    for (int e = 0; e < N; e++) {
        const float r = fmaxf(z[e], 0.0f);
        const float2 *w = (const float2 *)(sm.w2 + (u + e) * MLP_CLASSES);
#pragma unroll
        for (int k = 0; k < MLP_CLASSES / 2; k++) {
            const float2 wk = w[k];
            p[2 * k] = fmaf(r, wk.x, p[2 * k]), p[2 * k + 1] = fmaf(r, wk.y, p[2 * k + 1]);
        }
    }
#pragma unroll
    for (int k = 0; k < MLP_CLASSES / 2; k++)
        ((float2 *)to)[k] = make_float2(p[2 * k], p[2 * k + 1]);
}

/* z1 of this rank's rows: b1 plus every block's partial sums (in rank order, added in fp32),
 * into own; on the step --check reads, also into z1_last. A thread takes 16 bytes of a row
 * from each block: 4 units in fp32, 8 in bf16's fp16 (half the bytes). The 8 blocks' chunks
 * are all loaded before any is added: a load from another SM's shared memory takes hundreds
 * of cycles, and one after another they would be most of the phase.
 * bf16 (two buffers of x) also starts z2's share here, from the 8 units the thread holds:
 * relu(z1) . W2 over them, 10 sums, into z2_parts (chunk c, row, class); pst_z2_share_sum
 * adds the chunks. fp32 and bf16x3 have no room for z2_parts: pst_z2_share. */
template <typename S> static __device__ __forceinline__ void
pst_reduce_z1(PstShared<S> &sm, const PstArgs &a, PstOwn o, int u0, bool record, float *z2_parts)
{
    typedef typename PstProduct<S>::Z Z;
    typedef PstChunk<Z> C;
    constexpr int N = C::N, Q = PST_UNITS / N; /* chunks of N units a row */
    for (int i = threadIdx.x; i < o.n * Q; i += PST_THREADS) {
        int rl, c;
        pst_item<S, Q>(i, o.n, rl, c);
        const int u = c * N, r = o.r0 + rl;
        float z[N];
#pragma unroll
        for (int e = 0; e < N; e++) z[e] = sm.b1[u + e];
        const uint32_t at = (uint32_t)(PstProduct<S>::part_at(r, u) * sizeof(Z));
        uint4 v[PST_CLUSTER];
#pragma unroll
        for (int peer = 0; peer < PST_CLUSTER; peer++)
            v[peer] = pst_ld_peer16(pst_peer(sm.part, peer) + at);
#pragma unroll
        for (int peer = 0; peer < PST_CLUSTER; peer++) C::add(z, v[peer]);
#pragma unroll
        for (int e = 0; e < N; e += 4)
            *(float4 *)(sm.own + rl * PST_OWN_ROW + u + e) =
                make_float4(z[e], z[e + 1], z[e + 2], z[e + 3]);
        if constexpr (PstProduct<S>::X_BUFFERS == 2)
            pst_z2_chunk(sm, z, u, z2_parts + (c * o.n + rl) * MLP_CLASSES);
        if (record)
#pragma unroll
            for (int e = 0; e < N; e++)
                if (u0 + u + e < a.hidden) a.z1_last[(size_t)r * a.hidden + u0 + u + e] = z[e];
    }
}

/* The cluster's share of z2 for this rank's rows: relu(z1) . W2[units], into z2part with
 * step s's number (stamp: PstArgs's stamp0 + s + 1). */
template <typename S>
static __device__ __forceinline__ void pst_z2_share(const PstShared<S> &sm, const PstArgs &a,
                                                    PstOwn o, int group, int groups, int buf,
                                                    int stamp)
{
    typedef PstSharesOf<S> Sh;
    typename Sh::W *out = pst_share_at<S>(a, buf, groups, group, 0);
    const unsigned key = Sh::key(stamp);
    for (int i = threadIdx.x; i < o.n * MLP_CLASSES; i += PST_THREADS) {
        int rl = i / MLP_CLASSES, c = i % MLP_CLASSES;
        const float *z = sm.own + rl * PST_OWN_ROW;
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f}; /* four chains of FMAs, not one of 72 */
#pragma unroll
        for (int u = 0; u < PST_UNITS; u += 4)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[e] = fmaf(fmaxf(z[u + e], 0.0f), sm.w2[(u + e) * MLP_CLASSES + c], acc[e]);
        Sh::put(out + (size_t)(o.r0 + rl) * MLP_CLASSES + c,
                Sh::word((acc[0] + acc[1]) + (acc[2] + acc[3]), key));
    }
}

/* bf16: the cluster's share of z2 for this rank's rows, its chunks' parts (pst_reduce_z1)
 * added in chunk order, into z2part with step s's number (stamp). Where pst_z2_share reads
 * z1 back and runs 72 FMAs a (row, class) in four chains, 144 loads from shared memory each,
 * this is 9 loads and adds. */
template <typename S>
static __device__ __forceinline__ void pst_z2_share_sum(const float *z2_parts, const PstArgs &a,
                                                        PstOwn o, int group, int groups, int buf,
                                                        int stamp)
{
    constexpr int Q = PST_UNITS / PstChunk<typename PstProduct<S>::Z>::N; /* chunks a row */
    typedef PstSharesOf<S> Sh;
    typename Sh::W *out = pst_share_at<S>(a, buf, groups, group, o.r0);
    const unsigned key = Sh::key(stamp);
    for (int i = threadIdx.x; i < o.n * MLP_CLASSES; i += PST_THREADS) {
        float z = 0.0f;
#pragma unroll
        for (int c = 0; c < Q; c++) z += z2_parts[c * o.n * MLP_CLASSES + i];
        Sh::put(out + i, Sh::word(z, key));
    }
}

/* ------------------------------------------------------------------ small_step */

/* W2, b1 and b2 stepped by the sums of the 8 blocks' shares, added in rank order: each
 * rank steps its eighth of them (pst_small_range), one element a thread, and stores the new
 * weight into every block of the cluster (itself included), so that all copies stay the
 * same; the velocity stays with the rank that steps it. Every rank stepping every element
 * would load all 8 shares of all 802: 22 KB from the other SMs' shared memory a block and
 * step, against 2.8 KB this way (and 2.8 KB of stores, which do not wait for an answer). The
 * stores are st.async, counted on each block's small_full, which the next step waits for
 * before reduce_z1_z2 reads W2 (pst_exchanges_expect). */
template <typename S>
static __device__ __forceinline__ void pst_step_small(PstShared<S> &sm, float lr, float mu)
{
    static_assert(PST_UNITS * (MLP_CLASSES + 1) + MLP_CLASSES <= PST_THREADS * PST_CLUSTER,
                  "a thread an element");
    int lo, hi;
    pst_small_range(pst_rank(), lo, hi);
    const int i = lo + (int)threadIdx.x;
    if (i >= hi) return;
    float *w, *v, *g, share[PST_CLUSTER], sum = 0.0f; /* the 8 loads in flight together */
    pst_small_at(sm, i, w, v, g);
#pragma unroll
    for (int peer = 0; peer < PST_CLUSTER; peer++) share[peer] = pst_ld_peer(pst_peer(g, peer));
#pragma unroll
    for (int peer = 0; peer < PST_CLUSTER; peer++) sum += share[peer];
    *v = fmaf(mu, *v, sum);
    float stepped = *w - lr * *v;
#pragma unroll
    for (int peer = 0; peer < PST_CLUSTER; peer++)
        pst_st_async(pst_peer(w, peer), stepped, pst_peer(&sm.small_full, peer));
}

/* ------------------------------------------------------------------ the exchanges' mbarriers */

/* What crosses into another block's shared memory in a training step goes by st.async, and
 * the receiving block waits on an mbarrier for every byte of it (pst_cluster_arrive says
 * why no cluster barrier does that):
 *   dz1_full    dz1 of the batch's rows, padded to the product's 16 (pst_backward_small),
 *               16 bytes a store: waited for before the dW1 product
 *   small_full  the 802 new small weights, one float each (pst_step_small): waited for at
 *               the next step, before reduce_z1_z2 reads them, or after the last
 * Each completes one phase a training step, step s's with parity s & 1. Thread 0 says how
 * many bytes step s brings (its arrive is the phase's one) once the phase before is over:
 * after the cluster barrier that follows the forward, which no block passes before every
 * block has waited for step s - 1's bytes, and before any of step s's are stored. */
template <typename S> static __device__ __forceinline__ void pst_exchanges_init(PstShared<S> &sm)
{
    if (threadIdx.x == 0) {
        tc_mbar_init(&sm.dz1_full, 1);
        tc_mbar_init(&sm.small_full, 1);
        tc_mbar_fence_init(); /* before the first cluster barrier: the others store here after it */
    }
}

/* Step s's dz1 rows: the batch's, padded as the dW1 product reads them. */
template <typename S> static __host__ __device__ __forceinline__ int pst_dz1_rows(int rows)
{
    return PstProduct<S>::GRANULE == 8 ? rows : (rows + 15) / 16 * 16;
}

template <typename S>
static __device__ __forceinline__ void pst_exchanges_expect(PstShared<S> &sm, int rows, int s)
{
    constexpr int SMALL = PST_UNITS * (MLP_CLASSES + 1) + MLP_CLASSES;
    if (s > 0) tc_mbar_wait(&sm.small_full, (unsigned)(s - 1) & 1u);
    if (threadIdx.x == 0) {
        tc_mbar_arrive_expect(&sm.small_full, SMALL * (unsigned)sizeof(float));
        tc_mbar_arrive_expect(&sm.dz1_full, (unsigned)(pst_dz1_rows<S>(rows) * PST_UNITS *
                                                       sizeof(typename PstProduct<S>::D)));
    }
}

#endif /* PST_DEVICE */

#endif
