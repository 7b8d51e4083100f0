/* Chapter 05, part two: how step 17 (17_wgmma_streamk.cuh) deals a product's tiles to its
 * blocks, as plain C: the kernel and the host test tests/host/test_05_streamk_tc.c include
 * the same functions.
 *
 * The tiles are numbered in the persistent kernel's order (tc_tile_grouped: neighbouring
 * numbers are neighbouring tiles). With T tiles on G blocks, T = q G + r, the first T - S
 * tiles go round by round as in the persistent kernel (block b: tiles b, b + G, ...), and
 * the last S = G + r (none when r = 0) are dealt stream-K: their (tile, slice) pairs, tile
 * after tile, cut into G equal runs, one a block. A run is at least one tile long, so it
 * starts inside one tile (a tail: slices k0 .. k_count, k0 > 0), ends inside another (a
 * head: slices 0 .. k1, k1 < k_count), and holds whole tiles between; block b's head is
 * block b + 1's tail.
 *
 * A block works on the tail of its run first, then either the rest of its run and its
 * round-by-round tiles (the blocks start their rounds together), or (stagger) its rounds
 * and then the rest of its run. Block b's run starts b x S / G tiles into the stream-K
 * tiles, so with stagger its rounds start a different fraction of a tile apart from its
 * neighbours' (0.515 of a tile at 8192^3). Either way every block has the same number of
 * slices to within one. */
#ifndef CH05_TENSOR_CORES_STREAMK_H
#define CH05_TENSOR_CORES_STREAMK_H

#include "05_matmul_tiled/tensor_cores/round.h" /* TC_HD */

typedef struct {
    int tiles, blocks, k_count;
    int dp_tiles;       /* tiles 0 .. dp_tiles - 1: whole, round by round */
    long long sk_pairs; /* the (tile, slice) pairs of the other tiles */
    int stagger;        /* the round-by-round tiles right after the tail (else after the run) */
} TcStreamk;

/* A piece of a block's work: the tile and its slices [k0, k1). */
typedef struct {
    int tile, k0, k1;
} TcPiece;

/* Needs tiles >= blocks (else a run would be shorter than a tile). */
static inline TC_HD TcStreamk tc_streamk_plan(int tiles, int blocks, int k_count, int stagger)
{
    TcStreamk p;
    p.stagger = stagger;
    int sk = tiles % blocks ? blocks + tiles % blocks : 0;
    p.tiles = tiles, p.blocks = blocks, p.k_count = k_count;
    p.dp_tiles = tiles - sk;
    p.sk_pairs = (long long)sk * k_count;
    return p;
}

/* Block b's run of stream-K pairs [*q0, *q1), counted from the first stream-K tile. */
static inline TC_HD void tc_streamk_run(const TcStreamk *p, int b, long long *q0, long long *q1)
{
    *q0 = p->sk_pairs * b / p->blocks;
    *q1 = p->sk_pairs * (b + 1) / p->blocks;
}

/* How many pieces block b works on: its tail (if its run starts inside a tile), its
 * round-by-round tiles, and the tiles its run holds after the tail. */
static inline TC_HD int tc_streamk_pieces(const TcStreamk *p, int b)
{
    long long q0, q1, k = p->k_count;
    tc_streamk_run(p, b, &q0, &q1);
    long long s = (q0 + k - 1) / k * k; /* the first tile boundary of the run */
    return (q0 < s) + p->dp_tiles / p->blocks + (int)((q1 - s + k - 1) / k);
}

/* Block b's piece i, in the order the block works on them. */
static inline TC_HD TcPiece tc_streamk_piece(const TcStreamk *p, int b, int i)
{
    long long q0, q1, k = p->k_count;
    tc_streamk_run(p, b, &q0, &q1);
    long long s = (q0 + k - 1) / k * k;
    int has_tail = q0 < s;
    TcPiece piece;
    if (has_tail && i == 0) {
        piece.tile = p->dp_tiles + (int)(q0 / k);
        piece.k0 = (int)(q0 % k), piece.k1 = p->k_count;
        return piece;
    }
    i -= has_tail;
    int rounds = p->dp_tiles / p->blocks, rest = (int)((q1 - s + k - 1) / k);
    int dp = p->stagger ? i < rounds : i >= rest;
    if (dp) {
        piece.tile = (p->stagger ? i : i - rest) * p->blocks + b;
        piece.k0 = 0, piece.k1 = p->k_count;
        return piece;
    }
    s += (long long)(p->stagger ? i - rounds : i) * k;
    piece.tile = p->dp_tiles + (int)(s / k);
    piece.k0 = 0, piece.k1 = q1 - s < k ? (int)(q1 - s) : p->k_count;
    return piece;
}

#endif
