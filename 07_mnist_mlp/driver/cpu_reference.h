/* The network on the CPU, in double precision: the reference every GPU trainer is checked
 * against, the He initialization and the shuffle that peer/torch_reference.py repeats bit for
 * bit, and a finite-difference gradient check of the reference's own backward pass.
 *
 *   x (B x in) -> z1 = x W1 + b1 -> a1 = relu(z1) (B x H) -> z2 = a1 W2 + b2 (B x 10)
 *   loss = mean over the batch of -log softmax(z2)[label]
 *
 * Parameters live in one float array, each tensor starting on a multiple of 4 floats
 * (16 bytes, for the GPU's vector loads): [W1 (in x H) | b1 (H) | W2 (H x 10) | b2 (10)].
 * Plain C: the host tests compile it with gcc. */
#ifndef CH07_REFERENCE_H
#define CH07_REFERENCE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/validate.h"

#define MLP_CLASSES 10

typedef struct {
    int in, hidden;
    size_t w1, b1, w2, b2; /* offsets in floats */
    size_t total;          /* floats in the whole array, padding included */
} MlpLayout;

static inline size_t mlp_round4(size_t n) { return (n + 3) & ~(size_t)3; }

static inline MlpLayout mlp_layout(int in, int hidden)
{
    MlpLayout l;
    l.in = in;
    l.hidden = hidden;
    l.w1 = 0;
    l.b1 = l.w1 + mlp_round4((size_t)in * hidden);
    l.w2 = l.b1 + mlp_round4((size_t)hidden);
    l.b2 = l.w2 + mlp_round4((size_t)hidden * MLP_CLASSES);
    l.total = l.b2 + mlp_round4(MLP_CLASSES);
    return l;
}

/* He (Kaiming) uniform: w ~ U(-sqrt(6 / fan_in), sqrt(6 / fan_in)), biases 0, padding 0.
 * W1 then W2, row-major, from one splitmix64 stream, so peer/torch_reference.py can repeat it. */
static inline void mlp_init(float *params, const MlpLayout *l, unsigned long long seed)
{
    Rng r = {seed};
    memset(params, 0, l->total * sizeof(float));
    float bound1 = sqrtf(6.0f / (float)l->in), bound2 = sqrtf(6.0f / (float)l->hidden);
    for (size_t i = 0; i < (size_t)l->in * l->hidden; i++)
        params[l->w1 + i] = (2.0f * rng_uniform(&r) - 1.0f) * bound1;
    for (size_t i = 0; i < (size_t)l->hidden * MLP_CLASSES; i++)
        params[l->w2 + i] = (2.0f * rng_uniform(&r) - 1.0f) * bound2;
}

/* Fisher-Yates with rng_next % (i + 1); the stream continues from epoch to epoch. */
static inline void mlp_shuffle(int *order, int n, Rng *r)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rng_next(r) % (unsigned long long)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* Everything one training step computes, in double. */
typedef struct {
    int batch;
    double *z1, *a1; /* B x H */
    double *dz2;     /* B x 10: (softmax - onehot) / B */
    double *grad;    /* like the parameter array: dL/dW1, dL/db1, dL/dW2, dL/db2 */
    double loss;
    int correct; /* rows whose largest logit is the label */
} RefStep;

static inline void ref_alloc(RefStep *s, const MlpLayout *l, int batch)
{
    s->batch = batch;
    s->z1 = (double *)calloc((size_t)batch * l->hidden, sizeof(double));
    s->a1 = (double *)calloc((size_t)batch * l->hidden, sizeof(double));
    s->dz2 = (double *)calloc((size_t)batch * MLP_CLASSES, sizeof(double));
    s->grad = (double *)calloc(l->total, sizeof(double));
}

static inline void ref_free(RefStep *s)
{
    free(s->z1);
    free(s->a1);
    free(s->dz2);
    free(s->grad);
    memset(s, 0, sizeof *s);
}

/* x's row b times W1's column j as a trainer sums it, in a batch of `batch` rows (W1: in x
 * hidden, row-major): the persistent bf16 trainer rounds pieces of the sum to fp16
 * (part4_persistent/11_persistent_steps.cuh). NULL: one sum in double. */
typedef double (*RefZ1Sum)(const float *xb, const double *w1, int hidden, int j, int batch);

/* Forward pass and loss only; z2 (B x 10) is written if not NULL. */
static inline double ref_forward(const double *p, const MlpLayout *l, const float *x, const int *y,
                                 int batch, double *z1, double *a1, double *dz2, int *correct,
                                 RefZ1Sum z1_sum)
{
    int H = l->hidden;
    double loss = 0.0;
    if (correct) *correct = 0;
    for (int b = 0; b < batch; b++) {
        const float *xb = x + (size_t)b * l->in;
        for (int j = 0; j < H; j++) {
            double acc = p[l->b1 + j];
            if (z1_sum)
                acc += z1_sum(xb, p + l->w1, H, j, batch);
            else
                for (int k = 0; k < l->in; k++) acc += (double)xb[k] * p[l->w1 + (size_t)k * H + j];
            z1[(size_t)b * H + j] = acc;
            a1[(size_t)b * H + j] = acc > 0.0 ? acc : 0.0;
        }
        double z2[MLP_CLASSES], zmax = -INFINITY, sum = 0.0;
        int best = 0;
        for (int c = 0; c < MLP_CLASSES; c++) {
            double acc = p[l->b2 + c];
            for (int j = 0; j < H; j++)
                acc += a1[(size_t)b * H + j] * p[l->w2 + (size_t)j * MLP_CLASSES + c];
            z2[c] = acc;
            if (acc > zmax) {
                zmax = acc;
                best = c;
            }
        }
        for (int c = 0; c < MLP_CLASSES; c++) sum += exp(z2[c] - zmax);
        loss += log(sum) + zmax - z2[y[b]];
        if (correct && best == y[b]) (*correct)++;
        for (int c = 0; c < MLP_CLASSES && dz2; c++)
            dz2[(size_t)b * MLP_CLASSES + c] = (exp(z2[c] - zmax) / sum - (c == y[b])) / batch;
    }
    return loss / batch;
}

