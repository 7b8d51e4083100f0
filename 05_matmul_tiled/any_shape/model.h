/* Chapter 05, the model sgemm_best chooses by: a predicted time for every way it can run a
 * shape, from the GPU's own numbers (SM count, clock, memory bandwidth, and each kernel's
 * blocks per SM as the CUDA runtime reports them) and one measured number per tile, its
 * efficiency. Plain C, no CUDA: best.cuh fills in the GPU's numbers, and
 * tests/host/test_05_model.c checks the model's choices with gcc.
 *
 * WAVES. A kernel of bm x bn tiles with K cut into `splits` ranges runs
 * ceil(M/bm) * ceil(N/bn) * splits blocks. The GPU deals them out to its SMs, each holding
 * up to `occupancy` blocks at a time, so the busiest SM gets b = ceil(blocks / SMs) of them
 * and the kernel lasts as long as that SM works. Blocks on one SM share its FMA units, so
 * b blocks take b "block times" (one block's FMAs at the SM's full rate), with one
 * exception: an SM needs about 8 warps to keep its FMA pipes busy, so when the blocks it
 * runs are too few to make 8 warps (a 4-warp block alone), they run at a fraction of the
 * rate and count as if there were enough of them. That holds when all of an SM's blocks
 * start together (b <= occupancy); over several rounds they drift apart, and the last one
 * shares the SM with the others for most of its time. With 132 SMs, 133 equal blocks take
 * two block times where 132 take one: the remainder wave. The model sees that and looks for
 * another tile, another split count, or the row split below.
 *
 * ONE BLOCK'S TIME. A block's FMAs, bm * bn * (its k steps + fixed_k), at the SM's peak
 * (FMA lanes x clock) times the tile's efficiency. fixed_k is what a block costs besides
 * its k steps (filling the pipeline, the epilogue), in k steps; efficiency is the share of
 * the peak a full SM sustains. Both come from the committed H200 measurements (comments
 * at SGEMM_TILES). The FMAs of a tile that lie outside C (a 64-row tile on a 16-row C) are
 * counted too: that is what a tile too big for the shape costs.
 *
 * AROUND IT. The time cannot be less than moving A, B and C once through DRAM. Split-K
 * adds C = beta * C in a launch of its own (skipped when beta == 1) and its partial sums,
 * splits * 4MN bytes of atomics (counted at DRAM speed: a guess). Rows of B whose length
 * is not a multiple of 4 (or a B not 16-byte aligned) turn the 16-byte copies of B into
 * 4-byte ones: SGEMM_UNALIGNED_B of the efficiency, unless B is first copied into a
 * buffer with rows padded to SGEMM_PAD_LD floats (a copy of B through DRAM and a launch).
 *
 * GEMV. A C of at most SGEMM_GEMV_ROWS rows can also run untiled (04_gemv.cuh): B
 * streamed once, M FMAs per float of it, far below the FMA peak, so the time is that of
 * moving A, B and C through DRAM at SGEMM_GEMV_DRAM_SHARE of the peak, plus a fixed
 * SGEMM_GEMV_FIXED_US, plus split-K's atomics and C = beta * C pass when K is cut into
 * ranges. Both numbers are guesses until the sweep measures them, so gemv must win by
 * SGEMM_PLAN_MARGIN.
 *
 * THE ROW SPLIT. Where the remainder wave is the problem, the first rows of C, as many
 * tile rows as fill whole waves of one tile, run in one launch, and the rows left over in
 * a second launch with whatever the model picks for them (often split-K, which spreads a
 * few tile rows over every SM). The two launches run one after the other.
 *
 * STREAM-K. For a product with no more tiles than the tile's plain kernel runs in one
 * round, each tile's stream-K launch (02_streamk.cuh: one block a slot, each an equal
 * run of all the tiles' K slices) is priced too, and taken where it beats the split-K plan
 * (sgemm_model_part_us, sgemm_model_best_part). */
#ifndef CH05_ANY_SHAPE_MODEL_H
#define CH05_ANY_SHAPE_MODEL_H

#include <stdio.h>

