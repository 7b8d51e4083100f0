/* Host test for chapter 07's tensor-core trainers, the parts that need no GPU
 * (07_mnist_mlp/part2_tensor_cores/01_roundings.h):
 *   - the roundings to bf16, TF32 and fp16 against a brute-force nearest value, ties
 *     included (fp16 also against the compiler's _Float16 where it has one, subnormals and
 *     overflow included); the bf16 packing;
 *   - the three bf16 pieces of persistent_bf16x3 (pst_split3_pair): their sum is the fp32
 *     value exactly, and a pixel (0..255) times a piece is exact in fp32;
 *   - the transposed copies: the W1 tiles of the update kernel cover W1 once and write
 *     W1t = W1^T; the hidden backward kernel's pieces of dz1t cover it once, and every
 *     wide store is whole and 16-byte aligned (at batch 256 all of them are wide);
 *   - the --check tolerances of the tensor-core trainers: a model of such a trainer (its
 *     two steps in fp32 arithmetic, the products' operands rounded as its kernels round
 *     them) against the check's reference (driver/cpu_reference.h's steps in double on the same
 *     rounded operands), the check's shapes and learning rate, over many seeds, on data
 *     where every pixel rounds: each error must stay within half its tolerance.
 * Runs in tests/build. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "07_mnist_mlp/driver/idx.h"
#include "07_mnist_mlp/part2_tensor_cores/01_roundings.h"
#include "07_mnist_mlp/driver/cpu_reference.h"
#include "common/host.h"

static int failures = 0;

static void result(int ok, const char *what, const char *detail)
{
    printf("%s 07 %s%s%s\n", ok ? "PASS" : "FAIL", what, detail[0] ? ": " : "", detail);
    failures += !ok;
}

/* ------------------------------------------------------------------ roundings */

/* The representable neighbours of v with `keep` mantissa bits: v truncated, and the next
 * one up in magnitude; the nearer wins, a tie goes to the even one (bf16) or away from
 * zero (TF32). */
static float nearest(float v, int keep, int ties_even)
{
    unsigned drop = 23u - (unsigned)keep, u = tc_float_bits(v), mask = (1u << drop) - 1u;
    float lo = tc_bits_float(u & ~mask), hi = tc_bits_float((u & ~mask) + (1u << drop));
    double dlo = fabs((double)v - lo), dhi = fabs((double)hi - v);
    if (dlo != dhi) return dlo < dhi ? lo : hi;
    if (!ties_even) return hi;
    return ((tc_float_bits(lo) >> drop) & 1u) ? hi : lo;
}

