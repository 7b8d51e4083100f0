/* The numbers behind driver/check.cuh's fp32 tolerances (FP32_TOLERANCES), on the CPU:
 *   1. an fp32 model of a trainer (its two steps in fp32 arithmetic, every sum in one of five
 *      orders: k ascending, descending, in blocks of 16, of 64, pairwise), against the
 *      check's double-precision CPU steps, on the check's four default cases (the same
 *      synthetic images, parameters, order, learning rate and momentum): the errors --check
 *      measures, and how many units landed on the other side of the ReLU than in double;
 *   2. what one such flip can do: for every unit (row b, unit j) of the check's cases, the
 *      effect on each checked quantity of that unit's dz1 being a whole term off (its a1
 *      stays within rounding of 0 either way), to first order in that term: in either step
 *      on v(W1), v(b1) and the parameters; in the first step also, through W1 and the
 *      second step's forward pass, on z1, dz2, v(b2) and the loss (and on v(W2), for the 400
 *      units with the largest effect on dz2); plus 1/sqrt(B2 H / 2), the share of one term
 *      among the last step's nonzero terms of dW1 if they added like a random walk;
 *   3. with an argument N: the fp32 model on the 256x1024 case with N other seeds
 *      (1534 + 7919 k, k = 1..N), the errors of every run that flipped a unit.
 * make test compiles it (the chapter Makefile's test-binaries target, into
 * tests/build/check_tolerances) but does not run it: it takes minutes. Its output is in
 * records/check_tolerance_records.txt. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "07_mnist_mlp/driver/cpu_reference.h"
#include "07_mnist_mlp/driver/idx.h"
#include "07_mnist_mlp/driver/synthetic.h"
#include "common/host.h"

/* driver/check.cuh's case */
#define CHECK_MEAN 0.35f
#define CHECK_STD 0.4f
#define CHECK_LR 0.1
#define CHECK_MU 0.5

typedef struct {
    int B, B2, H;
    MlpLayout l;
    float *p0, *x; /* x: the B + B2 rows in the order the trainers draw them */
    int *y;
} Case;

/* As check_case_create: B rows, then (B + 1) / 2; mlp_init with biases in [-0.1, 0.1). */
static void case_make(Case *c, int B, int H, unsigned long long seed)
{
    c->B = B;
    c->B2 = B > 1 ? (B + 1) / 2 : 1;
    c->H = H;
    int N = B + c->B2;
    IdxDataset d;
    synthesize(&d, N, seed);
    c->l = mlp_layout(IDX_PIXELS, H);
    c->p0 = (float *)xmalloc(c->l.total * sizeof(float));
    mlp_init(c->p0, &c->l, seed + 3);
    fill_uniform(c->p0 + c->l.b1, (size_t)H, -0.1f, 0.1f, seed + 4);
    fill_uniform(c->p0 + c->l.b2, MLP_CLASSES, -0.1f, 0.1f, seed + 5);
    int *order = (int *)xmalloc((size_t)N * sizeof(int));
    for (int i = 0; i < N; i++) order[i] = i;
    Rng r = {seed + 1};
    mlp_shuffle(order, N, &r);
    c->x = (float *)xmalloc((size_t)N * IDX_PIXELS * sizeof(float));
    c->y = (int *)xmalloc((size_t)N * sizeof(int));
    for (int b = 0; b < N; b++) {
        for (int k = 0; k < IDX_PIXELS; k++)
            c->x[(size_t)b * IDX_PIXELS + k] =
                ((float)d.pixels[(size_t)order[b] * IDX_PIXELS + k] / 255.0f - CHECK_MEAN) /
                CHECK_STD;
        c->y[b] = d.labels[order[b]];
    }
    free(order);
    idx_free(&d);
}

/* The check's reference: two steps in double; p1 the parameters between them. */
typedef struct {
    RefStep s1, s2;
    double *p1, *p, *v, loss;
} Ref;

/* Frees what case_make and reference allocated. */
static void case_free(Case *c, Ref *r)
{
    ref_free(&r->s1);
    ref_free(&r->s2);
    free(r->p1);
    free(r->p);
    free(r->v);
    free(c->p0);
    free(c->x);
    free(c->y);
}