typedef struct {
    const char *name;       /* the ladder's version that runs this tile unsplit ... */
    const char *split_name; /* ... and split */
    int bm, bn, bk;         /* block tile and K slice */
    int warps;              /* per block */
    double efficiency;      /* share of the SM's FMA peak that a full SM sustains */
    int fixed_k;            /* a block's cost besides its k steps, in k steps */
    int guessed;            /* 1: efficiency and fixed_k not measured yet */
} SgemmTile;

/* The tiles sgemm_best chooses from, in the order of SGEMM_TILE_*. The efficiencies and
 * fixed costs are fits to the committed H200 rows (plots/results/NVIDIA_H200.csv and
 * records/sweep_results.csv), for a peak of 128 FMA lanes x 1.98 GHz per SM; the model's
 * predictions and the sweep's measurements side by side (matmul_tiled --bench --sweep
 * prints both) are how to check and refit them (records/code_notes.md keeps each fit).
 * - hopper (128x256): fit to 2048, 4096 and 8192 cubed (1, 4 and 16 waves of one block an
 *   SM); its fixed cost, 16 slices, is what its start and its end cost.
 * - splitk_8x8's 64x128: fit to 2048, 4096 and 8192 cubed; its fixed cost, 2 slices (32 k
 *   steps), is the one its split-count model uses (sgemm_splitk_8x8_splits).
 * - hopper_small's 64x64: its efficiency with one block an SM (256x1024x784: 64 blocks),
 *   which is where the model uses it, not that of a full SM.
 * - thin_m and thin_n (32x128 and 128x32, 8x4 outputs a thread, 4 warps): not measured
 *   yet; a guess from their shared loads per FMA (three float4 per 32 FMAs, against
 *   hopper_small's two per 16), and `guessed` makes them win only by SGEMM_PLAN_MARGIN
 *   until the sweep has measured them.
 * - thin_n_8x8 (128x64, 8x8 outputs a thread, 4 warps): splitk_8x8's tile on its side, fit
 *   to one shape (5224 x 56 x 7391), which leaves C with 16 and 27 columns to thin_n, where
 *   it measured faster; one shape, so still `guessed`. */
enum {
    SGEMM_TILE_HOPPER,
    SGEMM_TILE_WIDE,
    SGEMM_TILE_SMALL,
    SGEMM_TILE_THIN_M,
    SGEMM_TILE_THIN_N,
    SGEMM_TILE_THIN_N_8X8,
    SGEMM_NTILES
};
static const SgemmTile SGEMM_TILES[SGEMM_NTILES] = {
    {"hopper", "hopper split-K", 128, 256, 32, 8, 0.81, 512, 0},
    {"splitk_8x8", "splitk_8x8", 64, 128, 16, 4, 0.70, 32, 0},
    {"hopper_small", "splitk", 64, 64, 16, 8, 0.37, 32, 0},
    {"thin_m", "thin_m split-K", 32, 128, 16, 4, 0.40, 48, 1},
    {"thin_n", "thin_n split-K", 128, 32, 16, 4, 0.40, 48, 1},
    {"thin_n_8x8", "thin_n_8x8 split-K", 128, 64, 16, 4, 0.55, 32, 1},
};

/* Efficiency of the pipelined kernels when B's rows cannot be copied 16 bytes at a time:
 * four times the copy instructions for B and 4-way bank conflicts on their stores (a
 * guess; the sweep's N - 1 and N + 1 squares measure it). */
#define SGEMM_UNALIGNED_B 0.90
/* A row split (two launches) or a copy of B is taken only when the model predicts it at
 * least this much faster than the plain plan: the model is a model, and a second launch
 * has costs it does not see (its own tail, caches). */
#define SGEMM_PLAN_MARGIN 0.05
/* Plans predicted this close are a tie (see sgemm_model_best_part). */
#define SGEMM_TIE 0.05
/* Fewest slices a stream-K block runs (sgemm_model_best_part). */
#define SGEMM_STREAMK_MIN_RUN 4
/* Most K ranges a split-K launch may have. */
#define SGEMM_MAX_SPLITS 64
/* gemv: C with at most this many rows, and the share of the DRAM peak it streams B at. */
#define SGEMM_GEMV_ROWS 8
#define SGEMM_GEMV_DRAM_SHARE 0.80
/* ... and what any gemv launch costs besides: a block's first trip to DRAM, the sums of its
 * 8 warps and its store (the tiles' fixed cost on a tiny shape comes to about as much). */
