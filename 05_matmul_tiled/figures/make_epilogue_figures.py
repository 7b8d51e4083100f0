#!/usr/bin/env python3
"""Draws the figures of the part on loading C through shared memory into this folder
(python3 make_epilogue_figures.py; make_figures.py and make_tc_figures.py draw the rest of
the chapter's).

  cload_epilogue.png  one SM's time over two tiles, a schematic: the persistent kernel
                      (step 7) reads C from DRAM or the L2 at the start of its epilogue while
                      the tensor cores wait; step 18 has the copy engine (TMA) bring C in eight
                      chunks of 16 KB into two shared-memory buffers, the first two under the
                      end of the main loop and the rest under the epilogue, each as soon as a
                      buffer is handed back, so the next tile's main loop starts sooner
  clock_trace.png     measured: the SM clock (and the reported power) of an H100 while cuBLAS
                      bf16 runs 8192 x 8192 x 32768 for about 1.7 s, twice, from the committed
                      nvidia-smi trace; and step 18's time at that size under three timing
                      protocols, with its time for one launch under Nsight Compute

cload_epilogue.png is a drawing: its lengths are proportions, not measurements. The numbers of
clock_trace.png come from records/runs (the trace is read from its CSV, the three timings are
written into clock_trace()).
"""
import os
import sys
from datetime import datetime

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the chapter's palette and drawing helpers, shared with the other figures
from make_figures import BLUE, GREEN, GREY, LIGHT, ORANGE, PURPLE, RED, box, save  # noqa: E402,F401

HERE = os.path.dirname(os.path.abspath(__file__))
TRACE = os.path.join(HERE, "..", "records", "runs", "tc_clock_trace_cublas_H100.csv")


# ------------------------------------------------------------------ the epilogue in time

def cut(ax, x, y, h):
    """Two slanted strokes across a bar at x: the bar is cut short here."""
    for dx in (-0.07, 0.07):
        ax.plot([x + dx - 0.08, x + dx + 0.08], [y - 0.1, y + h + 0.1], color="black", lw=0.9)