static void reference(const Case *c, Ref *r)
{
    size_t n = c->l.total;
    r->p = (double *)xmalloc(n * sizeof(double));
    r->p1 = (double *)xmalloc(n * sizeof(double));
    r->v = (double *)calloc(n, sizeof(double));
    for (size_t i = 0; i < n; i++) r->p[i] = c->p0[i];
    ref_alloc(&r->s1, &c->l, c->B);
    ref_alloc(&r->s2, &c->l, c->B2);
    ref_step(r->p, &c->l, c->x, c->y, &r->s1);
    ref_sgd(r->p, r->v, r->s1.grad, n, CHECK_LR, CHECK_MU);
    memcpy(r->p1, r->p, n * sizeof(double));
    ref_step(r->p, &c->l, c->x + (size_t)c->B * IDX_PIXELS, c->y + c->B, &r->s2);
    ref_sgd(r->p, r->v, r->s2.grad, n, CHECK_LR, CHECK_MU);
    r->loss = (r->s1.loss * c->B + r->s2.loss * c->B2) / (c->B + c->B2);
}

/* ------------------------------------------------------------------ 1. the fp32 model */

static int ORDER; /* 0 ascending, 1 descending, 2 blocks of 16, 3 blocks of 64, 4 pairwise */

/* sum over k < n of a[k sa] b[k sb] in fp32 with FMAs, in ORDER */
static float dot(const float *a, long sa, const float *b, long sb, int n)
{
    float acc = 0.0f;
    if (ORDER == 1) {
        for (int k = n - 1; k >= 0; k--) acc = fmaf(a[k * sa], b[k * sb], acc);
        return acc;
    }
    if (ORDER == 4 && n > 8) {
        int h = n / 2;
        return dot(a, sa, b, sb, h) + dot(a + h * sa, sa, b + h * sb, sb, n - h);
    }
    if (ORDER == 2 || ORDER == 3) {
        int blk = ORDER == 2 ? 16 : 64;
        for (int k0 = 0; k0 < n; k0 += blk) {
            float part = 0.0f;
            for (int k = k0; k < n && k < k0 + blk; k++) part = fmaf(a[k * sa], b[k * sb], part);
            acc += part;
        }
        return acc;
    }
    for (int k = 0; k < n; k++) acc = fmaf(a[k * sa], b[k * sb], acc);
    return acc;
}

/* One step in fp32 as the trainers take it; z1 out without its bias, dz2 out; counts the
 * units whose ReLU decision differs from the reference's z1 (with bias) zref. */
static double float_step(float *p, float *v, const MlpLayout *l, const float *x, const int *y,
                         int B, float *z1, float *dz2, const double *zref, int *flips)
{
    int H = l->hidden, K = l->in;
    float *g = (float *)calloc(l->total, sizeof(float)),
          *a = (float *)xmalloc(sizeof(float) * B * H);
    float *dz1 = (float *)xmalloc(sizeof(float) * B * H),
          *rowloss = (float *)xmalloc(sizeof(float) * B);
    float *ones = (float *)xmalloc(sizeof(float) * B);
    for (int b = 0; b < B; b++) ones[b] = 1.0f;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < H; j++) {
            float s = dot(x + (size_t)b * K, 1, p + l->w1 + j, H, K), zz = s + p[l->b1 + j];
            z1[(size_t)b * H + j] = s;
            a[(size_t)b * H + j] = zz > 0.0f ? zz : 0.0f;
            *flips += (zz > 0.0f) != (zref[(size_t)b * H + j] > 0.0);
        }
    for (int b = 0; b < B; b++) {
        float z2[MLP_CLASSES], m = -INFINITY, sum = 0.0f, pr[MLP_CLASSES];
        for (int c = 0; c < MLP_CLASSES; c++) {
            z2[c] = dot(a + (size_t)b * H, 1, p + l->w2 + c, MLP_CLASSES, H) + p[l->b2 + c];
            m = fmaxf(m, z2[c]);
        }
        for (int c = 0; c < MLP_CLASSES; c++) sum += expf(z2[c] - m);
        for (int c = 0; c < MLP_CLASSES; c++) pr[c] = expf(z2[c] - m) / sum;
        rowloss[b] = -logf(fmaxf(pr[y[b]], 1.17549435e-38f));
        for (int c = 0; c < MLP_CLASSES; c++)
            dz2[(size_t)b * MLP_CLASSES + c] = (pr[c] - (c == y[b] ? 1.0f : 0.0f)) / B;
    }
    for (int b = 0; b < B; b++)
        for (int j = 0; j < H; j++) {
            float da = dot(dz2 + (size_t)b * MLP_CLASSES, 1, p + l->w2 + (size_t)j * MLP_CLASSES, 1,
                           MLP_CLASSES);
            dz1[(size_t)b * H + j] = a[(size_t)b * H + j] > 0.0f ? da : 0.0f;
        }
    for (int j = 0; j < H; j++) {
        for (int c = 0; c < MLP_CLASSES; c++)
            g[l->w2 + (size_t)j * MLP_CLASSES + c] = dot(a + j, H, dz2 + c, MLP_CLASSES, B);
        g[l->b1 + j] = dot(ones, 1, dz1 + j, H, B);
    }
    for (int c = 0; c < MLP_CLASSES; c++) g[l->b2 + c] = dot(ones, 1, dz2 + c, MLP_CLASSES, B);
    for (int k = 0; k < K; k++)
        for (int j = 0; j < H; j++) g[l->w1 + (size_t)k * H + j] = dot(x + k, K, dz1 + j, H, B);
    double loss = dot(ones, 1, rowloss, 1, B) / B;
    for (size_t i = 0; i < l->total; i++) {
        v[i] = fmaf((float)CHECK_MU, v[i], g[i]);
        p[i] = fmaf(-(float)CHECK_LR, v[i], p[i]);
    }
    free(g);
    free(a);
    free(dz1);
    free(rowloss);
    free(ones);
    return loss;
}