static void test_roundings(void)
{
    Rng r = {2024};
    int bad_bf16 = 0, bad_tf32 = 0, ties = 0;
    double worst_bf16 = 0.0, worst_tf32 = 0.0;
    for (int i = 0; i < 2000000; i++) {
        /* random bits over a wide exponent range, and every 64th a tie exactly */
        unsigned u = (unsigned)(rng_next(&r) >> 32);
        u = (u & 0x807fffffu) | ((100u + (u >> 24) % 56u) << 23);
        if (i % 64 == 0) u = (u & ~0xffffu) | 0x8000u, ties++;
        if (i % 64 == 1) u = (u & ~0x1fffu) | 0x1000u, ties++;
        float v = tc_bits_float(u), b = mlp_round_bf16(v), t = tc_round_tf32(v);
        bad_bf16 += b != nearest(v, 7, 1);
        bad_tf32 += t != nearest(v, 10, 0) || (tc_float_bits(t) & 0x1fffu) != 0;
        worst_bf16 = fmax(worst_bf16, fabs((double)b - v) / fabs(v));
        worst_tf32 = fmax(worst_tf32, fabs((double)t - v) / fabs(v));
    }
    char d[160];
    snprintf(d, sizeof d,
             "2e6 values (%d ties): %d wrong, largest relative error %.3g (2^-8 = %.3g)", ties,
             bad_bf16, worst_bf16, ldexp(1.0, -8));
    result(bad_bf16 == 0 && worst_bf16 <= ldexp(1.0, -8),
           "bf16 rounding is to nearest, ties to even", d);
    snprintf(d, sizeof d, "%d wrong, largest relative error %.3g (2^-11 = %.3g)", bad_tf32,
             worst_tf32, ldexp(1.0, -11));
    result(bad_tf32 == 0 && worst_tf32 <= ldexp(1.0, -11),
           "TF32 rounding is to nearest, ties away, low bits 0", d);

    /* values the check's data produce exactly, and the special ones */
    float exact[] = {0.0f, 1.0f, -0.875f, 1.625f, 0.5f, -3.0f};
    int ok = 1;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        ok &= mlp_round_bf16(exact[i]) == exact[i] && tc_round_tf32(exact[i]) == exact[i];
    ok &= mlp_round_bf16(1.0f + 0x1p-8f) == 1.0f &&
          mlp_round_bf16(1.0f + 3 * 0x1p-8f) == 1.0f + 0x1p-6f;
    ok &= tc_round_tf32(1.0f + 0x1p-11f) == 1.0f + 0x1p-10f &&
          tc_round_tf32(-1.0f - 0x1p-11f) == -1.0f - 0x1p-10f;
    ok &= isinf(mlp_round_bf16(INFINITY)) && isinf(tc_round_tf32(-INFINITY));
    ok &= isnan(mlp_round_bf16(NAN)) && isnan(tc_round_tf32(NAN));
    ok &= isnan(mlp_round_bf16(tc_bits_float(0x7f800001u))) &&
          isnan(tc_round_tf32(tc_bits_float(0xff800001u)));
    result(ok, "exact values stay, ties, infinities and NaNs", "");

    /* the packed pair: element 0 first in memory */
    unsigned word = mlp_pack_bf16x2(1.0f, -2.0f);
    unsigned short h[2];
    memcpy(h, &word, sizeof h);
    result(word == 0xC0003F80u && mlp_bf16_float(h[0]) == 1.0f && mlp_bf16_float(h[1]) == -2.0f,
           "bf16 pair packs element 0 into the low half (the lower address)", "");
}

/* fp16 (the persistent bf16 trainer's partial sums): in its normal range the nearest value
 * with 10 mantissa bits, ties to even; everywhere, where the compiler has _Float16, the
 * same value as its conversion (subnormals below 2^-14, infinity from 65520 on). */
static void test_round_fp16(void)
{
    Rng r = {2025};
    int bad = 0, bad_native = 0, native = 0, ties = 0;
    double worst = 0.0;
    for (int i = 0; i < 2000000; i++) {
        /* exponents 2^-30 .. 2^17: subnormal, normal and overflowing fp16 values */
        unsigned u = (unsigned)(rng_next(&r) >> 32);
        u = (u & 0x807fffffu) | ((97u + (u >> 24) % 48u) << 23);
        if (i % 64 == 0) u = (u & ~0x1fffu) | 0x1000u, ties++;
        float v = tc_bits_float(u), h = mlp_round_fp16(v), a = fabsf(v);
        if (a >= 0x1p-14f && a < 65504.0f) {
            bad += h != nearest(v, 10, 1);
            worst = fmax(worst, fabs((double)h - v) / a);
        }
#ifdef __FLT16_MAX__
        native = 1;
        bad_native += h != (float)(_Float16)v;
#endif
    }
    int special = mlp_round_fp16(65519.0f) == 65504.0f && isinf(mlp_round_fp16(65520.0f)) &&
                  mlp_round_fp16(0x1p-25f) == 0.0f && mlp_round_fp16(0x1.8p-25f) == 0x1p-24f &&
                  mlp_round_fp16(-0x1p-24f) == -0x1p-24f && isnan(mlp_round_fp16(NAN));
    char d[200];
    snprintf(
        d, sizeof d,
        "2e6 values (%d ties): %d wrong in the normal range, largest relative error %.3g (2^-11 = "
        "%.3g); %s",
        ties, bad, worst, ldexp(1.0, -11),
        native ? (bad_native ? "differs from _Float16" : "all as _Float16") : "no _Float16 here");
    result(bad == 0 && bad_native == 0 && special && worst <= ldexp(1.0, -11),
           "fp16 rounding is to nearest, ties to even, subnormals and overflow", d);
}

