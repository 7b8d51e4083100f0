/* Chapter 05's stage-ring bookkeeping (05_matmul_tiled/tensor_cores/pingpong.h), played
 * through on the host: a model of mbarriers (phases, parity waits), one producer that loads
 * k-slices into the ring, copies that land in any order, and the consumers of step 12 (one
 * consumer walking every tile) or of step 13 (two warpgroups taking alternate tiles, with the
 * turn handshake). Random interleavings of their next steps; each run must end with every
 * slice read exactly once, by the right warpgroup, after it landed and before the producer
 * refilled its slot, and never deadlock. A ping-pong without the handshake must be caught
 * (the parity waits then pass on an old phase). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "05_matmul_tiled/tensor_cores/pingpong.h"

static int failures = 0;

static void expect(int ok, const char *what)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    failures += !ok;
}

/* An mbarrier: completed phases, arrivals of the current phase, arrivals per phase. */
typedef struct {
    int completed, pending, count;
} Bar;

static void bar_arrive(Bar *b)
{
    if (++b->pending == b->count) b->completed++, b->pending = 0;
}

/* try_wait.parity: passes when the phase before the current one has parity p. */
static int bar_passes(const Bar *b, unsigned p) { return ((unsigned)b->completed & 1u) != p; }

#define MAX_STAGES 8
#define MAX_SLICES 4096

typedef struct {
    int stages, k_count, tiles, pingpong, handshake;
    Bar full[MAX_STAGES], empty[MAX_STAGES], turn[2];
    int content[MAX_STAGES]; /* the slice a slot holds once landed, -1 while loading */
    int loads[MAX_STAGES];   /* uses loaded into each slot */
    int released[MAX_STAGES];
    int inflight[MAX_STAGES]; /* slice on its way into each slot, or -1 */
    int reader[MAX_SLICES];   /* which consumer read each slice, -1 if none */
    /* the producer */
    int p_it;
    /* consumers: next tile, next slice in it, whether its turn wait is done, the slot
     * still being read (released after the next slice's issue), and done */
    int c_tile[2], c_kt[2], c_turned[2], c_prev[2], c_done[2];
    int error;
} Model;

static int total_slices(const Model *m) { return m->tiles * m->k_count; }

static void model_init(Model *m, int stages, int k_count, int tiles, int pingpong, int handshake)
{
    memset(m, 0, sizeof *m);
    m->stages = stages, m->k_count = k_count, m->tiles = tiles;
    m->pingpong = pingpong, m->handshake = handshake;
    for (int s = 0; s < stages; s++) {
        m->full[s].count = 1;
        m->empty[s].count = 1;
        m->content[s] = -1;
        m->inflight[s] = -1;
    }
    m->turn[0].count = m->turn[1].count = 1;
    for (int i = 0; i < MAX_SLICES; i++) m->reader[i] = -1;
    for (int w = 0; w < 2; w++) {
        m->c_tile[w] = pingpong ? w : 0;
        m->c_prev[w] = -1;
        m->c_done[w] = pingpong ? w >= tiles : w == 1;
    }
}

/* The producer's next step: wait for the slot to be free, then issue the copy. */
static int producer_step(Model *m)
{
    int it = m->p_it;
    if (it >= total_slices(m)) return 0;
    int s = it % m->stages;
    if (!bar_passes(&m->empty[s], tc_empty_parity(it, m->stages))) return 0;
    if (m->released[s] != m->loads[s]) m->error = 1; /* would overwrite a slot still read */
    if (m->inflight[s] >= 0) m->error = 1;
    m->loads[s]++;
    m->content[s] = -1;
    m->inflight[s] = it;
    m->p_it++;
    return 1;
}

/* The copy into slot s lands: the slot holds its slice and full[s] completes a phase. */
static int land_step(Model *m, int s)
{
    if (m->inflight[s] < 0) return 0;
    m->content[s] = m->inflight[s];
    m->inflight[s] = -1;
    bar_arrive(&m->full[s]);
    return 1;
}

/* Consumer w's next step: the turn wait before a tile, a slice's wait and issue (reading the
 * slot) with the release of the slice before, or the last release of a tile. */
