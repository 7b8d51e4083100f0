/* Chapter 05, part two: the model tc_best_bf16 and tc_best_tf32 choose by (best.cuh), the
 * tensor-core counterpart of any_shape/model.h. Plain C, no CUDA: best.cuh fills in the
 * GPU's numbers, tests/host/test_05_tc_model.c checks the model's choices with gcc, and
 * records/tc_calibrate.py computes the same predictions in Python to fit the parameters
 * (best_params.h) to a sweep's measurements (matmul_tiled --bench --sweep-tc-all).
 *
 * THE CANDIDATES. Each runs C in tiles of bm x bn, every tile over all of K (or, split-K,
 * over one of `splits` ranges of it, the partial tiles added into C):
 *   wgmma             128x128, a block per tile, a block barrier a stage (05_wgmma.cuh)
 *   wgmma_ws          128x256, a block per tile, warp-specialized (06_wgmma_ws.cuh)
 *   wgmma_ws_128x128  the same kernel with 128x128 tiles (11_wgmma_ws_128x128.cuh)
 *   wgmma_persistent  128x256, one block per SM walking the tiles (07_wgmma_persistent.cuh)
 *   wgmma_cluster     128x256 tiles in vertically adjacent pairs, one cluster of two blocks
 *                     per pair (08_wgmma_cluster.cuh)
 *   wgmma_splitk      64x128, two blocks an SM, K in `splits` ranges (09_wgmma_splitk.cuh)
 *   mma_pipeline      mma.sync, 128x256: no TMA, so any K and any pointer
 *                     (04_mma_pipeline.cuh)
 *   mma_skinny        the same kernel with 128x128 tiles, two blocks an SM, K split into
 *                     `splits` ranges (15_mma_skinny.cuh)
 *   wgmma_cload       the persistent kernel with C read through shared memory
 *                     (18_wgmma_cload.cuh): only where the epilogue reads C (beta != 0) and
 *                     TMA can describe it (N % 4 == 0; C's base 16-byte aligned, as
 *                     cudaMalloc's are: where it is not, best.cuh runs step 7 instead)
 * The wgmma ones need TMA: rows of A and Bt that are multiples of 16 bytes, 16-byte aligned.
 * Where they are not, the plan can first copy the operands into padded rows
 * (10_wgmma_padded.cuh) and pay for the copy.
 *
 * ONE BLOCK'S TIME: its 2 bm bn K' flops (K' its K range, rounded up to whole slices of
 * `bk`) at one SM's tensor-core peak times the candidate's efficiency, plus the candidate's
 * fixed cost a tile (filling the pipeline, the epilogue's read and write of the C tile).
 * Both numbers are fitted per candidate and input type (best_params.h). mma_skinny's warps
 * leave out the 16-row and 8-column tiles outside C, so where M or N is below a warp's 64
 * its flops count the busiest warp's share (tc_model_warp_share).
 *
 * ROUNDS. A block per tile: the hardware deals the blocks out to the SMs as they free
 * up, so the busiest SM runs b = ceil(blocks / SMs) of them and the kernel lasts as long as
 * it does; blocks sharing an SM (two of wgmma_splitk's fit) share its tensor cores, so b
 * counts block times at the SM's full rate. An SM that gets fewer blocks than it could hold
 * still counts as full (a lone 64-row block keeps only one consumer warpgroup busy): that is
 * what makes split-K fill every slot. mma_skinny is the exception where its tiles are (almost)
 * all inside the matrix: there its copies, not its warps, are the SM's bound, and a lone block
 * keeps the SM as busy as two (skinny.md, "The model, refitted"), so one block counts as
 * full. The persistent kernel deals tiles round-robin to
 * one block per SM: ceil(tiles / SMs) rounds; the cluster kernel deals pairs of tiles to as
 * many clusters as fit at once: ceil(pairs / clusters). With 132 SMs, 133 tiles take two
 * rounds where 132 take one: the last, ragged round is what the choice is mostly about.
 *
 * AROUND IT. A launch costs launch_us besides its rounds (the host's setup of the tensor
 * maps, the start and the end of the grid), and cannot take less than moving A, Bt and C
 * once through DRAM. Split-K adds its partial sums (splits x 4MN bytes of atomics, counted
 * at DRAM speed) and, unless beta == 1, a launch for C = beta * C first.
 *
 * THE ROW SPLIT. Where the last round is ragged, the tile rows that fill whole rounds of one
 * candidate run in one launch and the rows left over in a second launch with whatever the
 * model picks for them (the two run one after the other).
 *
 * PADDING. Rows of K elements that TMA cannot describe (K not a multiple of 8 for bf16 or 4
 * for TF32, or an unaligned pointer) leave two plans: mma_pipeline or mma_skinny on the
 * operands as they are, or a copy of each operand TMA refuses into rows of K rounded up
 * (zeros in the extra columns add nothing to the dot products) and the best plan on the
 * copies. The copy reads its operands and writes them once, at copy_share of the DRAM peak,
 * in one more launch. */
