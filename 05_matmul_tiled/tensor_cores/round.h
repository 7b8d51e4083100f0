/* Chapter 05, part two: rounding fp32 to the tensor cores' input types, as pure functions
 * (plain C; host and device): the check rounds its random inputs with them, and chapter
 * 07's tensor-core trainers round the operands they write
 * (07_mnist_mlp/part2_tensor_cores/01_roundings.h, which the host test
 * tests/host/test_07_lowp.c checks against brute force).
 *
 *   bf16: fp32's upper half; tc_bf16_bits rounds to nearest, ties to even (as
 *         __float2bfloat16_rn): relative error at most 2^-8.
 *   TF32: an fp32 whose low 13 bits are zero; tc_round_tf32 rounds to nearest, ties away
 *         from zero (as PTX's cvt.rna.tf32.f32): at most 2^-11. The tensor cores themselves
 *         ignore those 13 bits, which truncates toward zero. */
#ifndef CH05_TENSOR_CORES_ROUND_H
#define CH05_TENSOR_CORES_ROUND_H

#include <string.h>

/* What the plain-C headers of the tensor-core ladder (this one, swizzle.h) mark their
 * functions with: host and device under nvcc, nothing under a C compiler. */
#ifdef __CUDACC__
#define TC_HD __host__ __device__
#else
#define TC_HD
#endif

static inline TC_HD unsigned tc_float_bits(float v)
{
    unsigned u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static inline TC_HD float tc_bits_float(unsigned u)
{
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* A NaN stays a (quiet) NaN: the carry of the rounding must not turn it into infinity. */
static inline TC_HD int tc_bits_nan(unsigned u) { return (u & 0x7fffffffu) > 0x7f800000u; }

/* The bf16 nearest to v (ties to even), as its 16 bits: add just under half of the 16
 * dropped bits' weight, plus the kept part's lowest bit, and cut. */
static inline TC_HD unsigned short tc_bf16_bits(float v)
{
    unsigned u = tc_float_bits(v);
    if (tc_bits_nan(u)) return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

/* v rounded to TF32 (nearest, ties away from zero), low 13 bits zero. */
static inline TC_HD float tc_round_tf32(float v)
{
    unsigned u = tc_float_bits(v);
    if (tc_bits_nan(u)) return v;
    return tc_bits_float((u + 0x1000u) & ~0x1fffu);
}

#endif
