/* Chapter 05's portable tensor-core layouts (05_matmul_tiled/tensor_cores/swizzle.h),
 * checked on the host: the tile offsets are a bijection, the ldmatrix reads of the plain tile
 * conflict 8-way and those of the swizzled tile not at all (the numbers
 * tensor_cores/02_mma.cuh states), the copies into either tile are conflict-free, ldmatrix at
 * the kernels' addresses delivers exactly the mma.sync fragments of the PTX ISA tables
 * (m16n8k16 bf16 and m16n8k8 tf32), and the grouped block order visits every tile once. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "05_matmul_tiled/tensor_cores/swizzle.h"

#define ROWS 256 /* the largest tile a kernel uses: 256 rows of Bt */

static int failures = 0;

static void expect(int ok, const char *what)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    failures += !ok;
}

/* Every (row, chunk) of a ROWS-row tile lands on its own 16-byte slot inside its own row. */
static int is_bijection(int swz)
{
    static unsigned char seen[ROWS * TC_TILE_CHUNKS];
    memset(seen, 0, sizeof seen);
    for (unsigned r = 0; r < ROWS; r++)
        for (unsigned c = 0; c < TC_TILE_CHUNKS; c++) {
            unsigned off = tc_tile_offset(r, c, swz);
            if (off % 16 || off / TC_TILE_ROW_BYTES != r || seen[off / 16]++) return 0;
        }
    return 1;
}

/* offset(r + 8q, c) = offset(r, c) + 1024 q: what lets a kernel add whole 8-row groups. */
static int repeats_every_8_rows(int swz)
{
    for (unsigned r = 0; r < ROWS; r++)
        for (unsigned c = 0; c < TC_TILE_CHUNKS; c++)
            if (tc_tile_offset(r, c, swz) !=
                tc_tile_offset(r % 8, c, swz) + r / 8 * 8 * TC_TILE_ROW_BYTES)
                return 0;
    return 1;
}

/* Shared-memory wavefronts for n 16-byte accesses served together (one phase): 32 banks of
 * 4 bytes; a bank delivers one 4-byte word a wavefront, the same word to any number of
 * threads. The answer is the largest number of different words one bank must deliver. */
static int wavefronts(const unsigned *addr, int n)
{
    unsigned words[32][32];
    int count[32] = {0}, most = 0;
    for (int i = 0; i < n; i++)
        for (unsigned w = addr[i] / 4; w < addr[i] / 4 + 4; w++) {
            int b = w % 32, dup = 0;
            for (int j = 0; j < count[b]; j++) dup |= words[b][j] == w;
            if (!dup) words[b][count[b]++] = w;
            if (count[b] > most) most = count[b];
        }
    return most;
}

/* The 32 lane addresses of the kernels' ldmatrix.x4 (tc_warp_slice): operand A's m-tile or
 * operand B's pair of n-tiles starting at tile row base (a multiple of 16), k-step s. */
static void ldsm_addresses(int b_operand, unsigned base, unsigned s, int swz, unsigned *addr)
{
    for (unsigned l = 0; l < 32; l++) {
        unsigned row = b_operand ? tc_ldsm_b_row(l) : tc_ldsm_a_row(l);
        unsigned chunk = b_operand ? tc_ldsm_b_chunk(l, s) : tc_ldsm_a_chunk(l, s);
        addr[l] = base * TC_TILE_ROW_BYTES + tc_tile_offset(row, chunk, swz);
    }
}

/* The worst phase (8 lanes) over every ldmatrix.x4 of a 64-row warp tile, and whether the
 * 8 rows of every phase sit in 8 different 16-byte bank groups. */
static int ldsm_worst_phase(int swz, int *distinct_groups)
{
    int worst = 0;
    *distinct_groups = 1;
    for (int op = 0; op < 2; op++)
        for (unsigned base = 0; base < 64; base += 16)
            for (unsigned s = 0; s < 4; s++) {
                unsigned addr[32];
                ldsm_addresses(op, base, s, swz, addr);
                for (int ph = 0; ph < 4; ph++) {
                    int w = wavefronts(addr + 8 * ph, 8), groups = 0;
                    for (int l = 0; l < 8; l++) groups |= 1 << (addr[8 * ph + l] / 16 % 8);
                    if (w > worst) worst = w;
                    *distinct_groups &= groups == 0xff;
                }
            }
    return worst;
}

/* The copies (tc_copy_tile): thread t writes chunk t % 8 of rows t / 8 + i * threads / 8;
 * a 16-byte store of a warp is served 8 threads at a time. The worst such phase. */
static int copy_worst_phase(int threads, int swz)
{
    int worst = 0;
    for (int i = 0; i < ROWS / (threads / 8); i++)
        for (int t0 = 0; t0 < threads; t0 += 8) {
            unsigned addr[8];
            for (int t = t0; t < t0 + 8; t++)
                addr[t - t0] = tc_tile_offset(t / 8 + i * (threads / 8), t % 8, swz);
            int w = wavefronts(addr, 8);
            if (w > worst) worst = w;
        }
    return worst;
}

/* A tile whose elements say where they are: element k of tile row r holds r * per_row + k
 * (per_row = 64 bf16 or 32 tf32 elements, as 16- or 32-bit values), stored where the copy
 * puts it. */
static unsigned char tile[ROWS * TC_TILE_ROW_BYTES];

static void fill_tile(int swz, int elem_bytes)
{
    unsigned per_row = TC_TILE_ROW_BYTES / elem_bytes;
    for (unsigned r = 0; r < ROWS; r++)
        for (unsigned k = 0; k < per_row; k++) {
            unsigned byte = k * elem_bytes, v = r * per_row + k;
            /* the low elem_bytes of v (little-endian) */
            memcpy(tile + tc_tile_offset(r, byte / 16, swz) + byte % 16, &v, elem_bytes);
        }
}