#ifndef CH05_TENSOR_CORES_MODEL_H
#define CH05_TENSOR_CORES_MODEL_H

#include <stdio.h>
#include <string.h>

enum {
    TC_CAND_WGMMA,
    TC_CAND_WS,
    TC_CAND_WS_128,
    TC_CAND_PERSISTENT,
    TC_CAND_CLUSTER,
    TC_CAND_SPLITK,
    TC_CAND_PIPELINE,
    TC_CAND_SKINNY,
    TC_CAND_CLOAD,
    TC_NCAND
};

/* How a candidate's blocks meet the SMs (ROUNDS above). */
enum { TC_SCHED_GRID, TC_SCHED_PERSISTENT, TC_SCHED_CLUSTER };

typedef struct {
    const char *name; /* the ladder's version that runs it, less _bf16 / _tf32 */
    int bm, bn;
    int schedule;
    int splits; /* 1: K may be split */
    int tma;    /* 1: needs operands TMA can describe */
} TcCandidate;

static const TcCandidate TC_CANDIDATES[TC_NCAND] = {
    {"wgmma", 128, 128, TC_SCHED_GRID, 0, 1},
    {"wgmma_ws", 128, 256, TC_SCHED_GRID, 0, 1},
    {"wgmma_ws_128x128", 128, 128, TC_SCHED_GRID, 0, 1},
    {"wgmma_persistent", 128, 256, TC_SCHED_PERSISTENT, 0, 1},
    {"wgmma_cluster", 128, 256, TC_SCHED_CLUSTER, 0, 1},
    {"wgmma_splitk", 64, 128, TC_SCHED_GRID, 1, 1},
    {"mma_pipeline", 128, 256, TC_SCHED_GRID, 0, 0},
    {"mma_skinny", 128, 128, TC_SCHED_GRID, 1, 0},
    {"wgmma_cload", 128, 256, TC_SCHED_PERSISTENT, 0, 1},
};

/* A candidate's two fitted numbers. */
typedef struct {
    double eff;      /* share of the SM's tensor-core peak a busy SM sustains */
    double fixed_us; /* what each tile costs besides its flops */
} TcFit;

/* Everything the model takes from measurements, per input type (best_params.h). */
typedef struct {
    TcFit fit[TC_NCAND];
    double launch_us;  /* what one launch costs besides its rounds */
    double copy_share; /* share of the DRAM peak that the padding copy reaches */
} TcParams;

/* What the model knows of the GPU and the input type. */
typedef struct {
    int sms;
    int cluster_fit;          /* clusters of two blocks resident at once */
    int occupancy[TC_NCAND];  /* blocks an SM of each candidate's kernel; 0: cannot run */
    double flops_per_us;      /* one SM's tensor-core peak in this type, per microsecond */
    double dram_bytes_per_us; /* peak memory bandwidth */
    int elem_bytes;           /* 2 (bf16) or 4 (fp32 read as TF32) */
    int bk;                   /* K elements a slice: 128 bytes of them */
    TcParams p;
} TcMachine;

