/* Chapter 07: --check. An epoch of two training steps of every trainer, through its own
 * path (graphs included), against double-precision CPU steps of driver/cpu_reference.h on synthetic
 * data (for the tensor-core trainers, CPU steps whose two big products take the same
 * rounded operands as theirs); and the CPU gradients themselves against central finite
 * differences. */
#ifndef CH07_CHECK_CUH
#define CH07_CHECK_CUH

#include "common/validate.h"
#include "07_mnist_mlp/driver/data.cuh"
#include "07_mnist_mlp/driver/epochs.cuh"
#include "07_mnist_mlp/driver/flags.cuh"
#include "07_mnist_mlp/driver/trainer_table.cuh"

/* Fills the parameters like mlp_init, with nonzero biases so their gradients are tested. */
static void check_params(float *p, const MlpLayout *l, unsigned long long seed)
{
    mlp_init(p, l, seed);
    fill_uniform(p + l->b1, (size_t)l->hidden, -0.1f, 0.1f, seed + 1);
    fill_uniform(p + l->b2, MLP_CLASSES, -0.1f, 0.1f, seed + 2);
}

/* The reference of a check: an epoch of two steps, B rows and then a shorter second batch
 * (so the cursor, the next-batch gather and a last partial batch are all exercised), in the
 * order the trainers will draw them (the same shuffle stream as theirs), computed in
 * double, the products' operands rounded as a tensor-core trainer rounds them when
 * `rounding` is set: the last step's activations, the epoch's mean loss, the velocity and
 * the parameters after both updates. */
typedef struct {
    IdxDataset data;
    MlpLayout l;
    int batch, n_train;
    float *p0;
    int *order;
    RefStep last;
    double loss;
    double *p_last; /* the parameters the last step started from */
    double *p_new, *v_new;
} CheckCase;

#define CHECK_MEAN 0.35f
#define CHECK_STD 0.4f
#define CHECK_LR 0.1f
#define CHECK_MU 0.5f

static int second_batch(int B) { return B > 1 ? (B + 1) / 2 : 1; }

static void check_case_create_rounded(CheckCase *c, int B, int H, unsigned long long seed,
                                      RefRounding rounding, RefZ1Sum z1_sum)
{
    int B2 = second_batch(B), N = B + B2;
    c->batch = B;
    c->n_train = N;
    synthesize(&c->data, N, seed);
    c->l = mlp_layout(IDX_PIXELS, H);
    c->p0 = (float *)xmalloc(c->l.total * sizeof(float));
    check_params(c->p0, &c->l, seed + 3);
    c->order = (int *)xmalloc((size_t)N * sizeof(int));
    for (int i = 0; i < N; i++) c->order[i] = i;
    Rng r = {seed + 1};
    mlp_shuffle(c->order, N, &r);
    float *x = (float *)xmalloc((size_t)N * IDX_PIXELS * sizeof(float));
    int *y = (int *)xmalloc((size_t)N * sizeof(int));
    for (int b = 0; b < N; b++) {
        int img = c->order[b];
        for (int k = 0; k < IDX_PIXELS; k++)
            x[(size_t)b * IDX_PIXELS + k] =
                ((float)c->data.pixels[(size_t)img * IDX_PIXELS + k] / 255.0f - CHECK_MEAN) /
                CHECK_STD;
        y[b] = c->data.labels[img];
    }
    size_t n = c->l.total;
    c->p_new = (double *)xmalloc(n * sizeof(double));
    c->p_last = (double *)xmalloc(n * sizeof(double));
    c->v_new = (double *)calloc(n, sizeof(double));
    for (size_t i = 0; i < n; i++) c->p_new[i] = c->p0[i];
    RefStep first;
    ref_alloc(&first, &c->l, B);
    ref_step_summed(c->p_new, &c->l, x, y, rounding, z1_sum, &first);
    ref_sgd(c->p_new, c->v_new, first.grad, n, CHECK_LR, CHECK_MU);
    memcpy(c->p_last, c->p_new, n * sizeof(double));
    ref_alloc(&c->last, &c->l, B2);
    ref_step_summed(c->p_new, &c->l, x + (size_t)B * IDX_PIXELS, y + B, rounding, z1_sum, &c->last);
    ref_sgd(c->p_new, c->v_new, c->last.grad, n, CHECK_LR, CHECK_MU);
    c->loss = (first.loss * B + c->last.loss * B2) / N;
    ref_free(&first);
    free(x);
    free(y);
}