/* ldmatrix.x4: register j of lane l = the 4 bytes of row l / 4 of matrix j, from byte
 * 4 (l % 4); matrix j's rows are at the addresses of lanes 8j .. 8j+7. */
static uint32_t ldsm_reg(const unsigned *addr, unsigned lane, unsigned j)
{
    uint32_t v;
    memcpy(&v, tile + addr[8 * j + lane / 4] + 4 * (lane % 4), 4);
    return v;
}

/* The value a fragment element must hold: operand row `row` (m of A, n of B) of the warp
 * tile at `base`, element k of k-step s. */
static unsigned want(int tf32, unsigned base, unsigned row, unsigned s, unsigned k)
{
    return tf32 ? (base + row) * 32 + 8 * s + k : (base + row) * 64 + 16 * s + k;
}

/* Element e (0 or 1 for bf16, only 0 for tf32) of the register that holds fragment element
 * `idx`, checked against the PTX ISA's tables, lane by lane. */
static int check_fragments(int tf32, int swz)
{
    fill_tile(swz, tf32 ? 4 : 2);
    int ok = 1;
    for (unsigned base = 0; base < 64; base += 16)
        for (unsigned s = 0; s < 4; s++) {
            unsigned a_addr[32], b_addr[32];
            ldsm_addresses(0, base, s, swz, a_addr);
            ldsm_addresses(1, base, s, swz, b_addr);
            for (unsigned l = 0; l < 32; l++) {
                unsigned g = l / 4, q = l % 4;
                for (unsigned j = 0; j < 4; j++) {
                    uint32_t a = ldsm_reg(a_addr, l, j), b = ldsm_reg(b_addr, l, j);
                    unsigned nt = j / 2, breg = j % 2; /* n-tile of the pair, its b register */
                    if (tf32) {
                        /* a_j: m = g + 8 (j % 2), k = q + 4 (j / 2); b_i: k = q + 4 i, n = g */
                        ok &= a == want(1, base, g + 8 * (j % 2), s, q + 4 * (j / 2));
                        ok &= b == want(1, base, 8 * nt + g, s, q + 4 * breg);
                    } else {
                        /* register j = a_2j, a_2j+1: m = g + 8 (j % 2), k = 2q + 8 (j / 2) + 0, 1;
                         * b register i = b_2i, b_2i+1: k = 2q + 8 i + 0, 1, n = g */
                        for (unsigned h = 0; h < 2; h++) {
                            ok &= (a >> 16 * h & 0xffff) ==
                                  want(0, base, g + 8 * (j % 2), s, 2 * q + 8 * (j / 2) + h);
                            ok &= (b >> 16 * h & 0xffff) ==
                                  want(0, base, 8 * nt + g, s, 2 * q + 8 * breg + h);
                        }
                    }
                }
            }
        }
    return ok;
}

/* Every tile of a tiles_m x tiles_n grid exactly once. */
static int order_visits_all(int tiles_m, int tiles_n)
{
    static unsigned char seen[64 * 128];
    memset(seen, 0, sizeof seen);
    for (int t = 0; t < tiles_m * tiles_n; t++) {
        int tm, tn;
        tc_tile_grouped(t, tiles_m, tiles_n, &tm, &tn);
        if (tm < 0 || tm >= tiles_m || tn < 0 || tn >= tiles_n || seen[tm * tiles_n + tn]++)
            return 0;
    }
    return 1;
}

int main(void)
{
    char what[200];
    expect(is_bijection(0) && is_bijection(1),
           "05 tile offsets: a bijection onto 16-byte slots of the same row, plain and swizzled");
    expect(repeats_every_8_rows(0) && repeats_every_8_rows(1),
           "05 tile offsets repeat every 8 rows (1024 bytes)");

    int plain_groups, swz_groups;
    int plain = ldsm_worst_phase(0, &plain_groups), swz = ldsm_worst_phase(1, &swz_groups);
    snprintf(what, sizeof what,
             "05 ldmatrix on the plain tile: %d wavefronts per 8-row phase, %d per ldmatrix.x4 "
             "(%d conflicts), as tensor_cores/02_mma.cuh states (8, 32, 28)",
             plain, 4 * plain, 4 * plain - 4);
    expect(plain == 8 && !plain_groups, what);
    snprintf(what, sizeof what,
             "05 ldmatrix on the swizzled tile: the 8 rows of every phase in 8 bank groups, "
             "%d wavefront per phase, %d per ldmatrix.x4",
             swz, 4 * swz);
    expect(swz == 1 && swz_groups, what);
    expect(
        copy_worst_phase(128, 0) == 1 && copy_worst_phase(128, 1) == 1 &&
            copy_worst_phase(256, 0) == 1 && copy_worst_phase(256, 1) == 1,
        "05 tile copies: 1 wavefront per 8-thread phase, plain and swizzled, 128 and 256 threads");

    expect(check_fragments(0, 0) && check_fragments(0, 1),
           "05 ldmatrix at the kernels' addresses gives the m16n8k16 bf16 A and B fragments "
           "(plain and swizzled)");
    expect(check_fragments(1, 0) && check_fragments(1, 1),
           "05 ldmatrix at the kernels' addresses gives the m16n8k8 tf32 A and B fragments "
           "(plain and swizzled)");

    int order_ok = 1;
    const int shapes[][2] = {{1, 1},  {1, 7},   {7, 1},    {8, 8},  {9, 3},
                             {17, 5}, {3, 100}, {64, 128}, {33, 33}};
    for (unsigned i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        order_ok &= order_visits_all(shapes[i][0], shapes[i][1]);
    expect(order_ok, "05 grouped block order visits every tile exactly once");
    return failures ? 1 : 0;
}