/* One launch: candidate `cand` with `splits` K ranges (1 but for split-K). */
typedef struct {
    int cand, splits;
    double us;
} TcPart;

/* What tc_best runs: A and/or Bt copied into rows of k elements first (pad_a, pad_b), then
 * rows [0, top_rows) with `top` and the rest with `rest` (top_rows == 0: all of C with
 * `rest`), every launch with K = k. */
typedef struct {
    int pad_a, pad_b;
    int k;
    int top_rows;
    TcPart top, rest;
    double us; /* the prediction */
} TcPlan;

/* A row split must win by this share over the single launch (a second launch has costs
 * the model does not see: its own start, the L2 it finds). */
#define TC_PLAN_MARGIN 0.03
/* Most K ranges split-K may have. */
#define TC_MAX_SPLITS 64

static inline long long tc_model_ceil(long long a, long long b) { return (a + b - 1) / b; }

/* K rounded up to whole 16 bytes of elem_bytes each: the row length TMA accepts. */
static inline int tc_model_padded_k(int K, int elem_bytes)
{
    int q = 16 / elem_bytes;
    return (int)tc_model_ceil(K, q) * q;
}

/* The K ranges a split-K launch makes of `splits` over `slices` slices: ranges of
 * ceil(slices / splits) slices, none empty (the launchers round the same way:
 * tc_split_layers, common.cuh). */
static inline int tc_model_splits(long long slices, int splits)
{
    if (splits <= 1 || slices <= 1) return 1;
    long long per = tc_model_ceil(slices, splits);
    return (int)tc_model_ceil(slices, per);
}

/* Rows of its 128 + 128 that mma_skinny's tile must hold inside A and Bt for a lone block to
 * keep an SM busy (see ROUNDS). */
#define TC_SKINNY_FULL_ROWS 240

/* The blocks an SM must hold to count as full (ROUNDS): the candidate's occupancy, but one
 * for mma_skinny where its tiles are (almost) all inside the matrix. */
static inline int tc_model_full_blocks(const TcMachine *m, int c, int M, int N)
{
    if (c == TC_CAND_SKINNY && (M < 128 ? M : 128) + (N < 128 ? N : 128) >= TC_SKINNY_FULL_ROWS)
        return 1;
    return m->occupancy[c];
}

/* Block times of the busiest SM (or rounds of the persistent and cluster kernels), where an
 * SM counts as full with `full` blocks (tc_model_full_blocks): see ROUNDS. */
static inline long long tc_model_rounds(const TcMachine *m, int c, long long tiles_m,
                                        long long tiles_n, int splits, int full)
{
    const TcCandidate *cd = &TC_CANDIDATES[c];
    if (cd->schedule == TC_SCHED_CLUSTER)
        return tc_model_ceil(tc_model_ceil(tiles_m, 2) * tiles_n, m->cluster_fit);
    long long blocks = tiles_m * tiles_n * splits, b = tc_model_ceil(blocks, m->sms);
    if (cd->schedule == TC_SCHED_PERSISTENT) return b;
    return b < full ? full : b;
}

/* The share of its 64 x 64 that mma_skinny's busiest warp multiplies: its m-tiles of 16 rows
 * inside C (of 4) times its n-tiles of 8 columns (of 8, rounded up to 2, 4 or 8: the
 * kernel's cases, 02_mma.cuh's tc_warp_slice_inside). 1 for the other candidates. */
static inline double tc_model_warp_share(int c, int M, int N)
{
    if (c != TC_CAND_SKINNY) return 1.0;
    long long mt = tc_model_ceil(M < 64 ? M : 64, 16), nt = tc_model_ceil(N < 64 ? N : 64, 8);
    nt = nt > 4 ? 8 : nt > 2 ? 4 : 2;
    return (double)(mt * nt) / 32.0;
}

/* Predicted microseconds of one launch of candidate c on M x N x K with `splits` K ranges.
 * beta_one: beta == 1 (split-K needs no C = beta * C pass); beta_zero: C is not read. */