static int consumer_step(Model *m, int w)
{
    if (m->c_done[w]) return 0;
    int i = m->c_tile[w], kt = m->c_kt[w];
    if (kt == m->k_count) { /* wait_group 0, release the last slot, next tile */
        bar_arrive(&m->empty[m->c_prev[w]]);
        m->released[m->c_prev[w]]++;
        m->c_prev[w] = -1;
        m->c_kt[w] = 0;
        m->c_turned[w] = 0;
        m->c_tile[w] += m->pingpong ? 2 : 1;
        if (m->c_tile[w] >= m->tiles) m->c_done[w] = 1;
        return 1;
    }
    if (m->pingpong && m->handshake && i > 0 && !m->c_turned[w]) {
        if (!bar_passes(&m->turn[w], tc_turn_parity(i))) return 0;
        m->c_turned[w] = 1;
        return 1;
    }
    int it = i * m->k_count + kt, s = it % m->stages;
    if (!bar_passes(&m->full[s], tc_full_parity(it, m->stages))) return 0;
    if (m->content[s] != it) m->error = 1; /* the wait passed on another use's phase */
    if (it < MAX_SLICES) {
        if (m->reader[it] >= 0) m->error = 1;
        m->reader[it] = w;
    }
    if (m->pingpong && kt == m->k_count - 1) bar_arrive(&m->turn[1 - w]);
    if (m->c_prev[w] >= 0) { /* wait_group 1: the slice before is read */
        bar_arrive(&m->empty[m->c_prev[w]]);
        m->released[m->c_prev[w]]++;
    }
    m->c_prev[w] = s;
    m->c_kt[w]++;
    return 1;
}

/* One random interleaving to the end. Returns 0 if it ran through with every check right,
 * 1 on a protocol error, 2 on a deadlock. */
static int run(Model *m, unsigned *seed)
{
    for (;;) {
        int moved = 0;
        for (int tries = 0; tries < 64 && !moved; tries++) {
            *seed = *seed * 1103515245u + 12345u;
            int pick = (int)((*seed >> 16) % (unsigned)(3 + m->stages));
            if (pick == 0)
                moved = producer_step(m);
            else if (pick <= 2)
                moved = consumer_step(m, pick - 1);
            else
                moved = land_step(m, pick - 3);
        }
        if (!moved) { /* each of them in turn, so a stall is a real one */
            moved = producer_step(m) || consumer_step(m, 0) || consumer_step(m, 1);
            for (int s = 0; s < m->stages && !moved; s++) moved = land_step(m, s);
        }
        if (m->error) return 1;
        if (!moved) break;
    }
    if (!m->c_done[0] || !m->c_done[1] || m->p_it != total_slices(m)) return 2;
    for (int it = 0; it < total_slices(m) && it < MAX_SLICES; it++) {
        int want = m->pingpong ? (it / m->k_count) % 2 : 0;
        if (m->reader[it] != want) return 1;
    }
    return 0;
}

/* Every ring depth, k-slice count and tile count below, many interleavings each. */
static int sweep(int pingpong, int handshake, int *deadlocks)
{
    static const int stages[] = {2, 4, 6};
    static const int ks[] = {1, 2, 3, 4, 5, 6, 7, 13};
    static const int tiles[] = {1, 2, 3, 4, 5, 8};
    int errors = 0;
    unsigned seed = 12345u;
    *deadlocks = 0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 8; b++)
            for (int c = 0; c < 6; c++)
                for (int r = 0; r < 200; r++) {
                    Model m;
                    model_init(&m, stages[a], ks[b], tiles[c], pingpong, handshake);
                    int rc = run(&m, &seed);
                    errors += rc == 1;
                    *deadlocks += rc == 2;
                }
    return errors;
}

int main(void)
{
    int dead;
    int err = sweep(0, 0, &dead);
    expect(err == 0 && dead == 0,
           "05 stage ring, one consumer walking every tile (step 12): every slice read once, "
           "after it landed, before its slot was refilled; no deadlock");
    err = sweep(1, 1, &dead);
    expect(err == 0 && dead == 0,
           "05 stage ring, two warpgroups on alternate tiles with the turn handshake (step 13): "
           "every slice read once by its warpgroup, after it landed, before its slot was "
           "refilled; no deadlock");
    err = sweep(1, 0, &dead);
    expect(err > 0, "05 stage ring: without the turn handshake the model catches a parity wait "
                    "passing on an old phase");

    int ok = 1;
    for (int k = 1; k < 300; k++)
        for (int ahead = 0; ahead < 40; ahead++) {
            int p = tc_prefetch_slice(k, ahead);
            ok &= p >= 0 && p < k && (k - 1 <= ahead ? p == 0 : p == k - 1 - ahead);
        }
    expect(ok, "05 tc_prefetch_slice: inside the tile, `ahead` slices before its last");

    ok = 1;
    for (int i = 1; i < 100; i++) /* tile i waits for the arrival of tile i - 1 */
        ok &= tc_turn_parity(i) == (unsigned)(((i - 1) / 2) % 2);
    expect(ok, "05 tc_turn_parity: tile i waits for phase (i - 1) / 2");
    return failures ? 1 : 0;
}