static const char *const WHAT[6] = {"loss", "z1", "dz2", "v(W1),v(b1)", "v(W2),v(b2)", "params"};

/* The six errors of check_results (v(W1) with v(b1), v(W2) with v(b2)), largest over the
 * five orders; prints each order's flips, and with `flipped` the errors of each order that
 * flipped a unit (those are then left out of worst). */
static void model_errors(const Case *c, const Ref *r, double *worst, int flipped)
{
    const MlpLayout *l = &c->l;
    int H = c->H, B = c->B, B2 = c->B2;
    size_t n = l->total;
    double *z1ref = (double *)xmalloc(sizeof(double) * B2 * H);
    for (size_t i = 0; i < (size_t)B2 * H; i++) z1ref[i] = r->s2.z1[i] - r->p1[l->b1 + i % H];
    if (!flipped) printf("  fp32 model, units flipped (first step + second) in the five orders:");
    for (ORDER = 0; ORDER < 5; ORDER++) {
        float *p = (float *)xmalloc(n * sizeof(float)), *v = (float *)calloc(n, sizeof(float));
        float *z1 = (float *)xmalloc(sizeof(float) * B * H);
        float *dz2 = (float *)xmalloc(sizeof(float) * B * MLP_CLASSES);
        memcpy(p, c->p0, n * sizeof(float));
        int f1 = 0, f2 = 0;
        double l1 = float_step(p, v, l, c->x, c->y, B, z1, dz2, r->s1.z1, &f1);
        double l2 = float_step(p, v, l, c->x + (size_t)B * IDX_PIXELS, c->y + B, B2, z1, dz2,
                               r->s2.z1, &f2);
        double e[6];
        e[0] = fabs((l1 * B + l2 * B2) / (B + B2) - r->loss) / r->loss;
        e[1] = norm_rel_error(z1, z1ref, (size_t)B2 * H);
        e[2] = norm_rel_error(dz2, r->s2.dz2, (size_t)B2 * MLP_CLASSES);
        e[3] = fmax(norm_rel_error(v + l->w1, r->v + l->w1, (size_t)IDX_PIXELS * H),
                    norm_rel_error(v + l->b1, r->v + l->b1, (size_t)H));
        e[4] = fmax(norm_rel_error(v + l->w2, r->v + l->w2, (size_t)H * MLP_CLASSES),
                    norm_rel_error(v + l->b2, r->v + l->b2, MLP_CLASSES));
        e[5] = norm_rel_error(p, r->p, n);
        if (!flipped) printf(" %d+%d", f1, f2);
        if (flipped && f1 + f2) {
            printf("  order %d flipped %d+%d:", ORDER, f1, f2);
            for (int q = 0; q < 6; q++) printf(" %s %.1e", WHAT[q], e[q]);
            printf("\n");
        }
        for (int q = 0; q < 6 && !(f1 + f2 && flipped); q++) worst[q] = fmax(worst[q], e[q]);
        free(p);
        free(v);
        free(z1);
        free(dz2);
    }
    if (!flipped) printf("\n");
    free(z1ref);
}

/* ------------------------------------------------------------------ 2. one flip */

static double norm(const double *a, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += a[i] * a[i];
    return sqrt(s);
}