#define SGEMM_GEMV_FIXED_US 2.0
/* Warps an SM needs to keep its FMA pipes busy (hopper's single block of 8 warps an SM
 * reaches its full efficiency). */
#define SGEMM_WARPS_TO_FILL 8

/* What the model knows of the GPU. */
typedef struct {
    int sms;
    double fma_per_us;                   /* one SM's peak: FMA lanes x clock, per microsecond */
    double dram_bytes_per_us;            /* peak memory bandwidth */
    double launch_us;                    /* what one more launch costs (sgemm_best_machine) */
    SgemmTile tiles[SGEMM_NTILES];       /* SGEMM_TILES, with the geometry as compiled */
    int occupancy[SGEMM_NTILES];         /* blocks per SM of each tile's kernel (0: cannot run) */
    int split_occupancy[SGEMM_NTILES];   /* the same for its split-K kernel */
    int streamk_occupancy[SGEMM_NTILES]; /* its stream-K kernel's (0: none) */
} SgemmMachine;

/* One launch: rows of C run with one tile and a split count, or (streamk) with the tile's
 * stream-K kernel, which deals out k steps rather than tiles (02_streamk.cuh). */
typedef struct {
    int tile, splits, streamk;
    double us;
} SgemmPart;

/* What sgemm_best runs: rows [0, top_rows) with `top` (no split), the rest with `rest`
 * (top_rows == 0: all of C with `rest`), after copying B into padded rows if pack_b; or,
 * if gemv_splits > 0, none of that but 04_gemv.cuh's kernel with K in that many
 * ranges. */
typedef struct {
    int top_rows;
    SgemmPart top, rest;
    int pack_b;
    int gemv_splits;
    double us; /* the prediction */
} SgemmPlan;

static inline long long sgemm_model_ceil(long long a, long long b) { return (a + b - 1) / b; }

/* The row length of sgemm_best's padded copy of B: N rounded up to a multiple of 4, the
 * least that allows 16-byte copies. (Rounded up to 32, every row on a 128-byte line, made
 * no measurable difference.) */
#define SGEMM_PAD_LD 4
static inline int sgemm_padded_ld(int N)
{
    return (int)sgemm_model_ceil(N, SGEMM_PAD_LD) * SGEMM_PAD_LD;
}

/* The busiest SM's work in block times, for `blocks` blocks of `warps` warps with up to
 * `occ` of them on an SM (see WAVES above). */
static inline long long sgemm_model_block_times(long long blocks, int sms, int occ, int warps)
{
    long long b = sgemm_model_ceil(blocks, sms);
    if (b > occ) return b; /* several rounds: the last block overlaps the others (see WAVES) */
    int fill = (SGEMM_WARPS_TO_FILL + warps - 1) / warps; /* blocks that make 8 warps */
    if (fill > occ) fill = occ;
    return b < fill ? fill : b; /* one round: the SM's b blocks run together */
}

/* Predicted microseconds of one launch: M x N x K with tile t and `splits` K ranges, or
 * (streamk) the tile's stream-K kernel. beta_one: beta == 1 (split-K and stream-K need no
 * C = beta * C pass); b_fast: 16-byte copies of B.
 * STREAM-K: one block per slot (SMs x blocks an SM), each with an equal run of the
 * product's (tile, slice) pairs, so one round; a run of r slices in tiles of `slices`
 * touches 1 + r / slices tiles on average, and each costs the tile's fixed_k; every output
 * gets (blocks + tiles) / tiles partial sums through atomics. */
