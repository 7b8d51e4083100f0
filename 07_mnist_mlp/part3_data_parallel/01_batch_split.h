/* Chapter 07, part three: how the data-parallel trainer (part3_data_parallel/03_dp_trainer.cuh)
 * cuts the work. Plain C: tests/host/test_07_data_parallel.c checks it without a GPU.
 *
 *   - Global batch s is images s*B .. s*B + B - 1 of the epoch's order (the last batch
 *     shorter). GPU g of N takes the slice of rows first .. first + rows - 1 of it: B / N
 *     rows of every full batch, and of the short one an even share, the first GPUs one more
 *     (a GPU may get none at all when the short batch has fewer rows than there are GPUs).
 *   - GPU g's order for the epoch is its slices one after the other. Its device cursor then
 *     advances by its own rows, step s's slice starts at s * (B / N), its loss lands in slot
 *     s, and the fused step's next-slice gather needs no change: it gathers
 *     min(rows left, B / N), which is the next slice's rows.
 *   - dW1's 784 rows are cut into K buckets whose edges are multiples of 16 rows (16-byte
 *     aligned rows of x^T and dW1 for the products' vector loads), as even as that allows. */
#ifndef CH07_DATA_PARALLEL_SPLIT_H
#define CH07_DATA_PARALLEL_SPLIT_H

#include <string.h>

#include "07_mnist_mlp/driver/idx.h"

#define DP_BUCKET_ROWS 16

typedef struct {
    int first, rows;
} DpSlice;

/* Rows of global batch s: the batch, or what is left for the last one. */
static inline int dp_batch_rows(int n_train, int batch, int s)
{
    int left = n_train - s * batch;
    return left < batch ? left : batch;
}

/* GPU g's slice of global batch s. */
static inline DpSlice dp_slice_of(int n_train, int batch, int gpus, int s, int g)
{
    int size = dp_batch_rows(n_train, batch, s), base = size / gpus, extra = size % gpus;
    DpSlice sl = {g * base + (g < extra ? g : extra), base + (g < extra ? 1 : 0)};
    return sl;
}

/* GPU g's order for the epoch: its slices of `order` (n_train indices) one after the other,
 * into out; returns how many (the rows GPU g trains on in an epoch). out may be NULL. */
static inline int dp_cut_order(const int *order, int n_train, int batch, int gpus, int g, int *out)
{
    int at = 0, steps = (n_train + batch - 1) / batch;
    for (int s = 0; s < steps; s++) {
        DpSlice sl = dp_slice_of(n_train, batch, gpus, s, g);
        if (out)
            memcpy(out + at, order + (size_t)s * batch + sl.first, (size_t)sl.rows * sizeof(int));
        at += sl.rows;
    }
    return at;
}

/* Where K buckets cut dW1's 784 rows: bucket k is rows edge[k] .. edge[k + 1] - 1
 * (K = 4: 192, 192, 192 and 208 rows); K = 0: one piece, edge = {0, 784}. */
static inline void dp_bucket_rows(int buckets, int *edge)
{
    const int groups = IDX_PIXELS / DP_BUCKET_ROWS; /* 784 = 49 x 16 */
    int k_max = buckets ? buckets : 1;
    for (int k = 0; k <= k_max; k++) edge[k] = DP_BUCKET_ROWS * (groups * k / k_max);
}

#endif