def cload_epilogue():
    fig, ax = plt.subplots(figsize=(12, 4.2))
    S = 2.5  # drawing units per time unit around the epilogue (a main loop is 10 time units)
    E0 = 5.4  # where tile i's main loop ends and its epilogue starts
    END = 12.8  # where the drawing of tile i+1's main loop is cut
    H = 0.8
    # top row: the persistent kernel
    y = 4.0
    read, store = 1.0 * S, 0.5 * S
    box(ax, 0, y, 1.0, H, fc=LIGHT[BLUE], ec=BLUE)
    box(ax, 1.4, y, E0 - 1.4, H, fc=LIGHT[BLUE], ec=BLUE,
        text="main loop of tile i\n(tensor cores busy)", fs=7)
    cut(ax, 1.2, y, H)
    box(ax, E0, y, read, H, fc=LIGHT[RED], ec=RED, hatch="///", lw=1.0)
    ax.text(E0 + read / 2, y + H / 2, "read C\n(128 KB from DRAM/L2,\ntensor cores idle)",
            ha="center", va="center", fontsize=6.5,
            bbox=dict(fc="white", ec="none", alpha=0.85, pad=1))
    box(ax, E0 + read, y, store, H, fc=LIGHT[ORANGE], ec=ORANGE,
        text="store\nalpha*acc\n+ beta*C", fs=6.5)
    t7 = E0 + read + store
    box(ax, t7, y, END - t7, H, fc=LIGHT[BLUE], ec=BLUE,
        text="main loop of tile i+1", fs=7)
    cut(ax, END, y, H)
    ax.text(-0.4, y + H / 2, "persistent kernel\n(step 7)", ha="right", va="center",
            fontsize=8)
    # bottom row: step 18, its epilogue reading C chunk by chunk from shared memory
    y, ly, lh = 1.9, 1.05, 0.45  # the main row, and the copy engine's lane under it
    box(ax, 0, y, 1.0, H, fc=LIGHT[BLUE], ec=BLUE)
    box(ax, 1.4, y, E0 - 1.4, H, fc=LIGHT[BLUE], ec=BLUE,
        text="main loop of tile i\n(tensor cores busy)", fs=7)
    cut(ax, 1.2, y, H)
    chunks, epi = 8, 0.9 * S
    s = epi / chunks  # one chunk's turn in the epilogue
    bufcol = [GREEN, PURPLE]  # shared-memory buffer 0 and 1
    for c in range(chunks):
        box(ax, E0 + c * s, y, s, H, fc=LIGHT[ORANGE], ec=ORANGE, text=str(c), fs=6.5)
        # chunk c's load: 0 and 1 under the end of the main loop, c >= 2 when chunk c - 2
        # has been read and its buffer handed back
        x0 = E0 - 1.0 + 0.42 * c if c < 2 else E0 + (c - 1) * s
        box(ax, x0, ly, 0.9 * s, lh, fc=LIGHT[bufcol[c % 2]], ec=bufcol[c % 2], text=str(c),
            fs=6)
        if c >= 2:
            # the fence and the hand-back at the end of chunk c - 2's turn
            ax.plot([x0, x0], [ly + lh, y], color=PURPLE, lw=0.9)
    t18 = E0 + epi
    box(ax, t18, y, END - t18, H, fc=LIGHT[BLUE], ec=BLUE,
        text="main loop of tile i+1", fs=7)
    cut(ax, END, y, H)
    ax.plot([0, END], [ly - 0.08] * 2, color=GREY, lw=0.5)
    ax.text(-0.4, y + H / 2, "step 18\n(C through shared memory)", ha="right", va="center",
            fontsize=8)
    ax.text(-0.4, ly + lh / 2, "copy engine (TMA),\nproducer thread 2", ha="right",
            va="center", fontsize=7)
    ax.text(E0 - 1.15, ly + lh / 2, "chunks 0 and 1 (of 8) load while\nthe main loop still "
            "runs", fontsize=6.5, va="center", ha="right")
    ax.text(E0 + 7 * s + 0.15, ly + lh / 2, "chunks 2-7 load into the freed buffers under "
            "the epilogue,\neach once the chunk two before it has been read", fontsize=6.5,
            va="center")
    ax.text(t18 - 0.1, y + H + 0.08, "epilogue: for each chunk, read it from shared memory, "
            "store alpha*acc + beta*C", fontsize=6.5, va="bottom", ha="right")
    # the time saved: tile i+1 starts earlier by the difference of the two epilogues
    for x, y0, y1 in [(t18, y + H, 3.55), (t7, 3.35, 4.0)]:
        ax.plot([x, x], [y0, y1], color=GREY, lw=0.7, ls="--")
    ax.annotate("", xy=(t18, 3.45), xytext=(t7, 3.45),
                arrowprops=dict(arrowstyle="<->", color=RED, lw=1.1, shrinkA=0, shrinkB=0))
    ax.text(t7 + 0.15, 3.45, "time saved per tile", color=RED, fontsize=8, va="center")
    # key
    ky = 0.2
    box(ax, 0, ky, 0.35, 0.3, fc=LIGHT[GREEN], ec=GREEN)
    box(ax, 0.4, ky, 0.35, 0.3, fc=LIGHT[PURPLE], ec=PURPLE)
    ax.text(0.9, ky + 0.15, "shared-memory buffers 0 and 1: 2 buffers x 16 KB (a chunk of C is "
            "128 rows x 32 fp32; 8 chunks a tile)", fontsize=6.5, va="center")
    ky = -0.3
    ax.plot([0.55, 0.55], [ky, ky + 0.3], color=PURPLE, lw=0.9)
    ax.text(0.9, ky + 0.15, "proxy fence before a buffer is handed back; the next chunk's "
            "load into it starts there", fontsize=6.5, va="center")
    ax.annotate("", xy=(END + 0.6, -0.7), xytext=(0, -0.7),
                arrowprops=dict(arrowstyle="-|>", color="black", lw=0.8))
    ax.text(END + 0.7, -0.7, "time (one SM)", fontsize=7.5, va="center")
    ax.text(0, -1.0, "A schematic, drawn to scale except the main loops, cut short (//): a "
            "whole main loop is about ten times as long as step 7's read of C.", fontsize=6.5,
            va="center", color=GREY)
    ax.set_xlim(-3.4, END + 2.2)
    ax.set_ylim(-1.15, 4.9)
    ax.axis("off")
    fig.tight_layout()
    save(fig, "cload_epilogue.png")


# ------------------------------------------------------------------ the clock trace

def read_trace(path):
    """[(seconds, SM MHz, W)] of an nvidia-smi --format=csv log, seconds from its first row."""
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 3:
                continue
            t = datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            rows.append((t, float(parts[1].split()[0]), float(parts[2].split()[0])))
    return [(t - rows[0][0], mhz, w) for t, mhz, w in rows]


def find_runs(rows, count=2, quiet=0.5):
    """Indices where a load starts: the first sample under 1900 MHz after at least `quiet`
    seconds of idle samples (1980 MHz, or under 500 when the GPU has gone to sleep)."""
    starts, idle_since = [], None
    for i, (t, mhz, _) in enumerate(rows):
        if mhz >= 1980 or mhz < 500:
            idle_since = t if idle_since is None else idle_since
        elif mhz < 1900:
            if idle_since is not None and t - idle_since >= quiet:
                starts.append(i)
                if len(starts) == count:
                    break
            idle_since = None
    return starts