static inline double sgemm_model_part_us(const SgemmMachine *m, int t, int M, int N, int K,
                                         int splits, int streamk, int beta_one, int beta_zero,
                                         int b_fast)
{
    const SgemmTile *tile = &m->tiles[t];
    int occ = streamk      ? m->streamk_occupancy[t]
              : splits > 1 ? m->split_occupancy[t]
                           : m->occupancy[t];
    long long slices = sgemm_model_ceil(K, tile->bk);
    long long tiles = sgemm_model_ceil(M, tile->bm) * sgemm_model_ceil(N, tile->bn), blocks;
    double per_block, segments = 1.0, sums; /* slices and tiles a block works on, sums an output */
    if (streamk) {
        blocks = (long long)m->sms * occ;
        if (blocks > tiles * slices) blocks = tiles * slices;
        per_block = (double)sgemm_model_ceil(tiles * slices, blocks);
        segments += per_block / (double)slices;
        sums = (double)(blocks + tiles) / (double)tiles;
    } else {
        long long per_range = sgemm_model_ceil(slices, splits);
        splits = (int)sgemm_model_ceil(slices, per_range); /* no empty range */
        blocks = tiles * splits, per_block = (double)per_range, sums = splits;
    }
    double eff = tile->efficiency * (b_fast ? 1.0 : SGEMM_UNALIGNED_B);
    double block_us = (double)tile->bm * tile->bn *
                      (per_block * tile->bk + segments * tile->fixed_k) / (m->fma_per_us * eff);
    double compute = (double)sgemm_model_block_times(blocks, m->sms, occ, tile->warps) * block_us;
    double mn = (double)M * N;
    double bytes = 4.0 * ((double)M * K + (double)K * N + mn * (beta_zero ? 1.0 : 2.0));
    double memory = bytes / m->dram_bytes_per_us;
    double us = compute > memory ? compute : memory;
    if (sums > 1.0) {
        us += 4.0 * mn * sums / m->dram_bytes_per_us;                        /* the atomics */
        if (!beta_one) us += m->launch_us + 8.0 * mn / m->dram_bytes_per_us; /* beta * C */
    }
    return us;
}

/* The tile and split count for one launch: the fastest by the model, with two biases.
 * A tile whose efficiency is still a guess (SgemmTile.guessed) must win by
 * SGEMM_PLAN_MARGIN. And among plans within SGEMM_TIE of the fastest, the one with the
 * larger tile wins (then the one with fewer splits): a larger tile reads A and B fewer
 * times, 2MNK (1/bm + 1/bn) floats through L2, which the model does not count.
 * Then stream-K, for a product with no more tiles than one round of the tile's plain
 * kernel, and at least SGEMM_STREAMK_MIN_RUN slices for each block: it replaces that plan
 * where the model predicts it faster. (With more tiles than that every output goes through
 * atomics after a beta * C pass, and stream-K measured slower than the plain tiles on
 * every such shape tried; with runs of a slice or two the blocks' atomics pile onto the
 * same few outputs. The plain kernel's round, not the stream-K kernel's slots:
 * SgemmStreamkCfg gives two tiles' stream-K kernels 3 blocks an SM where their plain ones
 * have 4, and counting by its own slots turned away a faster stream-K plan; pricing
 * stream-K as more efficient as well made the model take it where it ran slower.) */
