/* Chapter 05, the shapes of the shape sweep (--sweep): the shapes a real program has
 * rather than the bench's powers of two. Plain C: tests/host/test_05_model.c checks them.
 *   - squares at and just around 1024, 2048, 3072, 4096 and 8192 (N - 1, N, N + 1);
 *   - products with one small dimension: M, N or K drawn between 16 and 128, the other
 *     two between 1024 and 8192 (short-wide, tall-skinny, and a thin K);
 *   - SWEEP_RANDOM shapes with M, N and K each drawn between 1 and 8192;
 * every draw log-uniform (each factor of 2 as likely as any other), from a seeded
 * generator (splitmix64), so a seed always gives the same shapes. */
#ifndef CH05_DRIVER_SHAPE_SWEEP_H
#define CH05_DRIVER_SHAPE_SWEEP_H

#include <math.h>

#define SWEEP_RANDOM 48
#define SWEEP_PER_SMALL_DIM 4 /* shapes with M small, with N small, with K small */
#define SWEEP_MAX_SHAPES (15 + 3 * SWEEP_PER_SMALL_DIM + SWEEP_RANDOM)

static inline unsigned long long sweep_next(unsigned long long *state)
{
    unsigned long long z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* An integer in [lo, hi], log-uniform. */
static inline int sweep_draw(unsigned long long *state, int lo, int hi)
{
    double u = (double)(sweep_next(state) >> 11) * 0x1p-53; /* [0, 1) */
    int v = (int)lround(lo * pow((double)hi / lo, u));
    return v < lo ? lo : (v > hi ? hi : v);
}

/* Fills shapes[i] = {M, N, K}; returns how many (SWEEP_MAX_SHAPES). */
static inline int sweep_shapes(unsigned long long seed, int shapes[][3])
{
    static const int squares[] = {1024, 2048, 3072, 4096, 8192};
    unsigned long long state = seed;
    int n = 0;
    for (int i = 0; i < 5; i++)
        for (int d = -1; d <= 1; d++) {
            int s = squares[i] + d;
            shapes[n][0] = shapes[n][1] = shapes[n][2] = s;
            n++;
        }
    for (int small = 0; small < 3; small++) /* the dimension that is small: M, N, K */
        for (int i = 0; i < SWEEP_PER_SMALL_DIM; i++, n++)
            for (int d = 0; d < 3; d++)
                shapes[n][d] =
                    d == small ? sweep_draw(&state, 16, 128) : sweep_draw(&state, 1024, 8192);
    for (int i = 0; i < SWEEP_RANDOM; i++, n++)
        for (int d = 0; d < 3; d++) shapes[n][d] = sweep_draw(&state, 1, 8192);
    return n;
}

#endif