/* |dz1| of unit j of row b if it were on: dz2[b] . W2[j] (W2 as that step multiplies it) */
static double back(const double *dz2, const double *w2, int b, int j)
{
    double s = 0.0;
    for (int c = 0; c < MLP_CLASSES; c++)
        s += dz2[(size_t)b * MLP_CLASSES + c] * w2[(size_t)j * MLP_CLASSES + c];
    return fabs(s);
}

/* The largest first-order effect of one flipped unit on each quantity (order of WHAT). */
static void flip_effects(const Case *c, const Ref *r, double *worst)
{
    const MlpLayout *l = &c->l;
    int H = c->H, B = c->B, B2 = c->B2, K = IDX_PIXELS;
    const float *x2 = c->x + (size_t)B * K;
    double *w2_0 = (double *)xmalloc(sizeof(double) * H * MLP_CLASSES);
    for (size_t i = 0; i < (size_t)H * MLP_CLASSES; i++) w2_0[i] = c->p0[l->w2 + i];
    double nvw1 = norm(r->v + l->w1, (size_t)K * H), nvb1 = norm(r->v + l->b1, (size_t)H);
    double np = norm(r->p, l->total), ndz2 = norm(r->s2.dz2, (size_t)B2 * MLP_CLASSES);
    double nvw2 = norm(r->v + l->w2, (size_t)H * MLP_CLASSES), nvb2 = norm(r->v + l->b2, 10);
    double *z1 = (double *)xmalloc(sizeof(double) * B2 * H);
    for (size_t i = 0; i < (size_t)B2 * H; i++) z1[i] = r->s2.z1[i] - r->p1[l->b1 + i % H];
    double nz1 = norm(z1, (size_t)B2 * H);
    /* a flip in step s changes g_s(W1)[:, j] by x_b |dz1| and g_s(b1)[j] by |dz1|; v holds
     * mu g1 + g2, the parameters lr (1 + mu) g1 + lr g2 */
    for (int s = 1; s <= 2; s++) {
        int rows = s == 1 ? B : B2;
        const float *xs = s == 1 ? c->x : x2;
        double wv = s == 1 ? CHECK_MU : 1.0, wp = CHECK_LR * (s == 1 ? 1.0 + CHECK_MU : 1.0);
        for (int b = 0; b < rows; b++) {
            double nx = 0.0;
            for (int k = 0; k < K; k++) nx += (double)xs[(size_t)b * K + k] * xs[(size_t)b * K + k];
            nx = sqrt(nx);
            for (int j = 0; j < H; j++) {
                double d =
                    back(s == 1 ? r->s1.dz2 : r->s2.dz2, s == 1 ? w2_0 : r->p1 + l->w2, b, j);
                worst[3] = fmax(worst[3], fmax(wv * nx * d / nvw1, wv * d / nvb1));
                worst[5] = fmax(worst[5], wp * sqrt(nx * nx + 1.0) * d / np);
            }
        }
    }
    /* a first-step flip moves W1[:, j] by -lr x_b d and b1[j] by -lr d: the second step's
     * z1[b2][j] by -lr d (x2_b2 . x_b + 1), its a1 where the unit is on, then z2, dz2 (through
     * the softmax), the loss, g2(b2) and g2(W2) */
    double *G = (double *)xmalloc(sizeof(double) * B2 * B),
           *P = (double *)xmalloc(sizeof(double) * B2 * 10);
    for (int i = 0; i < B2; i++)
        for (int b = 0; b < B; b++) {
            double s = 0.0;
            for (int k = 0; k < K; k++)
                s += (double)x2[(size_t)i * K + k] * c->x[(size_t)b * K + k];
            G[(size_t)i * B + b] = s + 1.0;
        }
    for (int i = 0; i < B2; i++)
        for (int k = 0; k < MLP_CLASSES; k++)
            P[i * 10 + k] = r->s2.dz2[i * 10 + k] * B2 + (k == c->y[B + i]);
    double *score = (double *)calloc((size_t)B * H, sizeof(double));
    double *dg = (double *)xmalloc(sizeof(double) * H * MLP_CLASSES);
    const double *w2_1 = r->p1 + l->w2;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 1: v(W2) for the 400 units with the largest effect on dz2 */
        char *pick = (char *)calloc((size_t)B * H, 1);
        for (int t = 0; pass && t < 400 && t < B * H; t++) {
            size_t at = 0;
            for (size_t i = 0; i < (size_t)B * H; i++)
                if (!pick[i] && score[i] > score[at]) at = i;
            pick[at] = 1, score[at] = -1.0;
        }
        for (int b = 0; b < B; b++)
            for (int j = 0; j < H; j++) {
                if (pass && !pick[(size_t)b * H + j]) continue;
                double d = back(r->s1.dz2, w2_0, b, j), ndd = 0.0, dloss = 0.0, db2[10] = {0};
                if (pass) memset(dg, 0, sizeof(double) * H * MLP_CLASSES);
                for (int i = 0; i < B2; i++) {
                    if (!(r->s2.z1[(size_t)i * H + j] > 0.0)) continue;
                    double da = -CHECK_LR * d * G[(size_t)i * B + b], dz[10], pdz = 0.0;
                    for (int k = 0; k < 10; k++) {
                        dz[k] = da * w2_1[(size_t)j * 10 + k];
                        pdz += P[i * 10 + k] * dz[k];
                    }
                    double dd[10];
                    for (int k = 0; k < 10; k++) {
                        dd[k] = P[i * 10 + k] * (dz[k] - pdz) / B2;
                        ndd += dd[k] * dd[k];
                        db2[k] += dd[k];
                        dloss += (P[i * 10 + k] - (k == c->y[B + i])) * dz[k];
                    }
                    if (!pass) continue;
                    for (int k = 0; k < 10; k++)
                        dg[(size_t)j * 10 + k] += da * r->s2.dz2[i * 10 + k];
                    for (int jj = 0; jj < H; jj++) {
                        double a = r->s2.a1[(size_t)i * H + jj];
                        if (a != 0.0)
                            for (int k = 0; k < 10; k++) dg[(size_t)jj * 10 + k] += a * dd[k];
                    }
                }
                if (pass) {
                    worst[4] = fmax(worst[4], norm(dg, (size_t)H * MLP_CLASSES) / nvw2);
                    continue;
                }
                score[(size_t)b * H + j] = sqrt(ndd) / ndz2;
                worst[2] = fmax(worst[2], sqrt(ndd) / ndz2);
                worst[4] = fmax(worst[4], norm(db2, 10) / nvb2);
                worst[0] = fmax(worst[0], fabs(dloss) / (B + B2) / r->loss);
                double n1 = 0.0;
                for (int i = 0; i < B2; i++) {
                    double dz1v = CHECK_LR * d * G[(size_t)i * B + b];
                    n1 += dz1v * dz1v;
                }
                worst[1] = fmax(worst[1], sqrt(n1) / nz1);
            }
        free(pick);
    }
    free(w2_0);
    free(z1);
    free(G);
    free(P);
    free(score);
    free(dg);
}