/* persistent_bf16x3's pieces, as pst_split3_pair makes them (each the remainder rounded to
 * bf16; the GPU's cvt.rn rounds as mlp_round_bf16): hi + mid + lo is w exactly for every
 * normal fp32 w down to 2^-110 (below it the last piece would be a bf16 subnormal), and a
 * pixel times a piece (8 x 8 significant bits) is exact in fp32, so the tensor cores'
 * products are exact and only their fp32 sums round. */
static void test_split3(void)
{
    Rng r = {77};
    int bad_sum = 0, bad_piece = 0, bad_product = 0;
    for (int i = 0; i < 2000000; i++) {
        unsigned u = (unsigned)(rng_next(&r) >> 32);
        u = (u & 0x807fffffu) | ((17u + (u >> 24) % 220u) << 23); /* exponents 2^-110 .. 2^109 */
        if (i % 64 == 0) u = (u & ~0xffffu) | 0x8000u;            /* a tie at the first rounding */
        if (i % 64 == 1) u = (u & ~0xffu) | 0x80u;                /* ... and at the second */
        const float w = tc_bits_float(u);
        float rest = w, piece[3];
        for (int k = 0; k < 3; k++) {
            piece[k] = mlp_round_bf16(rest);
            rest -= piece[k];
            bad_piece += mlp_round_bf16(piece[k]) != piece[k];
        }
        bad_sum += rest != 0.0f || (double)piece[0] + piece[1] + piece[2] != (double)w;
        const float p = (float)(rng_next(&r) % 256);
        for (int k = 0; k < 3; k++) bad_product += (double)(p * piece[k]) != (double)p * piece[k];
    }
    char d[160];
    snprintf(
        d, sizeof d,
        "2e6 values, 2^-110 to 2^109, ties included: %d sums off, %d pieces not bf16, %d products "
        "rounded",
        bad_sum, bad_piece, bad_product);
    result(bad_sum == 0 && bad_piece == 0 && bad_product == 0,
           "an fp32 value is the sum of its three bf16 pieces, exactly", d);
}

/* ------------------------------------------------------------------ transposed copies */

/* The W1 tiles of mlp_update_tc / mlp_make_w1t, their threads' loops as in
 * part2_tensor_cores/01_tc_kernels.cuh: every element of W1t written once, with W1's transposed
 * element. */
static int w1_tiles_transpose(int in, int hidden)
{
    size_t n = (size_t)in * hidden;
    float *w = malloc(n * sizeof(float)), *wt = malloc(n * sizeof(float)),
          s[MLP_W1_TILE][MLP_W1_TILE + 1];
    int *hits = calloc(n, sizeof(int)), ok = 1;
    for (size_t i = 0; i < n; i++) w[i] = (float)i;
    for (int tile = 0; tile < mlp_w1_tiles(in, hidden); tile++) {
        int k0, j0;
        mlp_w1_tile_origin(tile, hidden, &k0, &j0);
        for (int ty = 0; ty < 8; ty++)
            for (int tx = 0; tx < MLP_W1_TILE; tx++)
                for (int r = ty; r < MLP_W1_TILE; r += 8)
                    if (k0 + r < in && j0 + tx < hidden)
                        s[r][tx] = w[(size_t)(k0 + r) * hidden + j0 + tx];
        for (int ty = 0; ty < 8; ty++)
            for (int tx = 0; tx < MLP_W1_TILE; tx++)
                for (int r = ty; r < MLP_W1_TILE; r += 8) {
                    int j = j0 + r, k = k0 + tx;
                    if (j < hidden && k < in) {
                        wt[(size_t)j * in + k] = s[tx][r];
                        hits[(size_t)j * in + k]++;
                    }
                }
    }
    for (int k = 0; k < in; k++)
        for (int j = 0; j < hidden; j++)
            ok &= hits[(size_t)j * in + k] == 1 &&
                  wt[(size_t)j * in + k] == w[(size_t)k * hidden + j];
    free(w);
    free(wt);
    free(hits);
    return ok;
}

