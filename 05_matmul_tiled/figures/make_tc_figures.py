#!/usr/bin/env python3
"""Draws the figures of the last two tensor-core parts into this folder
(python3 make_tc_figures.py; make_figures.py draws the rest of the chapter's).

tensor_cores/any_shape.md:
  tma_stride.png   rows of a bf16 matrix with K = 4095 in memory: row starts that are not
                   16-byte aligned, which no tensor map can describe, and the padded copy
                   with rows of 4096 (the extra column zeros)
  tc_rounds.png    the tiles of C dealt to 132 SMs, round after round, for 4096 x 4096 and
                   4097 x 4097 in 128x256 and in 128x128 tiles: the ragged last round and the
                   edge tiles that hold less than a full tile of C
tensor_cores/skinny.md:
  skinny_copy.png  which floats each of a warp's four 4-byte cp.async reads, for its 4 rows
                   of 32 floats: dealt by 16-byte chunks (every instruction touches all 4
                   rows) and row by row (each touches one), and the bytes of the long operand
                   of 33 x 7391 x 4502 in TF32 that each plan moves through DRAM
  skinny_skip.png  a 128x128 block of mma_skinny on C of 33 rows and on C of 1 column: each
                   warp's 16-row m-tiles and 8-column n-tiles, those reaching into C issued,
                   the rest left out
tensor_cores/past_cublas.md:
  pingpong.png     two consumer warpgroups in time: sharing each tile (the persistent
                   kernel: both reach the epilogue together) and taking turns (ping-pong:
                   one's epilogue under the other's main loop)
  e4m3.png         the bits of fp32, bf16, TF32 and e4m3, and every positive e4m3 value on a
                   log scale: subnormals, 8 values a binade, the largest finite 448
tensor_cores/wide_tiles.md:
  tile_cost.png    the two costs of a tile: the bytes of A and Bt a multiply-add asks of the
                   L2 for each tile shape (alone, and with Bt shared by a pair of blocks), and
                   one SM's time, tile after tile, at K = 8192 and at K = 32768: main loops as
                   long as K, the epilogue and the change of tile the same length at both
  streamk_deal.png 21 tiles of 8 k-slices on 6 blocks, dealt four ways (step 7's rounds, one
                   run a block over all tiles, and step 17's two orders): each block's pieces
                   in time, and the tiles in work at one moment

Every number drawn is a format constant, a hardware constant (132 SMs) or a tile size of the
chapter's code; nothing here is measured.
"""
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the chapter's palette and drawing helpers, shared with the other figures
from make_figures import BLUE, GREEN, GREY, LIGHT, ORANGE, PURPLE, RED, box, save  # noqa: E402,F401

SMS = 132


def tma_stride():
    """Rows of K = 4095 bf16 (8190 bytes) against the 16-byte grid, and the padded copy."""
    fig, axes = plt.subplots(2, 1, figsize=(12, 3.6))
    chunk = 16  # bytes a grid cell
    for ax, (k, title) in zip(axes, [
            (4095, "A as it is: K = 4095 bf16, a row is 8190 bytes; row r starts at 8190 r, "
                   "a multiple of 16 bytes only every 8th row"),
            (4096, "the padded copy: rows of 4096 (column 4095 zeros), 8192 bytes; every row "
                   "starts on a 16-byte boundary")]):
        row_bytes = 2 * k
        rows = 5
        width = 18  # 16-byte cells drawn around each row start
        for r in range(rows):
            start = r * row_bytes
            cell0 = start // chunk
            # where this row starts inside its cell
            off = (start - (cell0 - 2) * chunk) / chunk
            aligned = start % 16 == 0
            col = GREEN if aligned else RED
            # the previous row's tail, then this row
            box(ax, 0, rows - 1 - r, off, 0.8, fc=LIGHT[GREY], ec="none")
            box(ax, off, rows - 1 - r, width - off, 0.8, fc=LIGHT[col], ec="none")
            ax.plot([off, off], [rows - 1 - r - 0.05, rows - 1 - r + 0.85], color=col, lw=2)
            ax.text(-0.3, rows - 1 - r + 0.4, f"row {r}: byte {start:,}", ha="right",
                    va="center", fontsize=7)
            ax.text(width + 0.3, rows - 1 - r + 0.4,
                    "16-byte aligned: TMA can start a box here" if aligned else
                    f"{start % 16} bytes past a 16-byte boundary", fontsize=7, va="center",
                    color=col)
        for c in range(width + 1):
            ax.plot([c, c], [-0.1, rows - 0.1], color=LIGHT[GREY], lw=0.3)
        ax.set_xlim(-7, width + 12)
        ax.set_ylim(-0.3, rows + 0.1)
        ax.axis("off")
        ax.set_title(title, fontsize=8, loc="left")
    fig.text(0.01, -0.02, "Each cell is 16 bytes of memory around a row's start (grey: the "
             "bytes before the row). A tensor map has one row stride for the whole matrix, and "
             "cuTensorMapEncodeTiled accepts only strides that are multiples of 16 bytes.",
             fontsize=7)
    fig.tight_layout()
    save(fig, "tma_stride.png")