/* A rounding of the operands of the two big products, as a tensor-core trainer does it
 * (part2_tensor_cores/01_roundings.h: bf16, or TF32); NULL: none. */
typedef float (*RefRounding)(float);

/* Forward and backward: loss, activations, dz2 and the gradient of every parameter. With
 * `rounding`, the two big products take rounded operands, as the tensor-core trainers
 * feed them to the tensor cores: x and W1 in z1 = x W1 + b1 (W1 rounded from its fp32
 * value, as the trainers keep it), x and dz1 in dW1 = x^T dz1 (dz1 from its fp32 value);
 * everything else, db1 included, from the unrounded values, in double; z1's sums over the
 * pixels as z1_sum takes them (NULL: one sum). */
static inline void ref_step_summed(const double *p, const MlpLayout *l, const float *x,
                                   const int *y, RefRounding rounding, RefZ1Sum z1_sum, RefStep *s)
{
    int H = l->hidden, B = s->batch;
    const double *pf = p; /* the parameters the forward pass multiplies */
    const float *xs = x;  /* and the batch */
    double *pr = NULL;
    float *xr = NULL;
    if (rounding) {
        pr = (double *)malloc(l->total * sizeof(double));
        xr = (float *)malloc((size_t)B * l->in * sizeof(float));
        memcpy(pr, p, l->total * sizeof(double));
        for (size_t i = 0; i < (size_t)l->in * H; i++)
            pr[l->w1 + i] = rounding((float)p[l->w1 + i]);
        for (size_t i = 0; i < (size_t)B * l->in; i++) xr[i] = rounding(x[i]);
        pf = pr;
        xs = xr;
    }
    s->loss = ref_forward(pf, l, xs, y, B, s->z1, s->a1, s->dz2, &s->correct, z1_sum);
    memset(s->grad, 0, l->total * sizeof(double));
    /* dz1, and dz1w: dz1 as dW1 takes it */
    double *dz1 = (double *)malloc(2 * (size_t)H * sizeof(double)), *dz1w = dz1 + H;
    for (int b = 0; b < B; b++) {
        const double *d2 = s->dz2 + (size_t)b * MLP_CLASSES;
        for (int c = 0; c < MLP_CLASSES; c++) s->grad[l->b2 + c] += d2[c];
        for (int j = 0; j < H; j++) {
            double a = s->a1[(size_t)b * H + j], back = 0.0;
            for (int c = 0; c < MLP_CLASSES; c++) {
                s->grad[l->w2 + (size_t)j * MLP_CLASSES + c] += a * d2[c];
                back += d2[c] * p[l->w2 + (size_t)j * MLP_CLASSES + c];
            }
            dz1[j] = s->z1[(size_t)b * H + j] > 0.0 ? back : 0.0;
            s->grad[l->b1 + j] += dz1[j];
            dz1w[j] = rounding ? rounding((float)dz1[j]) : dz1[j];
        }
        const float *xb = xs + (size_t)b * l->in;
        for (int k = 0; k < l->in; k++) {
            double xk = xb[k];
            double *g = s->grad + l->w1 + (size_t)k * H;
            for (int j = 0; j < H; j++) g[j] += xk * dz1w[j];
        }
    }
    free(dz1);
    free(pr);
    free(xr);
}

static inline void ref_step_rounded(const double *p, const MlpLayout *l, const float *x,
                                    const int *y, RefRounding rounding, RefStep *s)
{
    ref_step_summed(p, l, x, y, rounding, NULL, s);
}

/* Forward and backward: loss, activations, dz2 and the gradient of every parameter. */
static inline void ref_step(const double *p, const MlpLayout *l, const float *x, const int *y,
                            RefStep *s)
{
    ref_step_rounded(p, l, x, y, NULL, s);
}

/* SGD with momentum, as PyTorch does it: v = mu v + g; w -= lr v (v starts at 0). */
static inline void ref_sgd(double *p, double *v, const double *g, size_t n, double lr, double mu)
{
    for (size_t i = 0; i < n; i++) {
        v[i] = mu * v[i] + g[i];
        p[i] -= lr * v[i];
    }
}

/* Central differences (step h) against the analytic gradient, for every parameter of a
 * small network. Returns the largest |fd - analytic| / max(|analytic|, floor). */
static inline double ref_gradient_check(const MlpLayout *l, const float *x, const int *y, int batch,
                                        double *p, double h, double floor)
{
    RefStep s;
    ref_alloc(&s, l, batch);
    ref_step(p, l, x, y, &s);
    double worst = 0.0;
    for (size_t i = 0; i < l->total; i++) {
        double keep = p[i];
        p[i] = keep + h;
        double up = ref_forward(p, l, x, y, batch, s.z1, s.a1, NULL, NULL, NULL);
        p[i] = keep - h;
        double down = ref_forward(p, l, x, y, batch, s.z1, s.a1, NULL, NULL, NULL);
        p[i] = keep;
        double fd = (up - down) / (2.0 * h);
        double err = fabs(fd - s.grad[i]) / fmax(fabs(s.grad[i]), floor);
        if (!(err <= worst)) worst = err;
    }
    ref_free(&s);
    return worst;
}

#endif
