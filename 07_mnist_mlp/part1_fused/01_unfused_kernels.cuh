/* Chapter 07: the unfused step's kernels, one job per kernel (the trainers naive,
 * resident and best_kernels; part1_fused/01_unfused_steps.cuh launches them):
 *
 *     mlp_add_bias_naive    z += b, one thread per element
 *     mlp_relu_naive        a = max(z, 0)
 *     mlp_softmax_naive     one thread per row
 *     mlp_xent_naive        per-row loss and dz2 = (p - onehot) / B
 *     mlp_colsum_naive      bias gradients: one thread per column walks the rows
 *     mlp_relu_backward_naive  dz1 = da1 * (a1 > 0)
 *     mlp_sgd_naive         v = mu v + g; w -= lr v
 *
 * (the loss of an unfused step is chapter 03's sum of the per-row losses: v1 in the naive
 * and resident trainers, the single-pass v7 in best_kernels; the gather is kernels.cuh's) */
#ifndef CH07_KERNELS_UNFUSED_CUH
#define CH07_KERNELS_UNFUSED_CUH

#include "07_mnist_mlp/kernels.cuh"

#define MLP_NAIVE_BLOCK 256

__global__ void mlp_add_bias_naive(float *z, const float *b, int rows, int cols)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (long long)rows * cols) z[i] += b[i % cols];
}

__global__ void mlp_relu_naive(const float *z, float *a, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = fmaxf(z[i], 0.0f);
}

/* One thread per row of 10 logits: subtract the maximum, exponentiate, normalize. */
__global__ void mlp_softmax_naive(const float *z, float *p, int rows)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float *zr = z + (size_t)r * MLP_CLASSES;
    float m = zr[0], s = 0.0f;
    for (int c = 1; c < MLP_CLASSES; c++) m = fmaxf(m, zr[c]);
    for (int c = 0; c < MLP_CLASSES; c++) s += expf(zr[c] - m);
    for (int c = 0; c < MLP_CLASSES; c++) p[(size_t)r * MLP_CLASSES + c] = expf(zr[c] - m) / s;
}

/* loss[r] = -log p[r][y]; dz2 = (p - onehot(y)) / batch. p is clamped at FLT_MIN so a
 * probability that underflowed gives a large loss, not infinity. */
__global__ void mlp_xent_naive(const float *p, const int *y, float *loss, float *dz2, int rows)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    loss[r] = -logf(fmaxf(p[(size_t)r * MLP_CLASSES + y[r]], 1.17549435e-38f));
    for (int c = 0; c < MLP_CLASSES; c++)
        dz2[(size_t)r * MLP_CLASSES + c] =
            (p[(size_t)r * MLP_CLASSES + c] - (c == y[r] ? 1.0f : 0.0f)) / rows;
}

/* out[c] = sum over rows of m[r][c]: one thread per column, so a warp reads 32
 * neighbouring floats of a row per step (coalesced), but few threads for 10 columns. */
__global__ void mlp_colsum_naive(const float *m, float *out, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; r++) s += m[(size_t)r * cols + c];
    out[c] = s;
}

__global__ void mlp_relu_backward_naive(const float *da, const float *a, float *dz, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dz[i] = a[i] > 0.0f ? da[i] : 0.0f;
}

__global__ void mlp_sgd_naive(float *w, float *v, const float *g, long long n, float lr, float mu)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        v[i] = mu * v[i] + g[i];
        w[i] -= lr * v[i];
    }
}

#endif
