/* Chapter 07: the low-precision copies of the tensor-core trainers
 * (part2_tensor_cores/01_tc_steps.cuh) as pure functions: how an fp32 value is rounded to bf16 or
 * to TF32 (chapter 05's tensor_cores/round.h, which also rounds chapter 05's TF32 check
 * inputs), how bf16 values are packed for one wide store, and where the kernels of
 * part2_tensor_cores/01_tc_kernels.cuh write their transposed copies. Plain C: the kernels and the
 * host test tests/host/test_07_lowp.c include the same functions, except that the kernels round to
 * bf16 with the GPU's own instruction (MlpBf16::pack2 in part2_tensor_cores/01_tc_kernels.cuh: the
 * same bits for every finite value, one instruction for two values where this integer code takes
 * five or six a value).
 *
 *   bf16: 1 sign, 8 exponent, 7 stored mantissa bits (8 significant): fp32's upper half.
 *         Rounded to nearest, ties to even (as __float2bfloat16_rn), the largest relative
 *         error is 2^-8.
 *   TF32: 1 sign, 8 exponent, 10 stored mantissa bits (11 significant), kept in an fp32
 *         whose low 13 bits are zero. The tensor cores read an fp32 operand as TF32 by
 *         ignoring those 13 bits, i.e. truncating: every product would shrink a little,
 *         always toward zero. Rounded here to nearest (ties away from zero, as PTX's
 *         cvt.rna.tf32.f32) in the kernels that write the operands anyway, the error is
 *         at most 2^-11 relative and has no sign of its own. */
#ifndef CH07_LOWP_H
#define CH07_LOWP_H

/* tc_float_bits, tc_bf16_bits, tc_round_tf32, ... */
#include "05_matmul_tiled/tensor_cores/round.h"

#ifdef __CUDACC__
#define MLP_HD __host__ __device__
#else
#define MLP_HD
#endif

/* The value of bf16 bits, exactly, as an fp32. */
static inline MLP_HD float mlp_bf16_float(unsigned short h)
{
    return tc_bits_float((unsigned)h << 16);
}

/* v rounded to bf16, as an fp32 (what the tensor cores multiply). */
static inline MLP_HD float mlp_round_bf16(float v) { return mlp_bf16_float(tc_bf16_bits(v)); }

/* Two values as one 32-bit word of two bf16: `lo` in the low half, which is the lower
 * address in memory (little-endian), so word i of a packed row holds elements 2i, 2i+1. */
static inline MLP_HD unsigned mlp_pack_bf16x2(float lo, float hi)
{
    return (unsigned)tc_bf16_bits(lo) | ((unsigned)tc_bf16_bits(hi) << 16);
}

/* v rounded to fp16 (1 sign, 5 exponent, 10 stored mantissa bits: 11 significant), as an
 * fp32: to nearest, ties to even (as __float2half_rn); below 2^-14 on the subnormal grid of
 * 2^-24; past 65504 infinite. The persistent bf16 trainer's partial sums of z1 cross its
 * cluster in fp16 (part4_persistent/02_products.cuh's PstChunk), and --check's CPU steps
 * round them here as it does. Host only: the kernels use the GPU's own instruction. */
static inline float mlp_round_fp16(float v)
{
    double a = fabs((double)v);
    if (!(a > 0.0) || isinf(a)) return v; /* zeros, infinities and NaN as they are */
    int e;
    frexp(a, &e); /* a = m 2^e, m in [0.5, 1): the leading bit is 2^(e - 1) */
    double ulp = ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
    double r = nearbyint((double)v / ulp) * ulp; /* exact: v / ulp and back are powers of 2 */
    if (fabs(r) > 65504.0) return v > 0.0f ? INFINITY : -INFINITY;
    return (float)r;
}

/* ------------------------------------------------------------------ transposed copies */

/* The update kernel of the tensor-core trainers walks W1 (784 x H, row-major) in tiles of
 * MLP_W1_TILE x MLP_W1_TILE and writes each tile's transpose into W1t (H x 784). Tile
 * `tile` of mlp_w1_tiles(hidden) starts at row k0, column j0 of W1, the tiles of a row of
 * tiles side by side. */
#define MLP_W1_TILE 32

static inline MLP_HD int mlp_w1_tiles(int in, int hidden)
{
    return ((in + MLP_W1_TILE - 1) / MLP_W1_TILE) * ((hidden + MLP_W1_TILE - 1) / MLP_W1_TILE);
}

static inline MLP_HD void mlp_w1_tile_origin(int tile, int hidden, int *k0, int *j0)
{
    int tiles_j = (hidden + MLP_W1_TILE - 1) / MLP_W1_TILE;
    *k0 = tile / tiles_j * MLP_W1_TILE;
    *j0 = tile % tiles_j * MLP_W1_TILE;
}

/* dz1t (H x rows, row-major) is dz1 transposed: dz1t[j * rows + r] = dz1[r][j]. A thread
 * of the hidden backward kernel holds unit j for `count` consecutive rows from row0, and
 * stores them as one 16-byte store (8 bf16) or two (8 floats) when that store is whole and
 * aligned: 8 rows, row0 a multiple of 8 and rows a multiple of 8 (so j * rows is one too;
 * the buffer itself is 256-byte aligned). Otherwise it stores them one by one. */
#define MLP_COLUMN_ROWS 8

static inline MLP_HD int mlp_column_vector(int rows, int row0, int count)
{
    return count == MLP_COLUMN_ROWS && row0 % MLP_COLUMN_ROWS == 0 && rows % MLP_COLUMN_ROWS == 0;
}

/* ------------------------------------------------------------------ --check */

/* The tolerances of --check for both tensor-core trainers, in CheckTolerances' order (loss, z1,
 * dz2, v(W1) and v(b1), v(W2) and v(b2), parameters); why they are these:
 * part2_tensor_cores/01_tc_steps.cuh. */
#define MLP_TC_TOLERANCES 1e-4, 5e-4, 5e-4, 3e-3, 5e-4, 2e-4

#endif