static inline SgemmPart sgemm_model_best_part(const SgemmMachine *m, int M, int N, int K,
                                              int beta_one, int beta_zero, int b_fast)
{
    SgemmPart best = {-1, 1, 0, 0.0};
    double fastest = -1.0, best_rank = 0.0;
    for (int pass = 0; pass < 2; pass++)
        for (int t = 0; t < SGEMM_NTILES; t++) {
            const SgemmTile *tile = &m->tiles[t];
            if (m->occupancy[t] < 1) continue;
            long long slices = sgemm_model_ceil(K, tile->bk);
            for (int s = 1; s <= SGEMM_MAX_SPLITS && s <= slices; s++) {
                if (s > 1 && m->split_occupancy[t] < 1) break;
                long long per_block = sgemm_model_ceil(slices, s);
                if (s > 1 && sgemm_model_ceil(slices, per_block) < s) continue; /* as a smaller s */
                double us = sgemm_model_part_us(m, t, M, N, K, s, 0, beta_one, beta_zero, b_fast);
                double rank = tile->guessed ? (1.0 + SGEMM_PLAN_MARGIN) * us : us;
                if (pass == 0) {
                    if (fastest < 0.0 || rank < fastest) fastest = rank;
                    continue;
                }
                if (rank > (1.0 + SGEMM_TIE) * fastest) continue;
                if (best.tile >= 0) {
                    const SgemmTile *b = &m->tiles[best.tile];
                    int area = tile->bm * tile->bn, best_area = b->bm * b->bn;
                    if (area < best_area) continue;
                    if (area == best_area &&
                        (s > best.splits || (s == best.splits && rank >= best_rank)))
                        continue;
                }
                best.tile = t, best.splits = s, best.us = us, best_rank = rank;
            }
        }
    for (int t = 0; t < SGEMM_NTILES; t++) {
        const SgemmTile *tile = &m->tiles[t];
        long long tiles = sgemm_model_ceil(M, tile->bm) * sgemm_model_ceil(N, tile->bn);
        long long slots = (long long)m->sms * m->streamk_occupancy[t];
        long long round = (long long)m->sms * m->occupancy[t]; /* the plain kernel's */
        if (slots < 1 || tiles > (round > slots ? round : slots) ||
            tiles * sgemm_model_ceil(K, tile->bk) < SGEMM_STREAMK_MIN_RUN * slots)
            continue;
        double us = sgemm_model_part_us(m, t, M, N, K, 1, 1, beta_one, beta_zero, b_fast);
        double rank = tile->guessed ? (1.0 + SGEMM_PLAN_MARGIN) * us : us;
        if (best.tile < 0 || rank < best_rank)
            best.tile = t, best.splits = 1, best.streamk = 1, best.us = us, best_rank = rank;
    }
    return best;
}

/* The plan for M x N x K, B's 16-byte copies allowed or not (b_fast). */
static inline SgemmPlan sgemm_model_plan_for(const SgemmMachine *m, int M, int N, int K,
                                             int beta_one, int beta_zero, int b_fast)
{
    SgemmPlan plan;
    plan.top_rows = 0;
    plan.pack_b = 0;
    plan.gemv_splits = 0;
    plan.top.tile = -1, plan.top.splits = 1, plan.top.streamk = 0, plan.top.us = 0.0;
    plan.rest = sgemm_model_best_part(m, M, N, K, beta_one, beta_zero, b_fast);
    plan.us = plan.rest.us;
    /* The row split: for each tile, the tile rows that fill its whole waves, then the best
     * launch for the rows left over. */
    for (int t = 0; t < SGEMM_NTILES; t++) {
        const SgemmTile *tile = &m->tiles[t];
        if (m->occupancy[t] < 1) continue;
        long long tiles_n = sgemm_model_ceil(N, tile->bn), tiles_m = sgemm_model_ceil(M, tile->bm);
        long long wave = (long long)m->sms * m->occupancy[t];
        long long full_waves = tiles_m * tiles_n / wave;
        long long rows = full_waves * wave / tiles_n; /* tile rows */
        if (rows < 1 || rows >= tiles_m) continue;
        int top_rows = (int)(rows * tile->bm);
        double top = sgemm_model_part_us(m, t, top_rows, N, K, 1, 0, beta_one, beta_zero, b_fast);
        SgemmPart rest = sgemm_model_best_part(m, M - top_rows, N, K, beta_one, beta_zero, b_fast);
        double us = top + rest.us + m->launch_us;
        if (us < plan.us && us < (1.0 - SGEMM_PLAN_MARGIN) * plan.rest.us) {
            plan.top_rows = top_rows;
            plan.top.tile = t, plan.top.splits = 1, plan.top.streamk = 0, plan.top.us = top;
            plan.rest = rest;
            plan.us = us;
        }
    }
    return plan;
}

/* gemv's K ranges for an N x K B: about 16 of its 128-column blocks per SM, each range at
 * least 64 k long (04_gemv.cuh launches exactly this many). */
