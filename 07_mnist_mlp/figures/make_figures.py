#!/usr/bin/env python3
"""Chapter 07's explanatory figures.

    python3 07_mnist_mlp/figures/make_figures.py

writes, beside this script:

dataflow.png   one training step of the 784-H-10 network: what is computed (forward,
               backward, update), from which chapter each piece of code comes, and which
               of the fused step's five launches computes it (the colours).
graph.png      CUDA graphs: stream capture records the step's launches with their
               arguments, instantiation makes an executable graph, and every replay runs
               the same launches with the same arguments; the batch position therefore
               lives in device memory (the cursor), which the kernels read and advance.
launches.png   a step's time (an epoch's time over its steps, from the committed CSVs of
               plots/results/) for each trainer of part one, with its launches a step.

Needs matplotlib only (any python3 that has it).
"""
import csv
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "..", "..", "plots", "results")

# the fused step's five launches, in order
LAUNCHES = [
    ("gemm_forward", "#4c72b0"),
    ("output_layer", "#dd8452"),
    ("hidden_backward", "#55a868"),
    ("gemm_dW1", "#8172b3"),
    ("update_and_gather", "#c44e52"),
]
COLOUR = dict(LAUNCHES)


def box(ax, x, y, w, h, text, face="white", edge="black", size=9, style="round,pad=0.02",
        weight="normal", colour="black"):
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle=style, fc=face, ec=edge,
                                lw=1.0))
    ax.text(x, y, text, ha="center", va="center", fontsize=size, weight=weight, color=colour)


def arrow(ax, a, b, colour="black", style="-|>", rad=0.0, lw=1.1, ls="-"):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle=style, mutation_scale=11, color=colour, lw=lw,
                                 linestyle=ls, connectionstyle=f"arc3,rad={rad}",
                                 shrinkA=2, shrinkB=2))


# --- dataflow ----------------------------------------------------------------------------

def dataflow():
    fig, ax = plt.subplots(figsize=(13.5, 7.2))
    ax.set_xlim(0, 16)
    ax.set_ylim(0, 9.4)
    ax.axis("off")
    tw, th = 1.55, 0.62  # a tensor's box
    ow, oh = 2.55, 0.95  # an operation's box

    def tensor(x, y, text):
        box(ax, x, y, tw, th, text, face="#f4f4f4", size=9)

    def op(x, y, text, launch, w=ow, h=oh):
        box(ax, x, y, w, h, text, face=COLOUR[launch], edge=COLOUR[launch], size=8.6,
            colour="white", weight="bold")

    for y, name in [(8.55, "forward"), (5.35, "backward"), (2.15, "update")]:
        ax.text(0.15, y, name, fontsize=12, weight="bold", va="center")

    # forward
    tensor(0.95, 7.6, "pixels\n60,000 x 784 B")
    op(3.05, 7.6, "gather, normalize\n(07; 02's transpose)", "update_and_gather", w=2.45)
    tensor(5.1, 7.95, r"$x$  B x 784")
    tensor(5.1, 7.2, r"$x^T$  784 x B")
    op(7.25, 7.95, r"$z_1 = x\,W_1$" + "\n(05's sgemm_best)", "gemm_forward", w=2.35)
    tensor(9.35, 7.95, r"$z_1$  B x H")
    op(12.0, 7.95, r"$a_1 = \max(z_1 + b_1, 0)$,  $z_2 = a_1 W_2 + b_2$" + "\nsoftmax, loss "
       "(03's warp sums)", "output_layer", w=3.5)
    tensor(14.85, 7.95, "loss,  p\nB x 10")
    arrow(ax, (1.73, 7.6), (1.83, 7.6))
    arrow(ax, (4.28, 7.75), (4.32, 7.9))
    arrow(ax, (4.28, 7.45), (4.32, 7.25))
    arrow(ax, (5.88, 7.95), (6.07, 7.95))
    arrow(ax, (8.43, 7.95), (8.57, 7.95))
    arrow(ax, (10.13, 7.95), (10.25, 7.95))
    arrow(ax, (13.75, 7.95), (14.07, 7.95))

    # backward
    op(14.2, 5.5, r"$dz_2 = (p - \mathrm{onehot}(y)) / B$" + "\n" + r"$db_2 = \sum_{rows} dz_2$",
       "output_layer", w=2.9)
    tensor(11.6, 5.5, r"$dz_2$  B x 10")
    op(8.7, 5.5, r"$dz_1 = (dz_2 W_2^T) \odot [z_1 + b_1 > 0]$" + "\n" +
       r"$dW_2 = a_1^T dz_2$,  $db_1 = \sum_{rows} dz_1$", "hidden_backward", w=3.6, h=1.05)
    tensor(5.9, 5.5, r"$dz_1$  B x H")
    op(3.5, 5.5, r"$dW_1 = x^T dz_1$" + "\n(05's sgemm_best, " + r"$\beta = 1$)", "gemm_dW1")
    arrow(ax, (14.85, 7.63), (14.5, 6.0))
    arrow(ax, (12.75, 5.5), (12.38, 5.5))
    arrow(ax, (10.82, 5.5), (10.5, 5.5))
    arrow(ax, (6.9, 5.5), (6.68, 5.5))
    arrow(ax, (5.12, 5.5), (4.78, 5.5))
    arrow(ax, (9.35, 7.63), (9.0, 6.03), ls="--", colour="#666666")
    ax.text(9.35, 6.75, "z1 read again", fontsize=8, color="#666666")
    arrow(ax, (5.1, 6.88), (4.0, 6.0), ls="--", colour="#666666")

    # update
    box(ax, 8.0, 3.55, 12.4, 0.55, "gradients land in the velocity v (which holds " + r"$\mu v$"
        + " from the last update): atomics, or the GEMM's " + r"$\beta = 1$" +
        ": no gradient array, no clearing pass", face="white", edge="#999999", size=9)
    for x0 in (3.5, 8.7, 14.2):
        arrow(ax, (x0, 4.98 if x0 != 8.7 else 4.95), (x0, 3.85), colour="#666666")
    op(5.6, 2.15, r"$w \leftarrow w - lr \cdot v$,   $v \leftarrow \mu v$" + "\nall 0.8 M "
       "parameters, one float4 pass (01)", "update_and_gather", w=4.6)
    op(11.2, 2.15, "the gather of the next batch,\nin the same grid: x, " + r"$x^T$" +
       " of the next step", "update_and_gather", w=4.0)
    arrow(ax, (8.0, 3.27), (6.6, 2.66), colour="#666666")

    # legend: the launches
    y = 0.62
    ax.text(0.15, y + 0.55, "the fused step's five launches (colours), in order:", fontsize=9.5)
    x = 0.3
    for i, (name, c) in enumerate(LAUNCHES):
        box(ax, x + 1.35, y, 2.7, 0.5, f"{i + 1}  {name}", face=c, edge=c, size=9,
            colour="white", weight="bold")
        x += 3.1
    fig.suptitle("One training step, B images: what is computed, and which launch computes it",
                 fontsize=13)
    fig.savefig(os.path.join(HERE, "dataflow.png"), dpi=110, bbox_inches="tight")
    plt.close(fig)