/* The pieces of dz1t the hidden backward kernel stores (its row partition, as in
 * launch_hidden_backward and mlp_hidden_backward: blocks of per_block rows, four groups of
 * per_thread rows, unit j a thread): each element once; each wide store whole and 16-byte
 * aligned for elements of `elem` bytes. Returns the count of wide stores in *wide. */
static int dz1t_pieces(int rows, int hidden, int elem, int *wide, int *narrow)
{
    int per_block = (rows + 7) / 8 > 32 ? 32 : (rows + 7) / 8, per_thread = (per_block + 3) / 4,
        ok = 1;
    int *hits = calloc((size_t)rows * hidden, sizeof(int));
    *wide = *narrow = 0;
    for (int r0 = 0; r0 < rows; r0 += per_block) {
        int nrows = rows - r0 < per_block ? rows - r0 : per_block;
        for (int g = 0; g < 4; g++)
            for (int j = 0; j < hidden; j++) {
                int first = g * per_thread,
                    mine = per_thread < nrows - first ? per_thread : nrows - first;
                size_t at = (size_t)j * rows + r0 + first;
                if (mlp_column_vector(rows, r0 + first, mine)) {
                    ok &= (at * (size_t)elem) % 16 == 0;
                    (*wide)++;
                } else if (mine > 0) {
                    (*narrow)++;
                }
                for (int r = 0; r < mine; r++) hits[at + r]++;
            }
    }
    for (size_t i = 0; i < (size_t)rows * hidden; i++) ok &= hits[i] == 1;
    free(hits);
    return ok;
}

static void test_transposes(void)
{
    const int shapes[][2] = {{784, 1024}, {784, 50}, {784, 3}, {5, 33}, {33, 1}};
    int ok = 1;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        ok &= w1_tiles_transpose(shapes[i][0], shapes[i][1]);
    result(ok, "W1 tiles write W1t = W1^T, each element once (784x1024, 784x50, 784x3, 5x33, 33x1)",
           "");

    const int rows[] = {1, 2, 3, 8, 19, 37, 96, 128, 232, 255, 256, 1000};
    char d[200] = "";
    ok = 1;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (int elem = 2; elem <= 4; elem += 2) {
            int wide, narrow;
            ok &= dz1t_pieces(rows[i], 70, elem, &wide, &narrow);
            if (rows[i] == 256) ok &= narrow == 0 && wide == 256 / 8 * 70;
            if (rows[i] == 96 && elem == 2)
                snprintf(d, sizeof d, "batch 96: %d wide, %d narrow pieces", wide, narrow);
        }
    result(ok, "dz1t pieces cover dz1^T once, wide stores aligned, all wide at batch 256", d);
}

/* ------------------------------------------------------------------ the check's tolerances */

/* The tolerances --check gives the tensor-core trainers, as part2_tensor_cores/01_roundings.h lists
 * them (the CheckTolerances order: loss, z1, dz2, v(W1) and v(b1), v(W2) and v(b2), parameters). */
static const double TOLERANCES[6] = {MLP_TC_TOLERANCES};
static const char *const PRECISION[2] = {"tf32", "bf16"};
static const char *const WHAT[6] = {"loss", "z1", "dz2", "v(W1),v(b1)", "v(W2),v(b2)", "params"};

typedef float (*Rounding)(float);

/* What --check compares after its epoch of two steps (driver/check.cuh): the mean loss, the last
 * step's z1 without its bias and its dz2, the velocity and the parameters after both. */
typedef struct {
    double loss;
    float *z1, *dz2, *v, *p;
} Outcome;

static void outcome_free(Outcome *o)
{
    free(o->z1);
    free(o->dz2);
    free(o->v);
    free(o->p);
}