int main(int argc, char **argv)
{
    /* driver/check.cuh's default shapes (B x H) and seeds (1234 + 100 i) */
    const int shapes[4][2] = {{1, 3}, {37, 50}, {32, 1024}, {256, 1024}};
    for (int i = 0; i < 4; i++) {
        Case c;
        Ref r;
        case_make(&c, shapes[i][0], shapes[i][1], 1234 + 100 * (unsigned long long)i);
        reference(&c, &r);
        double zrms = norm(r.s1.z1, (size_t)c.B * c.H) / sqrt((double)c.B * c.H), near = INFINITY;
        for (size_t k = 0; k < (size_t)c.B * c.H; k++) near = fmin(near, fabs(r.s1.z1[k]));
        printf("%dx%d (then %d rows): nearest z1 + b1 to 0 in the first step: %.1e of its rms\n",
               c.B, c.H, c.B2, near / zrms);
        double model[6] = {0}, flip[6] = {0};
        model_errors(&c, &r, model, 0);
        flip_effects(&c, &r, flip);
        for (int q = 0; q < 6; q++)
            printf("  %-12s fp32 model %.1e   one flip at most %.1e\n", WHAT[q], model[q], flip[q]);
        printf("  1/sqrt(B2 H / 2) = %.1e\n", 1.0 / sqrt(c.B2 * c.H / 2.0));
        case_free(&c, &r);
    }
    int seeds = argc > 1 ? atoi(argv[1]) : 0;
    double worst[6] = {0};
    for (int k = 1; k <= seeds; k++) {
        Case c;
        Ref r;
        case_make(&c, 256, 1024, 1534 + 7919 * (unsigned long long)k);
        reference(&c, &r);
        printf("256x1024, seed %llu:\n", 1534 + 7919 * (unsigned long long)k);
        model_errors(&c, &r, worst, 1);
        case_free(&c, &r);
    }
    if (seeds) {
        printf("256x1024, %d other seeds, the runs without a flip:", seeds);
        for (int q = 0; q < 6; q++) printf(" %s %.1e", WHAT[q], worst[q]);
        printf("\n");
    }
    return 0;
}
