/* Chapter 05's host-side code: the shape sweep's shapes (driver/shape_sweep.h) and the model
 * sgemm_best chooses by (any_shape/model.h), on the numbers of an H100/H200 (132 SMs at
 * 1.98 GHz, the occupancies the CUDA runtime reports for the chapter's kernels there). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "05_matmul_tiled/any_shape/model.h"
#include "05_matmul_tiled/driver/shape_sweep.h"

static int failures = 0;

static void expect(int ok, const char *name)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", name);
    failures += !ok;
}

/* 132 SMs, 128 FMA lanes at 1.98 GHz, 3.35 TB/s; blocks per SM of hopper (248 registers,
 * 149 KB), splitk_8x8 (127 registers x 128 threads), hopper_small (79 x 256), thin (95 x 128),
 * thin_n_8x8 (as splitk_8x8); the stream-K kernels of splitk_8x8's and thin_n_8x8's tiles
 * hold 3 an SM (168 registers, SgemmStreamkCfg). */
static SgemmMachine hopper_gpu(void)
{
    SgemmMachine m;
    memset(&m, 0, sizeof m);
    m.sms = 132;
    m.fma_per_us = 128 * 1980.0;
    m.dram_bytes_per_us = 3.35e6;
    m.launch_us = 2.0;
    const int occ[SGEMM_NTILES] = {1, 4, 3, 5, 5, 4};
    for (int t = 0; t < SGEMM_NTILES; t++) {
        m.tiles[t] = SGEMM_TILES[t];
        m.occupancy[t] = m.split_occupancy[t] = m.streamk_occupancy[t] = occ[t];
    }
    m.streamk_occupancy[SGEMM_TILE_WIDE] = m.streamk_occupancy[SGEMM_TILE_THIN_N_8X8] = 3;
    return m;
}

static void test_sweep_shapes(void)
{
    int a[SWEEP_MAX_SHAPES][3], b[SWEEP_MAX_SHAPES][3], c[SWEEP_MAX_SHAPES][3];
    int n = sweep_shapes(1234, a);
    expect(n == SWEEP_MAX_SHAPES && SWEEP_RANDOM >= 40,
           "05 sweep: 15 squares, 12 thin products, >= 40 random shapes");
    sweep_shapes(1234, b);
    sweep_shapes(99, c);
    expect(memcmp(a, b, sizeof a) == 0, "05 sweep: the same seed gives the same shapes");
    expect(memcmp(a, c, sizeof a) != 0, "05 sweep: another seed gives other shapes");
    int squares_ok = 1;
    const int around[] = {1024, 2048, 3072, 4096, 8192};
    for (int i = 0; i < 15; i++) {
        int want = around[i / 3] + i % 3 - 1;
        squares_ok &= a[i][0] == want && a[i][1] == want && a[i][2] == want;
    }
    expect(squares_ok, "05 sweep: N-1, N, N+1 around 1024, 2048, 3072, 4096, 8192");
    int thin_ok = 1;
    for (int i = 15; i < 15 + 3 * SWEEP_PER_SMALL_DIM; i++) {
        int small = (i - 15) / SWEEP_PER_SMALL_DIM;
        for (int d = 0; d < 3; d++)
            thin_ok &= d == small ? (a[i][d] >= 16 && a[i][d] <= 128)
                                  : (a[i][d] >= 1024 && a[i][d] <= 8192);
    }
    expect(thin_ok,
           "05 sweep: thin products have one dimension in 16..128, the others in 1024..8192");
    int range_ok = 1, below16 = 0, above1024 = 0;
    for (int i = n - SWEEP_RANDOM; i < n; i++)
        for (int d = 0; d < 3; d++) {
            range_ok &= a[i][d] >= 1 && a[i][d] <= 8192;
            below16 += a[i][d] < 16;
            above1024 += a[i][d] > 1024;
        }
    /* log-uniform: 4 of 13 octaves lie below 16, 3 of 13 above 1024 (of 144 draws) */
    expect(range_ok && below16 > 20 && above1024 > 15,
           "05 sweep: random dimensions in 1..8192, log-uniform");
}