/* The check's case: B rows, then (B + 1) / 2; parameters from mlp_init with biases in
 * [-0.1, 0.1); the check's pixel scaling (mean 0.35, std 0.4), lr 0.1 and momentum 0.5.
 * The pixels are uniform bytes (the check's synthetic images are mostly 0 and 255, which
 * bf16 holds exactly), so that every input rounds. */
typedef struct {
    MlpLayout l;
    int B, B2;
    float *p0, *x;
    int *y;
} Case;

static void case_make(Case *c, int B, int H, unsigned long long seed)
{
    c->B = B;
    c->B2 = B > 1 ? (B + 1) / 2 : 1;
    c->l = mlp_layout(IDX_PIXELS, H);
    int N = B + c->B2;
    c->p0 = malloc(c->l.total * sizeof(float));
    c->x = malloc((size_t)N * IDX_PIXELS * sizeof(float));
    c->y = malloc((size_t)N * sizeof(int));
    mlp_init(c->p0, &c->l, seed + 3);
    fill_uniform(c->p0 + c->l.b1, (size_t)H, -0.1f, 0.1f, seed + 1);
    fill_uniform(c->p0 + c->l.b2, MLP_CLASSES, -0.1f, 0.1f, seed + 2);
    Rng r = {seed};
    for (size_t i = 0; i < (size_t)N * IDX_PIXELS; i++)
        c->x[i] = ((float)(rng_next(&r) & 255) / 255.0f - 0.35f) / 0.4f;
    for (int b = 0; b < N; b++) c->y[b] = (int)(rng_next(&r) % MLP_CLASSES);
}

static void case_free(Case *c)
{
    free(c->p0);
    free(c->x);
    free(c->y);
}

static float *to_float(const double *a, size_t n)
{
    float *f = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) f[i] = (float)a[i];
    return f;
}

/* The check's reference: driver/cpu_reference.h's steps in double, operands rounded by
 * `rounding`. */
static void reference_steps(const Case *c, Rounding rounding, Outcome *o)
{
    const MlpLayout *l = &c->l;
    int H = l->hidden;
    double *p = malloc(l->total * sizeof(double)), *v = calloc(l->total, sizeof(double));
    for (size_t i = 0; i < l->total; i++) p[i] = c->p0[i];
    RefStep s1, s2;
    ref_alloc(&s1, l, c->B);
    ref_alloc(&s2, l, c->B2);
    ref_step_rounded(p, l, c->x, c->y, rounding, &s1);
    ref_sgd(p, v, s1.grad, l->total, 0.1, 0.5);
    ref_step_rounded(p, l, c->x + (size_t)c->B * IDX_PIXELS, c->y + c->B, rounding, &s2);
    for (size_t i = 0; i < (size_t)c->B2 * H; i++) s2.z1[i] -= p[l->b1 + i % H];
    ref_sgd(p, v, s2.grad, l->total, 0.1, 0.5);
    o->loss = (s1.loss * c->B + s2.loss * c->B2) / (c->B + c->B2);
    o->z1 = to_float(s2.z1, (size_t)c->B2 * H);
    o->dz2 = to_float(s2.dz2, (size_t)c->B2 * MLP_CLASSES);
    o->v = to_float(v, l->total);
    o->p = to_float(p, l->total);
    ref_free(&s1);
    ref_free(&s2);
    free(p);
    free(v);
}

/* A model of the GPU trainer: one step in fp32 arithmetic (every sum in float, in one
 * order), the products' operands rounded as the kernels round them; z1 (without bias)
 * and dz2 out, v = mu v + g and p -= lr v in place. Returns the step's mean loss. */