def dip(run, below=1200):
    """(start, end, lowest MHz, highest MHz, median MHz after it) of the first stretch of
    `run` under `below` MHz; the end is the first sample back at `below` or above."""
    i0 = next(i for i, r in enumerate(run) if r[1] < below)
    i1 = next(i for i in range(i0, len(run)) if run[i][1] >= below)
    inside = [r[1] for r in run[i0:i1]]
    after = sorted(r[1] for r in run[i1:] if r[1] < 1500)
    return run[i0][0], run[i1][0], min(inside), max(inside), after[len(after) // 2]


def clock_trace():
    # step 18 (wgmma_cload_bf16) at 8192 x 8192 x 32768 on an H100, ms (low, drawn, high)
    # from records/runs/tc_bench_rounds_H100.txt
    times = {"timed alone after cuBLAS": (6.30, 6.30, 6.30),
             "timed after the persistent kernel (in turn)": (7.12, 7.27, 7.49),
             "in rounds with the others": (6.01, 6.06, 6.10)}
    ncu = 5.65  # one launch under Nsight Compute
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [1.5, 1]})
    ax = axes[0]
    rows = read_trace(TRACE)
    runs = []
    for i in find_runs(rows):
        t0 = rows[i][0]
        runs.append([(t - t0, mhz, w) for t, mhz, w in rows[i:] if t - t0 <= 2.2])
    for k, (run, color) in enumerate(zip(runs, [BLUE, ORANGE])):
        ax.step([r[0] for r in run], [r[1] for r in run], where="post", color=color, lw=1.3,
                label=f"run {k + 1}")
    dips = [dip(r) for r in runs]
    d0, d1, low = dips[0][:3]
    lo = min(d[2] for d in dips)
    hi = max(d[3] for d in dips)
    ax.axvspan(d0, d1, color=LIGHT[RED], alpha=0.8, lw=0)
    ax.annotate(f"power controller's dip: about {d1 - d0:.1f} s at {lo:.0f}-{hi:.0f} MHz"
                "\n(shaded: run 1's)", xy=((d0 + d1) / 2, low), xytext=(0.95, 650),
                fontsize=7, color=RED,
                arrowprops=dict(arrowstyle="-", color=RED, lw=0.6))
    ax.set_ylim(0, 2100)
    ax.set_xlim(-0.05, 2.2)
    ax.set_xlabel("seconds since the load began", fontsize=8)
    ax.set_ylabel("SM clock (MHz)", fontsize=8)
    ax.tick_params(labelsize=7)
    pw = ax.twinx()
    pw.plot([r[0] for r in runs[0]], [r[2] for r in runs[0]], color=GREY, ls="--", lw=1.0,
            alpha=0.7, label="power (W, nvidia-smi's 1-s average)")
    pw.set_ylim(0, 800)
    pw.set_ylabel("power (W)", fontsize=8, color=GREY)
    pw.tick_params(labelsize=7, colors=GREY)
    lines = ax.get_legend_handles_labels()
    more = pw.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="lower right")
    ax.set_title("cuBLAS bf16 8192 x 8192 x 32768 timed alone, H100: SM clock", fontsize=8.5)
    # right: one kernel, three protocols
    ax = axes[1]
    names = list(times)
    for i, name in enumerate(names):
        lo, mid, hi = times[name]
        yy = len(names) - 1 - i
        ax.barh(yy, mid, height=0.55, color=LIGHT[BLUE], edgecolor=BLUE)
        if hi > lo:
            ax.errorbar(mid, yy, xerr=[[mid - lo], [hi - mid]], color="black", capsize=4,
                        lw=0.9)
        label = f"{mid:.2f} ms" if hi == lo else f"{lo:.2f} to {hi:.2f} ms"
        ax.text(hi + 0.12, yy, label, va="center", fontsize=7)
    ax.axvline(ncu, color=PURPLE, ls="--", lw=1.0)
    ax.text(ncu - 0.1, len(names) - 0.45, f"one launch under\nNsight Compute: {ncu:.2f} ms",
            color=PURPLE, fontsize=7, ha="right", va="center")
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(["in rounds\nwith the others", "timed after the\npersistent kernel "
                        "(in turn)", "timed alone\nafter cuBLAS"], fontsize=7.5)
    ax.set_xlim(0, 9.9)
    ax.set_ylim(-0.6, len(names) - 0.1)
    ax.set_xlabel("ms (lower is better)", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title("the same kernel, three protocols\n(step 18, wgmma_cload_bf16, 8192 x 8192 "
                 "x 32768, H100)", fontsize=8.5)
    fig.tight_layout()
    save(fig, "clock_trace.png")


if __name__ == "__main__":
    cload_epilogue()
    clock_trace()
