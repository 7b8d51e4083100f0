/* Chapter 06 host tests: the closed-form CPU reference against the step-by-step
 * recurrence, the float recurrence (as the GPU runs it) within the stated tolerance,
 * the chunking of an array, and the nominal PCIe rates. */
#include <math.h>
#include <stdio.h>

#include "06_streams_prefetch/reference.h"
#include "common/validate.h"

static int report(const char *name, int ok)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", name);
    return ok;
}

/* Closed form vs the double recurrence: they differ only by double rounding. */
static void test_closed_form(void)
{
    static const int works[] = {0, 1, 2, 16, 1000, 5000};
    double worst = 0.0;
    for (size_t w = 0; w < sizeof works / sizeof works[0]; w++) {
        Rng r = {42 + w};
        for (int i = 0; i < 1000; i++) {
            float x = 2.0f * rng_uniform(&r) - 1.0f;
            double ref;
            sp_reference(&x, &ref, 1, works[w]);
            double loop = sp_reference_loop(x, works[w]);
            double e = fabs(ref - loop) / fmax(fabs(loop), 1e-30);
            if (e > worst) worst = e;
        }
    }
    report("06 reference: closed form equals the recurrence (rel. error < 1e-12)", worst < 1e-12);
}

/* The float recurrence with fused (fmaf) and unfused (mul, then add) steps stays within
 * SP_TOL of the reference, as the tolerance's derivation says, for any amount of work. */
static void test_float_within_tolerance(void)
{
    static const int works[] = {1, 16, 100, 2500};
    double worst = 0.0;
    for (size_t w = 0; w < sizeof works / sizeof works[0]; w++) {
        Rng r = {7 + w};
        for (int i = 0; i < 2000; i++) {
            float x = 2.0f * rng_uniform(&r) - 1.0f, bx = SP_B * x, fused = x, split = x;
            for (int k = 0; k < works[w]; k++) {
                fused = fmaf(fused, SP_A, bx);
                volatile float prod = split * SP_A; /* volatile: keep the two roundings */
                split = prod + bx;
            }
            double ref;
            sp_reference(&x, &ref, 1, works[w]);
            double e1 = fabs(fused - ref) / fmax(fabs(ref), 1e-30);
            double e2 = fabs(split - ref) / fmax(fabs(ref), 1e-30);
            if (e1 > worst) worst = e1;
            if (e2 > worst) worst = e2;
        }
    }
    printf("     worst float error %.3e, tolerance %.3e\n", worst, SP_TOL);
    report("06 reference: float recurrence within the check tolerance", worst <= SP_TOL);
}

/* Every (n, chunks): the pieces cover n exactly, none is empty, none exceeds the length,
 * and there are never more than asked. */
static void test_chunking(void)
{
    int ok = 1;
    for (long long n = 1; n <= 300 && ok; n++) {
        for (int chunks = 1; chunks <= 70 && ok; chunks++) {
            int count = sp_chunk_count(n, chunks);
            long long sum = 0;
            for (int c = 0; c < count; c++) {
                long long size = sp_chunk_size(n, chunks, c);
                if (size < 1 || size > sp_chunk_len(n, chunks)) ok = 0;
                sum += size;
            }
            if (sum != n || count > chunks || count < 1) ok = 0;
        }
    }
    report("06 chunking: pieces cover n exactly for n = 1..300, chunks = 1..70", ok);
    report("06 chunking: n = 100 in 64 chunks is 50 pieces of 2",
           sp_chunk_count(100, 64) == 50 && sp_chunk_len(100, 64) == 2);
    report("06 chunking: n = 1 in 64 chunks is 1 piece",
           sp_chunk_count(1, 64) == 1 && sp_chunk_size(1, 64, 0) == 1);
    report("06 chunking: n = 1021 in 7 chunks: 6 of 146 and one of 145",
           sp_chunk_count(1021, 7) == 7 && sp_chunk_size(1021, 7, 0) == 146 &&
               sp_chunk_size(1021, 7, 6) == 145);
}

static void test_pcie(void)
{
    report("06 pcie: gen 5 x16 is 63.0 GB/s", fabs(sp_pcie_gbs(5, 16) - 63.015) < 0.01);
    report("06 pcie: gen 4 x16 is 31.5 GB/s", fabs(sp_pcie_gbs(4, 16) - 31.508) < 0.01);
    report("06 pcie: gen 3 x8 is 7.9 GB/s", fabs(sp_pcie_gbs(3, 8) - 7.877) < 0.01);
    report("06 pcie: unknown generation gives 0",
           sp_pcie_gbs(0, 16) == 0.0 && sp_pcie_gbs(7, 16) == 0.0);
}

int main(void)
{
    test_closed_form();
    test_float_within_tolerance();
    test_chunking();
    test_pcie();
    return 0;
}