static inline double tc_model_part_us(const TcMachine *m, int c, int M, int N, int K, int splits,
                                      int beta_one, int beta_zero)
{
    const TcCandidate *cd = &TC_CANDIDATES[c];
    const TcFit *f = &m->p.fit[c];
    long long slices = tc_model_ceil(K, m->bk);
    splits = cd->splits ? tc_model_splits(slices, splits) : 1;
    long long per = tc_model_ceil(slices, splits);
    long long tiles_m = tc_model_ceil(M, cd->bm), tiles_n = tc_model_ceil(N, cd->bn);
    double flops = 2.0 * cd->bm * cd->bn * (double)(per * m->bk) * tc_model_warp_share(c, M, N);
    double block_us = flops / (m->flops_per_us * f->eff) + f->fixed_us;
    long long rounds =
        tc_model_rounds(m, c, tiles_m, tiles_n, splits, tc_model_full_blocks(m, c, M, N));
    double compute = (double)rounds * block_us;
    double mn = (double)M * N;
    double bytes = (double)m->elem_bytes * ((double)M + N) * K + 4.0 * mn * (beta_zero ? 1.0 : 2.0);
    double memory = bytes / m->dram_bytes_per_us;
    double us = (compute > memory ? compute : memory) + m->p.launch_us;
    if (splits > 1) {
        us += 4.0 * mn * splits / m->dram_bytes_per_us;                        /* the atomics */
        if (!beta_one) us += m->p.launch_us + 8.0 * mn / m->dram_bytes_per_us; /* beta * C */
    }
    return us;
}

/* Whether candidate c can run here: on this GPU, (tma == 0) without TMA, and (wgmma_cload)
 * where the epilogue reads a C of N % 4 == 0. */
static inline int tc_model_usable(const TcMachine *m, int c, int tma, int N, int beta_zero)
{
    if (m->occupancy[c] < 1) return 0;
    if (c == TC_CAND_CLOAD && (beta_zero || N % 4 != 0)) return 0;
    if (TC_CANDIDATES[c].schedule == TC_SCHED_CLUSTER && m->cluster_fit < 1) return 0;
    return tma || !TC_CANDIDATES[c].tma;
}

/* The fastest single launch by the model: every usable candidate, split-K with every split
 * count that makes a different number of ranges. Ties go to the earlier candidate and the
 * fewer splits. */
static inline TcPart tc_model_best_part(const TcMachine *m, int M, int N, int K, int beta_one,
                                        int beta_zero, int tma)
{
    TcPart best = {-1, 1, 0.0};
    long long slices = tc_model_ceil(K, m->bk);
    for (int c = 0; c < TC_NCAND; c++) {
        if (!tc_model_usable(m, c, tma, N, beta_zero)) continue;
        long long most = TC_CANDIDATES[c].splits ? slices : 1;
        if (most > TC_MAX_SPLITS) most = TC_MAX_SPLITS;
        for (int s = 1; s <= most; s++) {
            if (tc_model_splits(slices, s) != s) continue; /* the same as a smaller s */
            double us = tc_model_part_us(m, c, M, N, K, s, beta_one, beta_zero);
            if (best.cand < 0 || us < best.us) {
                best.cand = c, best.splits = s, best.us = us;
            }
        }
    }
    return best;
}

/* The plan for operands TMA can describe at this K (tma == 1) or cannot (tma == 0: only
 * mma_pipeline and mma_skinny): the best single launch, or a row split where it wins by
 * TC_PLAN_MARGIN. */
