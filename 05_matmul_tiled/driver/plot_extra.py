"""Chapter 05's own figures, drawn by plots/plot.py:
  05_matmul_tiled_sweep.png   GFLOP/s of every version against the square size N (N x N x N)
  05_matmul_tiled_mlp.png     time of every version on each chapter-07 MLP shape
  05_matmul_tiled_shapes.png  the shape sweep (--sweep): best's % of cuBLAS on every shape
                              timed, against M*N*K, with the geometric mean and the worst
                              shape, one panel per GPU
  05_matmul_tiled_ladder.png  both ladders at one shape (4096^3): every fp32 and tensor-core
                              version in TFLOP/s, cuBLAS fp32, TF32 and bf16 as lines, a
                              panel per GPU
The shape sweep times only SWEEP_KERNELS; the shapes where more versions ran are the
ladder's, and only those go into the first two figures and the chapter's main figure. The
tensor-core versions (names ending in _bf16, _tf32 or _fp8) have the ladder figure of their
own.
With several GPUs, the per-GPU figures get the GPU's name as a suffix.
"""
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CHAPTER = "05_matmul_tiled"


def dims(size):
    parts = size.split("x")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def unique(seq):
    return list(dict.fromkeys(seq))


SWEEP_KERNELS = {"best", "hopper", "cublas"}
LADDER_SIZE = "4096x4096x4096"


TC_PRECISIONS = ("_bf16", "_tf32", "_fp8")  # the tensor-core versions' name suffixes


def precision(kernel):
    """The name's tensor-core suffix (one of TC_PRECISIONS), or "" for an fp32 version."""
    return next((p for p in TC_PRECISIONS if kernel.endswith(p)), "")


def tensor_core(kernel):
    return precision(kernel) != ""


def ladder_sizes(rows):
    """Sizes at which fp32 versions other than the shape sweep's three ran."""
    return {r["size"] for r in rows if r["kernel"] not in SWEEP_KERNELS and not tensor_core(r["kernel"])}


def main_rows(rows):
    """The rows of the chapter's main figure (plots/plot.py): the fp32 ladder's sizes."""
    sizes = ladder_sizes(rows)
    return [r for r in rows if r["size"] in sizes and not tensor_core(r["kernel"])]


def figure_path(out_dir, name, gpu, gpus):
    """plots/<chapter>_<name>.png, with the GPU's name appended when there are several."""
    suffix = "" if len(gpus) == 1 else "_" + gpu.replace(" ", "_")
    return os.path.join(out_dir, f"{CHAPTER}_{name}{suffix}.png")