static inline int sgemm_model_gemv_splits(int N, int K, int sms)
{
    long long col_blocks = sgemm_model_ceil(N, 128);
    long long want = sgemm_model_ceil(16LL * sms, col_blocks), most = sgemm_model_ceil(K, 64);
    long long splits = want < most ? want : most;
    if (splits < 1) splits = 1;
    long long range = sgemm_model_ceil(K, splits);
    return (int)sgemm_model_ceil(K, range); /* no empty range */
}

/* Predicted microseconds of gemv on M x N x K (M <= SGEMM_GEMV_ROWS). */
static inline double sgemm_model_gemv_us(const SgemmMachine *m, int M, int N, int K, int beta_one,
                                         int beta_zero)
{
    int splits = sgemm_model_gemv_splits(N, K, m->sms);
    double mn = (double)M * N;
    double bytes = 4.0 * ((double)M * K + (double)K * N + mn * (beta_zero ? 1.0 : 2.0));
    double us = SGEMM_GEMV_FIXED_US + bytes / (m->dram_bytes_per_us * SGEMM_GEMV_DRAM_SHARE);
    if (splits > 1) {
        us += 4.0 * mn * splits / m->dram_bytes_per_us;
        if (!beta_one) us += m->launch_us + 8.0 * mn / m->dram_bytes_per_us;
    }
    return us;
}

/* sgemm_best's plan: as above, and where B's rows do not allow 16-byte copies, also with
 * B first copied into padded rows; the faster of the two; and for a C of at most
 * SGEMM_GEMV_ROWS rows, gemv instead if it is faster still by SGEMM_PLAN_MARGIN. */
static inline SgemmPlan sgemm_model_plan(const SgemmMachine *m, int M, int N, int K, float beta,
                                         int b_aligned)
{
    int beta_one = beta == 1.0f, beta_zero = beta == 0.0f;
    SgemmPlan plan = sgemm_model_plan_for(m, M, N, K, beta_one, beta_zero, b_aligned);
    if (!b_aligned) {
        SgemmPlan packed = sgemm_model_plan_for(m, M, N, K, beta_one, beta_zero, 1);
        double ldb = 4.0 * sgemm_padded_ld(N);
        packed.us += m->launch_us + ((double)K * N * 4.0 + (double)K * ldb) / m->dram_bytes_per_us;
        packed.pack_b = 1;
        if (packed.us < (1.0 - SGEMM_PLAN_MARGIN) * plan.us) plan = packed;
    }
    if (M <= SGEMM_GEMV_ROWS) {
        double gemv = sgemm_model_gemv_us(m, M, N, K, beta_one, beta_zero);
        if (gemv < (1.0 - SGEMM_PLAN_MARGIN) * plan.us) {
            plan.gemv_splits = sgemm_model_gemv_splits(N, K, m->sms);
            plan.pack_b = 0;
            plan.us = gemv;
        }
    }
    return plan;
}

/* "hopper" or "hopper x 3960 rows + splitk_8x8 (s=2)": what a plan runs, for the bench. */
static inline const char *sgemm_model_describe(const SgemmMachine *m, const SgemmPlan *p, char *buf,
                                               int len)
{
    const SgemmTile *r = &m->tiles[p->rest.tile];
    int used = 0;
    if (p->gemv_splits > 0) {
        if (p->gemv_splits > 1)
            snprintf(buf, len, "gemv with %d splits", p->gemv_splits);
        else
            snprintf(buf, len, "gemv");
        return buf;
    }
    if (p->pack_b) used += snprintf(buf + used, len - used, "pack B, ");
    if (p->top_rows > 0 && used < len)
        used += snprintf(buf + used, len - used, "%s on rows 0-%d, then ",
                         m->tiles[p->top.tile].name, p->top_rows - 1);
    if (used < len) {
        if (p->rest.streamk)
            snprintf(buf + used, len - used, "%s stream-K", r->name);
        else if (p->rest.splits > 1)
            snprintf(buf + used, len - used, "%s with %d splits", r->split_name, p->rest.splits);
        else
            snprintf(buf + used, len - used, "%s", r->name);
    }
    return buf;
}

#endif
