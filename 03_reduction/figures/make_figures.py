#!/usr/bin/env python3
"""Draws chapter 03's explanatory figures into this folder (python3 make_figures.py).

  stages.png  the three stages every version goes through: a thread's own inputs, the
              block's tree, the blocks' partial sums
  trees.png   which of a 256-thread block's threads work at each level of the tree in v1,
              v2 and v3, and which warps have to issue the level
  banks.png   shared-memory banks: the lanes of warp 0 at one level of v2 (an 8-way
              conflict) and the conflict degree of every level of v2 and v3
Everything drawn is computed here from the kernels' index rules (kernels.cuh).
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.colors import ListedColormap
from matplotlib.patches import FancyArrowPatch, Rectangle

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCK, WARP, BANKS = 256, 32, 32
WORK, IDLE_IN_BUSY_WARP, IDLE = 2, 1, 0
COLORS = ListedColormap(["#f2f2f2", "#f4c7a1", "#2b7bba"])


def save(fig, name):
    fig.savefig(os.path.join(HERE, name), dpi=130, bbox_inches="tight")
    plt.close(fig)


def tree(ax, xs, y, dy, color="#555"):
    """a binary tree of additions over the points xs at height y, growing down by dy."""
    level = list(xs)
    while len(level) > 1:
        nxt = [(level[2 * i] + level[2 * i + 1]) / 2 for i in range(len(level) // 2)]
        for i, x in enumerate(nxt):
            ax.plot([level[2 * i], x, level[2 * i + 1]], [y, y - dy, y], color=color, lw=1)
        level, y = nxt, y - dy
    return level[0], y


def stages():
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), gridspec_kw={"width_ratios": [1.3, 1, 1]})
    for ax in axes:
        ax.set_xlim(0, 10)
        ax.set_ylim(0, 10)
        ax.axis("off")
    colors = ["#2b7bba", "#7fb3d5", "#f39c12", "#e74c3c"]
    # 1. a thread's own inputs: elements t, t + T, t + 2T, ... into one register
    ax = axes[0]
    ax.set_title("1. each thread adds its own inputs\ninto a register", fontsize=9, loc="left")
    n = 20
    for i in range(n):
        ax.add_patch(Rectangle((0.2 + i * 0.48, 8.2), 0.42, 0.9, color=colors[i % 4], lw=0))
        ax.annotate("", xy=(1.3 + (i % 4) * 2.4, 3.4), xytext=(0.41 + i * 0.48, 8.1),
                    arrowprops=dict(arrowstyle="-", color=colors[i % 4], lw=0.5, alpha=0.6))
    ax.text(0.2, 9.4, "in[ ]  (T threads in the grid; here T = 4)", fontsize=7.5)
    for t in range(4):
        ax.add_patch(Rectangle((0.8 + t * 2.4, 2.4), 1.0, 1.0, color=colors[t]))
        ax.text(1.3 + t * 2.4, 2.9, f"t{t}", ha="center", va="center", color="white", fontsize=8)
    ax.text(0.2, 0.6, "v1-v5: one or two elements a thread\nv6, v7: hundreds, read as float4",
            fontsize=7.5)
    # 2. the block's tree
    ax = axes[1]
    ax.set_title("2. the threads of a block combine theirs\ninto one partial sum (a tree)",
                 fontsize=9, loc="left")
    xs = [0.6 + i * 1.2 for i in range(8)]
    for x in xs:
        ax.add_patch(Rectangle((x - 0.35, 8.0), 0.7, 0.7, color="#2b7bba"))
    x, y = tree(ax, xs, 8.0, 1.6)
    ax.add_patch(Rectangle((x - 0.4, y - 0.8), 0.8, 0.8, color="#555"))
    ax.text(x + 0.6, y - 0.45, "p (the block's partial)", fontsize=7.5, va="center")
    ax.text(0.2, 0.6, "8 levels for 256 threads: shared memory and a\nbarrier each (v1-v4), "
            "shuffles in a warp (v5-v7)", fontsize=7.5)
    # 3. the blocks' partials
    ax = axes[2]
    ax.set_title("3. the blocks' partial sums are added\ninto the final sum", fontsize=9,
                 loc="left")
    xs = [0.6 + i * 1.2 for i in range(8)]
    for i, x in enumerate(xs):
        ax.add_patch(Rectangle((x - 0.35, 8.0), 0.7, 0.7, color="#555"))
        ax.text(x, 9.0, f"p{i}", ha="center", fontsize=7)
    x, y = tree(ax, xs, 8.0, 1.6, color="#999")
    ax.add_patch(Rectangle((x - 0.4, y - 0.8), 0.8, 0.8, color="#c0392b"))
    ax.text(x + 0.6, y - 0.45, "the sum", fontsize=7.5, va="center")
    ax.text(0.2, 0.6, "the same kernel again on the partials (v1-v6),\nor the last block "
            "to finish (v7)", fontsize=7.5)
    fig.tight_layout()
    save(fig, "stages.png")


def activity(rule):
    """rows: levels; columns: threads; WORK if the thread adds at that level,
    IDLE_IN_BUSY_WARP if it idles in a warp that has to issue the level anyway."""
    rows, labels = [], []
    for s, active in rule():
        row = [WORK if active(t) else IDLE for t in range(BLOCK)]
        for w in range(BLOCK // WARP):
            lanes = row[w * WARP:(w + 1) * WARP]
            if WORK in lanes:
                row[w * WARP:(w + 1) * WARP] = [WORK if v == WORK else IDLE_IN_BUSY_WARP
                                                for v in lanes]
        rows.append(row)
        labels.append(s)
    return rows, labels


def v1():
    s = 1
    while s < BLOCK:
        yield s, (lambda t, s=s: t % (2 * s) == 0)
        s *= 2


def v2():
    s = 1
    while s < BLOCK:
        yield s, (lambda t, s=s: 2 * s * t < BLOCK)
        s *= 2


def v3():
    s = BLOCK // 2
    while s > 0:
        yield s, (lambda t, s=s: t < s)
        s //= 2


def trees():
    fig, axes = plt.subplots(3, 1, figsize=(10, 7.4))
    titles = ["v1_divergent: thread t adds if t % (2s) == 0",
              "v2_strided: thread t adds at index 2 s t (if < 256)",
              "v3_sequential: thread t adds if t < s"]
    for ax, rule, title in zip(axes, [v1, v2, v3], titles):
        rows, labels = activity(rule)
        ax.imshow(rows, aspect="auto", cmap=COLORS, vmin=0, vmax=2, interpolation="nearest")
        for w in range(1, BLOCK // WARP):
            ax.axvline(w * WARP - 0.5, color="black", lw=0.8)
        busy = [sum(1 for w in range(BLOCK // WARP) if WORK in r[w * WARP:(w + 1) * WARP])
                for r in rows]
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels([f"s={s}" for s in labels], fontsize=7)
        ax.set_xticks([w * WARP + WARP / 2 for w in range(BLOCK // WARP)])
        ax.set_xticklabels([f"warp {w}" for w in range(BLOCK // WARP)], fontsize=7)
        ax.set_title(title + f"   (warps that issue a level, summed over the levels: {sum(busy)})",
                     fontsize=9, loc="left")
        ax2 = ax.twinx()
        ax2.set_ylim(ax.get_ylim())
        ax2.set_yticks(range(len(labels)))
        ax2.set_yticklabels([f"{b} warp{'s' if b > 1 else ''}" for b in busy], fontsize=7)
    handles = [Rectangle((0, 0), 1, 1, color=COLORS(2)), Rectangle((0, 0), 1, 1, color=COLORS(1)),
               Rectangle((0, 0), 1, 1, color=COLORS(0), ec="#999")]
    fig.legend(handles, ["adds", "idle, but its warp issues the level",
                         "idle, and so is its whole warp"],
               loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    save(fig, "trees.png")


def v2_banks(s, lanes=range(WARP)):
    """warp 0's active lanes at level s of v2 and the bank of the word each one reads."""
    return [(l, (2 * s * l) % BANKS) for l in lanes if 2 * s * l < BLOCK]