static void test_block_times(void)
{
    expect(sgemm_model_block_times(132, 132, 1, 8) == 1,
           "05 model: 132 blocks on 132 SMs, one wave");
    expect(sgemm_model_block_times(133, 132, 1, 8) == 2,
           "05 model: 133 blocks: the remainder wave");
    expect(sgemm_model_block_times(528, 132, 4, 4) == 4, "05 model: 528 4-warp blocks, 4 an SM");
    expect(sgemm_model_block_times(132, 132, 4, 4) == 2,
           "05 model: a 4-warp block alone runs at half rate");
    expect(sgemm_model_block_times(264, 132, 4, 4) == 2,
           "05 model: two 4-warp blocks an SM, started together: 8 warps");
    expect(sgemm_model_block_times(529, 132, 4, 4) == 5,
           "05 model: 529 4-warp blocks: several rounds, no half-rate tail");
}

static SgemmPlan plan(const SgemmMachine *m, int M, int N, int K, float beta)
{
    return sgemm_model_plan(m, M, N, K, beta, N % 4 == 0);
}

static int is(const SgemmPlan *p, int tile, int splits)
{
    return p->top_rows == 0 && !p->pack_b && p->rest.tile == tile && p->rest.splits == splits &&
           !p->rest.streamk;
}

static void test_choices(void)
{
    SgemmMachine m = hopper_gpu();
    SgemmPlan p = plan(&m, 4096, 4096, 4096, -0.5f);
    expect(is(&p, SGEMM_TILE_HOPPER, 1), "05 model: 4096^3 runs hopper");
    p = plan(&m, 2048, 2048, 2048, -0.5f);
    expect(is(&p, SGEMM_TILE_WIDE, 1),
           "05 model: 2048^3 (one wave of 128x256) runs splitk_8x8's tiles");
    /* chapter 07's shapes: what sgemm_best ran before the model (splitk_8x8 and its split count) */
    p = plan(&m, 256, 1024, 784, -0.5f);
    expect(is(&p, SGEMM_TILE_WIDE, 7), "05 model: 256x1024x784 runs splitk_8x8 with 7 splits");
    p = plan(&m, 784, 1024, 256, 1.0f);
    expect(is(&p, SGEMM_TILE_WIDE, 2), "05 model: 784x1024x256 runs splitk_8x8 with 2 splits");
    p = plan(&m, 32, 1024, 784, 0.0f);
    expect(is(&p, SGEMM_TILE_WIDE, 25), "05 model: 32x1024x784 runs splitk_8x8 with 25 splits");
    p = plan(&m, 256, 1024, 10, 0.0f);
    expect(is(&p, SGEMM_TILE_SMALL, 1), "05 model: 256x1024x10 runs hopper_small");
    p = plan(&m, 256, 10, 1024, 0.0f);
    expect(p.rest.tile == SGEMM_TILE_SMALL && p.rest.splits > 1,
           "05 model: 256x10x1024 runs splitk");
    p = plan(&m, 3073, 3073, 3073, -0.5f);
    expect(p.top_rows > 0 && p.top_rows % m.tiles[p.top.tile].bm == 0 && p.top_rows < 3073 &&
               p.pack_b,
           "05 model: 3073^3 splits off the remainder wave's rows and pads B");
    p = plan(&m, 4097, 4097, 4097, -0.5f);
    expect(p.pack_b && p.top_rows == 0 && p.rest.tile == SGEMM_TILE_WIDE && p.rest.splits == 1,
           "05 model: 4097^3 pads B and runs splitk_8x8's tiles");
    p = plan(&m, 16, 8192, 8192, 0.0f);
    expect(p.rest.tile == SGEMM_TILE_THIN_M, "05 model: 16x8192x8192 runs thin_m");
    p = plan(&m, 1, 5371, 7158, -0.5f);
    expect(p.gemv_splits > 1, "05 model: 1x5371x7158 (a matrix-vector product) runs gemv, K split");
    p = plan(&m, 5224, 56, 7391, -0.5f);
    expect(p.rest.tile == SGEMM_TILE_THIN_N_8X8 && p.rest.streamk,
           "05 model: 5224x56x7391 (41 tiles of thin_n_8x8) runs them stream-K");
    p = plan(&m, 1025, 1025, 1025, -0.5f);
    expect(p.rest.tile == SGEMM_TILE_WIDE && p.rest.streamk && p.top_rows == 0,
           "05 model: 1025^3 (153 tiles of 64x128 for 396 slots) runs them stream-K");
    p = plan(&m, 2560, 3051, 2147, -0.5f);
    expect(p.top_rows > 0 && p.rest.tile == SGEMM_TILE_WIDE && p.rest.streamk,
           "05 model: 2560x3051x2147's last rows (432 tiles of 64x128: one round of the plain "
           "kernel, more than the 396 stream-K slots) run stream-K");
    p = plan(&m, 15, 39, 2082, -0.5f);
    expect(!p.rest.streamk, "05 model: 15x39x2082 (131 slices in all) is not run stream-K");
    p = plan(&m, 2048, 2048, 2048, -0.5f);
    expect(!p.rest.streamk, "05 model: 2048^3 (512 tiles of 64x128) is not run stream-K");
    expect(sgemm_padded_ld(4097) == 4100 && sgemm_padded_ld(2047) == 2048 &&
               sgemm_padded_ld(1) == 4,
           "05 model: the padded B's rows are a multiple of 4 floats");
    p = plan(&m, 8192, 24, 8192, 0.0f);
    expect(p.rest.tile == SGEMM_TILE_THIN_N, "05 model: 8192x24x8192 runs thin_n");
    m.occupancy[SGEMM_TILE_HOPPER] = m.split_occupancy[SGEMM_TILE_HOPPER] = 0;
    m.streamk_occupancy[SGEMM_TILE_HOPPER] = 0;
    p = plan(&m, 4096, 4096, 4096, -0.5f);
    expect(p.rest.tile != SGEMM_TILE_HOPPER && p.top.tile != SGEMM_TILE_HOPPER,
           "05 model: a tile that cannot run on this GPU is never chosen");
}

