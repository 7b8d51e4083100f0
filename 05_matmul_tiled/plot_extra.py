"""Chapter 05's own figures, drawn by plots/plot.py:
  05_matmul_tiled_sweep.png  GFLOP/s of every version against the square size N (N x N x N)
  05_matmul_tiled_mlp.png    time of every version on each chapter-07 MLP shape
"""
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


def draw_sweep(rows, gpu, out_dir):
    square = [r for r in rows if dims(r["size"]) and len(set(dims(r["size"]))) == 1]
    if not square:
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for n, kernel in enumerate(unique(r["kernel"] for r in square)):
        pts = sorted((dims(r["size"])[0], r["value"] * 1e3) for r in square if r["kernel"] == kernel)
        role = next(r["role"] for r in square if r["kernel"] == kernel)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=kernel,
                color=plt.cm.tab20(n % 20),
                linestyle="--" if role == "ceiling" else "-",
                linewidth=2.2 if role in ("ceiling", "optimized") else 1.2)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N (C = A B with A, B, C all N x N)")
    ax.set_ylabel("GFLOP/s (2 N^3 / time)")
    ax.set_title(f"{CHAPTER}: fp32 SGEMM on {gpu}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = os.path.join(out_dir, f"{CHAPTER}_sweep.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def draw_mlp(rows, gpu, out_dir):
    shapes = unique(r["size"] for r in rows if dims(r["size"]) and len(set(dims(r["size"]))) > 1)
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
    ax.legend(fontsize=7, ncol=4)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    path = os.path.join(out_dir, f"{CHAPTER}_mlp.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def draw(rows, out_dir):
    for gpu in unique(r["gpu"] for r in rows):
        mine = [r for r in rows if r["gpu"] == gpu]
        draw_sweep(mine, gpu, out_dir)
        draw_mlp(mine, gpu, out_dir)