# --- graph -------------------------------------------------------------------------------

def graph():
    fig, ax = plt.subplots(figsize=(13.5, 6.4))
    ax.set_xlim(0, 16)
    ax.set_ylim(0, 8.6)
    ax.axis("off")
    heads = [(2.0, "1. capture (host)"), (6.9, "2. instantiate"), (12.3, "3. replay, every step")]
    for x, t in heads:
        ax.text(x, 8.25, t, fontsize=12, weight="bold", ha="center")

    # capture: the host's calls
    calls = ["cudaStreamBeginCapture(s)", "gemm<<<...>>>(x, W1, z1)",
             "output_layer<<<...>>>(z1, ..., cursor)", "hidden_backward<<<...>>>(..., cursor)",
             "gemm<<<...>>>(xt, dz1, v)", "update<<<...>>>(w, v, ..., cursor)",
             "cudaStreamEndCapture(s, &graph)"]
    for i, c in enumerate(calls):
        y = 7.45 - i * 0.78
        kern = 1 <= i <= 5
        box(ax, 2.0, y, 3.8, 0.56, c, face=LAUNCHES[i - 1][1] if kern else "#f4f4f4",
            edge=LAUNCHES[i - 1][1] if kern else "black", size=8.3,
            colour="white" if kern else "black", style="square,pad=0.02")
    ax.text(2.0, 1.55, "nothing runs: each launch becomes a node\nthat stores its kernel, grid and"
            " arguments\n(by value: the pointers, the ints)", ha="center", fontsize=8.6)

    # the graph
    for i, (name, c) in enumerate(LAUNCHES):
        y = 7.2 - i * 1.0
        box(ax, 6.9, y, 2.5, 0.6, name, face=c, edge=c, size=9, colour="white", weight="bold")
        if i:
            arrow(ax, (6.9, y + 0.7), (6.9, y + 0.32))
    arrow(ax, (3.95, 4.5), (5.6, 4.5), lw=1.5)
    ax.text(6.9, 1.75, "cudaGraphInstantiate: checked and\nprepared once (cudaGraphExec_t)",
            ha="center", fontsize=8.6)

    # replays
    arrow(ax, (8.2, 4.5), (9.4, 4.5), lw=1.5)
    for r in range(3):
        x = 10.5 + r * 1.85
        ax.text(x, 7.65, f"cudaGraphLaunch\nstep {r}", ha="center", fontsize=8.6)
        for i, (name, c) in enumerate(LAUNCHES):
            y = 7.0 - i * 0.62
            box(ax, x, y, 1.45, 0.42, "", face=c, edge=c, style="square,pad=0.0")
    ax.text(15.75, 5.75, "...", fontsize=16, ha="center")
    ax.text(12.4, 3.55, "the same kernels with the same arguments, every replay", ha="center",
            fontsize=8.8)
    # the cursor
    for r in range(3):
        x = 10.5 + r * 1.85
        box(ax, x, 2.85, 1.45, 0.5, f"cursor = {256 * r}", face="#fff3c4", edge="#b8860b",
            size=8.6)
    ax.text(12.4, 1.55, "device memory, read by output_layer and update,\nadvanced (+= B) by "
            "hidden_backward: the batch's position\nis data, not an argument",
            ha="center", fontsize=8.6)
    ax.text(8.0, 0.35, "To change an argument instead: cudaGraphExecKernelNodeSetParams (one node) "
            "or cudaGraphExecUpdate (a new graph of the same shape), host calls between replays; "
            "a whole-epoch graph\nhas no \"between\": its steps are captured one after another, "
            "each with its own arguments.", ha="center", fontsize=8.6, color="#444444")
    fig.suptitle("CUDA graphs: capture once, instantiate once, replay every step", fontsize=13)
    fig.savefig(os.path.join(HERE, "graph.png"), dpi=110, bbox_inches="tight")
    plt.close(fig)


