/* Chapter 05, part two: how step 17 (17_wgmma_streamk.cuh) deals a product's (tile, slice)
 * pairs to its blocks, as plain C: the kernel and the host test
 * tests/host/test_05_streamk_tc.c include the same functions.
 *
 * The pairs are numbered tile after tile, tile t's slices t * k_count ... t * k_count +
 * k_count - 1. Block b of G owns [total * b / G, total * (b + 1) / G). With at least as many
 * tiles as blocks, a run is at least one tile long, so it starts inside one tile (a tail:
 * slices k0 .. k_count, k0 > 0), ends inside another (a head: slices 0 .. k1, k1 < k_count),
 * and holds whole tiles between: a tile is cut in at most two pieces, and block b's head is
 * block b + 1's tail. */
#ifndef CH05_TENSOR_CORES_STREAMK_H
#define CH05_TENSOR_CORES_STREAMK_H

#include "05_matmul_tiled/tensor_cores/round.h" /* TC_HD */

/* Block b's run of G: [*start, *end). Under 2^31 pairs: 65536 a side is 512 x 256 tiles of
 * 128x256, 1024 slices each. */
static inline TC_HD void tc_streamk_run(long long total, int b, int G, int *start, int *end)
{
    *start = (int)(total * b / G);
    *end = (int)(total * (b + 1) / G);
}

/* The piece of a tile the run at pair s (ending at `end`) works on next: the tile, and its
 * slices [*k0, *k1). */
static inline TC_HD void tc_streamk_piece(int s, int end, int k_count, int *tile, int *k0, int *k1)
{
    *tile = s / k_count;
    *k0 = s % k_count;
    *k1 = end - s < k_count - *k0 ? *k0 + end - s : k_count;
}

#endif
