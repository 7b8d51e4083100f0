/* Chapter 05, part two: where the portable tensor-core versions keep a tile in shared memory,
 * which addresses their ldmatrix instructions read, and in which order their blocks run.
 * Plain C: the kernels (01_wmma.cuh, 02_mma.cuh) and the host test
 * tests/host/test_05_swizzle.c include the same functions.
 *
 * A tile is ROWS rows of 128 bytes (64 bf16 or 32 floats of K), each row eight 16-byte
 * chunks. Shared memory has 32 banks of 4 bytes, so a 128-byte row covers every bank once
 * and chunk c of any row lies in banks 4c .. 4c+3 ("bank group" c):
 *
 *   plain:     chunk c of row r at byte 128 r + 16 c
 *   swizzled:  chunk c of row r at byte 128 r + 16 (c ^ (r % 8))
 *
 *           chunk:  0  1  2  3  4  5  6  7          the swizzled rows 0..7: each column
 *   row 0  group:   0  1  2  3  4  5  6  7          (one logical chunk) visits the 8 bank
 *   row 1           1  0  3  2  5  4  7  6          groups once, and each row is still a
 *   row 2           2  3  0  1  6  7  4  5          permutation of its own 8 chunks
 *   row 3           3  2  1  0  7  6  5  4
 *   ...             ...
 *   row 7           7  6  5  4  3  2  1  0
 *
 * The pattern repeats every 8 rows, so offset(r + 8q, c) = offset(r, c) + 1024 q: a kernel
 * computes a lane's offset for rows 0..15 once and adds whole 8-row groups to it. This is
 * the layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B for the Hopper versions. */
#ifndef CH05_TENSOR_CORES_SWIZZLE_H
#define CH05_TENSOR_CORES_SWIZZLE_H

#include "05_matmul_tiled/tensor_cores/round.h" /* TC_HD: host and device, or plain C */

#define TC_TILE_ROW_BYTES 128u
#define TC_TILE_CHUNKS 8u

/* Byte offset of 16-byte chunk `chunk` (0..7) of tile row `row`. */
static inline TC_HD unsigned tc_tile_offset(unsigned row, unsigned chunk, int swizzle)
{
    unsigned c = swizzle ? chunk ^ (row % 8u) : chunk;
    return row * TC_TILE_ROW_BYTES + c * 16u;
}

/* ldmatrix.x4 reads four 8x8 matrices of 16-bit elements (8 rows of 16 bytes each); lanes
 * 8j .. 8j+7 give the row addresses of matrix j, and register j of every lane receives
 * matrix j. A k-step of a tensor-core instruction is 32 bytes of K (16 bf16 or 8 floats):
 * chunks 2s and 2s+1 of the rows for k-step s = 0..3.
 *
 * Operand A, one 16-row m-tile: matrices (rows 0-7, low chunk), (rows 8-15, low chunk),
 * (rows 0-7, high chunk), (rows 8-15, high chunk) = the fragment registers a0, a1, a2, a3. */
static inline TC_HD unsigned tc_ldsm_a_row(unsigned lane) { return lane % 16u; }
static inline TC_HD unsigned tc_ldsm_a_chunk(unsigned lane, unsigned kstep)
{
    return 2u * kstep + lane / 16u;
}

/* Operand B (rows of Bt, i.e. columns n of B), two 8-column n-tiles per ldmatrix.x4:
 * matrices (n 0-7, low chunk), (n 0-7, high chunk), (n 8-15, low), (n 8-15, high) = b0, b1
 * of the first n-tile, then b0, b1 of the second. */
static inline TC_HD unsigned tc_ldsm_b_row(unsigned lane) { return lane % 8u + 8u * (lane / 16u); }
static inline TC_HD unsigned tc_ldsm_b_chunk(unsigned lane, unsigned kstep)
{
    return 2u * kstep + (lane / 8u) % 2u;
}

/* The order of the blocks: tile number -> tile coordinates (tm, tn), in groups of 8 tile
 * rows, column by column inside a group. The blocks that run at the same time share 8 row
 * panels of A and a few of Bt, which stay in the L2; and with a 1-D grid any M and N fit. */
static inline TC_HD void tc_tile_grouped(int tile, int tiles_m, int tiles_n, int *tm, int *tn)
{
    int first = tile / (8 * tiles_n) * 8, in = tile % (8 * tiles_n);
    int rows = tiles_m - first < 8 ? tiles_m - first : 8;
    *tm = first + in % rows;
    *tn = in / rows;
}

#endif