static double float_step(float *p, float *v, const MlpLayout *l, const float *x, const int *y,
                         int B, Rounding round, float *z1, float *dz2)
{
    int H = l->hidden, K = l->in;
    float *g = calloc(l->total, sizeof(float)), *w1 = malloc((size_t)K * H * sizeof(float));
    float *xr = malloc((size_t)K * sizeof(float)), *dz1 = malloc((size_t)H * sizeof(float));
    double loss = 0.0;
    for (size_t i = 0; i < (size_t)K * H; i++) w1[i] = round(p[l->w1 + i]);
    for (int b = 0; b < B; b++) {
        for (int k = 0; k < K; k++) xr[k] = round(x[(size_t)b * K + k]);
        float *zb = z1 + (size_t)b * H, z2[MLP_CLASSES], m = -INFINITY, sum = 0.0f;
        for (int j = 0; j < H; j++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k++) acc += xr[k] * w1[(size_t)k * H + j];
            zb[j] = acc;
        }
        for (int c = 0; c < MLP_CLASSES; c++) {
            float acc = p[l->b2 + c];
            for (int j = 0; j < H; j++)
                acc += fmaxf(zb[j] + p[l->b1 + j], 0.0f) * p[l->w2 + (size_t)j * MLP_CLASSES + c];
            z2[c] = acc;
            m = fmaxf(m, acc);
        }
        for (int c = 0; c < MLP_CLASSES; c++) sum += expf(z2[c] - m);
        loss += logf(sum) + m - z2[y[b]];
        float *d2 = dz2 + (size_t)b * MLP_CLASSES;
        for (int c = 0; c < MLP_CLASSES; c++) {
            d2[c] = (expf(z2[c] - m) / sum - (c == y[b] ? 1.0f : 0.0f)) / B;
            g[l->b2 + c] += d2[c];
        }
        for (int j = 0; j < H; j++) {
            float a = fmaxf(zb[j] + p[l->b1 + j], 0.0f), da = 0.0f;
            for (int c = 0; c < MLP_CLASSES; c++) {
                da += d2[c] * p[l->w2 + (size_t)j * MLP_CLASSES + c];
                g[l->w2 + (size_t)j * MLP_CLASSES + c] += a * d2[c];
            }
            float d = a > 0.0f ? da : 0.0f;
            g[l->b1 + j] += d;
            dz1[j] = round(d);
        }
        for (int k = 0; k < K; k++)
            for (int j = 0; j < H; j++) g[l->w1 + (size_t)k * H + j] += xr[k] * dz1[j];
    }
    for (size_t i = 0; i < l->total; i++) {
        v[i] = 0.5f * v[i] + g[i];
        p[i] -= 0.1f * v[i];
    }
    free(g);
    free(w1);
    free(xr);
    free(dz1);
    return loss / B;
}

static void model_steps(const Case *c, Rounding round, Outcome *o)
{
    const MlpLayout *l = &c->l;
    int H = l->hidden;
    float *p = malloc(l->total * sizeof(float)), *v = calloc(l->total, sizeof(float));
    memcpy(p, c->p0, l->total * sizeof(float));
    float *z1 = malloc((size_t)c->B * H * sizeof(float)),
          *dz2 = malloc((size_t)c->B * MLP_CLASSES * sizeof(float));
    double l1 = float_step(p, v, l, c->x, c->y, c->B, round, z1, dz2);
    o->z1 = malloc((size_t)c->B2 * H * sizeof(float));
    o->dz2 = malloc((size_t)c->B2 * MLP_CLASSES * sizeof(float));
    double l2 = float_step(p, v, l, c->x + (size_t)c->B * IDX_PIXELS, c->y + c->B, c->B2, round,
                           o->z1, o->dz2);
    o->loss = (l1 * c->B + l2 * c->B2) / (c->B + c->B2);
    o->v = v;
    o->p = p;
    free(z1);
    free(dz2);
}

