/* Chapter 02, the host side that the host tests can compile with gcc: the CPU references
 * in double precision and the row-chunk arithmetic of the float4 matrix add.
 *
 * Layout everywhere: row-major, nx columns (x, the fast index) and ny rows (y), so element
 * (x, y) sits at y * nx + x. The transpose of that matrix has ny columns and nx rows. */
#ifndef CH02_REFERENCE_H
#define CH02_REFERENCE_H

#include <stddef.h>

#ifdef __CUDACC__
#define CH02_HOST_DEVICE __host__ __device__
#else
#define CH02_HOST_DEVICE
#endif

/* ref = a + b in double. */
static inline void ch02_add_reference(const float *a, const float *b, double *ref, int nx, int ny)
{
    size_t n = (size_t)nx * (size_t)ny;
    for (size_t i = 0; i < n; i++) ref[i] = (double)a[i] + (double)b[i];
}

/* ref = in^T: in has nx columns and ny rows, ref has ny columns and nx rows. */
static inline void ch02_transpose_reference(const float *in, double *ref, int nx, int ny)
{
    for (int y = 0; y < ny; y++)
        for (int x = 0; x < nx; x++) ref[(size_t)x * ny + y] = (double)in[(size_t)y * nx + x];
}

/* The float4 add cuts every row into 16-byte chunks of the whole array, so that each
 * float4 access is aligned. Row y starts at element y * nx, which is a multiple of 4 only
 * when nx is: the row's first chunk then begins `shift` elements before the row (a head
 * of fewer than 4 elements), and the last chunk may run past the row's end (the tail).
 * ch02_chunk_first gives the column of chunk j's first element (negative in the head). */
CH02_HOST_DEVICE static inline int ch02_row_shift(int nx, int y)
{
    return (int)(((size_t)y * (size_t)nx) % 4);
}

CH02_HOST_DEVICE static inline long long ch02_chunk_first(int shift, int j)
{
    return 4LL * j - shift;
}

/* Chunks that cover row y: enough for the head, the row and the tail. */
CH02_HOST_DEVICE static inline int ch02_chunks_per_row(int nx, int shift)
{
    return (nx + shift + 3) / 4;
}

/* The most chunks any row needs (the grid's width in chunks): shifts are all 0 when nx
 * is a multiple of 4, else some row may have a shift of up to 3. */
CH02_HOST_DEVICE static inline int ch02_max_chunks_per_row(int nx)
{
    return nx % 4 == 0 ? nx / 4 : (nx + 3 + 3) / 4;
}

#endif
