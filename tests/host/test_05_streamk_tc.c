/* Chapter 05's stream-K deal of step 17 (05_matmul_tiled/tensor_cores/streamk.h), played on
 * the host for many products and block counts with at least as many tiles as blocks: every
 * (tile, slice) pair is owned by exactly one block; no piece is the middle of a tile; a tail
 * is only ever a block's first piece and a head its last; and block b's head is exactly the
 * rest of block b + 1's tail (the kernel's fix-up reads b + 1's slot and nothing else). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "05_matmul_tiled/tensor_cores/streamk.h"

static int failures = 0;

static void expect(int ok, const char *what)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    failures += !ok;
}

/* One deal: 0 if every rule holds, else the first rule broken (printed). */
static int deal_ok(int tiles, int k_count, int G)
{
    long long total = (long long)tiles * k_count;
    int *owner = (int *)calloc((size_t)total, sizeof(int));
    int ok = 1;
    for (int b = 0; b < G && ok; b++) {
        int start, end, first = 1;
        tc_streamk_run(total, b, G, &start, &end);
        for (int s = start; s < end && ok;) {
            int tile, k0, k1;
            tc_streamk_piece(s, end, k_count, &tile, &k0, &k1);
            for (int k = k0; k < k1; k++) owner[(long long)tile * k_count + k]++;
            int last = s + (k1 - k0) == end;
            if (k0 > 0 && k1 < k_count) ok = 0, printf("  a middle piece: block %d\n", b);
            if (k0 > 0 && !first) ok = 0, printf("  a tail not first: block %d\n", b);
            if (k0 == 0 && k1 < k_count) {
                if (!last) ok = 0, printf("  a head not last: block %d\n", b);
                int ns, ne, nt, n0, n1;
                tc_streamk_run(total, b + 1, G, &ns, &ne);
                tc_streamk_piece(ns, ne, k_count, &nt, &n0, &n1);
                if (b + 1 >= G || nt != tile || n0 != k1 || n1 != k_count)
                    ok = 0, printf("  block %d's head is not block %d's tail\n", b, b + 1);
            }
            first = 0;
            s += k1 - k0;
        }
    }
    for (long long i = 0; i < total && ok; i++)
        if (owner[i] != 1) ok = 0, printf("  pair %lld owned %d times\n", i, owner[i]);
    free(owner);
    return ok;
}

int main(void)
{
    const int blocks[] = {1, 2, 3, 7, 66, 114, 132, 144};
    int all = 1, deals = 0;
    srand(17);
    for (int i = 0; i < 3000 && all; i++) {
        int G = blocks[rand() % 8];
        int tiles = G + rand() % (i % 2 ? 3 * G + 6 : 2000);
        int k_count = 1 + rand() % 300;
        all = deal_ok(tiles, k_count, G);
        deals++;
    }
    char what[160];
    snprintf(what, sizeof what,
             "05 stream-K deal: %d random deals, every pair once, pieces pair up across "
             "neighbouring blocks",
             deals);
    expect(all, what);
    /* the chapter's squares on 132 SMs, 128x256 tiles of 64-value slices */
    expect(deal_ok(32 * 16, 64, 132), "05 stream-K deal: 4096^3 on 132 SMs");
    expect(deal_ok(64 * 32, 128, 132), "05 stream-K deal: 8192^3 on 132 SMs");
    /* the largest product the driver accepts, 65536 a side: the runs' ends stay in an int */
    long long most = 512LL * 256 * 1024;
    int start, end, ends_ok = 1;
    for (int b = 0; b < 132; b++) {
        tc_streamk_run(most, b, 132, &start, &end);
        ends_ok &= start >= 0 && end > start && end == (int)(most * (b + 1) / 132);
    }
    expect(ends_ok && end == most, "05 stream-K deal: 65536^3's runs fit an int");
    return failures ? 1 : 0;
}
