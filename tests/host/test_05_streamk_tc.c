/* Chapter 05's stream-K deal of step 17 (05_matmul_tiled/tensor_cores/streamk.h), played on
 * the host for many products and block counts with at least as many tiles as blocks: every
 * (tile, slice) pair is owned by exactly one block; no piece is the middle of a tile; a tail
 * is only ever a block's first piece and a head its last; block b's head is exactly the rest
 * of block b + 1's tail (the kernel's fix-up reads b + 1's slot and nothing else); every
 * block has the same number of slices to within one; and at any piece number the blocks'
 * tiles lie within two rounds of each other (neighbouring tiles share the L2). */
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

/* A tail: a tile's last slices, from k0 > 0; a head: its first slices, short of k_count. */
static int is_tail(TcPiece pc) { return pc.k0 > 0; }
static int is_head(TcPiece pc, int k_count) { return pc.k0 == 0 && pc.k1 < k_count; }

/* One deal: 1 if every rule holds, else 0 (the first rule broken printed). */
static int deal_ok(int tiles, int k_count, int G, int stagger)
{
    TcStreamk p = tc_streamk_plan(tiles, G, k_count, stagger);
    long long total = (long long)tiles * k_count, least = total, most = 0;
    int *owner = (int *)calloc((size_t)total, sizeof(int));
    int ok = 1;
    for (int b = 0; b < G && ok; b++) {
        int n = tc_streamk_pieces(&p, b);
        long long slices = 0;
        for (int i = 0; i < n && ok; i++) {
            TcPiece pc = tc_streamk_piece(&p, b, i);
            if (pc.tile < 0 || pc.tile >= tiles || pc.k0 < 0 || pc.k1 > k_count || pc.k0 >= pc.k1) {
                ok = 0, printf("  block %d piece %d out of range\n", b, i);
                break;
            }
            for (int k = pc.k0; k < pc.k1; k++) owner[(long long)pc.tile * k_count + k]++;
            slices += pc.k1 - pc.k0;
            if (pc.k0 > 0 && pc.k1 < k_count) ok = 0, printf("  a middle piece: block %d\n", b);
            if (is_tail(pc) && i != 0) ok = 0, printf("  a tail not first: block %d\n", b);
            if (is_head(pc, k_count)) {
                /* the head ends the run: the block's last piece, or the last before its rounds */
                int last = stagger ? n - 1 : n - 1 - p.dp_tiles / G;
                if (i != last) ok = 0, printf("  a head not last in its run: block %d\n", b);
                TcPiece next = b + 1 < G ? tc_streamk_piece(&p, b + 1, 0) : pc;
                if (b + 1 >= G || next.tile != pc.tile || next.k0 != pc.k1 || !is_tail(next))
                    ok = 0, printf("  block %d's head is not block %d's tail\n", b, b + 1);
            }
        }
        least = slices < least ? slices : least;
        most = slices > most ? slices : most;
    }
    for (long long i = 0; i < total && ok; i++)
        if (owner[i] != 1) ok = 0, printf("  pair %lld owned %d times\n", i, owner[i]);
    if (ok && most - least > 1) ok = 0, printf("  blocks' slices from %lld to %lld\n", least, most);
    free(owner);
    return ok;
}

/* At all but 1% of slice times (each block one slice a step; the runs' ends differ by one
 * slice), the tiles the blocks work on lie within `span` tile numbers. */
static int spread_ok(int tiles, int k_count, int G, int span)
{
    TcStreamk p = tc_streamk_plan(tiles, G, k_count, 0);
    long long steps = (long long)tiles * k_count / G;
    int *at = (int *)malloc((size_t)steps * G * sizeof(int));
    long long wide = 0;
    for (int b = 0; b < G; b++) {
        long long t = 0;
        for (int i = 0; i < tc_streamk_pieces(&p, b); i++) {
            TcPiece pc = tc_streamk_piece(&p, b, i);
            for (int k = pc.k0; k < pc.k1; k++, t++)
                if (t < steps) at[t * G + b] = pc.tile;
        }
    }
    for (long long t = 0; t < steps; t++) {
        int lo = tiles, hi = -1;
        for (int b = 0; b < G; b++) {
            lo = at[t * G + b] < lo ? at[t * G + b] : lo;
            hi = at[t * G + b] > hi ? at[t * G + b] : hi;
        }
        wide += hi - lo >= span;
    }
    free(at);
    if (wide * 100 > steps) printf("  %lld of %lld slice times spread wider\n", wide, steps);
    return wide * 100 <= steps;
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
        all = deal_ok(tiles, k_count, G, i % 3 == 0);
        deals++;
    }
    char what[160];
    snprintf(what, sizeof what,
             "05 stream-K deal: %d random deals, every pair once, pieces pair up across "
             "neighbouring blocks, slices equal to within one",
             deals);
    expect(all, what);
    /* the chapter's squares on 132 SMs, 128x256 tiles of 64-value slices */
    for (int stagger = 0; stagger < 2; stagger++) {
        expect(deal_ok(32 * 16, 64, 132, stagger), "05 stream-K deal: 4096^3 on 132 SMs");
        expect(deal_ok(64 * 32, 128, 132, stagger), "05 stream-K deal: 8192^3 on 132 SMs");
    }
    expect(spread_ok(64 * 32, 128, 132, 3 * 132) && spread_ok(32 * 16, 64, 132, 3 * 132),
           "05 stream-K deal: at 4096^3 and 8192^3 (stream-K tiles first) the blocks' tiles "
           "stay within three rounds");
    /* 8192^3: block b's tail is 0.515 b of a tile, taken modulo one tile */
    TcStreamk p = tc_streamk_plan(64 * 32, 132, 128, 1);
    int stagger = p.dp_tiles == 14 * 132;
    for (int b = 1; b < 132; b++) {
        TcPiece pc = tc_streamk_piece(&p, b, 0);
        long long q0 = p.sk_pairs * b / 132;
        stagger &= q0 % 128 == 0 ? !is_tail(pc) : pc.k0 == (int)(q0 % 128);
    }
    expect(stagger, "05 stream-K deal: 8192^3 deals the last 200 tiles, the tails staggered");
    /* the largest product the driver accepts, 65536 a side: every piece's slices in an int */
    expect(deal_ok(512 * 256, 16, 132, 0) && deal_ok(512 * 256, 16, 132, 1),
           "05 stream-K deal: 65536 x 65536 tiles on 132 SMs");
    TcStreamk big = tc_streamk_plan(512 * 256, 132, 1024, 1);
    TcPiece last = tc_streamk_piece(&big, 131, tc_streamk_pieces(&big, 131) - 1);
    expect(last.tile == 512 * 256 - 1 && last.k1 == 1024,
           "05 stream-K deal: 65536^3's last piece is the last tile's last slices");
    return failures ? 1 : 0;
}
