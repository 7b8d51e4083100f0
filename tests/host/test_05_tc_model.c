/* Chapter 05's tensor-core dispatcher on the host: the tensor-core sweep's shapes
 * (driver/tc_sweep.h) and the model tc_best chooses by (tensor_cores/model.h), on the numbers
 * of an H100 (132 SMs at 1.98 GHz, 3352 GB/s, 66 clusters of two, the blocks per SM the CUDA
 * runtime reports for the candidates' kernels there). The plans of a fixed parameter set are
 * compared with those records/tc_calibrate.py's port of the model prints
 * (tc_calibrate.py --selftest), so that the two stay the same model. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "05_matmul_tiled/driver/tc_sweep.h"
#include "05_matmul_tiled/tensor_cores/best_params.h"
#include "05_matmul_tiled/tensor_cores/model.h"

static int failures = 0;

static void expect(int ok, const char *name)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", name);
    failures += !ok;
}

static TcMachine h100(int elem_bytes, const TcParams *p)
{
    TcMachine m;
    memset(&m, 0, sizeof m);
    m.sms = 132;
    m.cluster_fit = 66;
    const int occ[TC_NCAND] = {1, 1, 1, 1, 1, 2, 1, 2, 1};
    memcpy(m.occupancy, occ, sizeof occ);
    m.flops_per_us = (elem_bytes == 2 ? 4096 : 2048) * 1980.0;
    m.dram_bytes_per_us = 3352.0e3;
    m.elem_bytes = elem_bytes;
    m.bk = 128 / elem_bytes;
    m.p = *p;
    return m;
}

/* The parameters of tc_calibrate.py's selftest. */
static const TcParams SELFTEST = {
    {{0.55, 4.0},
     {0.65, 8.0},
     {0.60, 5.0},
     {0.68, 6.0},
     {0.70, 6.0},
     {0.45, 3.0},
     {0.35, 5.0},
     {0.30, 3.0},
     {0.68, 6.0}},
    6.0,
    0.6,
};

static int ok_k(int K, int elem_bytes) { return (K * elem_bytes) % 16 == 0; }

static void test_helpers(void)
{
    expect(tc_model_padded_k(1, 2) == 8 && tc_model_padded_k(8, 2) == 8 &&
               tc_model_padded_k(4095, 2) == 4096 && tc_model_padded_k(4097, 2) == 4104,
           "05 tc model: bf16 K rounded up to 8");
    expect(tc_model_padded_k(5, 4) == 8 && tc_model_padded_k(4, 4) == 4 &&
               tc_model_padded_k(4095, 4) == 4096,
           "05 tc model: tf32 K rounded up to 4");
    /* 10 slices in 4 ranges of 3: 4 ranges; in 6 ranges of 2: 5 (no empty range) */
    expect(tc_model_splits(10, 4) == 4 && tc_model_splits(10, 6) == 5 &&
               tc_model_splits(1, 5) == 1 && tc_model_splits(10, 1) == 1 &&
               tc_model_splits(10, 64) == 10,
           "05 tc model: split counts as the launch makes them");
    TcMachine m = h100(2, &SELFTEST);
    expect(tc_model_rounds(&m, TC_CAND_WS, 12, 11, 1, m.occupancy[TC_CAND_WS]) == 1 &&
               tc_model_rounds(&m, TC_CAND_WS, 7, 19, 1, m.occupancy[TC_CAND_WS]) == 2,
           "05 tc model: 132 tiles one round, 133 two");
    expect(tc_model_rounds(&m, TC_CAND_SPLITK, 1, 132, 1, m.occupancy[TC_CAND_SPLITK]) == 2 &&
               tc_model_rounds(&m, TC_CAND_SPLITK, 2, 132, 1, m.occupancy[TC_CAND_SPLITK]) == 2 &&
               tc_model_rounds(&m, TC_CAND_SPLITK, 2, 132, 2, m.occupancy[TC_CAND_SPLITK]) == 4 &&
               tc_model_rounds(&m, TC_CAND_SPLITK, 1, 265, 1, m.occupancy[TC_CAND_SPLITK]) == 3,
           "05 tc model: two split-K blocks an SM, a lone one counted as two");
    /* mma_skinny: one block fills an SM where its tile holds 240 of its 256 rows or more */
    expect(tc_model_full_blocks(&m, TC_CAND_SKINNY, 1822, 123) == 1 &&
               tc_model_full_blocks(&m, TC_CAND_SKINNY, 121, 2913) == 1 &&
               tc_model_full_blocks(&m, TC_CAND_SKINNY, 5235, 95) == 2 &&
               tc_model_full_blocks(&m, TC_CAND_SKINNY, 33, 7391) == 2 &&
               tc_model_full_blocks(&m, TC_CAND_SPLITK, 4096, 4096) == 2 &&
               tc_model_rounds(&m, TC_CAND_SKINNY, 15, 1, 8, 1) == 1 &&
               tc_model_rounds(&m, TC_CAND_SKINNY, 15, 1, 8, 2) == 2,
           "05 tc model: a lone mma_skinny block fills an SM where its tiles are full");
    /* 4097^2 in 128x256 tiles: 33 x 17; pairs of tile rows: 17 x 17 = 289 over 66 clusters */
    expect(tc_model_rounds(&m, TC_CAND_CLUSTER, 33, 17, 1, m.occupancy[TC_CAND_CLUSTER]) == 5 &&
               tc_model_rounds(&m, TC_CAND_PERSISTENT, 33, 17, 1,
                               m.occupancy[TC_CAND_PERSISTENT]) == 5,
           "05 tc model: the cluster kernel deals pairs of tiles, the persistent one tiles");
}