def degree(pairs):
    count = {}
    for _, b in pairs:
        count[b] = count.get(b, 0) + 1
    return max(count.values()) if count else 0


def banks():
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.4), gridspec_kw={"width_ratios": [1.25, 1]})
    s = 8
    pairs = v2_banks(s)
    ax.set_xlim(-1, BANKS)
    ax.set_ylim(-6, 13.5)
    ax.axis("off")
    for b in range(BANKS):
        ax.add_patch(Rectangle((b - 0.45, 0), 0.9, 1.2, fc="#f2f2f2", ec="#999", lw=0.5))
        if b % 4 == 0:
            ax.text(b, -0.8, str(b), ha="center", fontsize=7)
    ax.text(BANKS / 2, -2.3, "shared-memory bank (word w is in bank w % 32)", ha="center",
            fontsize=8)
    for i, (lane, b) in enumerate(pairs):
        x = lane * (BANKS - 1) / (WARP - 1)
        ax.add_patch(Rectangle((x - 0.45, 10), 0.9, 1.2, fc="#2b7bba", ec="none"))
        ax.add_artist(FancyArrowPatch((x, 10), (b, 1.25), arrowstyle="->", mutation_scale=6,
                                      color="#2b7bba", lw=0.6, alpha=0.8))
    for lane in range(len(pairs), WARP):
        x = lane * (BANKS - 1) / (WARP - 1)
        ax.add_patch(Rectangle((x - 0.45, 10), 0.9, 1.2, fc="#f2f2f2", ec="#bbb", lw=0.5))
    ax.text(-1, 14.2, f"warp 0 at level s = {s} of v2: lanes 0-{len(pairs) - 1} active "
            f"(thread t < 128 / s), lane l reads word 2 s l = {2 * s} l", fontsize=8)
    ax.text(-1, -4.6, f"{len(pairs)} lanes on {len(set(b for _, b in pairs))} banks: "
            f"{degree(pairs)} requests to bank 0 and {degree(pairs)} to bank 16, served one "
            f"after another: an {degree(pairs)}-way conflict", fontsize=8.5, weight="bold")
    ax.text(-1, 12.9, "lanes 0-31 of warp 0", fontsize=7, color="#555")
    levels = [1 << k for k in range(8)]
    v2deg = [degree(v2_banks(s)) for s in levels]
    v3deg = [1 for _ in levels]  # v3: lane l reads word l (+ s): consecutive words
    xs = range(len(levels))
    bx.bar([x - 0.2 for x in xs], v2deg, width=0.4, color="#e67e22", label="v2_strided")
    bx.bar([x + 0.2 for x in xs], v3deg, width=0.4, color="#2b7bba", label="v3_sequential")
    bx.set_xticks(list(xs))
    bx.set_xticklabels([f"s={s}" for s in levels], fontsize=8)
    bx.set_ylabel("lanes of one warp on the busiest bank", fontsize=8)
    bx.set_title("conflict degree of every level (v3: consecutive lanes read consecutive "
                 "words)", fontsize=8, loc="left")
    for x, d in zip(xs, v2deg):
        bx.text(x - 0.2, d + 0.1, str(d), ha="center", fontsize=7)
    bx.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    save(fig, "banks.png")


if __name__ == "__main__":
    stages()
    trees()
    banks()
