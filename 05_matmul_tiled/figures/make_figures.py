#!/usr/bin/env python3
"""Draws chapter 05's explanatory figures into this folder (python3 make_figures.py).

The fp32 ladder (README.md):
  tile_hierarchy.png     hopper's tiles: the block tile of C with its slices of A and B, the
                         block's 8 warp tiles, and one warp tile's 32 threads, each owning
                         eight 4x4 boxes; the bytes each level loads per k step
  bytes_per_fma.png      what one FMA asks of shared memory and of L2, counted from each
                         version's source, against what the SM can supply at its FMA peak
  padding.png            the banks of one warp's transposed stores of A (step 7), rows of
                         128 floats and of 132
  cp_async_pipeline.png  a block's K slices in time: loaded then multiplied (warptile), two
                         stages with cp.async (double_buffer), three stages
Any shape (any_shape/README.md):
  waves.png              blocks per SM for hopper's 128x256 tiles at 2048^3, 2049^3, 4096^3
                         and 4097^3
  pdl.png                programmatic dependent launch: the stream-K launch starting during
                         the C = beta * C launch before it
The tensor cores (tensor_cores/README.md, tensor_cores/hopper.md):
  mma_fragments.png      mma.sync m16n8k16: which lane holds which elements of A, B and C,
                         and the 8 row addresses of one ldmatrix phase
  swizzle.png            the 16-byte chunks of 8 tile rows on the bank groups, plain and
                         XOR-swizzled, and the chunks one ldmatrix phase reads
  tma_box.png            a tensor map's boxes over a matrix, the one past the edge filled
                         with zeros, landing 128-byte swizzled in a stage
  mbarrier.png           one stage's full and empty barriers through two phases
  wgmma.png              a warpgroup's m64nNk16: operands from shared memory through
                         descriptors, accumulators in the four warps' registers
  ws_pipeline.png        the warp-specialized kernel in time: a producer, two consumer
                         warpgroups, four stages, and the registers setmaxnreg moves
  cluster.png            two blocks of a cluster: each loads its A and half of Bt, multicast
                         into both, and frees a stage on both blocks' empty barriers
Every number drawn is a hardware constant or a tile size of the chapter's code.
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

HERE = os.path.dirname(os.path.abspath(__file__))
BLUE, ORANGE, GREEN, RED, PURPLE, GREY = ("#2b7bba", "#e67e22", "#27ae60", "#c0392b", "#8e44ad",
                                          "#7f8c8d")
LIGHT = {BLUE: "#cfe2f3", ORANGE: "#fbe0c4", GREEN: "#cdeed9", RED: "#f3c6c0",
         PURPLE: "#e3d1ee", GREY: "#e5e8e8"}
# eight colours for the eight bank groups (or stages)
GROUPS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
          "#ff9da7"]


def save(fig, name):
    fig.savefig(os.path.join(HERE, name), dpi=130, bbox_inches="tight")
    plt.close(fig)


def box(ax, x, y, w, h, fc="white", ec="black", lw=0.8, text=None, fs=7, color="black",
        **kw):
    ax.add_patch(Rectangle((x, y), w, h, fc=fc, ec=ec, lw=lw, **kw))
    if text is not None:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fs, color=color)


def arrow(ax, x0, y0, x1, y1, color="black", lw=0.9, style="-|>", ls="-"):
    ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle=style, mutation_scale=9,
                                 color=color, lw=lw, ls=ls))


def bare(ax):
    ax.set_aspect("equal")
    ax.axis("off")


# ------------------------------------------------------------------ the fp32 ladder

def tile_hierarchy():
    """hopper's configuration: 128x256 block tile, K slices of 32, 8 warps of 64x64, each
    warp 8 x 4 threads, each thread 8 x 16 outputs in eight 4x4 boxes."""
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.8),
                             gridspec_kw={"width_ratios": [1.35, 1, 1]})
    # (a) C = A B, one block tile and the slices it loads
    ax = axes[0]
    s = 0.012  # drawing units per element
    M = N = K = 512
    ox, oy = 0.0, 0.0
    # A left of C, B above C
    ax_, ay_ = ox, oy
    cx, cy = ox + K * s + 0.6, oy
    bx_, by_ = cx, oy + M * s + 0.6
    box(ax, ax_, ay_, K * s, M * s, fc="#f4f6f6")
    box(ax, bx_, by_, N * s, K * s, fc="#f4f6f6")
    box(ax, cx, cy, N * s, M * s, fc="#f4f6f6")
    ax.text(ax_ + K * s / 2, ay_ - 0.35, "A (M x K)", ha="center", fontsize=8)
    ax.text(bx_ + N * s / 2, by_ + K * s + 0.12, "B (K x N)", ha="center", fontsize=8)
    ax.text(cx + N * s + 0.1, cy + M * s / 2, "C\n(M x N)", ha="left", va="center", fontsize=8)
    bm, bn, bk = 128, 256, 32
    r0, c0, k0 = 128, 128, 192  # the block's origin in C, and the slice's k
    ytile = cy + (M - r0 - bm) * s
    box(ax, cx + c0 * s, ytile, bn * s, bm * s, fc=LIGHT[BLUE], ec=BLUE, lw=1.2)
    ax.text(cx + (c0 + bn / 2) * s, ytile + bm * s / 2, "block tile\n128 x 256", ha="center",
            va="center", fontsize=7, color=BLUE)
    box(ax, ax_, ytile, K * s, bm * s, fc=LIGHT[ORANGE], ec="none")
    box(ax, ax_ + k0 * s, ytile, bk * s, bm * s, fc=ORANGE, ec=ORANGE)
    box(ax, bx_ + c0 * s, by_, bn * s, K * s, fc=LIGHT[GREEN], ec="none")
    box(ax, bx_ + c0 * s, by_ + (K - k0 - bk) * s, bn * s, bk * s, fc=GREEN, ec=GREEN)
    ax.text(ax_ + (k0 + bk / 2) * s, ytile - 0.3, "slice 128 x 32", ha="center", fontsize=7,
            color=ORANGE)
    ax.text(bx_ + (c0 + bn) * s + 0.08, by_ + (K - k0 - bk / 2) * s, "slice 32 x 256",
            ha="left", va="center", fontsize=7, color=GREEN)
    ax.set_title("(a) a block walks K in slices: per slice it copies\n"
                 "(128 + 256) x 32 floats = 48 KB for 128 x 256 x 32 FMAs:\n"
                 "per k step 1,536 bytes for 32,768 FMAs (0.047 B an FMA)", fontsize=8,
                 loc="left")
    ax.set_xlim(-0.3, cx + N * s + 1.2)
    ax.set_ylim(-0.8, by_ + K * s + 0.2)
    bare(ax)
    # (b) the block tile: 2 x 4 warp tiles of 64 x 64
    ax = axes[1]
    u = 0.03
    box(ax, 0, 0, 256 * u, 128 * u, fc=LIGHT[BLUE], ec=BLUE, lw=1.2)
    for wr in range(2):
        for wc in range(4):
            w = wr * 4 + wc
            fc = BLUE if w == 1 else "white"
            box(ax, wc * 64 * u, (1 - wr) * 64 * u, 64 * u, 64 * u, fc=fc, ec=BLUE, lw=0.8,
                alpha=0.9 if w == 1 else 1.0)
            ax.text((wc + 0.5) * 64 * u, (1.5 - wr) * 64 * u, f"warp {w}", ha="center",
                    va="center", fontsize=7, color="white" if w == 1 else BLUE)
    ax.text(128 * u, -0.4, "block tile 128 x 256 = 8 warp tiles of 64 x 64", ha="center",
            fontsize=7)
    ax.set_title("(b) per k step a warp reads 64 values of A and 64 of B\n"
                 "from shared memory (512 bytes) for 64 x 64 = 4,096 FMAs\n"
                 "(0.125 B an FMA at the warp: each value serves 64 FMAs)", fontsize=8,
                 loc="left")
    ax.set_xlim(-0.2, 256 * u + 0.2)
    ax.set_ylim(-0.8, 128 * u + 0.3)
    bare(ax)
    # (c) one warp tile: 8 x 4 threads, the grid repeated 2 x 4 times; thread 0's boxes
    ax = axes[2]
    v = 0.065
    for bi in range(16):  # 16 x 16 boxes of 4 x 4
        for bj in range(16):
            lane = (bi % 8) * 4 + bj % 4  # WTR = 8 rows of lanes, WTC = 4 columns
            fc = RED if lane == 0 else "white"
            box(ax, bj * 4 * v, (15 - bi) * 4 * v, 4 * v, 4 * v, fc=fc, ec="#b3b6b7", lw=0.4)
            if bi < 8 and bj < 4:
                ax.text((bj * 4 + 2) * v, ((15 - bi) * 4 + 2) * v, f"{lane}", ha="center",
                        va="center", fontsize=5, color="white" if lane == 0 else "#555")
    box(ax, 0, 0, 64 * v, 64 * v, fc="none", ec=BLUE, lw=1.2)
    box(ax, 0, 32 * v, 16 * v, 32 * v, fc="none", ec="black", lw=1.2)
    ax.text(32 * v, -0.35, "warp tile 64 x 64: lanes in an 8 x 4 grid, repeated 2 x 4 times",
            ha="center", fontsize=7)
    ax.set_title("(c) lane 0 owns the eight red 4 x 4 boxes: 8 x 16 outputs.\n"
                 "Per k step it loads 8 + 16 floats (96 bytes, six LDS.128)\n"
                 "for 128 FMAs: 0.75 B an FMA from shared memory", fontsize=8, loc="left")
    ax.set_xlim(-0.2, 64 * v + 0.2)
    ax.set_ylim(-0.8, 64 * v + 0.3)
    bare(ax)
    fig.tight_layout()
    save(fig, "tile_hierarchy.png")


def bytes_per_fma():
    """Per FMA, counted from each version's tile sizes: the bytes a thread reads from shared
    memory (4 (TM + TN) / (TM TN)), and the bytes of 32-byte sectors a block's global loads
    move through L2 (4 (BM + BN) / (BM BN) for the tiled versions, the sectors a warp
    touches for the untiled ones). The lines: what the SM can supply per FMA at its peak of
    128 FMAs a cycle: 128 bytes a cycle of shared memory, and the DRAM bandwidth of the data
    sheets over 132 SMs x 128 FMAs x 1.98 GHz."""
    rows = [
        # name, shared B/FMA, global B/FMA
        ("naive", None, (32 + 32 / 32) / 1),   # A: a sector a lane; B: one sector a warp
        ("coalesced", None, (32 / 32 + 128 / 32)),  # A: one sector a warp; B: 128 B a warp
        ("smem\n32x32", 4 * 2 / 1, 4 * 64 / 1024),
        ("blocktile_1d\n64x64, 8x1", 4 * 9 / 8, 4 * 128 / 4096),
        ("blocktile_2d ..\ndouble_buffer\n128x128, 8x8", 4 * 16 / 64, 4 * 256 / 16384),
        ("hopper\n128x256, 8x16", 4 * 24 / 128, 4 * 384 / 32768),
    ]
    fig, ax = plt.subplots(figsize=(10, 4.2))
    xs = range(len(rows))
    w = 0.36
    for i, (name, sh, gl) in enumerate(rows):
        ax.bar(i - w / 2, gl, w, color=BLUE)
        ax.text(i - w / 2, gl * 1.12, f"{gl:.3g}", ha="center", fontsize=7, color=BLUE)
        if sh is not None:
            ax.bar(i + w / 2, sh, w, color=ORANGE)
            ax.text(i + w / 2, sh * 1.12, f"{sh:.3g}", ha="center", fontsize=7, color=ORANGE)
    fma_rate = 132 * 128 * 1.98e9
    lines = [(128 / 128, ORANGE, "-", "shared memory: 128 B a cycle for 128 FMAs a cycle"),
             (3.35e12 / fma_rate, BLUE, "--", "DRAM, H100 (3.35 TB/s)"),
             (4.8e12 / fma_rate, BLUE, ":", "DRAM, H200 (4.8 TB/s)")]
    for (y, c, ls, label), dy in zip(lines, (1.1, 0.72, 1.12)):
        ax.axhline(y, color=c, ls=ls, lw=1)
        ax.text(-0.45, y * dy, f"{label}: {y:.2g} B an FMA", ha="left", va="center",
                fontsize=7, color=c, bbox=dict(fc="white", ec="none", pad=0.5))
    ax.set_yscale("log")
    ax.set_ylim(0.02, 80)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r[0] for r in rows], fontsize=7)
    ax.set_ylabel("bytes per FMA (log scale)", fontsize=8)
    ax.bar(0, 0, color=BLUE, label="global loads: the 32-byte sectors a warp's loads touch")
    ax.bar(0, 0, color=ORANGE, label="from shared memory (what a thread reads)")
    ax.legend(fontsize=7, loc="upper right")
    ax.set_title("What one FMA asks of each level, counted from the tile sizes (the compiler's "
                 "16-byte loads and broadcasts lower the\nshared-memory bars). An orange bar "
                 "above the orange line cannot run at the FMA peak; global loads above the blue "
                 "lines\nkeep the FMAs busy only if most of them hit in L1 or L2",
                 fontsize=8, loc="left")
    fig.tight_layout()
    save(fig, "bytes_per_fma.png")


def padding():
    """Step 7: thread t of a warp stores the 4 floats of its float4 of A (row m = t / 2,
    k = 4 (t % 2) .. + 3) into rows k of the transposed tile As[k][m]; store q writes
    As[4 (t % 2) + q][t / 2]. Bank = (k * row length + m) mod 32."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 2.9))
    for ax, row_len, title in [(axes[0], 128, "rows of 128 floats (vectorized)"),
                               (axes[1], 132, "rows of 132 floats (padded)")]:
        q = 0
        hits = {}
        for t in range(32):
            k, m = 4 * (t % 2) + q, t // 2
            b = (k * row_len + m) % 32
            hits.setdefault(b, []).append(t)
        for b in range(32):
            ts = hits.get(b, [])
            fc = RED if len(ts) > 1 else (GREEN if ts else "white")
            box(ax, b, 0, 1, 1, fc=fc, ec="#999", lw=0.5)
            ax.text(b + 0.5, 1.25, f"{b}", ha="center", fontsize=5, color="#555")
            for i, t in enumerate(ts):
                ax.text(b + 0.5, -0.35 - 0.45 * i, f"t{t}", ha="center", fontsize=5)
        worst = max(len(v) for v in hits.values())
        ax.set_title(f"{title}: store 0 of a warp uses {len(hits)} banks, "
                     f"{worst}-way conflict" if worst > 1 else
                     f"{title}: store 0 of a warp uses all 32 banks, no conflict",
                     fontsize=8, loc="left")
        ax.text(-0.5, 0.5, "bank", ha="right", va="center", fontsize=7)
        ax.set_xlim(-3, 33)
        ax.set_ylim(-1.4, 1.7)
        ax.axis("off")
    fig.suptitle("Step 7: thread t writes As[4 (t % 2) + q][t / 2] for q = 0..3 (here q = 0); "
                 "bank = (k x row length + m) mod 32", fontsize=8, x=0.01, ha="left")
    fig.tight_layout()
    save(fig, "padding.png")


