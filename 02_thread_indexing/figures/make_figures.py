#!/usr/bin/env python3
"""Draws chapter 02's explanatory figures into this folder (PNG):

  coalescing.png   the floats one warp loads with one instruction, and the 32-byte sectors
                   they fall in, for add_2d_32x8, add_2d_8x32 and add_2d_swapped_32x8
  transpose.png    the shared-memory transpose: a tile read along rows of `in`, written
                   along rows of `out`; the shared-memory banks of a tile column without
                   and with the padding column

usage: python3 02_thread_indexing/figures/make_figures.py   (any python3 with matplotlib)
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
META = {"Software": None}  # no matplotlib version in the file: the PNGs stay reproducible
WARP, SECTOR = "#d62728", "#ffd8a8"


def grid_panel(ax, rows, cols, touched, title, note):
    """rows x cols floats of a row-major matrix (row 0 at the top); `touched` the (row, col)
    that warp 0 loads; every 32-byte sector (8 floats) holding one of them shaded."""
    sectors = {(r, c // 8) for r, c in touched}
    for r in range(rows):
        for c in range(cols):
            y = rows - 1 - r
            face = WARP if (r, c) in touched else (SECTOR if (r, c // 8) in sectors else "white")
            ax.add_patch(Rectangle((c, y), 1, 1, facecolor=face, edgecolor="#bbbbbb", lw=0.3))
    for c in range(0, cols + 1, 8):
        ax.plot([c, c], [0, rows], color="#555555", lw=0.8)
    ax.set_xlim(-0.5, cols + 0.5)
    ax.set_ylim(-0.5, rows + 0.5)
    ax.set_aspect("equal")
    ax.set_xticks(range(0, cols + 1, 8))
    ax.set_yticks([rows - 0.5, 0.5])
    ax.set_yticklabels(["row 0", f"row {rows - 1}"], fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_xlabel("column x (contiguous in memory); grey lines: 32-byte sectors", fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.text(cols / 2, -0.22 * rows, note, ha="center", va="top", fontsize=8,
            transform=ax.transData)
    for s in ax.spines.values():
        s.set_visible(False)


def coalescing():
    rows, cols = 32, 40
    fig, axes = plt.subplots(1, 3, figsize=(13, 5.4))
    panels = [
        ("add_2d_32x8: warp 0 = threadIdx.x 0..31, one row",
         {(0, c) for c in range(32)}, "32 floats in 4 sectors: 128 bytes fetched, 128 used"),
        ("add_2d_8x32: warp 0 = 8 x 4 threads",
         {(r, c) for r in range(4) for c in range(8)},
         "4 rows x 32 bytes: 4 sectors, 128 bytes used"),
        ("add_2d_swapped_32x8: threadIdx.x runs down y",
         {(r, 0) for r in range(32)}, "32 floats in 32 sectors: 1024 bytes fetched, 128 used"),
    ]
    for ax, (title, touched, note) in zip(axes, panels):
        grid_panel(ax, rows, cols, touched, title, note)
    fig.suptitle("One load instruction of warp 0 (red) and the 32-byte sectors it touches "
                 "(orange)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(os.path.join(HERE, "coalescing.png"), dpi=120, metadata=META)
    plt.close(fig)


def bank_panel(ax, pad, title):
    """A 32 x (32 + pad) tile of floats coloured by bank (word % 32), tile row c drawn as a
    row; the column a warp reads after the barrier, tile[c][r] for c = 0..31 at r = 0,
    outlined, its banks written in."""
    cmap = plt.get_cmap("hsv")
    width = 32 + pad
    for r in range(32):
        for c in range(width):
            word = r * width + c
            y = 31 - r
            pad_col = c >= 32
            face = "#eeeeee" if pad_col else cmap((word % 32) / 32.0)
            ax.add_patch(Rectangle((c, y), 1, 1, facecolor=face, edgecolor="white", lw=0.3,
                                   alpha=0.55))
        bank = (r * width) % 32
        ax.add_patch(Rectangle((0, 31 - r), 1, 1, fill=False, edgecolor="black", lw=1.2))
        ax.text(0.5, 31 - r + 0.5, str(bank), ha="center", va="center", fontsize=5.5)
    ax.set_xlim(-0.5, 33.5)
    ax.set_ylim(-0.5, 32.5)
    ax.set_aspect("equal")
    ax.set_xticks([0.5, 16.5] + ([32.5] if pad else [31.5]))
    ax.set_xticklabels(["r = 0", "column r", "pad" if pad else "31"], fontsize=7)
    ax.set_yticks([31.5, 16, 0.5])
    ax.set_yticklabels(["c = 0", "tile\nrow c", "31"], fontsize=7)
    ax.set_title(title, fontsize=9)
    for s in ax.spines.values():
        s.set_visible(False)


def flow_panel(ax):
    """in -> tile -> out: rows read, rows written, the turn made in shared memory."""
    def block(x, y, label, rows_dir):
        ax.add_patch(Rectangle((x, y), 8, 8, facecolor="#f3f3f3", edgecolor="black", lw=1))
        for k in range(4):
            if rows_dir:
                ax.add_patch(FancyArrowPatch((x + 0.6, y + 7 - 2 * k), (x + 7.4, y + 7 - 2 * k),
                                             arrowstyle="->", mutation_scale=8, color="#1f77b4"))
            else:
                ax.add_patch(FancyArrowPatch((x + 1 + 2 * k, y + 7.4), (x + 1 + 2 * k, y + 0.6),
                                             arrowstyle="->", mutation_scale=8, color="#d62728"))
        ax.text(x + 4, y - 0.8, label, ha="center", va="top", fontsize=8)

    block(0, 10, "1. a warp reads a row\nof the tile of `in`\n(coalesced)", True)
    block(12, 10, "tile in shared memory\n(__syncthreads between\nthe two phases)", True)
    block(24, 10, "2. a warp writes a row\nof `out` = a column\nof the tile", True)
    ax.add_patch(Rectangle((12, 10), 8, 8, fill=False, edgecolor="black", lw=1))
    for k in range(4):
        ax.add_patch(FancyArrowPatch((13 + 2 * k, 17.4), (13 + 2 * k, 10.6), arrowstyle="->",
                                     mutation_scale=8, color="#d62728", alpha=0.8))
    for x0, x1 in ((8.3, 11.7), (20.3, 23.7)):
        ax.add_patch(FancyArrowPatch((x0, 14), (x1, 14), arrowstyle="-|>", mutation_scale=12,
                                     color="black"))
    ax.text(16, 21.5, "blue: the order of the reads; red: the column read back out",
            ha="center", fontsize=8)
    ax.set_xlim(-1, 33)
    ax.set_ylim(3, 23)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("the transpose through a tile", fontsize=9)


def transpose():
    fig = plt.figure(figsize=(13, 5.2))
    ax0 = fig.add_axes([0.0, 0.05, 0.35, 0.85])
    ax1 = fig.add_axes([0.39, 0.08, 0.28, 0.8])
    ax2 = fig.add_axes([0.71, 0.08, 0.28, 0.8])
    flow_panel(ax0)
    bank_panel(ax1, 0, "tile[32][32]: tile[c][r] is word 32c + r, bank r\n"
               "the column is all in one bank: a 32-way conflict")
    bank_panel(ax2, 1, "tile[32][33]: word 33c + r, bank (c + r) % 32\n"
               "the column covers all 32 banks: one pass")
    fig.text(0.69, 0.015, "colour: the bank of each word (word % 32); outlined: the 32 floats "
             "one warp reads, tile[c][0] for c = 0..31, with their banks",
             ha="center", fontsize=8)
    fig.savefig(os.path.join(HERE, "transpose.png"), dpi=120, metadata=META)
    plt.close(fig)


if __name__ == "__main__":
    coalescing()
    transpose()