static double norm_err(const float *a, const float *ref, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
        den += (double)ref[i] * ref[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* The six errors --check measures between a and the reference o (v(W1) with v(b1), v(W2)
 * with v(b2): they share a tolerance). */
static void errors(const Outcome *a, const Outcome *o, const Case *c, double *e)
{
    const MlpLayout *l = &c->l;
    int H = l->hidden;
    e[0] = fabs(a->loss - o->loss) / fabs(o->loss);
    e[1] = norm_err(a->z1, o->z1, (size_t)c->B2 * H);
    e[2] = norm_err(a->dz2, o->dz2, (size_t)c->B2 * MLP_CLASSES);
    e[3] = fmax(norm_err(a->v + l->w1, o->v + l->w1, (size_t)l->in * H),
                norm_err(a->v + l->b1, o->v + l->b1, (size_t)H));
    e[4] = fmax(norm_err(a->v + l->w2, o->v + l->w2, (size_t)H * MLP_CLASSES),
                norm_err(a->v + l->b2, o->v + l->b2, MLP_CLASSES));
    e[5] = norm_err(a->p, o->p, l->total);
}

static float unrounded(float v) { return v; }

/* The fp32 model with the roundings against the reference with the same roundings: what
 * --check allows a tensor-core trainer must cover this with room to spare (the GPU sums in
 * other orders; its errors are of the same kind). A quantity that fp32 arithmetic alone
 * (the model unrounded against the unrounded reference) already puts above a quarter of
 * its tolerance is left out of that case: a single row with the label's probability
 * within 1e-6 of 1 makes dz2 cancel, and then every trainer misses it alike. Also
 * reported: the same model against the unrounded reference, what a check that ignored
 * the rounding would have to allow. */
static void test_tolerances(void)
{
    /* the check's three shapes, each at the check's default seed (1234 + 100 i) and more */
    const int shapes[3][3] = {{1, 3, 300}, {37, 50, 40}, {256, 1024, 1}};
    const Rounding rounding[2] = {tc_round_tf32, mlp_round_bf16};
    double worst[2][6] = {{0}}, against_unrounded[2][6] = {{0}};
    int cases = 0, left_out = 0;
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < shapes[i][2]; k++) {
            Case c;
            case_make(&c, shapes[i][0], shapes[i][1],
                      1234 + 100 * (unsigned long long)i + 7919 * (unsigned long long)k);
            Outcome exact, fp32;
            double f[6];
            reference_steps(&c, NULL, &exact);
            model_steps(&c, unrounded, &fp32);
            errors(&fp32, &exact, &c, f);
            for (int q = 0; q < 2; q++) {
                Outcome ref, model;
                double e[6], u[6];
                reference_steps(&c, rounding[q], &ref);
                model_steps(&c, rounding[q], &model);
                errors(&model, &ref, &c, e);
                errors(&model, &exact, &c, u);
                for (int m = 0; m < 6; m++) {
                    if (f[m] > TOLERANCES[m] / 4) {
                        left_out += q == 0;
                        continue;
                    }
                    worst[q][m] = fmax(worst[q][m], e[m]);
                    against_unrounded[q][m] = fmax(against_unrounded[q][m], u[m]);
                }
                outcome_free(&ref);
                outcome_free(&model);
            }
            outcome_free(&exact);
            outcome_free(&fp32);
            case_free(&c);
            cases++;
        }
    for (int q = 0; q < 2; q++) {
        char d[700];
        int n = snprintf(d, sizeof d,
                         "%d cases (%d values left to fp32), largest error (tolerance):", cases,
                         left_out),
            ok = 1;
        for (int m = 0; m < 6; m++) {
            n += snprintf(d + n, sizeof d - (size_t)n, " %s %.1e (%.0e)", WHAT[m], worst[q][m],
                          TOLERANCES[m]);
            ok &= worst[q][m] <= TOLERANCES[m] / 2;
        }
        n += snprintf(d + n, sizeof d - (size_t)n, "; against unrounded steps:");
        for (int m = 0; m < 6; m++)
            n += snprintf(d + n, sizeof d - (size_t)n, " %.1e", against_unrounded[q][m]);
        char what[120];
        snprintf(what, sizeof what,
                 "%s: an fp32 model of the trainer is within half the check's tolerances",
                 PRECISION[q]);
        result(ok, what, d);
    }
}

int main(void)
{
    test_roundings();
    test_round_fp16();
    test_split3();
    test_transposes();
    test_tolerances();
    return failures ? 1 : 0;
}
