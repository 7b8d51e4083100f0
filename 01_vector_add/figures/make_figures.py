#!/usr/bin/env python3
"""Draws chapter 01's explanatory figures into this folder (PNG):

  mapping.png       which thread adds which element in naive, grid_stride and float4
  littles_law.png   bytes of loads in flight: what the versions supply, what each GPU needs

usage: python3 01_vector_add/figures/make_figures.py   (any python3 with matplotlib)

littles_law.png reads the device-to-device copy bandwidth of each GPU from the committed
plots/results/<GPU>.csv; everything else is the arithmetic written on the figure.
"""
import csv
import glob
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
COLORS = plt.get_cmap("tab10").colors
META = {"Software": None}  # no matplotlib version in the file: the PNGs stay reproducible


def cell(ax, x, y, color, text, w=1.0, alpha=0.85):
    ax.add_patch(Rectangle((x, y), w, 1, facecolor=color, edgecolor="white", lw=1.2,
                           alpha=alpha))
    if text != "":
        ax.text(x + w / 2, y + 0.5, text, ha="center", va="center", fontsize=7, color="black")


def mapping():
    """A 38-element array; blocks of 4 threads; the grid-stride versions run 2 blocks."""
    n, block, grid = 38, 4, 2
    threads = block * grid
    fig, axes = plt.subplots(3, 1, figsize=(11, 4.6))
    rows = [
        ("naive: one thread per element, ceil(38 / 4) = 10 blocks of 4 threads",
         [(i, i // block, i % block) for i in range(n)], "block"),
        (f"grid_stride: {grid} blocks x {block} threads = {threads} threads;"
         f" thread t adds t, t + {threads}, t + {2 * threads}, ...",
         [(i, i % threads, None) for i in range(n)], "thread"),
        (f"float4: thread t adds the 4 floats of chunk t, t + {threads}, ...;"
         f" the last 38 % 4 = 2 floats by threads 0 and 1",
         [(i, (i // 4) % threads if i < 4 * (n // 4) else i - 4 * (n // 4), None)
          for i in range(n)], "thread"),
    ]
    for ax, (title, cells, kind) in zip(axes, rows):
        for i, who, lane in cells:
            if kind == "block":
                cell(ax, i, 0, COLORS[who % 10], f"b{who}\nt{lane}")
            else:
                tail = title.startswith("float4") and i >= 4 * (n // 4)
                cell(ax, i, 0, COLORS[who % 10], f"t{who}", alpha=0.45 if tail else 0.85)
        if title.startswith("float4"):
            for c in range(n // 4):
                ax.add_patch(Rectangle((4 * c, 0), 4, 1, fill=False, edgecolor="black", lw=1.4))
            ax.annotate("tail", (4 * (n // 4) + 1, 1.0), (4 * (n // 4) + 1, 1.55), ha="center",
                        fontsize=8, arrowprops=dict(arrowstyle="->", lw=0.8))
        if title.startswith("grid_stride"):
            for p in range(1, (n + threads - 1) // threads):
                ax.axvline(p * threads, color="black", lw=1.4)
            ax.text(threads / 2, 1.25, "one pass of the whole grid", ha="center", fontsize=8)
        ax.set_xlim(-0.2, n + 0.2)
        ax.set_ylim(-0.1, 1.9)
        ax.set_title(title, fontsize=9, loc="left")
        ax.set_xticks(range(0, n, 4))
        ax.tick_params(axis="x", labelsize=7, length=0)
        ax.set_yticks([])
        for s in ax.spines.values():
            s.set_visible(False)
    axes[-1].set_xlabel("element index i (colour: which block, or which thread, adds it)",
                        fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "mapping.png"), dpi=130, metadata=META)
    plt.close(fig)


def copy_rates():
    """{GPU short name: device-to-device copy GB/s} from the committed CSVs."""
    rates = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "plots", "results", "*.csv"))):
        name = os.path.basename(path)[:-4].replace("NVIDIA_", "").split("_")[0]
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["chapter"] == "01_vector_add" and r["kernel"] == "d2d_copy":
                    rates[name] = float(r["value"])
    return rates


def littles_law():
    sms, threads, latency_us = 132, 2048, 1.0
    supply = [("naive, grid_stride\n2 x 4 B a thread", 8), ("float4\n2 x 16 B a thread", 32)]
    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    for k, (label, per_thread) in enumerate(supply):
        mb = sms * threads * per_thread / 1e6
        ax.bar(k, mb, width=0.55, color=COLORS[k], alpha=0.85)
        ax.text(k, max(mb, 3.3) + 0.15,
                f"{sms} SMs x {threads} threads x {per_thread} B\n= {mb:.2f} MB",
                ha="center", va="bottom", fontsize=8)
    styles = ["--", ":"]
    for j, (gpu, gbs) in enumerate(sorted(copy_rates().items())):
        need = (2.0 / 3.0) * gbs * 1e9 * latency_us * 1e-6 / 1e6
        ax.axhline(need, color="black", ls=styles[j % 2], lw=1.3)
        ax.text(1.45, need + (0.08 if j else -0.08),
                f"{gpu} needs {need:.2f} MB: 2/3 of its copy's {gbs:.0f} GB/s (the reads)"
                f" x {latency_us:.0f} µs", va="bottom" if j else "top", fontsize=8)
    ax.set_xticks(range(len(supply)))
    ax.set_xticklabels([s[0] for s in supply], fontsize=9)
    ax.set_xlim(-0.5, 3.4)
    ax.set_ylim(0, 11)
    ax.set_ylabel("MB of loads in flight on the whole GPU")
    ax.set_title("Little's law: bytes in flight = bandwidth x latency "
                 "(latency about 1 µs under load, an assumption)", fontsize=9)
    for s in ("top", "right"):
        ax.spines[s].set_visible(False)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, "littles_law.png"), dpi=130, metadata=META)
    plt.close(fig)


if __name__ == "__main__":
    mapping()
    littles_law()
