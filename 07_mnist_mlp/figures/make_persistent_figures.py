#!/usr/bin/env python3
"""Draws the explanatory figures of chapter 07's part four (part4_persistent/README.md) into this folder:

  persistent_owners.png    who owns what: the grid's clusters and blocks, each block's slice
                           of W1, where the partial sums, z1 and the shares of z2 live
  persistent_cluster.png   thread-block clusters and distributed shared memory: a load from
                           another block, an st.async counted on the receiver's mbarrier,
                           the cluster barrier, and what its fence costs
  persistent_stamps.png    z2's shares as stamped words: the two word layouts, and why two
                           buffers (by the step's parity) are enough without a grid barrier
  persistent_pdl.png       the next epoch's rows by a programmatic dependent launch, on the
                           SMs the persistent kernel leaves free
  persistent_step.png      one step's phases in time, with the cluster barriers and the
                           clusters' meeting point, for the three trainers at batch 256 and 32

usage: python3 07_mnist_mlp/figures/make_persistent_figures.py   (any python3 with matplotlib)

persistent_step.png reads the committed plots/results/NVIDIA_H100_80GB_HBM3.stages (block 0's
phase times of the bench's run). The barrier costs in persistent_cluster.png are those that
tools/cluster_barriers measured on an H100, as recorded in records/persistent_records.txt
(the record of cluster barriers that release only a block's own shared memory). Everything
else is the kernel's geometry (part4_persistent/02_products.cuh, 06_phases.cuh).
"""
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
META = {"Software": None}  # no matplotlib version in the files: the PNGs stay reproducible
C = plt.get_cmap("tab10").colors
PHASES = ["forward", "reduce_z1_z2", "z2_shares", "softmax_backward", "small_step",
          "dW1_step_next_x"]
PHASE_COLOR = dict(zip(PHASES, [C[0], C[1], C[3], C[2], C[4], C[9]]))
TRAINERS = ["persistent", "persistent_bf16x3", "persistent_bf16"]

# The kernel's geometry (part4_persistent/02_products.cuh).
CLUSTER, UNITS, HIDDEN, PIXELS = 8, 72, 1024, 784
GROUPS = (HIDDEN + UNITS - 1) // UNITS  # 15 clusters


def slices(quantum):
    """Rank q's pixels: whole quanta, q * n / 8 .. (q + 1) * n / 8 of n = 784 / quantum."""
    n = PIXELS // quantum
    return [(q * n // CLUSTER * quantum, (q + 1) * n // CLUSTER * quantum) for q in range(CLUSTER)]


def box(ax, x, y, w, h, color, text="", fs=7.5, alpha=0.85, ec="white", lw=1.0, **kw):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor=ec, lw=lw, alpha=alpha))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fs, **kw)


def arrow(ax, a, b, color="black", style="-|>", lw=1.2, ls="-", rad=0.0):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle=style, mutation_scale=11, color=color, lw=lw,
                                 linestyle=ls, connectionstyle=f"arc3,rad={rad}"))


def bare(ax, xlim, ylim):
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("auto")
    ax.axis("off")


# ------------------------------------------------------------------ who owns what