# --- launches ----------------------------------------------------------------------------

# part one's trainers, in the table's order, and their launches a step
TRAINERS = [
    ("naive", "18 launches, 2 copies,\na sync after each"),
    ("resident", "19 launches"),
    ("best_kernels", "19 launches"),
    ("fused", "5 launches"),
    ("fed", "6 launches, host-fed"),
    ("step_graph", "5, one graph launch"),
    ("epoch_graph", "5, one graph an epoch"),
    ("optimized", "3 (or 5 + a branch)"),
]


def step_us(gpu_file):
    """{(trainer, batch): us a step} from a committed CSV: the epoch over its steps."""
    out = {}
    with open(gpu_file, newline="") as f:
        for r in csv.DictReader(f):
            if r["chapter"] != "07_mnist_mlp":
                continue
            b = int(r["size"])
            out[(r["kernel"], b)] = 1e3 * float(r["time_ms"]) / math.ceil(60000 / b)
    return out


def launches():
    files = [("H100", "NVIDIA_H100_80GB_HBM3.csv"), ("H200", "NVIDIA_H200.csv")]
    data = {g: step_us(os.path.join(RESULTS, f)) for g, f in files}
    fig, axes = plt.subplots(1, 2, figsize=(13.5, 5.0), sharey=True)
    names = [t for t, _ in TRAINERS][::-1]
    for ax, batch in zip(axes, (256, 32)):
        for k, (g, c) in enumerate([("H100", "#4c72b0"), ("H200", "#dd8452")]):
            ys = [i + (0.2 if k == 0 else -0.2) for i in range(len(names))]
            vals = [data[g].get((n, batch), float("nan")) for n in names]
            ax.barh(ys, vals, height=0.38, color=c, label=g)
        ax.set_xscale("log")
        ax.set_xlim(8, 20000)
        ax.set_title(f"batch {batch} ({math.ceil(60000 / batch)} steps an epoch)")
        ax.set_xlabel("us a step (epoch time / steps)")
        ax.grid(axis="x", which="both", alpha=0.25)
        for i, n in enumerate(names):
            v = data["H100"].get((n, batch))
            if v:
                ax.text(v * 1.25, i + 0.2, f"{v:.0f} us", va="center", fontsize=8)
    axes[0].set_yticks(range(len(names)))
    axes[0].set_yticklabels([f"{n}\n{dict(TRAINERS)[n]}" for n in names], fontsize=8.5)
    axes[1].legend(loc="lower right")
    fig.suptitle("A step's time and its launches (committed runs, plots/results/)", fontsize=13)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "launches.png"), dpi=110, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    dataflow()
    graph()
    launches()
