/* Chapter 05 driver, what main.cu, check.cuh and bench.cuh share: the shape of a problem,
 * the alpha and beta of every run, and a row of the version table. */
#ifndef CH05_DRIVER_DRIVER_CUH
#define CH05_DRIVER_DRIVER_CUH

#include <stdio.h>

#include "common/cli.h"
#include "common/versions.h"
#include "05_matmul_tiled/fp32/00_common.cuh"

typedef struct {
    int M, N, K;
} Shape;

static Shape shape_of(const ProblemSize *s)
{
    Shape sh;
    sh.M = (int)s->dim[0];
    sh.N = (int)(s->ndims == 3 ? s->dim[1] : s->dim[0]);
    sh.K = (int)(s->ndims == 3 ? s->dim[2] : s->dim[0]);
    return sh;
}

/* The bytes of A, B and C as fp32 (what main checks against the GPU's free memory). */
static double shape_bytes(Shape s)
{
    return 4.0 * ((double)s.M * s.K + (double)s.K * s.N + (double)s.M * s.N);
}

static const char *shape_str(Shape s, char *buf, size_t len)
{
    snprintf(buf, len, "%dx%dx%d", s.M, s.N, s.K);
    return buf;
}

static const float ALPHA = 0.75f, BETA = -0.5f;

/* A row of the fp32 table (common/versions.h) and what it needs beside its launcher: the
 * dynamic shared memory a block asks for (0: the default 48 KB suffice). A table of versions
 * ends with its ceiling (cuBLAS): checked on large shapes only, timed first and printed last. */
typedef struct {
    int smem_bytes;
} SgemmNeeds;
typedef Version<SgemmLauncher, SgemmNeeds> SgemmVersion;

/* Whether this GPU can give a block the version's shared memory (the Hopper-tuned tiles
 * need 149 KB, more than most GeForce cards allow); if not, says so. */
static int version_fits(const SgemmVersion *v)
{
    if (v->extra.smem_bytes <= sgemm_smem_limit()) return 1;
    printf("  skip %-24s needs %d KB of shared memory per block; this GPU allows %d KB\n", v->name,
           v->extra.smem_bytes / 1024, sgemm_smem_limit() / 1024);
    return 0;
}

#endif
