/* Host tests of common/: the command-line parser, the error measures and the CSV writer.
 * Prints PASS/FAIL lines for tests/run_tests.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/host.h"
#include "common/report.h"
#include "common/validate.h"

static int failures = 0;

static void expect(int ok, const char *name)
{
    printf("%s common: %s\n", ok ? "PASS" : "FAIL", name);
    failures += !ok;
}

static const char *const KERNELS[] = {"naive", "fast", NULL};
static const ProgramSpec SPEC = {"prog", "test program", "size", NULL, KERNELS,
                                 3,      65536,          NULL,   NULL};

static void test_sizes(void)
{
    char err[256];
    ProblemSize s;
    expect(cli_parse_size("4096", 3, 65536, &s, err, sizeof err) == 0 && s.ndims == 1 &&
               s.dim[0] == 4096,
           "size 4096");
    expect(cli_parse_size("127x129x131", 3, 65536, &s, err, sizeof err) == 0 && s.ndims == 3 &&
               s.dim[0] == 127 && s.dim[1] == 129 && s.dim[2] == 131,
           "size 127x129x131");
    expect(cli_parse_size("1x2x3x4", 3, 65536, &s, err, sizeof err) != 0,
           "four dimensions rejected");
    expect(cli_parse_size("7x", 3, 65536, &s, err, sizeof err) != 0, "trailing x rejected");
    expect(cli_parse_size("x7", 3, 65536, &s, err, sizeof err) != 0, "leading x rejected");
    expect(cli_parse_size("7xx3", 3, 65536, &s, err, sizeof err) != 0, "empty dimension rejected");
    expect(cli_parse_size("0", 3, 65536, &s, err, sizeof err) != 0, "zero rejected");
    expect(cli_parse_size("-5", 3, 65536, &s, err, sizeof err) != 0 && strstr(err, "too small"),
           "negative rejected as too small");
    expect(cli_parse_size("65537", 3, 65536, &s, err, sizeof err) != 0 && strstr(err, "too large"),
           "above max rejected as too large");
    expect(cli_parse_size("99999999999999999999999", 3, 65536, &s, err, sizeof err) != 0 &&
               strstr(err, "too large"),
           "overflowing number rejected");
    expect(cli_parse_size("12abc", 3, 65536, &s, err, sizeof err) != 0 &&
               strstr(err, "not a whole number"),
           "trailing garbage rejected");
    Options o;
    memset(&o, 0, sizeof o);
    expect(cli_parse_size_list("1,1023,7x9", &SPEC, &o, err, sizeof err) == 0 && o.nsizes == 3 &&
               o.sizes[1].dim[0] == 1023 && o.sizes[2].dim[1] == 9,
           "size list 1,1023,7x9");
    expect(cli_parse_size_list("1,,2", &SPEC, &o, err, sizeof err) != 0,
           "empty list entry rejected");
    expect(cli_parse_size_list("1,", &SPEC, &o, err, sizeof err) != 0, "trailing comma rejected");
    char buf[64];
    expect(strcmp(size_str(&o.sizes[0], buf, sizeof buf), "1") == 0, "size_str of one dimension");
    cli_parse_size("127x129x131", 3, 65536, &s, err, sizeof err);
    expect(strcmp(size_str(&s, buf, sizeof buf), "127x129x131") == 0,
           "size_str of three dimensions");
}

static void test_parse_args(void)
{
    Options o;
    char *argv1[] = {"prog",   "--bench", "--kernel", "fast",  "-n",     "5,6",
                     "--reps", "7",       "--csv",    "x.csv", "--seed", "42"};
    parse_args(12, argv1, &SPEC, &o);
    expect(o.bench && !o.check && strcmp(o.kernel, "fast") == 0 && o.nsizes == 2 && o.reps == 7 &&
               strcmp(o.csv, "x.csv") == 0 && o.seed == 42,
           "parse_args reads every common flag");
    char *argv2[] = {"prog"};
    parse_args(1, argv2, &SPEC, &o);
    expect(o.check && o.bench && o.kernel == NULL && o.nsizes == 0 && o.reps == 20,
           "no flags: check and bench with defaults");
    expect(kernel_selected(&o, "naive") && kernel_selected(&o, "fast"), "no --kernel selects all");
    char *argv3[] = {"prog", "--kernel", "naive,fast"};
    parse_args(3, argv3, &SPEC, &o);
    expect(kernel_selected(&o, "naive") && kernel_selected(&o, "fast") &&
               !kernel_selected(&o, "nai") && !kernel_selected(&o, "naive,fast"),
           "--kernel naive,fast selects exactly those two");
    char buf[64];
    expect(cli_unknown_kernel(&SPEC, "naive,fastx", buf, sizeof buf) && strcmp(buf, "fastx") == 0 &&
               !cli_unknown_kernel(&SPEC, "fast,naive", buf, sizeof buf) &&
               cli_unknown_kernel(&SPEC, "naive,", buf, sizeof buf) && buf[0] == '\0',
           "--kernel lists: an unknown or empty name is named");
}

/* norm_or_worst_error on a 4096 x 4096 product's worth of elements: errors of relative size
 * 4e-6 everywhere pass as their normwise size; the same plus one 128 x 32
 * chunk off by 0.4 (a tile's C read from another buffer, beta = -0.5) stays under a 1.2e-4
 * tolerance normwise and fails it by the worst element. */