static void check_case_create(CheckCase *c, int B, int H, unsigned long long seed)
{
    check_case_create_rounded(c, B, H, seed, NULL, NULL);
}

static void check_case_free(CheckCase *c)
{
    ref_free(&c->last);
    idx_free(&c->data);
    free(c->p0);
    free(c->order);
    free(c->p_last);
    free(c->p_new);
    free(c->v_new);
}

static float *download(const float *dev, size_t n)
{
    float *h = (float *)xmalloc(n * sizeof(float));
    CUDA_CHECK(cudaMemcpy(h, dev, n * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
}

/* The tolerances of the fp32 families (CheckTolerances, in its order), for the check's shapes
 * (B <= 256 rows, then B2 = 128; H <= 1024 units; 784 pixels): each a rounding part plus what
 * one ReLU flip can do, rounded up to 1, 2, 3 or 5 times a power of ten.
 *
 * Rounding, as chapter 05's sgemm_tolerance: an n-term fp32 sum with random signs is off by
 * about sqrt(n) units of u = 2^-24, and 16 sqrt(n) u leaves room for other summation orders
 * and the few roundings around the sums (bias, exp, log, division, the update's FMAs). n counts
 * every sum on a quantity's way: z1 784 pixels (and its bias), z2 H units, the softmax 10
 * classes, dz1 10, the batch's sums B:
 *   loss (relative)  784 + 1024 + 10 + 256           4.3e-5
 *   z1               784 + 2 (sgemm_tolerance(784))  2.7e-5
 *   dz2              784 + 1024 + 10 + 2             4.1e-5
 *   v(W1), v(b1)     784 + 1024 + 10 + 10 + 256      4.4e-5
 *   v(W2), v(b2)     784 + 1024 + 10 + 256           4.3e-5
 *   params           2: one rounding an update (lr v is about 1e-2 of p, so v's error
 *                    adds less)                      1.4e-6
 *
 * A ReLU flip: a unit whose z1 + b1 lies within rounding of 0 can land on the other side of
 * the kink than in double (the GEMMs sum in other orders than the CPU). Its a1 stays within
 * rounding of 0 either way, but its dz1 is a whole term off, and with it one of the B terms of
 * its column of dW1 (x_b dz1) and of db1. After the first step that term has also moved W1 by
 * lr times it, which the second step carries into z1 (all its rows: the images share their
 * background), and through z2 into dz2, the loss, dW2 and db2. One term among the B2 H / 2
 * nonzero ones of the last step's dW1 weighs about 1/sqrt(B2 H / 2) = 3.9e-3 of it if they add
 * like a random walk. Over every unit of the check's 256x1024 case, to first order in the term
 * (tests/check_tolerances.c), one flip moves at most: loss 4.9e-6, z1 2.6e-4, dz2 2.5e-3 (the
 * first step fits the synthetic batch, so the second step's dz2 is small), v(W1) and v(b1)
 * 2.8e-3, v(W2) and v(b2) 4.4e-4, params 5.8e-5. That is the case where a flip is to be
 * expected: its nearest z1 + b1 lies 1.1e-6 of their rms from 0, within reach of z1's rounding
 * (about 5e-7 of it); at 32x1024 the nearest lies 2.4e-5 from 0, at 37x50 5.2e-5, out of reach.
 *
 * So loss 5e-5, z1 3e-4, dz2 3e-3, v(W1) and v(b1) 3e-3, v(W2) and v(b2) 5e-4, params 1e-4.
 * Measured on the GPU: the one flip met at 256x1024 moved v(W1) and v(b1) by 3e-4 to 4e-4, the
 * last z1 by 3e-5 and the parameters by 1e-5 (7.5 to 10 times inside); without a flip z1 is
 * within 2.6e-7 and v(W1) 5.4e-7. tests/check_tolerances.c's fp32 model of a trainer (five
 * summation orders; the check's cases and 12 more seeds at 256x1024) stays within loss 6.9e-7,
 * z1 5.1e-7, dz2 2.7e-6, v(W1) 6.6e-7, v(W2) 3.2e-6, params 4.7e-8 where it flips nothing (70
 * to 4500 times inside), and within v(W1) 1.2e-3, z1 1.3e-4, params 2.9e-5 where it flips one
 * unit (2.3 to 3.4 times inside). */
static const CheckTolerances FP32_TOLERANCES = {5e-5, 3e-4, 3e-3, 3e-3, 5e-4, 1e-4};

/* What an epoch of the case left, against the case's reference: the epoch's loss, the
 * last step's z1 (without its bias where z1_has_no_bias: the fused steps add it where z1 is
 * read) and dz2, the velocity v = mu v + g after both steps (which holds both steps'
 * gradients) and the parameters. Returns the number of failed comparisons. */
static int check_results(const char *name, const CheckTolerances *tol, const CheckCase *c,
                         double loss, const float *z1, const float *dz2, const float *v,
                         const float *np, int z1_has_no_bias)
{
    const MlpLayout *l = &c->l;
    int B = c->batch, B2 = c->last.batch, H = l->hidden;
    char size[48], what[64];
    snprintf(size, sizeof size, "%d+%dx%d", B, B2, H);
    int fails = 0;
#define CHECK_ONE(label, err, limit)                       \
    do {                                                   \
        snprintf(what, sizeof what, "%s %s", name, label); \
        fails += !report_check(what, size, err, limit);    \
    } while (0)
    CHECK_ONE("loss", isfinite(loss) ? fabs(loss - c->loss) / fabs(c->loss) : INFINITY, tol->loss);
    double *z1_ref = (double *)xmalloc((size_t)B2 * H * sizeof(double));
    for (size_t i = 0; i < (size_t)B2 * H; i++)
        z1_ref[i] = c->last.z1[i] - (z1_has_no_bias ? c->p_last[l->b1 + i % H] : 0.0);
    CHECK_ONE("z1", norm_rel_error(z1, z1_ref, (size_t)B2 * H), tol->z1);
    free(z1_ref);
    CHECK_ONE("dz2", norm_rel_error(dz2, c->last.dz2, (size_t)B2 * MLP_CLASSES), tol->dz2);
    CHECK_ONE("v(W1)", norm_rel_error(v + l->w1, c->v_new + l->w1, (size_t)IDX_PIXELS * H),
              tol->v_hidden);
    CHECK_ONE("v(b1)", norm_rel_error(v + l->b1, c->v_new + l->b1, (size_t)H), tol->v_hidden);
    CHECK_ONE("v(W2)", norm_rel_error(v + l->w2, c->v_new + l->w2, (size_t)H * MLP_CLASSES),
              tol->v_output);
    CHECK_ONE("v(b2)", norm_rel_error(v + l->b2, c->v_new + l->b2, MLP_CLASSES), tol->v_output);
    CHECK_ONE("updated params", norm_rel_error(np, c->p_new, l->total), tol->params);
#undef CHECK_ONE
    return fails;
}

/* The case's epoch of two steps, run through the trainer's own path (graphs included).
 * Tolerances: the family's, or FP32_TOLERANCES above. */
static int check_impl(const Impl *impl, const CheckCase *c, unsigned long long seed)
{
    const MlpLayout *l = &c->l;
    const CheckTolerances *tol =
        impl->launch->tolerances ? impl->launch->tolerances : &FP32_TOLERANCES;
    int B = c->batch, B2 = c->last.batch, H = l->hidden;
    Trainer t;
    trainer_create(&t, impl, &c->data, c->n_train, NULL, H, B, CHECK_MEAN, CHECK_STD, seed);
    trainer_set_params(&t, c->p0, CHECK_LR, CHECK_MU);
    trainer_prepare_graphs(&t);
    poison_device(t.z1, (size_t)B * H * sizeof(float));
    poison_device(t.dz2, (size_t)B * MLP_CLASSES * sizeof(float));
    EpochResult r = run_epoch(&t);
    if (memcmp(t.h_order, c->order, (size_t)c->n_train * sizeof(int)) != 0) {
        fprintf(stderr, "internal error: the trainer drew another batch order than the check\n");
        exit(1);
    }
    float *z1 = download(t.z1, (size_t)B2 * H), *dz2 = download(t.dz2, (size_t)B2 * MLP_CLASSES);
    float *v = download(t.vel, l->total), *np = download(t.params, l->total);
    if (impl->launch->fused)
        for (size_t i = 0; i < l->total; i++)
            v[i] /= CHECK_MU; /* the update left mu * v; mu = 0.5 is exact */
    int fails = check_results(impl->name, tol, c, r.loss, z1, dz2, v, np, impl->launch->fused);
    free(z1);
    free(dz2);
    free(v);
    free(np);
    trainer_destroy(&t);
    return fails;
}

/* The CPU reference's own gradients against central differences (see the host test). */
static int check_gradients_fd(unsigned long long seed)
{
    MlpLayout l = mlp_layout(9, 6);
    float *pf = (float *)xmalloc(l.total * sizeof(float)), x[5 * 9];
    double *p = (double *)xmalloc(l.total * sizeof(double));
    int y[5] = {1, 7, 7, 0, 9};
    check_params(pf, &l, seed);
    fill_uniform(x, 45, -1.0f, 1.0f, seed + 9);
    for (size_t i = 0; i < l.total; i++) p[i] = pf[i];
    double err = ref_gradient_check(&l, x, y, 5, p, 1e-6, 1e-3);
    free(pf);
    free(p);
    /* central differences: truncation ~h^2, rounding ~1e-16 / h: about 1e-9 relative */
    return !report_check("CPU gradient vs finite diff", "5x9-6-10", err, 1e-6);
}

/* The precisions of the trainers' products, and the rounding the CPU steps give their
 * operands for each (part2_tensor_cores/01_roundings.h). */
static const char *const CHECK_PRECISIONS[] = {"fp32", "tf32", "bf16"};
static const RefRounding CHECK_ROUNDINGS[] = {NULL, tc_round_tf32, mlp_round_bf16};
#define CHECK_NPRECISIONS 3

static int check_precision(const Impl *impl)
{
    for (int r = 0; r < CHECK_NPRECISIONS; r++)
        if (!strcmp(impl->extra.precision, CHECK_PRECISIONS[r])) return r;
    fprintf(stderr, "internal error: trainer %s has an unknown precision '%s'\n", impl->name,
            impl->extra.precision);
    exit(1);
}

static int run_checks(const Options *o)
{
    gemm_tune_off = 1;
    /* B x H: a single row; odd sizes (rows of single floats); the optimized trainer's
     * backward kernel with one K range and 16-byte rows (32 x 1024), with several (256) */
    static const int DEFAULT_SHAPES[][2] = {{1, 3}, {37, 50}, {32, 1024}, {256, 1024}};
    int n = o->nsizes ? o->nsizes : (int)(sizeof DEFAULT_SHAPES / sizeof DEFAULT_SHAPES[0]),
        fails = 0;
    printf(
        "\ncheck (seed %llu): an epoch of two training steps (B rows, then fewer) of each trainer "
        "against\n"
        "double-precision CPU steps (for tf32 and bf16: on the operands they round)\n",
        o->seed);
    fails += check_gradients_fd(o->seed);
    for (int i = 0; i < n; i++) {
        int B = o->nsizes ? (int)o->sizes[i].dim[0] : DEFAULT_SHAPES[i][0];
        int H = o->nsizes ? (o->sizes[i].ndims > 1 ? (int)o->sizes[i].dim[1] : FLAGS.hidden)
                          : DEFAULT_SHAPES[i][1];
        unsigned long long seed = o->seed + 100 * (unsigned long long)i;
        CheckCase cases[CHECK_NPRECISIONS]; /* one reference a precision, made when first needed */
        int made[CHECK_NPRECISIONS] = {0};
        for (int k = 0; k < NIMPLS; k++) {
            if (!kernel_selected(o, IMPLS[k].name)) continue;
            char why[200];
            if (impl_unsupported(&IMPLS[k], H, B, why, sizeof why)) {
                printf("  skip %-28s size %dx%-13d %s\n", IMPLS[k].name, B, H, why);
                continue;
            }
            int r = check_precision(&IMPLS[k]);
            RefZ1Sum z1_sum = IMPLS[k].launch->z1_sum;
            if (z1_sum) { /* a reference of its own */
                CheckCase own;
                check_case_create_rounded(&own, B, H, seed, CHECK_ROUNDINGS[r], z1_sum);
                fails += check_impl(&IMPLS[k], &own, seed);
                check_case_free(&own);
                continue;
            }
            if (!made[r])
                check_case_create_rounded(&cases[r], B, H, seed, CHECK_ROUNDINGS[r], NULL),
                    made[r] = 1;
            fails += check_impl(&IMPLS[k], &cases[r], seed);
        }
        for (int r = 0; r < CHECK_NPRECISIONS; r++)
            if (made[r]) check_case_free(&cases[r]);
    }
    printf("%s\n", fails ? "CHECK FAILED" : "all checks passed");
    return fails;
}

#endif