/* Every sweep shape gets a plan that can run: a tile that fits, splits in range, a finite
 * positive prediction, and a prediction no faster than the FMA peak allows. */
static void test_every_sweep_shape(void)
{
    SgemmMachine m = hopper_gpu();
    int shapes[SWEEP_MAX_SHAPES][3];
    int n = sweep_shapes(1234, shapes), ok = 1;
    char what[160];
    for (int i = 0; i < n; i++) {
        int M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
        SgemmPlan p = plan(&m, M, N, K, -0.5f);
        double floor_us = (double)M * N * K / (m.sms * m.fma_per_us);
        ok &= p.rest.tile >= 0 && m.occupancy[p.rest.tile] > 0 && p.rest.splits >= 1 &&
              p.rest.splits <= SGEMM_MAX_SPLITS && p.us > floor_us && isfinite(p.us) &&
              p.top_rows >= 0 && p.top_rows < M &&
              (!p.rest.streamk || (m.streamk_occupancy[p.rest.tile] > 0 && p.rest.splits == 1));
        ok &= strlen(sgemm_model_describe(&m, &p, what, sizeof what)) > 0;
    }
    expect(ok, "05 model: every sweep shape gets a plan that can run, slower than the peak");
}

int main(void)
{
    test_sweep_shapes();
    test_block_times();
    test_choices();
    test_every_sweep_shape();
    return failures ? 1 : 0;
}