static void test_norm_or_worst(void)
{
    size_t n = (size_t)4096 * 4096;
    float *g = (float *)malloc(n * sizeof(float));
    double *r = (double *)malloc(n * sizeof(double));
    Rng rng = {7};
    for (size_t i = 0; i < n; i++) {
        double u1 = (rng_next(&rng) >> 11) * 0x1p-53 + 0x1p-54,
               u2 = (rng_next(&rng) >> 11) * 0x1p-53;
        double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2); /* standard normal */
        r[i] = 64.0 * z;                                           /* a K = 4096 output's size */
        g[i] = (float)(r[i] + 64.0 * 4e-6 * sin(1.0 + (double)i)); /* spread 4e-6 of the rms */
    }
    double clean = norm_or_worst_error(g, r, n);
    expect(clean < 2.0 * norm_rel_error(g, r, n), "norm_or_worst: right elements pass as normwise");
    for (int row = 0; row < 128; row++)
        for (int col = 0; col < 32; col++) g[(size_t)(1000 + row) * 4096 + 512 + col] += 0.4f;
    expect(norm_rel_error(g, r, n) < 1.2e-4 && norm_or_worst_error(g, r, n) > 1.2e-4,
           "norm_or_worst: one wrong chunk hides normwise, fails by the worst element");
    free(g);
    free(r);
}

static void test_errors(void)
{
    float gpu[4] = {1.0f, 2.0f, -3.0f, 0.0f};
    double ref[4] = {1.0, 2.0, -3.0, 0.0};
    size_t at = 99;
    expect(max_rel_error(gpu, ref, 4, 1e-30, &at) == 0.0, "max_rel_error of equal arrays is 0");
    gpu[2] = -3.3f;
    double e = max_rel_error(gpu, ref, 4, 1e-30, &at);
    expect(fabs(e - 0.1) < 1e-6 && at == 2, "max_rel_error finds the worst element");
    gpu[1] = NAN;
    expect(isinf(max_rel_error(gpu, ref, 4, 1e-30, &at)) && at == 1, "max_rel_error: NaN fails");
    expect(isinf(norm_rel_error(gpu, ref, 4)), "norm_rel_error: NaN fails");
    float g2[2] = {3.0f, 4.0f};
    double r2[2] = {3.0, 0.0};
    expect(fabs(norm_rel_error(g2, r2, 2) - 4.0 / 3.0) < 1e-12, "norm_rel_error value");
    test_norm_or_worst();
    fflush(stdout); /* report_check prints its verdict: keep it out of this test's output */
    int saved = dup(1);
    FILE *devnull = freopen("/dev/null", "w", stdout);
    int verdict = report_check("x", "1", NAN, 1e-3);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    expect(devnull && !verdict, "report_check fails a NaN error");
}

static void test_rng(void)
{
    float a[1000], b[1000];
    fill_uniform(a, 1000, -1.0f, 1.0f, 7);
    fill_uniform(b, 1000, -1.0f, 1.0f, 7);
    int same = memcmp(a, b, sizeof a) == 0, in_range = 1, negatives = 0;
    for (int i = 0; i < 1000; i++) {
        in_range &= a[i] >= -1.0f && a[i] < 1.0f;
        negatives += a[i] < 0.0f;
    }
    expect(same, "fill_uniform repeats for the same seed");
    expect(in_range && negatives > 400 && negatives < 600, "fill_uniform in range, both signs");
    fill_uniform(b, 1000, -1.0f, 1.0f, 8);
    expect(memcmp(a, b, sizeof a) != 0, "fill_uniform differs for another seed");
}

static void test_csv(void)
{
    char path[] = "/tmp/test_common_csvXXXXXX";
    int fd = mkstemp(path);
    close(fd);
    BenchRow rate = {"float4", "optimized", "1024", 2.0, 2800.0, "GB/s", "d2d_copy", 3000.0};
    BenchRow time = {"gpu", "optimized", "1024", 0.5, 0.5, "ms", "cpu_loop", 2.0};
    expect(fabs(pct_of_ceiling(&rate) - 93.333333) < 1e-3, "pct_of_ceiling of a rate");
    expect(fabs(pct_of_ceiling(&time) - 400.0) < 1e-9,
           "pct_of_ceiling of a time (faster is above 100)");
    expect(csv_append(path, "NVIDIA H200, test", "01_vector_add", &rate) == 0 &&
               csv_append(path, "NVIDIA H200, test", "01_vector_add", &time) == 0,
           "csv_append writes");
    char line[512];
    FILE *f = fopen(path, "r");
    int ok = f && fgets(line, sizeof line, f) && strcmp(line, CSV_HEADER "\n") == 0;
    ok = ok && fgets(line, sizeof line, f) &&
         strcmp(line, "NVIDIA H200  test,01_vector_add,float4,optimized,1024,2,2800,GB/s,"
                      "d2d_copy,3000,93.33\n") == 0;
    ok = ok && fgets(line, sizeof line, f) &&
         strncmp(line, "NVIDIA H200  test,01_vector_add,gpu,", 36) == 0;
    ok = ok && !fgets(line, sizeof line, f);
    if (f) fclose(f);
    expect(ok,
           "CSV has one header, rows in the documented columns, commas in the GPU name escaped");
    unlink(path);
    expect(csv_append("/nonexistent-dir/x.csv", "g", "c", &rate) != 0,
           "csv_append reports an unwritable file");
}

static void test_host(void)
{
    double odd[5] = {5, 1, 4, 2, 3}, even[4] = {4, 1, 3, 2};
    expect(median_double(odd, 5) == 3.0 && median_double(even, 4) == 2.5, "median_double");
    double t0 = wall_ms();
    expect(wall_ms() >= t0, "wall_ms is monotonic");
}

int main(void)
{
    test_host();
    test_sizes();
    test_parse_args();
    test_errors();
    test_rng();
    test_csv();
    return failures ? 1 : 0;
}