def tile_grid(n, bm, bn):
    """[(is_edge)] of the tiles of an n x n C in bm x bn tiles, row-major."""
    tm, tn = -(-n // bm), -(-n // bn)
    out = []
    for i in range(tm):
        for j in range(tn):
            rows = min(bm, n - i * bm)
            cols = min(bn, n - j * bn)
            out.append(rows * cols / (bm * bn))
    return tm, tn, out


def tc_rounds():
    """Tiles dealt to 132 SMs in rounds; time in units of one 128x256 tile's work."""
    fig, axes = plt.subplots(2, 2, figsize=(12, 5.6), sharey=True)
    cases = [(4096, 128, 256), (4097, 128, 256), (4096, 128, 128), (4097, 128, 128)]
    for ax, (n, bm, bn) in zip(axes.T.flat, cases):
        tm, tn, tiles = tile_grid(n, bm, bn)
        h = bm * bn / (128 * 256)  # a tile's work, in 128x256 tiles
        rounds = -(-len(tiles) // SMS)
        for t, useful in enumerate(tiles):
            sm, r = t % SMS, t // SMS
            full = useful == 1.0
            ax.add_patch(Rectangle((sm, r * h), 1, h, fc=LIGHT[BLUE] if full else ORANGE,
                                   ec="white", lw=0.25))
        last = len(tiles) - (rounds - 1) * SMS
        busy = len(tiles) / (rounds * SMS)
        useful = n * n / (len(tiles) * bm * bn)
        ax.set_title(f"{n} x {n} in {bm}x{bn} tiles: {tm} x {tn} = {len(tiles)} tiles, "
                     f"{rounds} rounds (the last {last} of {SMS})\nSM time busy "
                     f"{100 * busy:.1f}%, of which C {100 * useful:.1f}%: "
                     f"{100 * busy * useful:.1f}% useful; {rounds * h:g} tile-times of "
                     f"128x256", fontsize=7.5, loc="left")
        ax.set_xlim(0, SMS)
        ax.set_ylim(0, 5.2)
        ax.tick_params(labelsize=7)
    for ax in axes[1]:
        ax.set_xlabel("SM (tiles dealt in order, a block per tile)", fontsize=7)
    for ax in axes[:, 0]:
        ax.set_ylabel("time, in 128x256 tiles' work", fontsize=7)
    fig.text(0.01, -0.02, "Light blue: a full tile. Orange: an edge tile; at 4097 the last "
             "column of tiles holds 1 column of C (of 128 or 256) and the last row 1 row of "
             "128, but each costs a whole tile.\nA 128x128 tile is half the work, so its ragged "
             "last round costs half as much.", fontsize=7)
    fig.tight_layout()
    save(fig, "tc_rounds.png")


# ------------------------------------------------------------------ past cuBLAS

def pingpong():
    fig, axes = plt.subplots(2, 1, figsize=(12, 4.4), sharex=True)
    M, E = 4.0, 1.2  # a 128x256 tile's main loop, and an epilogue, in drawing units
    # the persistent kernel: both consumers on one tile, then both store it
    ax = axes[0]
    t = 0.0
    for i in range(3):
        for y in (1.2, 0.2):
            box(ax, t, y, M, 0.7, fc=LIGHT[BLUE], ec=BLUE, text=f"tile {i}: main loop, "
                "rows " + ("0-63" if y > 1 else "64-127"), fs=6.5)
            box(ax, t + M, y, E, 0.7, fc=LIGHT[ORANGE], ec=ORANGE, text="epilogue", fs=6.5)
        box(ax, t + M, -0.45, E, 0.35, fc=LIGHT[RED], ec="none", text="tensor cores idle",
            fs=6)
        t += M + E
    for y, name in [(1.55, "consumer 1"), (0.55, "consumer 2")]:
        ax.text(-0.2, y, name, ha="right", va="center", fontsize=7)
    ax.set_title("wgmma_persistent: two consumer warpgroups share each 128x256 tile and reach "
                 "its epilogue together (the producer keeps loading the next tile's slices)",
                 fontsize=8, loc="left")
    ax.set_ylim(-0.6, 2.1)
    ax.axis("off")
    # ping-pong: 128x128 tiles, each by one consumer, in turn; a 128x128 tile is half a
    # 128x256 one, and while one warpgroup multiplies it has the SM's tensor cores alone
    ax = axes[1]
    m = M / 2
    starts = [i * m for i in range(6)]
    for i, s in enumerate(starts):
        y = 1.2 if i % 2 == 0 else 0.2
        box(ax, s, y, m, 0.7, fc=LIGHT[GREEN], ec=GREEN, text=f"tile {i}: main loop", fs=6.5)
        box(ax, s + m, y, E, 0.7, fc=LIGHT[ORANGE], ec=ORANGE, text="epilogue", fs=6.5)
        if i > 0:
            ax.annotate("", xy=(s, y + 0.35), xytext=(s, (0.2 if y > 1 else 1.2) + 0.35),
                        arrowprops=dict(arrowstyle="-|>", color=PURPLE, lw=0.9))
    ax.text(starts[1] + 0.1, 2.0, "the turn barrier (arrows): tile i's first wait comes only "
            "after the other warpgroup's last wait on tile i - 1", fontsize=6.5, color=PURPLE)
    ax.text(6 * m + E + 0.3, 1.0, "the plan: the same\nwork, sooner, no idle\ntensor cores",
            fontsize=7, va="center")
    for y, name in [(1.55, "consumer 1"), (0.55, "consumer 2")]:
        ax.text(-0.2, y, name, ha="right", va="center", fontsize=7)
    ax.set_title("wgmma_pingpong: each warpgroup computes a whole 128x128 tile, the two take "
                 "turns; one's epilogue runs under the other's main loop (the prediction: the "
                 "measurement disagreed)", fontsize=8, loc="left")
    ax.set_ylim(-0.6, 2.3)
    ax.set_xlim(-2.2, 3 * (M + E) + 2.5)
    ax.axis("off")
    fig.text(0.01, -0.03, "Per k-slice (64 bf16 of K) a 128x256 tile loads 48 KB from L2 for "
             "2M multiply-adds, a 128x128 tile 32 KB for 1M: a third more L2 traffic for the "
             "same work.\nPer k-step a consumer's m64n256k16 reads 2 KB of A and 8 KB of B from "
             "shared memory; ping-pong's two m64n128k16 read 2 KB of A each and the same 4 KB of "
             "B twice: 12 KB for the same 262,144 multiply-adds.", fontsize=7)
    fig.tight_layout()
    save(fig, "pingpong.png")


def e4m3_values():
    """Every positive finite e4m3 value (bias 7, no infinities, S.1111.111 is NaN)."""
    vals = []
    for e in range(16):
        for m in range(8):
            if e == 15 and m == 7:
                continue  # NaN
            v = (m / 8) * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
            if v > 0:
                vals.append((v, e == 0))
    return vals


def e4m3():
    fig = plt.figure(figsize=(12, 5.0))
    ax = fig.add_axes([0.02, 0.45, 0.96, 0.52])
    formats = [("fp32", 8, 23, "24"), ("TF32 (as the tensor cores read fp32)",
               8, 10, "11 (the low 13 bits of fp32 ignored)"),
               ("bf16", 8, 7, "8"), ("e4m3 (FP8)", 4, 3, "4; exponent bias 7")]
    unit = 0.34
    for row, (name, ebits, mbits, sig) in enumerate(formats):
        y = 3 - row
        x = 0.0
        ax.text(-0.2, y + 0.2, name, ha="right", va="center", fontsize=8)
        box(ax, x, y, unit, 0.4, fc=LIGHT[GREY], ec=GREY, text="s", fs=6)
        x += unit
        box(ax, x, y, ebits * unit, 0.4, fc=LIGHT[BLUE], ec=BLUE, text=f"exponent {ebits}",
            fs=6.5)
        x += ebits * unit
        box(ax, x, y, mbits * unit, 0.4, fc=LIGHT[GREEN], ec=GREEN, text=f"mantissa {mbits}",
            fs=6.5)
        x += mbits * unit
        ax.text(x + 0.2, y + 0.2, f"{1 + ebits + mbits} bits; significant bits: {sig}",
                fontsize=7, va="center")
    ax.set_xlim(-4.5, 14)
    ax.set_ylim(-0.2, 3.6)
    ax.axis("off")
    ax.set_title("Where the bits go", fontsize=9, loc="left")
    lx = fig.add_axes([0.06, 0.1, 0.9, 0.26])
    vals = e4m3_values()
    for v, sub in vals:
        lx.plot([math.log2(v)] * 2, [0, 1], color=ORANGE if sub else BLUE, lw=0.9)
    lx.set_xlim(-9.5, 9.2)
    lx.set_ylim(0, 1.6)
    lx.set_yticks([])
    ticks = list(range(-9, 9))
    lx.set_xticks(ticks)
    lx.set_xticklabels([f"2^{t}" for t in ticks], fontsize=6.5)
    lx.annotate("448 = 1.75 x 2^8, the largest\n(S.1111.111 is NaN; no infinities)",
                xy=(math.log2(448), 1.0), xytext=(5.3, 1.25), fontsize=6.5,
                arrowprops=dict(arrowstyle="-", color=GREY, lw=0.6))
    lx.annotate("2^-6, the smallest normal", xy=(-6, 1.0), xytext=(-5.6, 1.3), fontsize=6.5,
                arrowprops=dict(arrowstyle="-", color=GREY, lw=0.6))
    lx.annotate("subnormals: 2^-9 .. 7 x 2^-9", xy=(-8, 1.0), xytext=(-9.4, 1.3), fontsize=6.5,
                color=ORANGE)
    lx.annotate("the check's inputs: 256 x [-1, 1), up to 256 = 2^8", xy=(8, 1.0),
                xytext=(0.5, 1.3), fontsize=6.5, color=PURPLE,
                arrowprops=dict(arrowstyle="-", color=PURPLE, lw=0.6))
    lx.set_title(f"All {len(vals)} positive finite e4m3 values (log scale): 8 in every binade, "
                 "so neighbours are up to 12.5% apart and rounding costs up to 6.25%", fontsize=8,
                 loc="left")
    save(fig, "e4m3.png")


def skinny_copy():
    """A warp's 4-byte copies of 4 rows x 32 floats, two ways, and the bytes of three plans."""
    fig = plt.figure(figsize=(13, 4.6))
    grid = fig.add_gridspec(2, 2, width_ratios=[3, 2])
    axes = [fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[:, 1])]
    cols = [BLUE, ORANGE, GREEN, PURPLE]
    for ax, title, inst in [
            (axes[0], "dealt by 16-byte chunks: lane t copies float e of chunk t % 8 of row t / 8;"
                      "\ninstruction e reads 8 floats of each of the 4 rows: 4 lines (8 unaligned)",
             lambda r, k: k % 4),
            (axes[1], "row by row: instruction e, lane l copies float l of row e;\n"
                      "each instruction reads 32 neighbouring floats: 1 line (2 unaligned)",
             lambda r, k: r)]:
        for r in range(4):
            for k in range(32):
                e = inst(r, k)
                box(ax, k, 3 - r, 1, 1, fc=LIGHT[cols[e]], ec="white", lw=0.5)
                if k % 4 == 0:
                    ax.plot([k, k], [3 - r, 4 - r], color=GREY, lw=1.2)
            ax.text(-0.5, 3.5 - r, f"row {r}", ha="right", va="center", fontsize=7)
        ax.set_xlim(-4, 32.5)
        ax.set_ylim(-1.3, 4.1)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(title, fontsize=8)
        for e in range(4):
            box(ax, 2 + 8 * e, -1.2, 1, 0.8, fc=LIGHT[cols[e]], ec="none")
            ax.text(3.4 + 8 * e, -0.8, f"instruction {e}", fontsize=7.5, va="center")
    ax = axes[2]
    mb = 7391 * 4502 * 4 / 1e6  # Bt of 33 x 7391 x 4502 in TF32
    plans = [("padded copy,\nthen wgmma", [("read", mb), ("write", mb), ("read copy", mb)]),
             ("mma_skinny", [("read", mb)])]
    for i, (name, parts) in enumerate(plans):
        x = 0
        for j, (what, v) in enumerate(parts):
            box(ax, x, 1 - i, v, 0.6, fc=LIGHT[[RED, ORANGE, BLUE][j]], ec="black",
                text=f"{what}\n{v:.0f} MB", fs=6.5)
            x += v
        ax.text(-10, 1.3 - i, name, ha="right", va="center", fontsize=7.5)
    ax.set_xlim(-130, 3 * mb + 10)
    ax.set_ylim(-0.6, 2.2)
    ax.axis("off")
    ax.set_title("the long operand (Bt, 7391 x 4502 floats) through DRAM,\n"
                 "33 x 7391 x 4502 in TF32: three passes or one", fontsize=7.5)
    save(fig, "skinny_copy.png")


def skinny_skip():
    """A 128x128 block's four warps and their mma tiles, on C of 33 rows and of 1 column."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 5.4))
    for ax, (rows, cols, title) in zip(axes, [
            (33, 128, "33 x 7391 x 4502: C has 33 rows"),
            (128, 1, "2413 x 1 x 3798: C has 1 column")]):
        for wm in (0, 64):
            for wn in (0, 64):
                mt = min(max(-(-(rows - wm) // 16), 0), 4)
                nt = min(max(-(-(cols - wn) // 8), 0), 8)
                nt = 8 if nt > 4 else 4 if nt > 2 else 2 if nt > 0 else 0
                for i in range(4):
                    for j in range(8):
                        on = i < mt and j < nt
                        box(ax, wn + 8 * j, 128 - wm - 16 * (i + 1), 8, 16,
                            fc=LIGHT[BLUE] if on else "#eeeeee", ec="white", lw=0.6)
                box(ax, wn, 64 - wm, 64, 64, fc="none", ec="black", lw=1.4)
                n = mt * nt
                ax.text(wn + 32, 76 - wm, f"warp: {n} of 32\nmma tiles", ha="center",
                        va="center", fontsize=8,
                        bbox=dict(fc="white", ec="none", alpha=0.8))
        # C's edge inside the block
        if rows < 128:
            ax.plot([-2, 130], [128 - rows] * 2, color=RED, lw=1.6)
            ax.text(131, 128 - rows, f"row {rows}: C ends", color=RED, fontsize=8, va="center")
        if cols < 128:
            ax.plot([cols] * 2, [-2, 130], color=RED, lw=1.6)
            ax.text(cols + 1, 131, f"column {cols}: C ends", color=RED, fontsize=8)
        ax.set_xlim(-4, 160)
        ax.set_ylim(-6, 138)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(title, fontsize=9)
    fig.text(0.01, 0.02, "A block of 128 x 128, four warps of 64 x 64 (black), each of 4 m-tiles "
             "of 16 rows x 8 n-tiles of 8 columns.\nBlue: the tiles a warp issues, those that "
             "reach into C (n-tiles rounded up to 2, 4 or 8); grey: left out, never issued.",
             fontsize=8)
    save(fig, "skinny_skip.png")


def tile_cost():
    fig, axes = plt.subplots(1, 2, figsize=(13, 3.8), gridspec_kw={"width_ratios": [1, 1.6]})
    # left: bytes of A and Bt per multiply-add through the L2 (2-byte bf16), per k-slice a block
    # loads BM + BN rows (or BM + BN / 2 when a pair shares Bt by multicast)
    ax = axes[0]
    shapes = [("128x128", 128, 128, 1), ("128x256", 128, 256, 1), ("128x320", 128, 320, 1),
              ("128x256\npair", 128, 256, 2), ("128x320\npair", 128, 320, 2)]
    for i, (name, bm, bn, share) in enumerate(shapes):
        per = 2.0 * (bm + bn / share) / (bm * bn)
        color = BLUE if share == 1 else GREEN
        ax.bar(i, per, color=LIGHT[color], edgecolor=color)
        ax.text(i, per + 0.0004, f"{per:.4f}", ha="center", fontsize=7)
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels([s[0] for s in shapes], fontsize=7)
    ax.set_ylabel("bytes of A and Bt from the L2\na multiply-add (bf16)", fontsize=8)
    ax.set_title("Bigger tiles and a shared Bt ask less of the L2", fontsize=8, loc="left")
    ax.tick_params(labelsize=7)
    # right: one SM, tile after tile: the main loop scales with K, the per-tile cost does not
    ax = axes[1]
    F = 0.3  # the epilogue and the change of tile, in drawing units
    # the same two tiles' worth of K = 32768 work: eight tiles at K = 8192, each paying F
    for y, main, n, label in [(1.3, 1.2, 8, "K = 8192"), (0.2, 4.8, 2, "K = 32768")]:
        t = 0.0
        for i in range(n):
            box(ax, t, y, main, 0.7, fc=LIGHT[BLUE], ec=BLUE, text="main loop", fs=6.5)
            box(ax, t + main, y, F, 0.7, fc=LIGHT[ORANGE], ec=ORANGE, text="", fs=6)
            t += main + F
        ax.text(-0.2, y + 0.35, label, ha="right", va="center", fontsize=7)
        ax.text(t + 0.2, y + 0.35, f"tensor cores busy\n{main / (main + F):.0%} of the time",
                fontsize=7, va="center")
    ax.text(1.5 + 0.05, 2.15, "orange: the epilogue and the change of tile, the same length "
            "whatever K", fontsize=7, color=ORANGE)
    ax.set_xlim(-1.6, 16.5)
    ax.set_ylim(0.0, 2.4)
    ax.axis("off")
    ax.set_title("A fixed cost per tile is a share of the time that falls as K grows",
                 fontsize=8, loc="left")
    fig.text(0.01, -0.03, "Left: per k-slice a BM x BN tile loads BM + BN rows of 64 bf16 for "
             "BM x BN x 64 multiply-adds; a pair of blocks sharing Bt by multicast loads BN / 2 "
             "of its rows each. Right: the same multiply-adds as eight tiles at K = 8192 "
             "and two at K = 32768; a drawing, not a measurement.", fontsize=7)
    fig.tight_layout()
    save(fig, "tile_cost.png")


def streamk_pieces(tiles, blocks, k, order):
    """Each block's pieces (tile, k0, k1) in the order it works on them: `rounds` (step 7),
    `line` (one run a block over every tile's slices), `first` and `stagger` (streamk.h)."""
    if order == "rounds":
        return [[(t, 0, k) for t in range(b, tiles, blocks)] for b in range(blocks)]
    sk = tiles if order == "line" else (blocks + tiles % blocks if tiles % blocks else 0)
    dp = tiles - sk
    out = []
    for b in range(blocks):
        q0, q1 = sk * k * b // blocks, sk * k * (b + 1) // blocks
        run, s = [], q0
        while s < q1:
            t, k0 = s // k, s % k
            k1 = min(k, k0 + q1 - s)
            run.append((dp + t, k0, k1))
            s += k1 - k0
        rounds = [(t, 0, k) for t in range(b, dp, blocks)]
        tail = run[:1] if run and run[0][1] > 0 else []
        rest = run[len(tail):]
        out.append(tail + (rounds + rest if order == "stagger" else rest + rounds))
    return out


def streamk_deal():
    tiles, blocks, k = 21, 6, 8
    orders = [("rounds", "wgmma_persistent: whole tiles round by round; the last round holds "
               "3 tiles for 6 blocks"),
              ("line", "stream-K in one line: 21 x 8 slices cut into 6 equal runs; at any "
               "moment the blocks are spread over the whole product"),
              ("first", "wgmma_streamk: the last round and a half (9 tiles) dealt by slices and "
               "worked on first, then the rounds, every block in step"),
              ("stagger", "wgmma_streamk_stagger: the tail of each run first, then the rounds, "
               "then the rest of the run: each block's tiles start at a different slice")]
    cmap = plt.get_cmap("viridis")
    fig, axes = plt.subplots(len(orders), 1, figsize=(12, 8.2), sharex=True)
    probes = (6, 20)  # two moments (in slices): which slice of which tile each block reads
    for ax, (order, title) in zip(axes, orders):
        work = streamk_pieces(tiles, blocks, k, order)
        now = {p: [] for p in probes}
        for b, pieces in enumerate(work):
            t0, y = 0, blocks - 1 - b
            for tile, k0, k1 in pieces:
                w = k1 - k0
                split = k0 > 0 or k1 < k
                ax.add_patch(Rectangle((t0, y), w, 0.8, fc=cmap(tile / (tiles - 1)), ec="white",
                                       hatch="///" if split else None, lw=0.8))
                label = f"{tile}" if not split else f"{tile}: {k0}-{k1}"
                ax.text(t0 + w / 2, y + 0.4, label, ha="center", va="center", fontsize=6,
                        color="white" if tile < tiles * 0.6 else "black")
                for p in probes:
                    if t0 <= p < t0 + w:
                        now[p].append(f"{tile}/{k0 + p - t0}")
                t0 += w
            ax.text(-0.4, y + 0.4, f"block {b}", ha="right", va="center", fontsize=6.5)
        for i, p in enumerate(probes):
            ax.axvline(p + 0.5, color=RED, lw=1, ls="--")
            ax.text(32.5, blocks - 0.5 - 2.2 * i, f"slice {p}, tile/slice read:\n"
                    + " ".join(now[p]), fontsize=6.5, color=RED, va="top")
        ax.set_title(title, fontsize=8, loc="left")
        ax.set_xlim(-3.2, 44)
        ax.set_ylim(-0.2, blocks + 0.7)
        ax.axis("off")
    axes[-1].text(0, -0.75, "time in k-slices (each block one slice a step) ->", fontsize=7)
    fig.text(0.01, -0.05, "21 tiles of 8 slices on 6 blocks; colour: the tile's number (tiles "
             "with near numbers share rows of A or columns of Bt); hatched: a piece of a tile "
             "split between two blocks (k0-k1: its slices), the tail added into the head through "
             "the workspace.\nRed: at two moments, the slice of which tile each block "
             "reads; the L2 serves a block from another's load only when both read the same "
             "slice of a shared row or column at about the same time.\nA drawing of "
             "streamk.h's deal at a small size; at 8192^3 the same deal is 2048 tiles of 128 "
             "slices on 132 SMs.", fontsize=7)
    fig.tight_layout()
    save(fig, "streamk_deal.png")


if __name__ == "__main__":
    tma_stride()
    tc_rounds()
    pingpong()
    e4m3()
    skinny_copy()
    skinny_skip()
    tile_cost()
    streamk_deal()
