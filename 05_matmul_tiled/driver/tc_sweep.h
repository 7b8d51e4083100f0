/* Chapter 05, the shapes of the tensor-core sweep (--sweep-tc): the shapes a real program
 * has rather than the bench's powers of two. Plain C: tests/host/test_05_tc_model.c checks
 * them.
 *   - squares at and just around 1024, 2048, 4096 and 8192 (N - 1, N, N + 1);
 *   - products with small dimensions: M, N or K drawn between 16 and 128, the other two
 *     between 1024 and 8192 (short-wide, tall-skinny, a thin K), and M and N both small
 *     with a long K;
 *   - K = 1 .. 7 (mod 8), a few thousand long, M and N a few thousand: rows of A and Bt
 *     that TMA cannot describe in bf16 (and, for odd K, in TF32);
 *   - chapter 07's tensor-core products (the bench's);
 *   - TC_SWEEP_RANDOM shapes with M, N and K each drawn between 1 and 8192;
 * every draw log-uniform, from shape_sweep.h's seeded generator, so a seed always gives the
 * same shapes. */
#ifndef CH05_DRIVER_TC_SWEEP_H
#define CH05_DRIVER_TC_SWEEP_H

#include "05_matmul_tiled/driver/shape_sweep.h"

#define TC_SWEEP_SQUARES 12
#define TC_SWEEP_THIN 4 /* shapes with M small, with N small; half as many with K, with M and N */
#define TC_SWEEP_ODD_K 7
#define TC_SWEEP_MLP 4
#define TC_SWEEP_RANDOM 16
#define TC_SWEEP_MAX_SHAPES \
    (TC_SWEEP_SQUARES + 3 * TC_SWEEP_THIN + TC_SWEEP_ODD_K + TC_SWEEP_MLP + TC_SWEEP_RANDOM)

/* Fills shapes[i] = {M, N, K}; returns how many (TC_SWEEP_MAX_SHAPES). */
static inline int tc_sweep_shapes(unsigned long long seed, int shapes[][3])
{
    static const int squares[] = {1024, 2048, 4096, 8192};
    static const int mlp[TC_SWEEP_MLP][3] = {
        {256, 1024, 784}, {1024, 784, 256}, {32, 1024, 784}, {1024, 784, 32}};
    /* a stream of its own: the fp32 sweep's shapes are not drawn again */
    unsigned long long state = seed ^ 0x5445534F52ULL;
    int n = 0;
    for (int i = 0; i < 4; i++)
        for (int d = -1; d <= 1; d++, n++)
            shapes[n][0] = shapes[n][1] = shapes[n][2] = squares[i] + d;
    /* small: which dimensions are small (bit 0 M, bit 1 N, bit 2 K) */
    static const int small_dims[4] = {1, 2, 4, 3};
    static const int count[4] = {TC_SWEEP_THIN, TC_SWEEP_THIN, TC_SWEEP_THIN / 2,
                                 TC_SWEEP_THIN / 2};
    for (int g = 0; g < 4; g++)
        for (int i = 0; i < count[g]; i++, n++)
            for (int d = 0; d < 3; d++)
                shapes[n][d] = (small_dims[g] >> d) & 1 ? sweep_draw(&state, 16, 128)
                                                        : sweep_draw(&state, 1024, 8192);
    for (int r = 1; r <= TC_SWEEP_ODD_K; r++, n++) {
        shapes[n][0] = sweep_draw(&state, 1024, 6144);
        shapes[n][1] = sweep_draw(&state, 1024, 6144);
        shapes[n][2] = 8 * sweep_draw(&state, 128, 768) + r;
    }
    for (int i = 0; i < TC_SWEEP_MLP; i++, n++)
        for (int d = 0; d < 3; d++) shapes[n][d] = mlp[i][d];
    for (int i = 0; i < TC_SWEEP_RANDOM; i++, n++)
        for (int d = 0; d < 3; d++) shapes[n][d] = sweep_draw(&state, 1, 8192);
    return n;
}

#endif
