/* Host test for chapter 07's data-parallel split
 * (07_mnist_mlp/part3_data_parallel/01_batch_split.h), which no machine without several GPUs can
 * exercise end to end:
 *   - every image of the epoch lands in exactly one GPU's slice, in the global order, and
 *     each replica's cursor bookkeeping (the fused kernels': batch at the cursor, loss slot
 *     cursor / (B / N), next gather of min(rows left, B / N)) finds exactly its slices;
 *   - the bucket edges of dW1: 0 to 784, multiples of 16, as even as that allows;
 *   - the scaling: slices' gradients computed with dz2 / B (the global batch) and summed
 *     equal the gradient of the whole batch (CPU reference, double precision). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "07_mnist_mlp/part3_data_parallel/01_batch_split.h"
#include "07_mnist_mlp/driver/cpu_reference.h"

static int failures = 0;

static void result(int ok, const char *what, const char *detail)
{
    printf("%s 07 %s%s%s\n", ok ? "PASS" : "FAIL", what, detail[0] ? ": " : "", detail);
    failures += !ok;
}

/* One replica's epoch as the kernels see it; returns 0 or a line number of the failure. */
static int replay_replica(const int *order, int n, int B, int N, int g, int *seen)
{
    int b = B / N, steps = (n + B - 1) / B;
    int *mine = malloc((size_t)n * sizeof(int));
    int n_local = dp_cut_order(order, n, B, N, g, mine), cursor = 0, bad = 0;
    int gathered = dp_slice_of(n, B, N, 0, g).rows; /* the epoch's first gather */
    for (int s = 0; s < steps && !bad; s++) {
        DpSlice sl = dp_slice_of(n, B, N, s, g);
        if (sl.rows != gathered) bad = __LINE__;           /* the batch in x is this slice */
        if (s < steps - 1 && sl.rows != b) bad = __LINE__; /* full batches split evenly */
        if (sl.rows == 0) {
            if (s != steps - 1) bad = __LINE__; /* only the short batch leaves a GPU idle */
            continue;                           /* no launches: the cursor stays */
        }
        if (cursor / b != s) bad = __LINE__; /* the loss slot */
        for (int r = 0; r < sl.rows && !bad; r++) {
            if (mine[cursor + r] != order[(size_t)s * B + sl.first + r]) bad = __LINE__;
            seen[mine[cursor + r]]++;
        }
        cursor += sl.rows; /* hidden_backward advances it */
        int left = n_local - cursor;
        gathered = left < b ? left : b; /* the update's gather */
        if (s == steps - 1 && gathered > 0) bad = __LINE__;
    }
    free(mine);
    return bad;
}

static void test_split(void)
{
    static const int ns[] = {1, 2, 5, 37, 100, 6000, 60000};
    static const int gpus[] = {1, 2, 3, 4, 8};
    static const int per_gpu[] = {1, 2, 7, 128, 256, 4096};
    int cases = 0, bad = 0;
    char d[160] = "";
    for (size_t i = 0; i < sizeof ns / sizeof ns[0] && !bad; i++) {
        int n = ns[i], *order = malloc((size_t)n * sizeof(int)),
            *seen = malloc((size_t)n * sizeof(int));
        for (int k = 0; k < n; k++) order[k] = k;
        Rng r = {99 + (unsigned long long)i};
        mlp_shuffle(order, n, &r);
        for (size_t j = 0; j < sizeof gpus / sizeof gpus[0] && !bad; j++)
            for (size_t k = 0; k < sizeof per_gpu / sizeof per_gpu[0] && !bad; k++) {
                int N = gpus[j], B = N * per_gpu[k];
                memset(seen, 0, (size_t)n * sizeof(int));
                for (int g = 0; g < N && !bad; g++) {
                    int line = replay_replica(order, n, B, N, g, seen);
                    if (line) {
                        bad = 1;
                        snprintf(d, sizeof d, "n %d, batch %d, %d GPUs, GPU %d: test line %d", n, B,
                                 N, g, line);
                    }
                }
                for (int m = 0; m < n && !bad; m++)
                    if (seen[m] != 1) {
                        bad = 1;
                        snprintf(d, sizeof d, "n %d, batch %d, %d GPUs: image %d trained %d times",
                                 n, B, N, m, seen[m]);
                    }
                cases++;
            }
        free(order);
        free(seen);
    }
    if (!bad) snprintf(d, sizeof d, "%d cases (images, global batch, GPUs)", cases);
    result(!bad, "data-parallel slices cover every image once, cursor by cursor", d);
}

static void test_buckets(void)
{
    int edge[18], ok = 1;
    char d[96] = "K = 0..16";
    for (int K = 0; K <= 16 && ok; K++) {
        dp_bucket_rows(K, edge);
        int pieces = K ? K : 1, lo = IDX_PIXELS, hi = 0;
        ok = edge[0] == 0 && edge[pieces] == IDX_PIXELS;
        for (int k = 0; k < pieces && ok; k++) {
            int rows = edge[k + 1] - edge[k];
            ok = rows > 0 && edge[k] % DP_BUCKET_ROWS == 0;
            lo = rows < lo ? rows : lo;
            hi = rows > hi ? rows : hi;
        }
        if (ok && hi - lo > DP_BUCKET_ROWS) ok = 0;
        if (!ok) snprintf(d, sizeof d, "K = %d", K);
    }
    result(ok, "dW1 buckets: 0 to 784 on multiples of 16, even within 16 rows", d);
}

/* A 9-input, 6-hidden network, a batch of 7 over 3 "GPUs" (slices 3, 2, 2): each slice's
 * reference gradient is scaled by 1 / rows (ref_step), so rows / B undoes that into
 * 1 / B; the sum over slices must match the whole batch's gradient and loss to rounding. */
static void test_scaling(void)
{
    MlpLayout l = mlp_layout(9, 6);
    const int B = 7, N = 3;
    float *pf = malloc(l.total * sizeof(float)), x[7 * 9];
    double *p = malloc(l.total * sizeof(double)), *sum = calloc(l.total, sizeof(double));
    int y[7] = {1, 7, 7, 0, 9, 3, 3};
    mlp_init(pf, &l, 5);
    fill_uniform(x, 7 * 9, -1.0f, 1.0f, 6);
    for (size_t i = 0; i < l.total; i++) p[i] = pf[i];
    RefStep whole, part;
    ref_alloc(&whole, &l, B);
    ref_step(p, &l, x, y, &whole);
    double loss = 0.0;
    for (int g = 0; g < N; g++) {
        DpSlice sl = dp_slice_of(B, B, N, 0, g);
        ref_alloc(&part, &l, sl.rows);
        ref_step(p, &l, x + (size_t)sl.first * 9, y + sl.first, &part);
        for (size_t i = 0; i < l.total; i++) sum[i] += part.grad[i] * sl.rows / B;
        loss += part.loss * sl.rows / B;
        ref_free(&part);
    }
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < l.total; i++) {
        num += (sum[i] - whole.grad[i]) * (sum[i] - whole.grad[i]);
        den += whole.grad[i] * whole.grad[i];
    }
    char d[128];
    snprintf(d, sizeof d, "gradient %.1e, loss %.1e apart (tolerance 1e-12)", sqrt(num / den),
             fabs(loss - whole.loss));
    result(sqrt(num / den) < 1e-12 && fabs(loss - whole.loss) < 1e-12,
           "slices' gradients scaled by 1/B sum to the batch's", d);
    ref_free(&whole);
    free(pf);
    free(p);
    free(sum);
}

int main(void)
{
    test_split();
    test_buckets();
    test_scaling();
    return failures ? 1 : 0;
}