/* The plans tc_calibrate.py --selftest prints for the same machine and parameters. */
static void test_same_as_python(void)
{
    static const struct {
        int elem, M, N, K;
        const char *plan;
        double us;
    } want[] = {
        {2, 4096, 4096, 4096, "wgmma_cluster", 219.137},
        {2, 4097, 4097, 4097,
         "copy A and Bt into rows of 4104, wgmma_persistent on rows 0-3967, then wgmma_ws_128x128",
         339.580},
        {2, 2048, 2048, 2048, "wgmma_cluster", 35.642},
        {2, 256, 1024, 784, "wgmma", 16.112},
        {2, 1024, 784, 32, "mma_skinny", 9.862},
        {2, 4095, 4095, 4095, "copy A and Bt into rows of 4096, wgmma_cluster", 291.848},
        {2, 8192, 8192, 8192, "wgmma_cluster", 1615.097},
        {2, 32, 1024, 7000, "wgmma_splitk with 28 splits", 21.472},
        {2, 33, 7391, 4502, "mma_skinny with 4 splits", 43.019},
        {2, 2413, 1, 3798, "mma_skinny with 12 splits", 20.195},
        {2, 1822, 123, 6427, "mma_skinny with 8 splits", 28.880},
        {2, 121, 2913, 1078, "mma_skinny with 5 splits", 21.392},
        {4, 4096, 4096, 4096, "wgmma_cluster", 408.274},
        {4, 4097, 4097, 4097,
         "copy A and Bt into rows of 4100, wgmma_persistent on rows 0-3967, then wgmma_splitk "
         "with 4 splits",
         615.255},
        {4, 2048, 2048, 2048, "wgmma_cluster", 59.284},
        {4, 256, 1024, 784, "mma_skinny with 7 splits", 21.263},
        {4, 1024, 784, 32, "mma_skinny", 9.862},
        {4, 4095, 4095, 4095, "copy A and Bt into rows of 4096, wgmma_cluster", 547.696},
        {4, 8192, 8192, 8192, "wgmma_cluster", 3128.193},
        {4, 32, 1024, 7000, "wgmma_splitk with 32 splits", 23.352},
        {4, 33, 7391, 4502, "mma_skinny with 4 splits", 66.292},
        {4, 2413, 1, 3798, "mma_skinny with 11 splits", 22.984},
        {4, 1822, 123, 6427, "mma_skinny with 8 splits", 40.085},
        {4, 121, 2913, 1078, "mma_skinny with 5 splits", 23.978},
    };
    int all = 1;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        TcMachine m = h100(want[i].elem, &SELFTEST);
        int ok = ok_k(want[i].K, want[i].elem);
        TcPlan p = tc_model_plan(&m, want[i].M, want[i].N, want[i].K, -0.5f, ok, ok);
        char what[200];
        tc_model_describe(&p, what, sizeof what);
        int same = !strcmp(what, want[i].plan) && fabs(p.us - want[i].us) < 1e-3;
        if (!same)
            printf("    %s %dx%dx%d: C says '%s' %.3f, Python '%s' %.3f\n",
                   want[i].elem == 2 ? "bf16" : "tf32", want[i].M, want[i].N, want[i].K, what, p.us,
                   want[i].plan, want[i].us);
        all &= same;
    }
    expect(all, "05 tc model: the same plans and predictions as tc_calibrate.py's port");
}

/* Every plan of the fitted parameters, on every sweep shape and a grid of others, is one
 * tc_best can run: usable candidates, K padded to what TMA accepts where it pads, a row
 * split in whole tiles of its top candidate, a split count the launch keeps. */