def cp_async_pipeline():
    """Slices in time for one block (drawing units, not measured): a slice's copy takes L
    from issue to landing, longer than the F its FMAs take, as when the copy goes to DRAM."""
    L, F = 6.0, 4.0
    nslices = 6
    fig, ax = plt.subplots(figsize=(13, 5.6))

    def label(y, text, bold=False):
        ax.text(-0.5, y, text, ha="right", va="center", fontsize=7.5 if bold else 7,
                weight="bold" if bold else "normal")

    def barrier(t, y0, y1):
        ax.plot([t, t], [y0, y1], color="black", lw=1.3)

    # warptile: load through registers, barrier, multiply, barrier
    y0 = 10.0
    label(y0 + 1.7, "warptile (step 8)", True)
    label(y0 + 0.85, "loads")
    label(y0 - 0.15, "FMAs")
    t = 0.0
    for k in range(nslices):
        box(ax, t, y0 + 0.5, L, 0.7, fc=LIGHT[GREY], ec=GREY, text=f"load {k}", fs=6.5)
        t += L
        barrier(t, y0 - 0.55, y0 + 1.3)
        box(ax, t, y0 - 0.5, F, 0.7, fc=GREY, ec="none", text=f"slice {k}", fs=6.5,
            color="white")
        t += F
        barrier(t, y0 - 0.55, y0 + 1.3)
    for (y0, stages) in [(5.4, 2), (0.4, 3)]:
        label(y0 + 0.9 + 0.8 * stages, f"{stages} stages: wait_group {stages - 2}" +
              (" (double_buffer, step 9)" if stages == 2 else ""), True)
        label(y0 - 0.15, "FMAs")
        ready, issued = {}, {}
        for k in range(stages - 1):  # the prologue: slices 0 .. stages - 2 in flight
            issued[k] = 0.1 * k
            ready[k] = issued[k] + L
        t = 0.0
        for k in range(nslices):
            start = max(t, ready[k])  # wait_group, then the barrier
            barrier(start, y0 - 0.55, y0 + 0.25 + 0.8 * stages)
            if start > t + 1e-9:
                ax.text((t + start) / 2, y0 - 0.15, "wait", ha="center", va="center",
                        fontsize=6, color=RED)
            nxt = k + stages - 1
            if nxt < nslices:
                issued[nxt] = start
                ready[nxt] = start + L
            box(ax, start, y0 - 0.5, F, 0.7, fc=GROUPS[k % stages], ec="none",
                text=f"slice {k}", fs=6.5, color="white")
            t = start + F
        for k in range(nslices):  # the copies, one row per stage
            st = k % stages
            yy = y0 + 0.5 + 0.8 * st
            box(ax, issued[k], yy, L, 0.6, fc=LIGHT[GREY], ec=GROUPS[st], lw=1.2,
                text=f"copy {k}", fs=6.5)
        for st in range(stages):
            label(y0 + 0.8 + 0.8 * st, f"cp.async into stage {st}")
    ax.text(0, -0.9, "Thick lines: __syncthreads. A copy's box runs from its issue to its "
            "landing; a slice's FMAs start when its copy has landed (wait_group, then the "
            "barrier). With cp.async the\ncopies go straight to shared memory, no registers; "
            "commit_group closes a slice's copies, wait_group N waits until at most N of this "
            "thread's groups are in flight.\nA stage is refilled only after the barrier that "
            "follows its last use. With copies slower than a slice's FMAs, two stages still "
            "wait; three do not.", fontsize=7, va="top")
    ax.set_xlim(-11, 62)
    ax.set_ylim(-2.3, 12.2)
    ax.axis("off")
    ax.set_title("A block's K slices in time (drawing units): the copies of the next slices "
                 "run behind the FMAs of this one", fontsize=9, loc="left")
    save(fig, "cp_async_pipeline.png")