def owners():
    fig = plt.figure(figsize=(13, 6.6))
    # the grid
    ax = fig.add_axes([0.0, 0.05, 0.29, 0.88])
    bare(ax, (-2.6, 15.6), (-4.2, 10.5))
    ax.set_title("the grid: 15 clusters of 8 blocks, one block an SM", fontsize=10)
    g_hi = 3
    for g in range(GROUPS):
        for q in range(CLUSTER):
            color = C[0] if g == g_hi else (0.75, 0.80, 0.88)
            box(ax, g, CLUSTER - 1 - q, 0.92, 0.92, color, "", alpha=0.95)
        ax.text(g + 0.46, 8.15, str(g), ha="center", fontsize=7)
    for q in range(CLUSTER):
        ax.text(-0.3, CLUSTER - 1 - q + 0.46, f"rank {q}", ha="right", va="center", fontsize=7)
    ax.text(7.5, 9.3, "cluster g (the SMs of one GPC): hidden units 72 g .. 72 g + 71",
            ha="center", fontsize=8)
    ax.text(7.5, 8.75, "cluster 14: units 1008 .. 1023, and zeros", ha="center", fontsize=7,
            color="0.35")
    for i in range(12):
        box(ax, 2.5 + i, -1.6, 0.92, 0.92, "0.85", "")
    ax.text(8.5, -2.35, "the other 12 SMs of an H100: free for the next epoch's rows",
            ha="center", fontsize=7.5, color="0.3")
    ax.text(8.5, -3.1, "(a programmatic dependent launch, persistent_bf16)", ha="center",
            fontsize=7.5, color="0.3")
    ax.text(8.5, -0.45, "blocks that wait for each other: all 120 must be resident",
            ha="center", fontsize=7.5, color=C[3])

    # the cluster's slice of the model
    ax = fig.add_axes([0.30, 0.05, 0.30, 0.88])
    bare(ax, (-2.6, 13.4), (-3.2, 10.5))
    ax.set_title("cluster g: its 72 units of the model", fontsize=10)
    h = 8.0 / PIXELS
    for q, (k0, k1) in enumerate(slices(16)):
        y = 9.0 - k1 * h
        box(ax, 0, y, 4.6, (k1 - k0) * h, C[q % 10], f"rank {q}: {k0}..{k1 - 1}",
            fs=7, alpha=0.55, ec="black", lw=0.6)
    ax.text(2.3, 9.25, "W1[784 pixels, units of g]", ha="center", fontsize=8)
    ax.text(-0.2, 5.0, "bf16's\nslices\n(fp32's:\n96 or 100\npixels)", ha="right",
            va="center", fontsize=7, color="0.3")
    ax.text(4.9, 7.7, "each slice: in its block's\nshared memory, every step", fontsize=7.5,
            va="center")
    ax.text(4.9, 5.9, "its velocity (and bf16's fp32\nweights): registers of the\nthreads "
            "that compute its\ngradient", fontsize=7.5, va="center")
    ax.text(4.9, 3.9, "W1 and its velocity never\ncross memory in the epoch", fontsize=7.5,
            va="center", color=C[3])
    box(ax, 0, -0.5, 2.0, 0.9, C[4], "W2[72,10]", fs=6.5, alpha=0.6, ec="black", lw=0.6)
    box(ax, 2.05, -0.5, 1.25, 0.9, C[4], "b1[72]", fs=6.5, alpha=0.6, ec="black", lw=0.6)
    box(ax, 3.35, -0.5, 1.25, 0.9, C[4], "b2[10]", fs=6.5, alpha=0.6, ec="black", lw=0.6)
    ax.text(4.9, -0.05, "a copy in every block; each\nblock steps an eighth of them\n"
            "and keeps that eighth's velocity", fontsize=7.5, va="center")
    ax.text(4.8, -2.2, "the 8 blocks split the pixels (the forward's K)", ha="center",
            fontsize=7.5)

    # a step's data
    ax = fig.add_axes([0.61, 0.05, 0.38, 0.88])
    bare(ax, (0.0, 14.0), (-3.2, 10.5))
    ax.set_title("a step's data, for block (g, q)", fontsize=10)
    box(ax, 0.2, 6.4, 3.0, 2.4, "0.88", "", ec="black", lw=0.6)
    box(ax, 1.4, 6.4, 0.5, 2.4, C[2], "", alpha=0.7, ec="black", lw=0.6)
    ax.text(1.7, 9.05, "batch x [rows, 784]", ha="center", fontsize=7.5)
    ax.text(1.65, 6.05, "its pixels: a copy\nin its shared memory", ha="center", va="top",
            fontsize=7)
    box(ax, 4.4, 6.4, 1.6, 2.4, C[1], "part\n[rows, 72]", fs=7.5, alpha=0.55, ec="black",
        lw=0.6)
    ax.text(5.2, 5.95, "x[:, slice] W1[slice, :]\nin its shared memory", ha="center",
            va="top", fontsize=7)
    arrow(ax, (3.3, 7.6), (4.3, 7.6))
    for q in range(CLUSTER):
        box(ax, 7.4, 8.6 - 0.3 * q, 1.6, 0.27, C[1] if q == 2 else "0.88", "", alpha=0.55,
            ec="black", lw=0.4)
    ax.text(8.2, 9.05, "the 8 blocks' parts", ha="center", fontsize=7.5)
    ax.text(9.2, 7.6, "rank q adds its R rows\n(R = rows / 8) of all 8\n"
            "(ld.shared::cluster)", fontsize=7, va="center")
    arrow(ax, (6.1, 7.6), (7.3, 7.6))
    box(ax, 7.4, 5.0, 1.6, 0.7, C[0], "z1, R rows", fs=7, alpha=0.6, ec="black", lw=0.6)
    arrow(ax, (8.2, 6.2), (8.2, 5.8))
    box(ax, 7.4, 3.7, 1.6, 0.7, C[3], "z2 share\n[R, 10]", fs=7, alpha=0.6, ec="black",
        lw=0.6)
    arrow(ax, (8.2, 4.95), (8.2, 4.45))
    ax.text(9.2, 4.05, "relu(z1) W2[units of g]", fontsize=7, va="center")
    for g in range(GROUPS):
        box(ax, 0.2 + 0.38 * g, 2.4, 0.32, 0.9, C[3] if g == g_hi else (0.93, 0.75, 0.75), "",
            alpha=0.8, ec="black", lw=0.3)
    ax.text(0.2, 2.25, "z2part in L2: each cluster's share, stamped",
            ha="left", va="top", fontsize=7.5)
    arrow(ax, (7.3, 4.0), (0.2 + 0.38 * g_hi + 0.16, 3.4), rad=0.25)
    ax.text(3.0, 1.55, "z2 = b2 + the 15 shares of\nits rows, loaded until all\n"
            "carry this step's number", ha="center", va="top", fontsize=7.5)
    box(ax, 7.4, 1.3, 1.6, 0.7, C[2], "dz2, dz1\nof R rows", fs=7, alpha=0.6, ec="black",
        lw=0.6)
    arrow(ax, (5.4, 1.0), (7.3, 1.5))
    ax.text(9.2, 1.6, "dz1 stored into all 8\nblocks' part (st.async):\nthe dW1 product's "
            "operand", fontsize=7, va="center")
    ax.text(6.8, -1.2, "then dW1 = x[:, slice]^T dz1, and\nW1[slice] -= lr v in place",
            ha="center", fontsize=7.5)
    fig.savefig(os.path.join(HERE, "persistent_owners.png"), dpi=130, metadata=META)
    plt.close(fig)


