#!/usr/bin/env python3
"""Draws the explanatory figures of chapter 07's part three (part3_data_parallel/README.md) into this
folder (python3 make_dp_figures.py); the core lesson's figures have their own script.

  dp_ring_allreduce.png  a ring all-reduce of 4 GPUs, the buffer cut into 4 chunks: which
                         GPUs' contributions each chunk holds at the start, after each of the
                         N - 1 reduce-scatter steps and after the N - 1 all-gather steps
  dp_bucket_overlap.png  one step per stream, without buckets (the all-reduce after the whole
                         backward pass) and with two (each bucket's all-reduce as soon as its
                         rows of dW1 are done); the exposed part is what the step waits for
The ring is simulated here with the ring all-reduce's rule (GPU g sends chunk g - s to GPU
g + 1 at step s); the bucket timeline is a schematic (its lengths are not measurements: the
measured two steps are plots/07_mnist_mlp_dp_timeline.png).
"""
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

HERE = os.path.dirname(os.path.abspath(__file__))
N = 4
SHADES = ["#ffffff", "#d6e6f4", "#9ecae1", "#4a98c9", "#1764ab"]


def save(fig, name):
    fig.savefig(os.path.join(HERE, name), dpi=130, bbox_inches="tight")
    plt.close(fig)


def ring_states():
    """[(title, state)], state[g][c] the set of GPUs whose chunk c GPU g holds summed."""
    state = [[{g} for _ in range(N)] for g in range(N)]
    out = [("start: each GPU its own gradient", [[set(x) for x in row] for row in state])]
    for s in range(N - 1):  # reduce-scatter: GPU g sends chunk (g - s) to g + 1, which adds
        sent = [(g, (g - s) % N, set(state[g][(g - s) % N])) for g in range(N)]
        for g, c, contrib in sent:
            state[(g + 1) % N][c] |= contrib
        out.append((f"reduce-scatter, step {s + 1} of {N - 1}", [[set(x) for x in row] for row in state]))
    for s in range(N - 1):  # all-gather: GPU g sends its complete chunk (g + 1 - s) to g + 1
        sent = [(g, (g + 1 - s) % N, set(state[g][(g + 1 - s) % N])) for g in range(N)]
        for g, c, contrib in sent:
            state[(g + 1) % N][c] = set(contrib)
        out.append((f"all-gather, step {s + 1} of {N - 1}", [[set(x) for x in row] for row in state]))
    return out


