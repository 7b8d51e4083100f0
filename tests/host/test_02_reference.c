/* Chapter 02's host-side code: the CPU references on small known answers, and the row
 * chunks of the float4 matrix add, which must cover every element of every row exactly
 * once with each whole chunk 16-byte aligned. */
#include <stdio.h>
#include <stdlib.h>

#include "02_thread_indexing/reference.h"

static int failures = 0;

static void expect(int ok, const char *name)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", name);
    failures += !ok;
}

/* A 3-column, 2-row matrix and its 2-column, 3-row transpose. */
static void test_transpose_small(void)
{
    const float in[6] = {1, 2, 3, 4, 5, 6}; /* rows {1 2 3} and {4 5 6} */
    const double want[6] = {1, 4, 2, 5, 3, 6};
    double got[6];
    ch02_transpose_reference(in, got, 3, 2);
    int ok = 1;
    for (int i = 0; i < 6; i++) ok &= got[i] == want[i];
    expect(ok, "02 transpose reference on a 3x2 matrix");
}

/* Twice transposed is the original, for shapes with a single row or column too. */
static void test_transpose_twice(void)
{
    const int shapes[][2] = {{1, 1}, {1, 7}, {7, 1}, {33, 17}, {5, 64}};
    int ok = 1;
    for (int s = 0; s < 5; s++) {
        int nx = shapes[s][0], ny = shapes[s][1];
        size_t n = (size_t)nx * ny;
        float *in = malloc(n * sizeof *in), *t = malloc(n * sizeof *t);
        double *ref = malloc(n * sizeof *ref), *back = malloc(n * sizeof *back);
        for (size_t i = 0; i < n; i++) in[i] = (float)i - 0.5f;
        ch02_transpose_reference(in, ref, nx, ny);
        for (size_t i = 0; i < n; i++) t[i] = (float)ref[i];
        ch02_transpose_reference(t, back, ny, nx);
        for (size_t i = 0; i < n; i++) ok &= back[i] == (double)in[i];
        free(in);
        free(t);
        free(ref);
        free(back);
    }
    expect(ok, "02 transpose reference twice gives the input back");
}

/* The double sum of two floats is exact: 1 + 2^-30 is not representable in float. */
static void test_add_exact(void)
{
    const float a[2] = {1.0f, -3.5f}, b[2] = {0x1p-30f, 1.25f};
    double ref[2];
    ch02_add_reference(a, b, ref, 2, 1);
    expect(ref[0] == 1.0 + 0x1p-30 && ref[1] == -2.25, "02 add reference in double is exact");
}

/* For every nx from 1 to 70 and the first 8 rows (every shift 0..3 appears): the chunks
 * of a row cover each column once, whole chunks start on a multiple of 4 in the array,
 * and no row needs more chunks than the grid provides. */
static void test_chunks_cover_rows(void)
{
    int ok = 1;
    for (int nx = 1; nx <= 70 && ok; nx++) {
        int *seen = calloc((size_t)nx, sizeof *seen);
        for (int y = 0; y < 8 && ok; y++) {
            int shift = ch02_row_shift(nx, y), chunks = ch02_chunks_per_row(nx, shift);
            ok &= chunks <= ch02_max_chunks_per_row(nx);
            for (int c = 0; c < nx; c++) seen[c] = 0;
            for (int j = 0; j < chunks; j++) {
                long long first = ch02_chunk_first(shift, j);
                ok &= ((long long)y * nx + first) % 4 == 0;
                for (long long col = first; col < first + 4; col++)
                    if (col >= 0 && col < nx) seen[col]++;
            }
            for (int c = 0; c < nx; c++) ok &= seen[c] == 1;
            if (!ok) printf("    nx %d row %d: chunks do not cover the row once\n", nx, y);
        }
        free(seen);
    }
    expect(ok, "02 float4 row chunks cover every column once, aligned");
}

int main(void)
{
    test_transpose_small();
    test_transpose_twice();
    test_add_exact();
    test_chunks_cover_rows();
    return failures ? 1 : 0;
}