# ------------------------------------------------------------------ clusters and DSMEM

# tools/cluster_barriers on an H100: us a loop of two barriers, the best of 3 launches
BARRIERS = [("arrive.release\n(MEMBAR.ALL.GPU)", 0.949),
            ("fence.acq_rel.cluster\n+ relaxed arrive", 1.063),
            ("restricted fence\n(MEMBAR.ALL.CTA)\n+ relaxed arrive", 0.134),
            ("relaxed arrive alone\n(no ordering:\nnot correct here)", 0.103)]


def cluster():
    fig = plt.figure(figsize=(13, 5.6))
    ax = fig.add_axes([0.01, 0.03, 0.60, 0.9])
    bare(ax, (-0.4, 16.4), (-4.6, 9.0))
    ax.set_title("a cluster: 8 blocks on 8 SMs of one GPC, each able to reach the others' "
                 "shared memory", fontsize=10)
    box(ax, -0.2, -3.9, 16.4, 12.2, (0.95, 0.95, 0.97), "", ec="0.4", lw=1.0, alpha=1.0)
    ax.text(0.0, 8.0, "GPC", fontsize=8, color="0.4")
    for q in range(CLUSTER):
        x = 0.2 + 2.0 * q
        box(ax, x, 1.5, 1.8, 3.0, "white", "", ec="0.3", lw=0.8, alpha=1.0)
        ax.text(x + 0.9, 4.25, f"SM: rank {q}", fontsize=7.5, ha="center", va="top")
        box(ax, x + 0.12, 1.7, 1.56, 1.6, C[0], "shared\nmemory", fs=7, alpha=0.25)
        box(ax, x + 0.5, 3.4, 0.8, 0.45, C[1], "mbar", fs=6, alpha=0.6)
    # a load from rank 5's shared memory by rank 0: a round trip
    arrow(ax, (0.9, 4.55), (11.0, 4.55), color=C[0], rad=-0.25)
    arrow(ax, (11.4, 4.55), (1.3, 4.55), color=C[0], ls="--", rad=0.32)
    ax.text(6.1, 7.85, "ld.shared::cluster [mapa(p, 5)]: the request, then the answer: hundreds "
            "of cycles;\nissue all 8 blocks' loads before using any", fontsize=7.5,
            color=C[0], ha="center", va="top")
    # an st.async from rank 2 into rank 7, counted by rank 7's mbarrier
    arrow(ax, (5.1, 1.45), (14.9, 1.45), color=C[2], lw=1.6, rad=0.25)
    ax.text(10.0, -0.35, "st.async from rank 2 into rank 7: no answer to wait for; the "
            "bytes land, and complete_tx\nadds them to rank 7's mbarrier, which rank 7 waits "
            "on (it expects the step's bytes)", fontsize=7.5, color=C[2], ha="center",
            va="top")
    # the cluster barrier
    ax.plot([0.2, 15.8], [-2.7, -2.7], color="black", lw=1.0, ls=(0, (6, 3)))
    for q in range(CLUSTER):
        ax.plot([1.1 + 2.0 * q] * 2, [-2.7, 1.45], color="0.6", lw=0.6, ls=":")
    ax.text(8.0, -2.95, "barrier.cluster.arrive ... .wait: every thread of the 8 blocks meets; "
            "the arrive releases, the wait acquires", ha="center", va="top", fontsize=7.5)
    ax.text(8.0, -4.3, "mapa turns an address in this block's shared memory into the same "
            "offset in block q's (the shared::cluster window)", ha="center", fontsize=7.5)

    ax = fig.add_axes([0.72, 0.22, 0.26, 0.66])
    names = [n for n, _ in BARRIERS]
    vals = [v for _, v in BARRIERS]
    ax.barh(range(len(vals)), vals, color=[C[3], C[3], C[2], "0.6"])
    for i, v in enumerate(vals):
        ax.text(v + 0.02, i, f"{v:.3f}", va="center", fontsize=8)
    ax.set_yticks(range(len(vals)))
    ax.set_yticklabels(names, fontsize=7.5)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.3)
    ax.set_xlabel("µs a loop of two barriers (H100, 15 clusters of 8)",
                  fontsize=8)
    ax.set_title("what the barrier's fence costs (tools/cluster_barriers)", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    fig.savefig(os.path.join(HERE, "persistent_cluster.png"), dpi=130, metadata=META)
    plt.close(fig)


# ------------------------------------------------------------------ stamped words

def stamps():
    fig = plt.figure(figsize=(13, 5.2))
    ax = fig.add_axes([0.01, 0.05, 0.40, 0.85])
    bare(ax, (-1, 33), (-0.5, 10))
    ax.set_title("a share of z2 and its step's number in one word", fontsize=10)
    ax.text(0, 8.8, "persistent, persistent_bf16x3: 8 bytes", fontsize=8.5)
    box(ax, 0, 6.8, 16, 1.4, C[3], "step number (32 bits)", fs=8, alpha=0.6, ec="black", lw=0.6)
    box(ax, 16, 6.8, 16, 1.4, C[0], "the fp32 value (32 bits)", fs=8, alpha=0.6, ec="black",
        lw=0.6)
    ax.text(0, 5.4, "persistent_bf16: 4 bytes", fontsize=8.5)
    box(ax, 0, 3.4, 2, 1.4, C[0], "s", fs=8, alpha=0.6, ec="black", lw=0.6)
    box(ax, 2, 3.4, 8, 1.4, C[0], "exponent (8)", fs=8, alpha=0.6, ec="black", lw=0.6)
    box(ax, 10, 3.4, 14, 1.4, C[0], "mantissa, rounded (15)", fs=8, alpha=0.6, ec="black",
        lw=0.6)
    box(ax, 24, 3.4, 8, 1.4, C[3], "tag (8)", fs=8, alpha=0.6, ec="black", lw=0.6)
    ax.text(28, 2.9, "1 + number % 255:\nnever 0 (the memset's)", ha="center", va="top",
            fontsize=7.5)
    ax.text(0, 1.2, "An aligned 4- or 8-byte store or load is single-copy atomic: a block that\n"
            "reads the number it waits for has read that step's value, with no fence,\n"
            "count or grid barrier.", fontsize=8, va="center")

    ax = fig.add_axes([0.50, 0.08, 0.49, 0.82])
    ax.set_title("two buffers by the step's parity: a fast cluster cannot overwrite\n"
                 "a share still unread", fontsize=10)
    rows = [("cluster A (fast)", [(0.0, 1.0, "share of s -> buf 0", C[3]),
                                  (1.0, 2.6, "poll buf 0 for s", "0.8"),
                                  (2.6, 3.6, "s+1 -> buf 1", C[3]),
                                  (3.6, 6.0, "poll buf 1 for s+1", "0.8"),
                                  (6.0, 7.0, "s+2 -> buf 0", C[3])]),
            ("cluster B", [(0.0, 1.4, "share of s -> buf 0", C[3]),
                           (1.4, 2.6, "poll buf 0", "0.8"),
                           (2.6, 3.8, "s+1 -> buf 1", C[3]),
                           (3.8, 6.0, "poll buf 1", "0.8")]),
            ("cluster C (slow)", [(0.0, 2.5, "its share of s -> buf 0 (late)", C[3]),
                                  (2.5, 3.2, "poll buf 0", "0.8"),
                                  (3.2, 5.8, "s+1 -> buf 1", C[3]),
                                  (5.8, 6.0, "", "0.8")])]
    for i, (name, segs) in enumerate(rows):
        y = 2 - i
        for a, b, text, color in segs:
            ax.barh(y, b - a, left=a, height=0.6, color=color, edgecolor="white", alpha=0.8)
            if text:
                ax.text((a + b) / 2, y, text, ha="center", va="center", fontsize=6.5)
    ax.set_yticks([2, 1, 0])
    ax.set_yticklabels([r[0] for r in rows], fontsize=8)
    ax.set_xticks([])
    ax.set_xlim(0, 7.2)
    ax.set_ylim(-1.5, 2.6)
    ax.axvline(2.5, color="black", lw=0.8, ls=":")
    ax.axvline(5.8, color="black", lw=0.8, ls=":")
    ax.text(2.55, -0.75, "C's share of s lands:\nA and B stop polling", fontsize=7.5)
    ax.text(5.85, -0.75, "C's s+1 lands", fontsize=7.5)
    ax.text(0.05, -1.3, "A writes buf 0 again only at s+2, after it has read every cluster's "
            "s+1,\nwhich each wrote after reading s from buf 0: no share is overwritten before "
            "it is read.", fontsize=7.5)
    for s in ["top", "right", "bottom"]:
        ax.spines[s].set_visible(False)
    fig.savefig(os.path.join(HERE, "persistent_stamps.png"), dpi=130, metadata=META)
    plt.close(fig)


# ------------------------------------------------------------------ programmatic dependent launch

def pdl():
    fig, axes = plt.subplots(2, 1, figsize=(12, 4.4), sharex=True)
    spans = [
        ("one stream, plain launches: the rows kernel before each epoch, on its path", [
            (1, 0.0, 1.3, "rows of epoch e", "0.6"),
            (0, 1.3, 9.6, "mlp_persistent: epoch e (235 steps)", C[0]),
            (1, 9.6, 10.9, "rows of e+1", "0.6"),
            (0, 10.9, 13.0, "epoch e+1 ...", C[0])]),
        ("one stream, the rows kernel a programmatic dependent launch: beside the epoch", [
            (0, 0.0, 9.2, "mlp_persistent: epoch e (235 steps)", C[0]),
            (1, 0.25, 1.55, "rows of e+1", C[2]),
            (0, 9.2, 13.0, "epoch e+1 ...", C[0])]),
    ]
    for ax, (title, segs) in zip(axes, spans):
        for lane, a, b, text, color in segs:
            ax.barh(1 - lane, b - a, left=a, height=0.6, color=color, alpha=0.8,
                    edgecolor="white")
            ax.text((a + b) / 2, 1 - lane, text, ha="center", va="center", fontsize=7.5)
        ax.set_yticks([1, 0])
        ax.set_yticklabels(["120 SMs (15 clusters of 8)", "the other 12 SMs"], fontsize=8)
        ax.set_title(title, fontsize=9, loc="left")
        ax.set_xlim(0, 13)
        ax.set_ylim(-0.45, 1.45)
        ax.set_xticks([])
        for s in ["top", "right"]:
            ax.spines[s].set_visible(False)
    ax = axes[1]
    ax.annotate("every block of mlp_persistent has executed griddepcontrol.launch_dependents: "
                "the dependent may start", xy=(0.3, 0.3), xytext=(1.8, 0.5), fontsize=7,
                va="center", arrowprops=dict(arrowstyle="->", lw=0.8))
    ax.annotate("the next launch waits for both (stream order)", xy=(9.2, 0.68),
                xytext=(9.6, 0.5), fontsize=7, va="center",
                arrowprops=dict(arrowstyle="->", lw=0.8))
    ax.set_xlabel("time (not to scale)", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "persistent_pdl.png"), dpi=130, metadata=META)
    plt.close(fig)


