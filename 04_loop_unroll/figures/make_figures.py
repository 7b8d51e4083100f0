#!/usr/bin/env python3
"""Draws chapter 04's explanatory figures into this folder (python3 make_figures.py).

  ilp_chains.png       one scheduler issuing FMAs of K independent Horner chains, each FMA's
                       result ready 4 cycles after it issues: the issue slots K fills
  loads_in_flight.png  one thread's four loads, rolled and unrolled, in time; and the bytes
                       in flight per SM of the grid-stride sums against what Little's law
                       asks (CUB's bandwidth from the committed CSVs x about 1 microsecond)
"""
import csv
import glob
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "..", "..", "plots", "results")
FMA_LATENCY = 4
CHAIN_COLORS = ["#2b7bba", "#e67e22", "#27ae60", "#8e44ad"]


def save(fig, name):
    fig.savefig(os.path.join(HERE, name), dpi=130, bbox_inches="tight")
    plt.close(fig)


def issue_slots(k, cycles):
    """the chain whose FMA issues at each cycle (None: the slot is empty); the scheduler
    takes the first chain whose previous FMA issued at least FMA_LATENCY cycles ago."""
    ready = [0] * k
    slots = []
    for c in range(cycles):
        for j in range(k):
            if ready[(c + j) % k] <= c:
                ready[(c + j) % k] = c + FMA_LATENCY
                slots.append((c + j) % k)
                break
        else:
            slots.append(None)
    return slots


def ilp_chains():
    cycles = 24
    fig, ax = plt.subplots(figsize=(10, 3.2))
    ks = [1, 2, 4]
    for row, k in enumerate(ks):
        y = len(ks) - 1 - row
        slots = issue_slots(k, cycles)
        for c, j in enumerate(slots):
            if j is None:
                ax.add_patch(Rectangle((c + 0.05, y + 0.1), 0.9, 0.8, fc="#f2f2f2", ec="#ccc",
                                       lw=0.5))
            else:
                ax.add_patch(Rectangle((c + 0.05, y + 0.1), 0.9, 0.8, fc=CHAIN_COLORS[j]))
                ax.text(c + 0.5, y + 0.5, f"{j}", ha="center", va="center", color="white",
                        fontsize=7)
        used = sum(1 for s in slots if s is not None)
        ax.text(cycles + 0.4, y + 0.5, f"{100 * used // cycles}% of the slots",
                va="center", fontsize=8)
        ax.text(-0.4, y + 0.5, f"K = {k}", ha="right", va="center", fontsize=9)
    ax.set_xlim(-2.5, cycles + 5)
    ax.set_ylim(-0.6, len(ks) + 0.2)
    ax.set_xticks(range(0, cycles + 1, 4))
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel("cycle (one warp per scheduler, one instruction issued per cycle)", fontsize=8)
    ax.set_title("K independent Horner chains in one warp: the number in a box is the chain "
                 f"whose FMA issues; an FMA's result is ready {FMA_LATENCY} cycles later",
                 fontsize=9, loc="left")
    save(fig, "ilp_chains.png")


def cub_bandwidth():
    """{GPU short name: CUB's GB/s at 2^28 in chapter 04's committed run}."""
    out = {}
    for path in sorted(glob.glob(os.path.join(RESULTS, "*.csv"))):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if (r["chapter"], r["kernel"], r["size"]) == ("04_loop_unroll", "cub",
                                                              "268435456"):
                    name = r["gpu"].replace("NVIDIA ", "").split()[0]
                    out[name] = float(r["value"])
    return out


def loads_in_flight():
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 3.8), gridspec_kw={"width_ratios": [1.5, 1]})
    lat = 10  # a load's latency in the drawing's time units (really about a microsecond)
    rows = [("rolled (gs_u4_rolled)", [(i * (lat + 1), i * (lat + 1) + lat) for i in range(4)]),
            ("unrolled (gs_u4)", [(i, i + lat) for i in range(4)])]
    for r, (name, loads) in enumerate(rows):
        y0 = (len(rows) - 1 - r) * 6
        for i, (start, done) in enumerate(loads):
            ax.add_patch(Rectangle((start, y0 + i), done - start, 0.8, fc="#7fb3d5", ec="none"))
            ax.add_patch(Rectangle((done, y0 + i), 1, 0.8, fc="#c0392b", ec="none"))
        ax.text(-1, y0 + 2, name, ha="right", va="center", fontsize=8)
        end = max(d for _, d in loads) + 1
        ax.annotate("", xy=(end, y0 - 0.6), xytext=(0, y0 - 0.6),
                    arrowprops=dict(arrowstyle="<->", lw=0.7))
        ax.text(end / 2, y0 - 1.4, f"{end} time units for four float4", ha="center", fontsize=7)
    ax.set_xlim(-14, 48)
    ax.set_ylim(-2.2, 11)
    ax.axis("off")
    ax.add_patch(Rectangle((26, 9.8), 1.5, 0.6, fc="#7fb3d5"))
    ax.text(28, 10.1, "load in flight", va="center", fontsize=7)
    ax.add_patch(Rectangle((36, 9.8), 1.5, 0.6, fc="#c0392b"))
    ax.text(38, 10.1, "add", va="center", fontsize=7)
    ax.set_title("one thread's step of four float4 loads", fontsize=9, loc="left")
    # per SM: bytes in flight of each version against Little's law
    versions = [("gs_u1", 16, 2048), ("gs_u2", 32, 2048), ("gs_u4", 64, 2048),
                ("gs_u8, gs_u16", 64, 1536)]
    xs = range(len(versions))
    kb = [b * t / 1024 for _, b, t in versions]
    bx.bar(xs, kb, color="#2b7bba", width=0.6)
    for x, v in zip(xs, kb):
        bx.text(x, v + 2, f"{v:.0f} KiB", ha="center", fontsize=7)
    bx.set_xticks(list(xs))
    bx.set_xticklabels([v[0] for v in versions], fontsize=7)
    bx.set_ylabel("bytes in flight per SM (KiB)", fontsize=8)
    for (gpu, gbs), ls in zip(sorted(cub_bandwidth().items()), ["--", ":"]):
        need = gbs * 1e9 * 1e-6 / 132 / 1024
        bx.axhline(need, color="#c0392b", ls=ls, lw=1)
        bx.text(0.45, need + 1.5, f"{gpu} needs {need:.0f} KiB", fontsize=7, color="#c0392b",
                ha="left", bbox=dict(fc="white", ec="none", pad=1))
    bx.set_title("per SM: 16 bytes x float4 in flight per thread x threads, against\n"
                 "Little's law: CUB's GB/s x about 1 microsecond / 132 SMs", fontsize=8,
                 loc="left")
    fig.tight_layout()
    save(fig, "loads_in_flight.png")


if __name__ == "__main__":
    ilp_chains()
    loads_in_flight()