def draw_ring():
    states = ring_states()
    fig, grid = plt.subplots(2, N, figsize=(2.6 * N, 6.0))
    axes = [grid[0][k] for k in range(N)] + [grid[1][k] for k in range(N - 1)]
    for k, (ax, (title, state)) in enumerate(zip(axes, states)):
        before = states[k - 1][1] if k else state
        for g in range(N):
            for c in range(N):
                have, new = state[g][c], state[g][c] != before[g][c]
                ax.add_patch(Rectangle((c, N - 1 - g), 1, 1, facecolor=SHADES[len(have)],
                                       edgecolor="#c44e52" if new else "#555555", lw=2.2 if new else 0.8,
                                       zorder=2 if new else 1))
                ax.text(c + 0.5, N - 0.5 - g, "+".join(str(x) for x in sorted(have)), ha="center",
                        va="center", fontsize=7 if len(have) > 2 else 8.5,
                        color="white" if len(have) >= 3 else "black", zorder=3)
        ax.set_xlim(-0.05, N + 0.05)
        ax.set_ylim(-0.05, N + 0.05)
        ax.set_aspect("equal")
        ax.set_xticks([c + 0.5 for c in range(N)])
        ax.set_xticklabels([f"chunk {c}" for c in range(N)], fontsize=7)
        ax.set_yticks([N - 0.5 - g for g in range(N)])
        ax.set_yticklabels([f"GPU {g}" for g in range(N)] if k in (0, N) else [""] * N, fontsize=8)
        ax.tick_params(length=0)
        for side in ax.spines.values():
            side.set_visible(False)
        ax.set_title(title, fontsize=9)
    # the ring itself: each GPU sends to the next, over its own link
    ax = grid[1][N - 1]
    pos = [(math.cos(math.pi / 2 - 2 * math.pi * g / N), math.sin(math.pi / 2 - 2 * math.pi * g / N))
           for g in range(N)]
    for g in range(N):
        a, b = pos[g], pos[(g + 1) % N]
        ax.add_patch(FancyArrowPatch(a, b, connectionstyle="arc3,rad=-0.25", arrowstyle="-|>",
                                     mutation_scale=12, color="#c44e52", lw=1.4, shrinkA=16, shrinkB=16))
        ax.add_patch(plt.Circle(a, 0.24, facecolor="#d6e6f4", edgecolor="#555555"))
        ax.text(a[0], a[1], f"GPU {g}", ha="center", va="center", fontsize=8)
    ax.set_xlim(-1.5, 1.5)
    ax.set_ylim(-1.5, 1.5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("the ring: each step, every GPU\nsends one chunk to the next", fontsize=9, y=0.93)
    fig.suptitle("A ring all-reduce of 4 GPUs. Each cell lists the GPUs whose part of that chunk it holds "
                 "(summed); red edges: what arrived at that step.\nAfter N - 1 reduce-scatter steps each "
                 "GPU owns one chunk summed over all; N - 1 all-gather steps pass the sums round.\n"
                 "Each GPU sends (and receives) 2 (N - 1) / N of the buffer in all, whatever N.",
                 fontsize=9.5)
    fig.tight_layout()
    fig.subplots_adjust(hspace=0.28)
    save(fig, "dp_ring_allreduce.png")


def draw_overlap():
    # schematic lengths of one step (not measured: see the lesson for the measured timeline)
    fwd, out, hid, dw1, ar, upd = 2.8, 0.9, 0.9, 3.4, 1.6, 0.7
    colors = {"forward": "#8c8c8c", "output\nlayer": "#b07aa1", "hidden\nbackward": "#9c755f",
              "dW1": "#4c72b0", "dW1 rows 0-383": "#4c72b0", "dW1 rows 384-783": "#4c72b0",
              "all-reduce": "#c44e52", "all-reduce\nbucket 0": "#c44e52",
              "bucket 1\n+ b1, W2, b2": "#c44e52", "update": "#55a868"}
    fig, axes = plt.subplots(2, 1, figsize=(11, 3.8), sharex=True)
    for ax, buckets in zip(axes, (False, True)):
        t = 0.0
        bars = [("compute", "forward", t, fwd)]
        t += fwd
        bars += [("compute", "output\nlayer", t, out)]
        t += out
        bars += [("compute", "hidden\nbackward", t, hid)]
        t += hid
        if not buckets:
            bars += [("compute", "dW1", t, dw1)]
            done = t + dw1
            bars += [("comm", "all-reduce", done, ar)]
            reduced = done + ar
        else:
            half = dw1 / 2 * 1.1  # two smaller products share the GPU with the first all-reduce
            bars += [("compute", "dW1 rows 0-383", t, half),
                     ("compute", "dW1 rows 384-783", t + half, half)]
            first = t + half
            bars += [("comm", "all-reduce\nbucket 0", first, ar / 2 * 1.3)]
            done = t + 2 * half
            start2 = max(done, first + ar / 2 * 1.3)
            bars += [("comm", "bucket 1\n+ b1, W2, b2", start2, ar * 0.7)]
            reduced = start2 + ar * 0.7
        bars += [("compute", "update", reduced, upd)]
        for row, op, x, w in bars:
            y = 1 if row == "compute" else 0
            ax.add_patch(Rectangle((x, y + 0.15), w, 0.7, facecolor=colors[op], edgecolor="white"))
            ax.text(x + w / 2, y + 0.5, op, ha="center", va="center", fontsize=7, color="white")
        ax.annotate("", xy=(reduced, 1.95), xytext=(done, 1.95),
                    arrowprops=dict(arrowstyle="<->", color="#333333", lw=1))
        ax.text((done + reduced) / 2, 2.05, "exposed: the step waits", ha="center", va="bottom",
                fontsize=7)
        ax.axvline(done, color="#333333", lw=0.6, ls=":")
        ax.set_yticks([0.5, 1.5])
        ax.set_yticklabels(["communication stream", "kernels' stream"], fontsize=8)
        ax.set_ylim(0, 2.5)
        ax.set_xlim(0, 12.0)
        ax.set_title("--buckets 2: each half of dW1's rows all-reduced as soon as it is done"
                     if buckets else "--buckets 0: one all-reduce after the whole backward pass",
                     fontsize=9, loc="left")
    axes[1].set_xlabel("time (schematic: the products grow with the batch, the all-reduce does not)")
    axes[1].set_xticks([])
    fig.tight_layout()
    save(fig, "dp_bucket_overlap.png")


if __name__ == "__main__":
    draw_ring()
    draw_overlap()
