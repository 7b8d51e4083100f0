/* Chapter 07: the synthetic ten-class data set, in plain C: the trainers' smoke tests and
 * --check learn from it (driver/data.cuh), and tests/check_tolerances.c models the check on
 * the same images. */
#ifndef CH07_SYNTHETIC_H
#define CH07_SYNTHETIC_H

#include "common/host.h"
#include "07_mnist_mlp/driver/cpu_reference.h"
#include "07_mnist_mlp/driver/idx.h"

/* Ten classes, each a random template of bright pixels; an image is its class's template
 * with 20% of its pixels replaced by noise. Easy to learn: the smoke tests use it. */
static void synthesize(IdxDataset *ds, int count, unsigned long long seed)
{
    Rng r = {seed};
    unsigned char templ[MLP_CLASSES][IDX_PIXELS];
    Rng t = {0xC0FFEEULL};
    for (int c = 0; c < MLP_CLASSES; c++)
        for (int k = 0; k < IDX_PIXELS; k++) templ[c][k] = rng_uniform(&t) < 0.3f ? 255 : 0;
    ds->count = count;
    ds->pixels = (unsigned char *)xmalloc((size_t)count * IDX_PIXELS);
    ds->labels = (unsigned char *)xmalloc((size_t)count);
    for (int i = 0; i < count; i++) {
        int c = (int)(rng_next(&r) % MLP_CLASSES);
        ds->labels[i] = (unsigned char)c;
        for (int k = 0; k < IDX_PIXELS; k++)
            ds->pixels[(size_t)i * IDX_PIXELS + k] =
                rng_uniform(&r) < 0.2f ? (unsigned char)(rng_next(&r) & 255) : templ[c][k];
    }
}

#endif