static void test_plans_runnable(void)
{
    int shapes[TC_SWEEP_MAX_SHAPES + 64][3];
    int n = tc_sweep_shapes(1234, shapes);
    static const int dims[] = {1, 17, 128, 1000, 4097, 9000, 20000, 65536};
    for (int i = 0; i < 64; i++, n++)
        shapes[n][0] = dims[i % 8], shapes[n][1] = dims[(i / 8) % 8],
        shapes[n][2] = dims[(i * 3 + 1) % 8];
    int all = 1;
    for (int e = 2; e <= 4; e += 2)
        for (int i = 0; i < n; i++)
            for (int a = 0; a < 2; a++) {
                TcMachine m = h100(e, e == 2 ? &TC_PARAMS_BF16 : &TC_PARAMS_TF32);
                int M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
                int k_ok = ok_k(K, e), a_ok = k_ok && a == 0, b_ok = k_ok;
                TcPlan p = tc_model_plan(&m, M, N, K, -0.5f, a_ok, b_ok);
                int ok = p.rest.cand >= 0 && p.rest.cand < TC_NCAND && p.us > 0.0;
                if (p.pad_a || p.pad_b)
                    ok &= p.k == tc_model_padded_k(K, e) && p.pad_a == !a_ok && p.pad_b == !b_ok;
                else
                    ok &= p.k == K && (!TC_CANDIDATES[p.rest.cand].tma || (a_ok && b_ok));
                if (p.top_rows > 0)
                    ok &= p.top.cand >= 0 && p.top_rows < M &&
                          p.top_rows % TC_CANDIDATES[p.top.cand].bm == 0 &&
                          TC_CANDIDATES[p.top.cand].schedule != TC_SCHED_CLUSTER;
                long long slices = tc_model_ceil(p.k, m.bk);
                ok &= p.rest.splits >= 1 && tc_model_splits(slices, p.rest.splits) == p.rest.splits;
                ok &= p.rest.splits == 1 || TC_CANDIDATES[p.rest.cand].splits;
                if (!ok)
                    printf("    %dx%dx%d (%s): an impossible plan\n", M, N, K,
                           e == 2 ? "bf16" : "tf32");
                all &= ok;
            }
    expect(all, "05 tc model: every plan of the fitted parameters can run");
}

/* Without TMA (a capture, say) only the mma.sync kernels; with one pointer unaligned, only
 * that operand is copied and K stays. */
static void test_padding(void)
{
    TcMachine m = h100(2, &TC_PARAMS_BF16);
    TcPlan p = tc_model_plan_for(&m, 3000, 3000, 3001, 0, 0, 0);
    expect(!TC_CANDIDATES[p.rest.cand].tma && (p.top_rows == 0 || !TC_CANDIDATES[p.top.cand].tma),
           "05 tc model: no TMA, an mma.sync kernel");
    p = tc_model_plan(&m, 3000, 3000, 3000, -0.5f, 0, 1);
    expect(p.k == 3000 && (p.pad_a ? !p.pad_b : !TC_CANDIDATES[p.rest.cand].tma),
           "05 tc model: an unaligned A alone is copied, K unchanged");
    p = tc_model_plan(&m, 4096, 4096, 4095, -0.5f, 0, 0);
    expect(p.pad_a && p.pad_b && p.k == 4096,
           "05 tc model: 4096x4096x4095 bf16 copies both operands (K is the reason)");
}

static void test_sweep_shapes(void)
{
    int a[TC_SWEEP_MAX_SHAPES][3], b[TC_SWEEP_MAX_SHAPES][3], c[TC_SWEEP_MAX_SHAPES][3];
    int n = tc_sweep_shapes(1234, a);
    expect(n == TC_SWEEP_MAX_SHAPES && n >= 40, "05 tc sweep: at least 40 shapes");
    tc_sweep_shapes(1234, b);
    tc_sweep_shapes(99, c);
    expect(memcmp(a, b, sizeof a) == 0, "05 tc sweep: the same seed gives the same shapes");
    expect(memcmp(a, c, sizeof a) != 0, "05 tc sweep: another seed gives other shapes");
    int ok = 1;
    const int around[] = {1024, 2048, 4096, 8192};
    for (int i = 0; i < 12; i++) {
        int want = around[i / 3] + i % 3 - 1;
        ok &= a[i][0] == want && a[i][1] == want && a[i][2] == want;
    }
    expect(ok, "05 tc sweep: N-1, N, N+1 around 1024, 2048, 4096, 8192");
    ok = 1;
    static const int small[12] = {1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 3, 3};
    for (int i = 0; i < 12; i++)
        for (int d = 0; d < 3; d++) {
            int v = a[12 + i][d];
            ok &= (small[i] >> d) & 1 ? v >= 16 && v <= 128 : v >= 1024 && v <= 8192;
        }
    expect(ok, "05 tc sweep: M, N, K, M and N small (16..128), the others 1024..8192");
    ok = 1;
    for (int r = 1; r <= 7; r++) {
        const int *s = a[24 + r - 1];
        ok &= s[2] % 8 == r && s[2] >= 1024 && s[2] <= 6200 && s[0] >= 1024 && s[1] >= 1024;
    }
    expect(ok, "05 tc sweep: K = 1..7 (mod 8), a few thousand");
    ok = a[31][0] == 256 && a[31][1] == 1024 && a[31][2] == 784 && a[34][2] == 32;
    expect(ok, "05 tc sweep: chapter 07's products");
    ok = 1;
    for (int i = 35; i < n; i++)
        for (int d = 0; d < 3; d++) ok &= a[i][d] >= 1 && a[i][d] <= 8192;
    expect(ok && n - 35 == TC_SWEEP_RANDOM, "05 tc sweep: random dimensions in 1..8192");
}

int main(void)
{
    test_helpers();
    test_same_as_python();
    test_plans_runnable();
    test_padding();
    test_sweep_shapes();
    return failures ? 1 : 0;
}
