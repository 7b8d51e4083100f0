/* Host test for chapter 07's host-side code: the CPU reference's gradients against
 * finite differences, the shuffle, and model files (round trip, and refusal of corrupt,
 * truncated and mismatched files). Runs in tests/build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "07_mnist_mlp/driver/model_file.h"
#include "07_mnist_mlp/driver/cpu_reference.h"

static int failures = 0;

static void result(int ok, const char *what, const char *detail)
{
    printf("%s 07 %s%s%s\n", ok ? "PASS" : "FAIL", what, detail[0] ? ": " : "", detail);
    failures += !ok;
}

/* A 7-input, 5-hidden network on a batch of 4: central differences with h = 1e-6 in
 * double agree with backpropagation to about h^2 * (third derivative) + eps / h, ~1e-9
 * relative; 1e-6 leaves room and still catches any wrong term (those are O(1)). */
static void test_gradient_check(void)
{
    MlpLayout l = mlp_layout(7, 5);
    float *pf = malloc(l.total * sizeof(float)), x[4 * 7];
    double *p = malloc(l.total * sizeof(double));
    int y[4] = {3, 9, 0, 3};
    mlp_init(pf, &l, 42);
    fill_uniform(x, 28, -1.0f, 1.0f, 43);
    for (size_t i = 0; i < l.total; i++) p[i] = pf[i];
    for (int j = 0; j < 5; j++) p[l.b1 + j] = 0.1 * (j + 1); /* biases nonzero too */
    double err = ref_gradient_check(&l, x, y, 4, p, 1e-6, 1e-3);
    char d[96];
    snprintf(d, sizeof d, "max relative error %.2e (tolerance 1e-6)", err);
    result(err <= 1e-6, "finite differences match the reference gradient", d);
    free(pf);
    free(p);
}

static void test_shuffle(void)
{
    int order[1000], seen[1000] = {0}, moved = 0, ok = 1;
    for (int i = 0; i < 1000; i++) order[i] = i;
    Rng r = {7};
    mlp_shuffle(order, 1000, &r);
    for (int i = 0; i < 1000; i++) {
        seen[order[i]]++;
        moved += order[i] != i;
    }
    for (int i = 0; i < 1000; i++) ok &= seen[i] == 1;
    result(ok && moved > 900, "shuffle is a permutation that moves most items", "");
}

static int file_refused(const char *path, const MlpLayout *l, float *out, const char *keyword)
{
    char err[512] = "";
    int rc = model_load(path, l, out, err, sizeof err);
    int ok = rc != 0 && strstr(err, keyword) != NULL;
    if (!ok)
        printf("    rc %d, wanted '%s', got: %s\n", rc, keyword, err);
    else
        printf("    (%s)\n", err);
    return ok;
}

static void rewrite(const char *path, long cut, long flip_at)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = malloc(1 << 20);
    size_t n = fread(buf, 1, 1 << 20, f);
    fclose(f);
    if (flip_at >= 0) buf[flip_at] ^= 0x01;
    f = fopen("model_bad.bin", "wb");
    fwrite(buf, 1, (size_t)((long)n - cut), f);
    fclose(f);
    free(buf);
}

static void test_model_files(void)
{
    MlpLayout l = mlp_layout(784, 13), other = mlp_layout(784, 14);
    float *p = malloc(l.total * sizeof(float)), *q = malloc(other.total * sizeof(float));
    mlp_init(p, &l, 5);
    char err[512] = "";
    int ok = model_save("model_ok.bin", &l, p, err, sizeof err) == 0 &&
             model_load("model_ok.bin", &l, q, err, sizeof err) == 0 &&
             memcmp(p, q, l.total * sizeof(float)) == 0;
    result(ok, "model file round trip is exact", err);
    char tmp_name[64];
    snprintf(tmp_name, sizeof tmp_name, "model_ok.bin.tmp.%ld", (long)getpid());
    FILE *tmp = fopen(tmp_name, "rb");
    result(tmp == NULL, "model save leaves no temporary file", "");
    if (tmp) fclose(tmp);
    result(file_refused("model_ok.bin", &other, q, "shape mismatch"),
           "model load refuses another hidden size", "");
    rewrite("model_ok.bin", 1, -1);
    result(file_refused("model_bad.bin", &l, q, "truncated"), "model load refuses a truncated file",
           "");
    rewrite("model_ok.bin", 0, 32 + 100);
    result(file_refused("model_bad.bin", &l, q, "checksum"),
           "model load refuses a flipped payload bit", "");
    rewrite("model_ok.bin", 0, 1);
    result(file_refused("model_bad.bin", &l, q, "bad magic"), "model load refuses a bad magic", "");
    rewrite("model_ok.bin", 0, 4);
    result(file_refused("model_bad.bin", &l, q, "version"), "model load refuses another version",
           "");
    rewrite("model_ok.bin", (long)(l.total * sizeof(float)) + 10, -1);
    result(file_refused("model_bad.bin", &l, q, "header"), "model load refuses a cut header", "");
    result(file_refused("no_such_model.bin", &l, q, "cannot open"),
           "model load refuses a missing file", "");
    free(p);
    free(q);
}

int main(void)
{
    test_gradient_check();
    test_shuffle();
    test_model_files();
    return failures ? 1 : 0;
}