static inline TcPlan tc_model_plan_for(const TcMachine *m, int M, int N, int K, int beta_one,
                                       int beta_zero, int tma)
{
    TcPlan plan;
    memset(&plan, 0, sizeof plan);
    plan.k = K;
    plan.top.cand = -1, plan.top.splits = 1;
    plan.rest = tc_model_best_part(m, M, N, K, beta_one, beta_zero, tma);
    plan.us = plan.rest.us;
    for (int c = 0; c < TC_NCAND; c++) {
        const TcCandidate *cd = &TC_CANDIDATES[c];
        if (!tc_model_usable(m, c, tma, N, beta_zero) || cd->schedule == TC_SCHED_CLUSTER) continue;
        long long tiles_m = tc_model_ceil(M, cd->bm), tiles_n = tc_model_ceil(N, cd->bn);
        long long wave = (long long)m->sms * tc_model_full_blocks(m, c, M, N);
        if (cd->schedule == TC_SCHED_PERSISTENT) wave = m->sms;
        long long rows = tiles_m * tiles_n / wave * wave / tiles_n; /* tile rows in whole rounds */
        if (rows < 1 || rows >= tiles_m) continue;
        int top_rows = (int)(rows * cd->bm);
        double top = tc_model_part_us(m, c, top_rows, N, K, 1, beta_one, beta_zero);
        TcPart rest = tc_model_best_part(m, M - top_rows, N, K, beta_one, beta_zero, tma);
        double us = top + rest.us;
        if (us < plan.us && us < (1.0 - TC_PLAN_MARGIN) * plan.rest.us) {
            plan.top_rows = top_rows;
            plan.top.cand = c, plan.top.splits = 1, plan.top.us = top;
            plan.rest = rest;
            plan.us = us;
        }
    }
    return plan;
}

/* Predicted microseconds of copying `rows` rows of K elements into rows of kp. */
static inline double tc_model_copy_us(const TcMachine *m, long long rows, int K, int kp)
{
    if (rows == 0) return 0.0;
    double bytes = (double)m->elem_bytes * (double)rows * ((double)K + kp);
    return m->p.launch_us + bytes / (m->dram_bytes_per_us * m->p.copy_share);
}

/* tc_best's plan. a_ok, b_ok: whether TMA can describe A and Bt as they are (16-byte row
 * strides and bases). Where it cannot, the faster of the mma.sync kernels on the operands as
 * they are and the best plan on padded copies of the operands TMA refuses (both copies share
 * one launch, so their bytes add and the launch counts once). */
static inline TcPlan tc_model_plan(const TcMachine *m, int M, int N, int K, float beta, int a_ok,
                                   int b_ok)
{
    int beta_one = beta == 1.0f, beta_zero = beta == 0.0f;
    if (a_ok && b_ok) return tc_model_plan_for(m, M, N, K, beta_one, beta_zero, 1);
    TcPlan plain = tc_model_plan_for(m, M, N, K, beta_one, beta_zero, 0);
    int kp = tc_model_padded_k(K, m->elem_bytes);
    TcPlan padded = tc_model_plan_for(m, M, N, kp, beta_one, beta_zero, 1);
    padded.pad_a = !a_ok, padded.pad_b = !b_ok;
    padded.us +=
        tc_model_copy_us(m, (padded.pad_a ? (long long)M : 0) + (padded.pad_b ? N : 0), K, kp);
    if (padded.rest.cand < 0) return plain;
    return plain.rest.cand < 0 || padded.us < plain.us ? padded : plain;
}

/* "wgmma_ws", "copy A and Bt, wgmma_persistent on rows 0-3967, then wgmma_splitk with 3
 * splits": what a plan runs, for the bench. */
static inline const char *tc_model_describe(const TcPlan *p, char *buf, int len)
{
    int used = 0;
    if (p->pad_a || p->pad_b)
        used += snprintf(buf, len, "copy %s into rows of %d, ",
                         p->pad_a && p->pad_b ? "A and Bt" : (p->pad_a ? "A" : "Bt"), p->k);
    if (p->top_rows > 0 && used < len)
        used += snprintf(buf + used, len - used, "%s on rows 0-%d, then ",
                         TC_CANDIDATES[p->top.cand].name, p->top_rows - 1);
    if (used < len) {
        const char *name = p->rest.cand >= 0 ? TC_CANDIDATES[p->rest.cand].name : "none";
        if (p->rest.splits > 1)
            snprintf(buf + used, len - used, "%s with %d splits", name, p->rest.splits);
        else
            snprintf(buf + used, len - used, "%s", name);
    }
    return buf;
}

#endif