# ------------------------------------------------------------------ one step in time

def read_stages(gpu_file):
    path = os.path.join(ROOT, "plots", "results", gpu_file)
    out, gpu = {}, ""
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            out[(r["impl"], int(r["batch"]), r["launch"])] = float(r["us"])
            gpu = r["gpu"]
    return out, gpu


def step():
    stages, gpu = read_stages("NVIDIA_H100_80GB_HBM3.stages")
    fig, axes = plt.subplots(2, 1, figsize=(12.5, 5.6))
    for ax, batch in zip(axes, [256, 32]):
        for i, impl in enumerate(TRAINERS):
            y = len(TRAINERS) - 1 - i
            t = 0.0
            for ph in PHASES:
                d = stages[(impl, batch, ph)]
                ax.barh(y, d, left=t, height=0.62, color=PHASE_COLOR[ph], edgecolor="white",
                        hatch="///" if ph == "z2_shares" else None, alpha=0.85)
                if ph in ("forward", "softmax_backward"):
                    ax.plot([t + d, t + d], [y - 0.42, y + 0.42], color="black", lw=2.2)
                if ph == "small_step":
                    ax.plot([t + d], [y + 0.38], marker="v", color="black", ms=5)
                t += d
            ax.text(t + 0.25, y, f"{stages[(impl, batch, 'step_in_epoch_graph')]:.1f} µs",
                    va="center", fontsize=8)
        ax.set_yticks(range(len(TRAINERS)))
        ax.set_yticklabels(reversed(TRAINERS), fontsize=8.5)
        ax.set_title(f"batch {batch}", fontsize=9, loc="left")
        ax.set_xlim(0, 40 if batch == 256 else 12.5)
        for s in ["top", "right"]:
            ax.spines[s].set_visible(False)
        ax.tick_params(axis="x", labelsize=8)
    axes[1].set_xlabel("µs of a step (block 0's clock, shared out over the epoch's time)",
                       fontsize=8.5)
    handles = [Rectangle((0, 0), 1, 1, color=PHASE_COLOR[p], alpha=0.85,
                         hatch="///" if p == "z2_shares" else None) for p in PHASES]
    labels = list(PHASES)
    handles += [plt.Line2D([0], [0], color="black", lw=2.2),
                plt.Line2D([0], [0], color="black", marker="v", lw=0)]
    labels += ["cluster barrier (ends the phase)", "waits on dz1_full (mbarrier)"]
    fig.suptitle(f"one step of the persistent trainers, phase by phase ({gpu}, the committed "
                 "run); hatched: the clusters meet (z2's stamped shares)", fontsize=9.5,
                 y=0.985)
    fig.legend(handles, labels, loc="upper center", ncol=4, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 0.945))
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    fig.savefig(os.path.join(HERE, "persistent_step.png"), dpi=130, metadata=META)
    plt.close(fig)


def main():
    owners()
    cluster()
    stamps()
    pdl()
    step()


if __name__ == "__main__":
    main()
