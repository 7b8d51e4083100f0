#!/usr/bin/env python3
"""Chapter 06's explanatory figures (not results: no GPU was asked for these).

    python3 06_streams_prefetch/figures/make_figures.py

writes, beside this script:

schedules.png   the pipelines of the chapter as boxes in time on the three engines that
                can work at once (the copy engine host-to-device, the SMs, the copy engine
                device-to-host), for six chunks whose copy-in, kernel and copy-out each take
                one unit: serial, chunks on one stream, two streams, three or more streams
                (and the double buffer). The schedules are computed, not drawn by hand: each
                engine runs one op at a time, an op starts when the op before it in its
                stream (and, for the double buffer, its slot) is done, and among ready ops
                an engine takes the one issued first.
copy_paths.png  how a copy reaches GPU memory from pageable memory (through the driver's
                pinned staging buffer, the CPU copying) and from pinned memory (the copy
                engine reads the pages itself).
pcie_duplex.png what each direction of the PCIe link carries when both copies run at once.

Needs matplotlib only (any python3 that has it).
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
COLOURS = {"h2d": "#4c72b0", "kernel": "#55a868", "d2h": "#dd8452"}  # as plot_extra.py
ENGINES = ["h2d", "kernel", "d2h"]
ENGINE_NAMES = {"h2d": "copy engine\nhost to device", "kernel": "SMs\n(kernels)",
                "d2h": "copy engine\ndevice to host"}
CHUNKS = 6


# --- schedules ---------------------------------------------------------------------------

def op(kind, stream, chunk, length=1.0):
    return {"kind": kind, "stream": stream, "chunk": chunk, "len": length, "after": []}


def in_stream_order(ops):
    """Each op waits for the op issued before it in the same stream."""
    last = {}
    for i, o in enumerate(ops):
        if o["stream"] in last:
            o["after"].append(last[o["stream"]])
        last[o["stream"]] = i
    return ops


def depth_first(k):
    ops = []
    for c in range(CHUNKS):
        ops += [op(kind, c % k, c) for kind in ENGINES]
    return in_stream_order(ops)


def double_buffer():
    """One stream per stage, two device slots a direction: chunk c's copy-in reuses the
    input slot of chunk c - 2 (after its kernel), its kernel the output slot of c - 2
    (after its copy-out)."""
    ops, index = [], {}
    for c in range(CHUNKS):
        for s, kind in enumerate(ENGINES):
            index[(kind, c)] = len(ops)
            ops.append(op(kind, s, c))
    in_stream_order(ops)
    for c in range(CHUNKS):
        ops[index[("kernel", c)]]["after"].append(index[("h2d", c)])
        ops[index[("d2h", c)]]["after"].append(index[("kernel", c)])
        if c >= 2:
            ops[index[("h2d", c)]]["after"].append(index[("kernel", c - 2)])
            ops[index[("kernel", c)]]["after"].append(index[("d2h", c - 2)])
    return ops


def simulate(ops):
    """Start and end of every op: an engine runs one op at a time and takes, among the ops
    whose dependencies are done, the one issued first."""
    end = [None] * len(ops)
    start = [None] * len(ops)
    free = {e: 0.0 for e in ENGINES}
    t = 0.0
    while any(e is None for e in end):
        started = False
        for e in ENGINES:
            if free[e] > t:
                continue
            for i, o in enumerate(ops):
                if o["kind"] != e or start[i] is not None:
                    continue
                if all(end[d] is not None and end[d] <= t for d in o["after"]):
                    start[i], end[i] = t, t + o["len"]
                    free[e] = end[i]
                    started = True
                    break
        if not started:
            pending = [x for x in end if x is not None and x > t] + [f for f in free.values() if f > t]
            t = min(pending)
    return start, end


def draw_schedule(ax, title, ops, start, end, note=None, whole=False):
    rows = {e: 2 - i for i, e in enumerate(ENGINES)}
    for i, o in enumerate(ops):
        y = rows[o["kind"]]
        ax.add_patch(Rectangle((start[i], y - 0.38), end[i] - start[i], 0.76,
                               facecolor=COLOURS[o["kind"]], edgecolor="white", linewidth=1.5))
        label = "whole array" if whole else f"{o['chunk']}"
        if not whole and o.get("show_stream", True):
            label += f"\ns{o['stream']}"
        ax.text((start[i] + end[i]) / 2, y, label, ha="center", va="center", color="white",
                fontsize=8)
    total = max(end)
    ax.axvline(CHUNKS, color="#444444", linestyle="--", linewidth=1)
    ax.text(total + 0.25, 1, f"{total:g} units", va="center", fontsize=9)
    ax.set_yticks([rows[e] for e in ENGINES])
    ax.set_yticklabels([ENGINE_NAMES[e] for e in ENGINES], fontsize=8)
    ax.set_ylim(-0.6, 2.6)
    ax.set_xlim(0, 3 * CHUNKS + 2.2)
    ax.set_title(title, loc="left", fontsize=10)
    if note:
        ax.set_title(note, loc="right", fontsize=8, color="#333333")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def figure_schedules(path):
    serial = in_stream_order([op(k, 0, 0, CHUNKS) for k in ENGINES])
    panels = [
        ("pinned_serial: one stream, the whole array", serial, True,
         "H2D + kernel + D2H: three times the bound"),
        ("depth_k1: chunks, still one stream", depth_first(1), False,
         "in one stream everything runs in order: nothing overlaps"),
        ("depth_k2: two streams", depth_first(2), False,
         "a stream's next copy-in waits for its own copy-out:\n"
         "two engines busy at a time, about 3/2 of the bound"),
        ("depth_k3 and more (depth_k4, depth_k8, ...)", depth_first(3), False,
         "all three engines busy: the bound plus the first copy-in\n"
         "and the last copy-out (fill and drain)"),
        ("double_buffer: one stream per stage, two slots a direction", double_buffer(), False,
         "the same schedule with device memory for two chunks a direction;\n"
         "s0, s1, s2 = the copy-in, compute and copy-out streams"),
    ]
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 2.0 * len(panels) + 0.8), sharex=True)
    for ax, (title, ops, whole, note) in zip(axes, panels):
        start, end = simulate(ops)
        draw_schedule(ax, title, ops, start, end, note, whole)
    axes[-1].set_xlabel("time, in units of one chunk's copy (copy-in, kernel and copy-out "
                        "of a chunk each take one unit); dashed line: the bound, "
                        "max(H2D, kernel, D2H) = 6 units", fontsize=9)
    fig.suptitle("Six chunks through three engines: the box's number is the chunk, s the stream",
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- copy paths --------------------------------------------------------------------------

def box(ax, x, y, w, h, text, colour):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
                                facecolor=colour, edgecolor="#333333", linewidth=1))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=9)


def arrow(ax, x0, y0, x1, y1, text, colour="#333333", above=True):
    ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle="-|>", mutation_scale=14,
                                 color=colour, linewidth=1.6))
    ax.text((x0 + x1) / 2, (y0 + y1) / 2 + (0.16 if above else -0.16), text, ha="center",
            va="bottom" if above else "top", fontsize=8, color=colour)


def figure_copy_paths(path):
    fig, ax = plt.subplots(figsize=(11, 4.6))
    host, pin, gpu = "#f2f2f2", "#d9e6f5", "#dcefd9"
    # the host side and the GPU side
    ax.add_patch(Rectangle((0.1, 0.2), 6.7, 4.3, facecolor="none", edgecolor="#999999",
                           linestyle=":"))
    ax.text(0.2, 4.35, "host: CPU and its memory", fontsize=9, color="#555555")
    ax.add_patch(Rectangle((8.4, 0.2), 2.5, 4.3, facecolor="none", edgecolor="#999999",
                           linestyle=":"))
    ax.text(8.5, 4.35, "GPU", fontsize=9, color="#555555")
    ax.text(7.6, 4.35, "PCIe", fontsize=9, color="#555555", ha="center")

    # pageable
    ax.text(0.25, 3.75, "from malloc'ed (pageable) memory: cudaMemcpy, naive_pageable",
            fontsize=10, weight="bold")
    box(ax, 0.3, 2.55, 2.2, 0.9, "user buffer\n(pageable: the OS may\nmove or swap a page)", host)
    box(ax, 3.9, 2.55, 2.4, 0.9, "driver's staging buffer\n(pinned, small)", pin)
    box(ax, 8.6, 2.55, 2.1, 0.9, "GPU memory", gpu)
    arrow(ax, 2.55, 3.0, 3.85, 3.0, "CPU memcpy,\npiece by piece")
    arrow(ax, 6.35, 3.0, 8.55, 3.0, "copy engine (DMA)", COLOURS["h2d"])
    ax.text(3.0, 2.3, "the CPU copies every byte once more, and the call returns only when its\n"
            "part is done: the copy runs at the speed of a CPU memcpy and the hand-overs,\n"
            "not of the link, and overlaps nothing", fontsize=8, color="#a33", va="top")

    # pinned
    ax.text(0.25, 1.55, "from page-locked (pinned) memory: cudaMallocHost or cudaHostRegister",
            fontsize=10, weight="bold")
    box(ax, 0.3, 0.35, 2.2, 0.9, "user buffer\n(pinned: its pages stay\nwhere they are)", pin)
    box(ax, 8.6, 0.35, 2.1, 0.9, "GPU memory", gpu)
    arrow(ax, 2.55, 0.8, 8.55, 0.8, "the copy engine reads the pages itself (DMA), at link speed;"
          "\nthe CPU only issues the copy, so cudaMemcpyAsync returns at once and the copy can "
          "overlap kernels\nand the other direction",
          COLOURS["h2d"])
    ax.set_xlim(0, 11)
    ax.set_ylim(0, 4.7)
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- PCIe in both directions ---------------------------------------------------------------

def figure_pcie_duplex(path):
    fig, ax = plt.subplots(figsize=(11, 4.2))
    box(ax, 0.1, 0.9, 1.7, 2.6, "host\n(CPU, memory\ncontroller,\nroot complex)", "#f2f2f2")
    box(ax, 9.2, 0.9, 1.7, 2.6, "GPU\n(copy engines)", "#dcefd9")
    # downstream: host to GPU
    ax.add_patch(FancyArrowPatch((1.9, 2.75), (9.1, 2.75), arrowstyle="-|>", mutation_scale=16,
                                 color="#555555", linewidth=2))
    ax.text(5.5, 3.75, "host to GPU: one direction of the x16 link", ha="center", fontsize=9,
            weight="bold")
    ax.text(5.5, 2.9, "H2D's data (read completions, a header each)\n"
            "acknowledgements and flow-control credits for D2H's writes", ha="center",
            va="bottom", fontsize=8.5, color=COLOURS["h2d"])
    # upstream: GPU to host
    ax.add_patch(FancyArrowPatch((9.1, 1.65), (1.9, 1.65), arrowstyle="-|>", mutation_scale=16,
                                 color="#555555", linewidth=2))
    ax.text(5.5, 1.5, "D2H's data (memory writes, a header each)\n"
            "H2D's read requests (headers only)\n"
            "acknowledgements and flow-control credits for H2D's completions", ha="center",
            va="top", fontsize=8.5, color=COLOURS["d2h"])
    ax.text(5.5, 0.45, "GPU to host: the other direction", ha="center", fontsize=9,
            weight="bold")
    ax.text(5.5, 0.05, "Alone, a copy's data uses one direction and the other carries little. "
            "Together, each direction carries data and the other copy's overhead,\nand both "
            "copies share the GPU's host interface and the host's memory. Which of these slows "
            "the two copies down is not measured here.", ha="center", fontsize=8,
            color="#333333")
    ax.set_xlim(0, 11)
    ax.set_ylim(-0.3, 4.0)
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    figure_schedules(os.path.join(HERE, "schedules.png"))
    figure_copy_paths(os.path.join(HERE, "copy_paths.png"))
    figure_pcie_duplex(os.path.join(HERE, "pcie_duplex.png"))
    for name in ("schedules.png", "copy_paths.png", "pcie_duplex.png"):
        print(os.path.join(HERE, name))


if __name__ == "__main__":
    main()
