/* Chapter 05, part two: the bookkeeping of the stage ring that steps 12 and 13
 * (12_wgmma_prefetch.cuh, 13_wgmma_pingpong.cuh) share, as plain C: the kernels and the host
 * test tests/host/test_05_pingpong.c, which plays the protocol through on a model of the
 * mbarriers, include the same functions.
 *
 * The ring: STAGES slots of shared memory; `it` counts the k-slices a block has loaded, over
 * all its tiles; slice `it` goes to slot it % STAGES, and is that slot's (it / STAGES)-th use.
 * Each slot has two mbarriers, `full` (the slice has landed) and `empty` (its readers are
 * done). An mbarrier counts completed phases; a wait names the parity of the phase it waits
 * for and passes as soon as the phase before the current one has that parity. So a wait is
 * only right when it is at most one phase ahead of the barrier: waiting for use n of a slot
 * must not start before use n - 1 of that slot has completed, or the wait passes at once on
 * the old phase. The persistent kernels keep that by walking `it` in order; the ping-pong
 * kernel, whose two consumer warpgroups skip each other's tiles, by the `turn` handshake. */
#ifndef CH05_TENSOR_CORES_PINGPONG_H
#define CH05_TENSOR_CORES_PINGPONG_H

#include "05_matmul_tiled/tensor_cores/round.h" /* TC_HD */

/* The parity a consumer waits for on full[it % stages]: that of use it / stages. */
static inline TC_HD unsigned tc_full_parity(int it, int stages)
{
    return (unsigned)(it / stages) & 1u;
}

/* The parity the producer waits for on empty[it % stages] before loading slice it: that of
 * the use before (use 0 finds the slot free: the parity of the phase "before" the first). */
static inline TC_HD unsigned tc_empty_parity(int it, int stages)
{
    return ((unsigned)(it / stages) & 1u) ^ 1u;
}

/* The k-slice of a tile at whose load the producer also prefetches the tile's C into the L2:
 * `ahead` slices before the tile's last, or its first when the tile has fewer. */
static inline TC_HD int tc_prefetch_slice(int k_count, int ahead)
{
    return k_count - 1 - ahead > 0 ? k_count - 1 - ahead : 0;
}

/* Ping-pong: a block's tiles i = 0, 1, 2, ... (tile blockIdx.x + i * gridDim.x) alternate
 * between consumer warpgroups 0 and 1 (i % 2); tile i's slices are it = i * k_count ..
 * (i + 1) * k_count - 1. Before its first wait on tile i (i >= 1), a warpgroup waits on its
 * `turn` barrier until the other warpgroup has passed its last full wait of tile i - 1. The
 * warpgroup that ran tile i' arrives on the other's turn barrier: that arrival completes
 * phase i' / 2 of it, so tile i waits for phase (i - 1) / 2. */
static inline TC_HD unsigned tc_turn_parity(int i) { return (unsigned)((i - 1) / 2) & 1u; }

#endif