def draw_sweep(rows, gpu, path):
    rows = main_rows(rows)
    sizes = ladder_sizes(rows)
    square = [r for r in rows if r["size"] in sizes and dims(r["size"]) and len(set(dims(r["size"]))) == 1]
    if not square:
        return
    fig, ax = plt.subplots(figsize=(11, 5.5))
    for n, kernel in enumerate(unique(r["kernel"] for r in square)):
        pts = sorted((dims(r["size"])[0], r["value"] * 1e3) for r in square if r["kernel"] == kernel)
        role = next(r["role"] for r in square if r["kernel"] == kernel)
        colour = plt.cm.tab20(n % 20)
        # The line joins the powers of two; an odd N (2047) is a hollow mark beside them.
        even = [p for p in pts if p[0] & (p[0] - 1) == 0]
        odd = [p for p in pts if p[0] & (p[0] - 1)]
        ax.plot([p[0] for p in even], [p[1] for p in even], marker="o", markersize=3, label=kernel,
                color=colour, linestyle="--" if role == "ceiling" else "-",
                linewidth=2.2 if role in ("ceiling", "optimized") else 1.2)
        ax.scatter([p[0] for p in odd], [p[1] for p in odd], s=22, facecolors="none", edgecolors=[colour])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N (C = A B with A, B, C all N x N; hollow marks: N not a power of two)")
    ax.set_ylabel("GFLOP/s (2 N^3 / time)")
    ax.set_title(f"{CHAPTER}: fp32 SGEMM on {gpu}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # off the lines
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {path}")


def draw_mlp(rows, gpu, path):
    rows = main_rows(rows)
    sizes = ladder_sizes(rows)
    shapes = unique(r["size"] for r in rows
                    if r["size"] in sizes and dims(r["size"]) and len(set(dims(r["size"]))) > 1)
    if not shapes:
        return
    kernels = unique(r["kernel"] for r in rows if r["size"] in shapes)
    fig, ax = plt.subplots(figsize=(12, 5))
    width = 0.8 / len(kernels)
    for k, kernel in enumerate(kernels):
        times = {r["size"]: r["time_ms"] * 1e3 for r in rows if r["kernel"] == kernel}
        xs = [i + k * width for i, s in enumerate(shapes) if s in times]
        ax.bar(xs, [times[s] for s in shapes if s in times], width=width, label=kernel,
               color=plt.cm.tab20(k % 20))
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(shapes))])
    ax.set_xticklabels(shapes, rotation=30, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("time (us), lower is better")
    ax.set_title(f"{CHAPTER}: chapter-07 MLP shapes (M x N x K) on {gpu}")
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # off the bars
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {path}")


def sweep_points(rows, kernel):
    """(M*N*K, % of cuBLAS, size) for every shape where kernel and cuBLAS were both timed."""
    cublas = {r["size"]: r["time_ms"] for r in rows if r["kernel"] == "cublas"}
    pts = []
    for r in rows:
        d = dims(r["size"])
        if r["kernel"] == kernel and d and r["size"] in cublas and r["time_ms"] > 0:
            pts.append((d[0] * d[1] * d[2], 100.0 * cublas[r["size"]] / r["time_ms"], r["size"]))
    return sorted(pts)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 0.0


def shapes_panel(ax, rows, gpu):
    """One GPU's shapes: best's and hopper's % of cuBLAS against M*N*K."""
    best = sweep_points(rows, "best")
    hopper = sweep_points(rows, "hopper")
    if hopper:
        ax.scatter([p[0] for p in hopper], [p[1] for p in hopper], s=12, marker="x", color="#999999",
                   label="hopper (128x256 tiles on every shape)")
    ax.scatter([p[0] for p in best], [p[1] for p in best], s=22, color="#55a868", zorder=3,
               label="best (sgemm_best: the model's choice)")
    mean = geomean([p[1] for p in best])
    large = [p[1] for p in best if p[0] >= 2 ** 30]
    ax.axhline(100, color="#4c72b0", linestyle="--", linewidth=1.2, label="cuBLAS SGEMM fp32 = 100%")
    ax.axhline(mean, color="#55a868", linewidth=1.2,
               label=f"best's geometric mean {mean:.1f}% ({len(best)} shapes)"
                     + (f"; {geomean(large):.1f}% at M*N*K >= 2^30" if large else ""))
    ax.axhline(90, color="#c44e52", linestyle=":", linewidth=1.0,
               label="90%: the aim for every shape with M*N*K >= 2^30")
    ax.axvline(2 ** 30, color="#cccccc", linewidth=0.8)
    worst = min(best, key=lambda p: p[1])
    ax.annotate(f"worst: {worst[2]} ({worst[1]:.0f}%)", (worst[0], worst[1]), xytext=(12, -16),
                textcoords="offset points", fontsize=8, color="#c44e52",
                arrowprops={"arrowstyle": "-", "color": "#c44e52"})
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M * N * K (log scale; the grey line is 2^30)")
    ax.set_ylabel("% of cuBLAS (its time / ours), higher is better")
    ax.set_title(gpu, fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper right")  # the worst shapes sit low: keep them in view


def gpu_panels(rows, gpus, panel, path, title, panel_size, sharey=False):
    """A figure of one panel a GPU, each drawn by panel(ax, that GPU's rows, gpu), to path."""
    if not gpus:
        return
    fig, axes = plt.subplots(1, len(gpus), figsize=(panel_size[0] * len(gpus), panel_size[1]), squeeze=False,
                             sharey=sharey)
    for ax, gpu in zip(axes[0], gpus):
        panel(ax, [r for r in rows if r["gpu"] == gpu], gpu)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def draw_shapes(rows, out_dir):
    """best's % of cuBLAS on every shape a run timed both on (the shape sweep and the
    bench's own shapes: the set matmul_tiled --bench --sweep sums up), a panel per GPU."""
    gpus = [g for g in unique(r["gpu"] for r in rows)
            if len(sweep_points([r for r in rows if r["gpu"] == g], "best")) >= 2]
    gpu_panels(rows, gpus, shapes_panel, os.path.join(out_dir, f"{CHAPTER}_shapes.png"),
               f"{CHAPTER}: fp32 SGEMM on any shape, sgemm_best against cuBLAS", (9, 5.5), sharey=True)


PRECISION_COLOURS = {"": "#8c8c8c", "_bf16": "#c44e52", "_tf32": "#8172b2", "_fp8": "#dd8452"}
CEILING_COLOURS = {"cublas": "#4c72b0", "cublas_tf32": "#8172b2", "cublas_bf16": "#c44e52",
                   "cublaslt_fp8": "#dd8452"}



def ladder_panel(ax, rows, gpu):
    """Every version at LADDER_SIZE, the fp32 ladder (its exercises after it), then the
    tensor cores by precision, each in the order it ran; and the four ceilings."""
    at = [r for r in rows if r["size"] == LADDER_SIZE]
    order = ("",) + TC_PRECISIONS
    versions = sorted((r for r in at if r["role"] != "ceiling"),
                      key=lambda r: (order.index(precision(r["kernel"])), r["role"] == "exercise"))
    colours = [PRECISION_COLOURS[precision(r["kernel"])] for r in versions]
    ax.barh(range(len(versions)), [r["value"] for r in versions], color=colours)
    ax.set_yticks(range(len(versions)))
    ax.set_yticklabels([r["kernel"] for r in versions], fontsize=7)
    ax.invert_yaxis()
    for r in at:
        if r["role"] == "ceiling" and r["kernel"] in CEILING_COLOURS:
            ax.axvline(r["value"], color=CEILING_COLOURS[r["kernel"]], linestyle="--", linewidth=1.2,
                       label=f"{r['kernel']} {r['value']:.0f} TFLOP/s")
    ax.set_xscale("log")
    ax.set_xlabel(f"TFLOP/s at {LADDER_SIZE} (log scale); grey fp32, red bf16, purple TF32, orange e4m3")
    ax.set_title(gpu, fontsize=10)
    ax.grid(alpha=0.3, axis="x", which="both")
    ax.legend(fontsize=7, loc="upper right")  # over the fp32 bars, the shortest


def draw_ladder(rows, out_dir):
    gpus = [g for g in unique(r["gpu"] for r in rows)
            if any(r["gpu"] == g and r["size"] == LADDER_SIZE and tensor_core(r["kernel"]) for r in rows)]
    gpu_panels(rows, gpus, ladder_panel, os.path.join(out_dir, f"{CHAPTER}_ladder.png"),
               f"{CHAPTER}: the fp32 and tensor-core ladders at {LADDER_SIZE}", (8, 8))


def draw(rows, out_dir):
    gpus = unique(r["gpu"] for r in rows)
    for gpu in gpus:
        mine = [r for r in rows if r["gpu"] == gpu]
        draw_sweep(mine, gpu, figure_path(out_dir, "sweep", gpu, gpus))
        draw_mlp(mine, gpu, figure_path(out_dir, "mlp", gpu, gpus))
    draw_shapes(rows, out_dir)
    draw_ladder(rows, out_dir)