# ------------------------------------------------------------------ any shape

def waves():
    """hopper's 128x256 tiles, one block an SM, 132 SMs: blocks per SM (sorted)."""
    fig, axes = plt.subplots(2, 2, figsize=(12, 4.6), sharex=True)
    for ax, n in zip(axes.flat, (2048, 2049, 4096, 4097)):
        tiles = -(-n // 128) * -(-n // 256)
        per_sm = [tiles // 132 + (1 if i < tiles % 132 else 0) for i in range(132)]
        top = max(per_sm)
        ax.bar(range(132), per_sm, width=1.0,
               color=[BLUE if p == top else LIGHT[BLUE] for p in per_sm], ec="none")
        busy = tiles / (132 * top)
        ax.set_title(f"{n}^3: {tiles} tiles on 132 SMs, {top} wave{'s' if top > 1 else ''}; "
                     f"the SMs are busy {100 * busy:.0f}% of the time", fontsize=8, loc="left")
        ax.set_xlim(-1, 132)
        ax.set_ylim(0, 5.4)
        ax.set_yticks(range(0, 6))
        ax.tick_params(labelsize=7)
    for ax in axes[1]:
        ax.set_xlabel("SM (the darker ones run the last wave)", fontsize=7)
    for ax in axes[:, 0]:
        ax.set_ylabel("tiles an SM runs", fontsize=7)
    fig.tight_layout()
    save(fig, "waves.png")


def pdl():
    fig, ax = plt.subplots(figsize=(12, 3.0))
    rows = [("ordinary launches", 2.0), ("programmatic dependent launch", 0.3)]
    for name, y in rows:
        ax.text(-0.3, y + 0.55, name, ha="right", va="center", fontsize=8, weight="bold")
    # ordinary: scale, then the stream-K kernel
    y = 2.0
    box(ax, 0, y + 0.6, 3.0, 0.5, fc=LIGHT[GREY], ec=GREY, text="C = beta C", fs=7)
    box(ax, 3.3, y, 6.0, 0.5, fc=LIGHT[BLUE], ec=BLUE, text="main loop", fs=7)
    box(ax, 9.3, y, 1.6, 0.5, fc=BLUE, ec=BLUE, text="atomics", fs=7, color="white")
    ax.text(3.15, y + 0.25, "launch\ngap", ha="center", va="center", fontsize=6, color=RED)
    # PDL
    y = 0.3
    box(ax, 0, y + 0.6, 3.0, 0.5, fc=LIGHT[GREY], ec=GREY, text="C = beta C", fs=7)
    ax.plot([0.05, 0.05], [y - 0.1, y + 1.2], color=PURPLE, lw=1.5)
    ax.text(0.15, y + 1.25, "launch_dependents", fontsize=6, color=PURPLE)
    box(ax, 0.4, y, 6.0, 0.5, fc=LIGHT[BLUE], ec=BLUE, text="main loop (reads A, B)", fs=7)
    ax.plot([6.4, 6.4], [y - 0.1, y + 0.6], color=PURPLE, lw=1.5)
    ax.text(6.45, y - 0.35, "griddepcontrol.wait: C = beta C has finished", fontsize=6,
            color=PURPLE)
    box(ax, 6.4, y, 1.6, 0.5, fc=BLUE, ec=BLUE, text="atomics", fs=7, color="white")
    ax.text(12.3, 1.3, "The first kernel executes griddepcontrol.launch_dependents, which lets "
            "the\nnext launch (made with cudaLaunchAttributeProgrammaticStreamSerialization)"
            "\nstart at once; the dependent kernel runs what does not need the first one's"
            "\nresults, and waits for them (griddepcontrol.wait) only before C.",
            fontsize=7, va="center")
    ax.set_xlim(-5.5, 22)
    ax.set_ylim(-0.6, 3.4)
    ax.axis("off")
    ax.set_title("Programmatic dependent launch (sm_90): stream-K's scaling of C runs under "
                 "its main loop instead of before it", fontsize=9, loc="left")
    save(fig, "pdl.png")


# ------------------------------------------------------------------ the tensor cores

def mma_fragments():
    """m16n8k16 (bf16): lane l, g = l / 4, q = l % 4. A: a[0] rows g, k 2q..2q+1; a[1] rows
    8+g; a[2] k 8+2q; a[3] both. B (seen as Bt, n x k): b[0] n = g, k 2q..; b[1] k 8+2q.
    C: c[0..1] row g, columns 2q, 2q+1; c[2..3] row 8+g."""
    fig, axes = plt.subplots(1, 3, figsize=(14, 5.2),
                             gridspec_kw={"width_ratios": [1.25, 0.75, 0.75]})
    cols = [BLUE, ORANGE, GREEN, PURPLE]

    def quadrant(ax, x0, y0, reg, color, show_lanes):
        for r in range(8):
            for c in range(8):
                lane = r * 4 + c // 2
                box(ax, x0 + c, y0 + 7 - r, 1, 1, fc=LIGHT[color], ec="white", lw=0.5)
                if show_lanes and c % 2 == 0:
                    ax.text(x0 + c + 1, y0 + 7.5 - r, f"T{lane}", ha="center", va="center",
                            fontsize=5.5)
        box(ax, x0, y0, 8, 8, fc="none", ec=color, lw=1.4)
        ax.text(x0 + 4, y0 + 8.2, reg, ha="center", fontsize=7, color=color)

    ax = axes[0]
    quadrant(ax, 0, 9, "a[0]: rows 0-7, k 0-7", cols[0], True)
    quadrant(ax, 9, 9, "a[2]: rows 0-7, k 8-15", cols[2], True)
    quadrant(ax, 0, 0, "a[1]: rows 8-15, k 0-7", cols[1], True)
    quadrant(ax, 9, 0, "a[3]: rows 8-15, k 8-15", cols[3], True)
    for r in range(8):  # ldmatrix.x4: the lane that gives each row's address
        ax.text(-0.2, 9 + 7.5 - r, f"lane {r}", ha="right", va="center", fontsize=5.5,
                color=cols[0])
        ax.text(-0.2, 7.5 - r, f"lane {8 + r}", ha="right", va="center", fontsize=5.5,
                color=cols[1])
        ax.text(17.2, 9 + 7.5 - r, f"lane {16 + r}", ha="left", va="center", fontsize=5.5,
                color=cols[2])
        ax.text(17.2, 7.5 - r, f"lane {24 + r}", ha="left", va="center", fontsize=5.5,
                color=cols[3])
    ax.set_title("A, 16 x 16 bf16 (m x k), four 32-bit registers a lane: in each 8 x 8\n"
                 "quadrant lane T holds the two elements of row T / 4 at columns 2 (T % 4),\n"
                 "+1: what one 8 x 8 matrix of ldmatrix delivers", fontsize=8, loc="left")
    ax.set_xlim(-2.5, 19.5)
    ax.set_ylim(-0.5, 18.5)
    bare(ax)
    ax = axes[1]
    quadrant(ax, 0, 9, "b[0]: n 0-7, k 0-7", cols[0], True)
    quadrant(ax, 0, 0, "b[1]: n 0-7, k 8-15", cols[1], True)
    ax.set_title("B as rows of Bt (n x k), 16 x 8:\n"
                 "the same layout, two registers;\n"
                 "the non-transposed ldmatrix reads it", fontsize=8, loc="left")
    ax.set_xlim(-0.5, 9)
    ax.set_ylim(-0.5, 18.5)
    bare(ax)
    ax = axes[2]
    quadrant(ax, 0, 9, "c[0], c[1]: rows 0-7", cols[0], True)
    quadrant(ax, 0, 0, "c[2], c[3]: rows 8-15", cols[1], True)
    ax.set_title("C and D, 16 x 8 fp32 (m x n):\n"
                 "lane T: row T / 4 (and + 8),\n"
                 "columns 2 (T % 4), + 1", fontsize=8, loc="left")
    ax.set_xlim(-3, 9)
    ax.set_ylim(-0.5, 18.5)
    bare(ax)
    fig.suptitle("mma.sync.m16n8k16: one warp, 16 x 8 x 16 multiply-adds. ldmatrix.x4 fills "
                 "four registers a lane with four 8 x 8 matrices, the 8 rows of each addressed "
                 "by 8 lanes (the lane labels beside A)",
                 fontsize=9, x=0.01, ha="left")
    fig.tight_layout()
    save(fig, "mma_fragments.png")


def swizzle():
    """8 rows of 128 bytes = 8 chunks of 16 bytes each; chunk position p covers banks
    4p .. 4p+3 (bank group p). An ldmatrix phase reads logical chunk 0 of rows 0..7."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, swz in zip(axes, (False, True)):
        for r in range(8):
            for c in range(8):  # c: the logical chunk (k offset)
                p = c ^ r if swz else c  # where it is stored
                read = c == 0
                box(ax, p, 7 - r, 1, 1, fc=GROUPS[p] if read else LIGHT[GREY],
                    ec="white" if not read else "black", lw=1.2 if read else 0.5,
                    text=f"k{8 * c}..", fs=6, color="white" if read else "#555")
            ax.text(-0.2, 7.5 - r, f"row {r}", ha="right", va="center", fontsize=7)
        for p in range(8):
            ax.text(p + 0.5, 8.15, f"banks\n{4 * p}-{4 * p + 3}", ha="center", fontsize=5.5)
        groups = len({(c ^ r if swz else c) for r in range(8) for c in [0]})
        ax.set_title(("XOR-swizzled: chunk c of row r at position c ^ (r % 8)"
                      if swz else "plain: chunk c of row r at position c") +
                     "\nthe coloured chunks (k 0..7 of rows 0..7: one ldmatrix phase)\n"
                     f"fall in {groups} bank group{'s' if groups > 1 else ''}: "
                     + ("one wavefront" if swz else "8 wavefronts, an 8-way conflict"),
                     fontsize=8, loc="left")
        ax.set_xlim(-1.3, 8.2)
        ax.set_ylim(-0.3, 9)
        bare(ax)
    fig.tight_layout()
    save(fig, "swizzle.png")


def tma_box():
    fig, ax = plt.subplots(figsize=(12, 5.4))
    # the matrix: 300 rows x 192 elements of K (1 unit = 32 rows or 16 elements)
    rows, K = 300, 192
    sy, sx = 1 / 32, 1 / 16
    H, W = rows * sy, K * sx
    box(ax, 0, 0, W, H, fc="#f4f6f6")
    ax.text(W / 2, H + 0.3, "A: 300 rows x 192 bf16 of K, row-major, in global memory",
            ha="center", fontsize=7)
    bw, bh = 64 * sx, 128 * sy
    for i in range(3):
        for j in range(3):
            box(ax, j * bw, H - (i + 1) * bh, bw, bh, fc="none", ec="#999", lw=0.6, ls="--")
    x, y = 1 * bw, H - 3 * bh  # the box at (k 64, row 256): rows 256..383, 84 outside
    box(ax, x, 0, bw, H - 2 * bh, fc=LIGHT[BLUE], ec=BLUE, lw=1.2)
    box(ax, x, y, bw, -y, fc=LIGHT[RED], ec=RED, lw=1.2, hatch="///")
    ax.text(x + bw / 2, y / 2, "rows 300-383:\nzeros", ha="center", va="center", fontsize=7,
            color=RED, bbox=dict(fc="white", ec="none", pad=1))
    ax.text(x + bw / 2, (H - 2 * bh) / 2, "box at\n(k 64, row 256)", ha="center",
            va="center", fontsize=7, color=BLUE)
    ax.text(-0.2, H - 0.5 * bh, "boxes of\n128 rows\nx 64 bf16\n(128 bytes)", ha="right",
            va="center", fontsize=7)
    # the stage in shared memory
    sx0, cell = 21.0, 0.55
    top = H
    for r in range(8):
        for c in range(8):
            box(ax, sx0 + (c ^ r) * cell, top - (r + 1) * cell, cell, cell, fc=GROUPS[c],
                ec="white", lw=0.4)
    box(ax, sx0, top - 8 * cell - 5.0, 8 * cell, 5.0, fc="#fbfcfc", ec="#999", lw=0.5,
        text="rows 8-127\n(the same pattern\nevery 8 rows)", fs=7)
    ax.text(sx0 + 4 * cell, top + 0.3, "the stage in shared memory:\nchunk c of row r at "
            "c ^ (r % 8)", ha="center", fontsize=7)
    arrow(ax, x + bw + 0.2, (H - 2 * bh) / 2, sx0 - 0.3, top - 3.0, color=BLUE, lw=1.2)
    ax.text(16.3, -0.6, "one thread issues\ncp.async.bulk.tensor [stage], [map, {64, 256}], "
            "[full]:\nthe copy engine moves the 16 KB box,\nzero-fills what lies outside "
            "the matrix,\nswizzles it, and counts its bytes on the mbarrier",
            ha="center", va="top", fontsize=7, color=BLUE)
    ax.set_title("TMA: a tensor map (made once on the host: base, dims, strides, box size, "
                 "swizzle, fill) and two coordinates name a box", fontsize=9, loc="left")
    ax.set_xlim(-3.5, 26)
    ax.set_ylim(-4.5, H + 1.2)
    bare(ax)
    save(fig, "tma_box.png")


def mbarrier():
    fig, ax = plt.subplots(figsize=(13, 4.2))
    # lanes: producer thread, full[s], consumers, empty[s]
    ys = {"producer (1 thread)": 3.0, "full[s]": 2.0, "consumers (2 warpgroups)": 1.0,
          "empty[s]": 0.0}
    for name, y in ys.items():
        ax.text(-0.3, y + 0.3, name, ha="right", va="center", fontsize=7)
        ax.plot([0, 26], [y + 0.3, y + 0.3], color="#ddd", lw=0.6, zorder=0)
    P = ys["producer (1 thread)"]
    Fy = ys["full[s]"]
    Cy = ys["consumers (2 warpgroups)"]
    Ey = ys["empty[s]"]
    for rnd, t0 in enumerate((0.5, 13.0)):
        ph = rnd % 2
        box(ax, t0, P, 2.2, 0.6, fc=LIGHT[PURPLE], ec=PURPLE,
            text=f"wait empty\n(parity {ph ^ 1})", fs=6)
        box(ax, t0 + 2.3, P, 2.6, 0.6, fc=PURPLE, ec=PURPLE,
            text="arrive.expect_tx\n(48 KB) + 2 TMA", fs=6, color="white")
        box(ax, t0 + 2.3, Fy, 4.2, 0.6, fc=LIGHT[ORANGE], ec=ORANGE,
            text=f"phase {ph}: 1 arrival done,\nbytes arriving ...", fs=6)
        ax.plot([t0 + 6.5, t0 + 6.5], [Fy - 0.1, Fy + 0.7], color=ORANGE, lw=2)
        ax.text(t0 + 6.6, Fy + 0.75, f"phase {ph} completes", fontsize=6, color=ORANGE)
        box(ax, t0 + 0.5, Cy, 6.0, 0.6, fc=LIGHT[GREEN], ec=GREEN,
            text=f"wait full (parity {ph}): spin", fs=6)
        box(ax, t0 + 6.6, Cy, 3.6, 0.6, fc=GREEN, ec=GREEN, text="wgmma on stage s", fs=6,
            color="white")
        box(ax, t0 + 10.3, Cy, 1.8, 0.6, fc=GREEN, ec=GREEN, text="arrive\non empty", fs=6,
            color="white")
        box(ax, t0 + 6.6, Ey, 5.6, 0.6, fc=LIGHT[BLUE], ec=BLUE,
            text=f"phase {ph}: 256 arrivals expected", fs=6)
        ax.plot([t0 + 12.2, t0 + 12.2], [Ey - 0.1, Ey + 0.7], color=BLUE, lw=2)
    ax.text(0.2, -0.7, "An mbarrier lives in shared memory: an expected arrival count, a "
            "transaction (byte) count, and a phase bit that flips when both reach zero.\n"
            "A waiter names the parity of the phase it waits for (use n of stage s waits "
            "for parity n & 1), so the same barrier serves every round.\nThe producer's first "
            "wait on empty (parity 1) returns at once: the stage starts out free.",
            fontsize=7, va="top")
    ax.set_xlim(-4.5, 26.5)
    ax.set_ylim(-1.6, 3.9)
    ax.axis("off")
    ax.set_title("One stage s through two rounds: full[s] says the bytes have landed, empty[s] "
                 "that every consumer has finished reading", fontsize=9, loc="left")
    save(fig, "mbarrier.png")


def wgmma():
    fig, ax = plt.subplots(figsize=(12, 4.8))
    # shared memory: A slice 64 x 16 (k), B slice 16 x N (as Bt rows: N x 16)
    box(ax, 0, 2.0, 1.6, 6.4, fc=LIGHT[ORANGE], ec=ORANGE, text="A\n64 x 16\n(k)", fs=7)
    box(ax, 2.4, 9.0, 12.8, 1.6, fc=LIGHT[GREEN], ec=GREEN, text="B: 16 (k) x N = 256",
        fs=7)
    ax.text(0.8, 8.7, "shared memory,\n128-byte swizzled", ha="center", fontsize=6)
    ax.text(8.8, 10.9, "descriptor: start address, 1024 bytes between 8-row groups, "
            "swizzle mode", ha="center", fontsize=6.5, color=GREEN)
    ax.text(0.8, 1.4, "descriptor", ha="center", fontsize=6.5, color=ORANGE)
    # accumulators: 64 x 256, four warps x 16 rows
    for w in range(4):
        y = 2.0 + (3 - w) * 1.6
        box(ax, 2.4, y, 12.8, 1.6, fc=GROUPS[w], ec="white", lw=1.0,
            text=f"warp {w}: rows {16 * w}..{16 * w + 15}, its 32 lanes hold 16 x 256 fp32 "
                 "= 128 registers each", fs=7, color="white")
    ax.text(8.8, 1.4, "accumulators D (64 x 256 fp32) in the registers of the warpgroup's "
            "128 threads", ha="center", fontsize=7)
    # the instruction stream
    x0 = 16.4
    steps = ["wgmma.fence", "wgmma.mma_async  k 0..15", "wgmma.mma_async  k 16..31",
             "wgmma.mma_async  k 32..47", "wgmma.mma_async  k 48..63",
             "wgmma.commit_group", "... other work ...", "wgmma.wait_group 0 (or 1)",
             "read D / store C"]
    for i, s_ in enumerate(steps):
        fc = LIGHT[PURPLE] if "mma_async" in s_ else "white"
        box(ax, x0, 9.8 - i * 1.0, 5.6, 0.8, fc=fc, ec=PURPLE, text=s_, fs=6.5)
    ax.text(x0 + 2.8, 10.9, "what the 128 threads issue (one stage)", ha="center",
            fontsize=7, color=PURPLE)
    ax.text(x0 + 2.8, 0.3, "mma_async only starts the work: the tensor cores read A and B\n"
            "from shared memory themselves; wait_group N returns when at\nmost N committed "
            "groups are still running", ha="center", fontsize=6.5, va="top")
    ax.set_xlim(-0.5, 22.5)
    ax.set_ylim(-1.2, 11.4)
    ax.set_title("wgmma: a warpgroup (4 warps, 128 threads) multiplies a 64 x 16 slice of A by "
                 "a 16 x N slice of B (m64nNk16), both read from shared memory", fontsize=9,
                 loc="left")
    bare(ax)
    save(fig, "wgmma.png")


def ws_pipeline():
    fig, (ax, rx) = plt.subplots(1, 2, figsize=(14, 4.4), gridspec_kw={"width_ratios": [4, 1]})
    L, F = 2.6, 2.0  # a stage's copy, and its wgmma, in drawing units
    stages = 4
    nk = 9
    land = {}
    free_at = {s: 0.0 for s in range(stages)}
    t = 0.0
    issue_t = {}
    # producer: issues copy k once stage k % 4 is free (empty), copies take L
    cons_t = 0.0
    starts = {}
    for k in range(nk):
        s = k % stages
        t = max(t, free_at[s])
        issue_t[k] = t
        land[k] = t + L
        t += 0.35
        # consumers: start stage k when it has landed and stage k-1 has been started
        st = max(cons_t, land[k])
        starts[k] = st
        cons_t = st + F
        # stage freed when the group after it is running (wait_group 1): after k+1 starts
        if k >= 1:
            free_at[(k - 1) % stages] = starts[k]
    y = {"producer: TMA issue (1 thread)": 3.0, "copies in flight": 2.0,
         "consumer warpgroups 1, 2: wgmma": 0.6}
    for name, yy in y.items():
        ax.text(-0.3, yy + 0.35, name, ha="right", va="center", fontsize=7)
    for k in range(nk):
        s = k % stages
        box(ax, issue_t[k], 3.0, 0.3, 0.7, fc=GROUPS[s], ec="none")
        box(ax, issue_t[k], 2.0 - 0.12 * (k % 3), land[k] - issue_t[k], 0.5, fc=GROUPS[s],
            ec="none", alpha=0.45)
        box(ax, starts[k], 0.6, F - 0.05, 0.7, fc=GROUPS[s], ec="none",
            text=f"k {k}\nstage {s}", fs=6, color="white")
    ax.text(0, -0.5, "The producer refills a stage as soon as its empty barrier completes; "
            "the consumers wait only on full barriers and keep one group of wgmma in flight "
            "(wait_group 1).\nNo __syncthreads: four stages in a ring, each with its full and "
            "empty mbarrier.", fontsize=7, va="top")
    ax.set_xlim(-7, max(starts.values()) + F + 0.5)
    ax.set_ylim(-1.5, 4.0)
    ax.axis("off")
    ax.set_title("The warp-specialized kernel in time (drawing units): colour = stage", fontsize=9,
                 loc="left")
    # registers: 3 warpgroups of 128 threads on 65,536 registers
    rx.bar([0], [40], color=PURPLE, width=0.6)
    rx.bar([1, 2], [232, 232], color=GREEN, width=0.6)
    rx.axhline(168, color=GREY, ls="--", lw=1)
    rx.text(-0.35, 150, "168: an even share\nof 384 threads", fontsize=6, color=GREY,
            ha="left")
    for x, v in [(0, 40), (1, 232), (2, 232)]:
        rx.text(x, v + 4, f"{v}", ha="center", fontsize=7)
    rx.set_xticks([0, 1, 2])
    rx.set_xticklabels(["producer", "consumer 1", "consumer 2"], fontsize=6.5)
    rx.set_ylabel("registers a thread", fontsize=7)
    rx.set_ylim(0, 270)
    rx.tick_params(labelsize=7)
    rx.set_title("setmaxnreg: (40 + 232 + 232) x 128\n= 64,512 of 65,536 registers",
                 fontsize=8, loc="left")
    fig.tight_layout()
    save(fig, "ws_pipeline.png")


def cluster():
    fig, ax = plt.subplots(figsize=(12, 5.0))
    # global memory
    box(ax, 0, 7.2, 6.5, 1.0, fc="#f4f6f6", text="A: rows of tile 2p (rank 0) and 2p+1 "
        "(rank 1)", fs=7)
    box(ax, 7.5, 7.2, 6.5, 1.0, fc="#f4f6f6")
    ax.text(10.75, 8.35, "Bt: the 256 rows both tiles need", ha="center", fontsize=7)
    ax.text(9.1, 7.7, "rows 0-127", ha="center", va="center", fontsize=7)
    ax.text(12.4, 7.7, "rows 128-255", ha="center", va="center", fontsize=7)
    for rank, x in ((0, 0.0), (1, 7.5)):
        box(ax, x, 0, 6.5, 5.6, fc="#fbfcfc", ec=BLUE, lw=1.2)
        ax.text(x + 3.25, 5.8, f"block rank {rank} (its own SM), shared memory of one stage",
                ha="center", fontsize=7, color=BLUE)
        box(ax, x + 0.3, 3.0, 2.2, 2.2, fc=LIGHT[ORANGE], ec=ORANGE,
            text=f"A\n128 rows\n(own load)", fs=7)
        box(ax, x + 2.8, 3.0, 1.7, 2.2, fc=GROUPS[0], ec="white", text="Bt\nrows\n0-127",
            fs=7, color="white")
        box(ax, x + 4.5, 3.0, 1.7, 2.2, fc=GROUPS[1], ec="white", text="Bt\nrows\n128-255",
            fs=7, color="white")
        box(ax, x + 0.3, 0.4, 2.6, 1.6, fc=LIGHT[GREEN], ec=GREEN, text="full[s]\n(own bytes\n"
            "+ multicast)", fs=6.5)
        box(ax, x + 3.4, 0.4, 2.8, 1.6, fc=LIGHT[BLUE], ec=BLUE, text="empty[s]\n2 x 8 "
            "consumer warps", fs=6.5)
        arrow(ax, x + 1.4, 7.2, x + 1.4, 5.2, color=ORANGE, lw=1.2)
    # multicast arrows: rank 0 loads Bt rows 0-127 into both, rank 1 rows 128-255
    box(ax, 7.5, 7.2, 3.25, 1.0, fc="none", ec=GROUPS[0], lw=1.4)
    box(ax, 10.75, 7.2, 3.25, 1.0, fc="none", ec=GROUPS[1], lw=1.4)
    arrow(ax, 9.1, 7.2, 0.0 + 3.65, 5.2, color=GROUPS[0], lw=1.4)
    arrow(ax, 9.1, 7.2, 7.5 + 3.65, 5.2, color=GROUPS[0], lw=1.4)
    arrow(ax, 12.4, 7.2, 0.0 + 5.35, 5.2, color=GROUPS[1], lw=1.4, ls="--")
    arrow(ax, 12.4, 7.2, 7.5 + 5.35, 5.2, color=GROUPS[1], lw=1.4, ls="--")
    ax.text(14.2, 6.4, "rank 0's producer loads Bt rows 0-127,\nrank 1's rows 128-255, "
            "each with\n.multicast::cluster and CTA mask 0b11:\nthe copy lands in both "
            "blocks and\ncounts its bytes on both full[s]", fontsize=6.5, va="top")
    # remote arrive
    arrow(ax, 7.5 + 3.4, 1.2, 3.4 + 2.8, 1.2, color=BLUE, lw=1.0, style="-|>", ls=":")
    arrow(ax, 3.4 + 2.8, 0.7, 7.5 + 3.4, 0.7, color=BLUE, lw=1.0, style="-|>", ls=":")
    ax.text(14.2, 1.6, "each consumer warp arrives on its own\nempty[s] and, through mapa "
            "(distributed\nshared memory), on the other block's:\na stage is refilled only "
            "when both\nblocks have finished reading it", fontsize=6.5, va="top")
    ax.set_xlim(-0.3, 19)
    ax.set_ylim(-0.3, 8.8)
    ax.set_title("A cluster of two blocks on vertically adjacent 128 x 256 tiles: each block "
                 "asks the L2 for 128 rows of A and 128 of Bt a stage,\ninstead of 128 and 256",
                 fontsize=9, loc="left")
    bare(ax)
    save(fig, "cluster.png")


if __name__ == "__main__":
    tile_hierarchy()
    bytes_per_fma()
    padding()
    cp_async_pipeline()
    waves()
    pdl()
    mma_fragments()
    swizzle()
    tma_box()
    mbarrier()
    wgmma()
    ws_pipeline()
    cluster()
