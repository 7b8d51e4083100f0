"""Chapter 07's own figures, drawn by plots/plot.py from the files `make bench` writes
beside the results CSV:
  plots/results/<GPU>.epochs  gpu,impl,dataset,batch,epoch,train_loss,test_accuracy,epoch_ms
      -> 07_mnist_mlp_epochs.png: test accuracy and time of every epoch, per trainer
  plots/results/<GPU>.stages  gpu,batch,impl,launch,us
      -> 07_mnist_mlp_step.png: where a step's time goes, launch by launch (the persistent
         trainers: phase by phase, measured inside an epoch)
  plots/results/07_mnist_mlp_dp_timeline.tsv  (--bench --gpus N --timeline FILE)
      -> 07_mnist_mlp_dp_timeline.png: two data-parallel steps, every launch and all-reduce
         as a bar, one row per GPU and stream, drawn with chapter 06's timeline code
  plots/results/<GPU>.csv, the data-parallel bench's rows (chapter 07_mnist_mlp_dp, which
  plot.py draws as 07_mnist_mlp_dp.png)
      -> 07_mnist_mlp_dp_scaling.png: N GPUs' images/s over one GPU's, and the all-reduce
         (alone, and what the step still waits for) against one GPU's step, by per-GPU batch"""
import csv
import glob
import importlib.util
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_side_files(suffix, ints, floats):
    rows = []
    for path in sorted(glob.glob(os.path.join(ROOT, "plots", "results", "*." + suffix))):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                try:
                    for k in ints:
                        r[k] = int(r[k])
                    for k in floats:
                        r[k] = float(r[k])
                except (KeyError, TypeError, ValueError):
                    continue
                rows.append(r)
    return rows


def save_figure(fig, out_dir, name, gpu, gpus):
    """Writes out_dir/name.png, or name_<GPU>.png when the results hold several GPUs."""
    suffix = "" if len(gpus) == 1 else "_" + gpu.replace(" ", "_")
    path = os.path.join(out_dir, f"{name}{suffix}.png")
    fig.savefig(path, dpi=110, bbox_inches="tight")  # legends beside the axes included
    plt.close(fig)
    print(f"wrote {path}")


def draw_steps(out_dir):
    """One horizontal bar per (trainer, batch): its launches (or phases) stacked, and the
    measured step inside the epoch beside it."""
    stages = read_side_files("stages", ["batch"], ["us"])
    for gpu in sorted({r["gpu"] for r in stages}):
        mine = [r for r in stages if r["gpu"] == gpu]
        keys = list(dict.fromkeys((r["impl"], r["batch"]) for r in mine))
        launches = list(dict.fromkeys(r["launch"] for r in mine if r["launch"] != "step_in_epoch_graph"))
        fig, ax = plt.subplots(figsize=(12, 1.2 + 0.9 * len(keys)))
        colors = plt.cm.tab20 if len(launches) > 10 else plt.cm.tab10
        labels, drawn = [], set()
        for i, (impl, batch) in enumerate(keys):
            rows = {r["launch"]: r["us"] for r in mine if r["impl"] == impl and r["batch"] == batch}
            left = 0.0
            for j, name in enumerate(launches):
                us = rows.get(name, 0.0)
                ax.barh(2 * i, us, left=left, color=colors(j), label=name if name not in drawn else None)
                drawn.add(name)
                left += us
            ax.barh(2 * i + 0.8, rows.get("step_in_epoch_graph", 0.0), color="#444444",
                    label="a step inside the epoch (its graph, or its one launch)" if i == 0 else None)
            labels.append((2 * i + 0.4, f"{impl}, batch {batch}"))
        ax.set_yticks([y for y, _ in labels])
        ax.set_yticklabels([t for _, t in labels], fontsize=8)
        ax.set_xlabel("us (launches timed one at a time, so each includes its launch overhead; the persistent "
                      "trainers' phases measured inside an epoch)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.set_title(f"07_mnist_mlp: one training step, launch by launch, on {gpu}", fontsize=10)
        fig.tight_layout()
        save_figure(fig, out_dir, "07_mnist_mlp_step", gpu, {r["gpu"] for r in stages})


def series(rows, key):
    """{(impl, batch): [(epoch, value)]} in epoch order."""
    out = {}
    for r in rows:
        out.setdefault((r["impl"], r["batch"]), []).append((r["epoch"], r[key]))
    return {k: sorted(v) for k, v in out.items()}


DP_TIMELINE = os.path.join(ROOT, "plots", "results", "07_mnist_mlp_dp_timeline.tsv")
DP_OPS = {"forward": ("#8c8c8c", "forward product"), "output_layer": ("#b07aa1", "output layer"),
          "hidden_backward": ("#9c755f", "hidden backward"), "dW1": ("#4c72b0", "dW1 product (bucket)"),
          "update": ("#55a868", "update + next gather"),
          "allreduce": ("#c44e52", "all-reduce (bucket; the last with b1, W2, b2)")}


def draw_dp_timeline(out_dir):
    """Chapter 06's timeline figure for the data-parallel steps: one panel without buckets,
    one with, each bar labelled with its bucket where it has one."""
    if not os.path.exists(DP_TIMELINE):
        print(f"no {DP_TIMELINE}: run the bench with --gpus N --timeline to draw the data-parallel timeline")
        return
    spec = importlib.util.spec_from_file_location(
        "plot_extra_06", os.path.join(ROOT, "06_streams_prefetch", "plot_extra.py"))
    ch06 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ch06)
    meta, ops = ch06.read_timeline(DP_TIMELINE)
    if not ops:
        print(f"{DP_TIMELINE} holds no ops; timeline not drawn")
        return
    title = (f"{meta.get('gpu', '?')}: {meta.get('gpus', '?')} GPUs, per-GPU batch {meta.get('batch', '?')}, "
             f"hidden {meta.get('hidden', '?')}")
    ranks = meta.get("form") == "ranks"
    title += ", one process a GPU" if ranks else ", one process"
    origins = ("each rank's GPU from its own origin event, recorded as the ranks left a one-float all-reduce"
               if ranks else "each GPU from its own origin event; the origins were recorded back to back")
    ch06.plot_timeline(ops, title, {k: c for k, (c, _) in DP_OPS.items()}, [t for _, t in DP_OPS.values()],
                       f"ms since the GPUs were idle ({origins})",
                       os.path.join(out_dir, "07_mnist_mlp_dp_timeline.png"))


def draw_dp_scaling(out_dir):
    """Left: speedup of each N-GPU row over dp_x1 at the same H and per-GPU batch, with
    perfect scaling dashed. Right: the all-reduce alone and its exposed parts, as % of a
    step on one GPU (above 100%: communication alone takes longer than the step's compute)."""
    rows = []
    for path in sorted(glob.glob(os.path.join(ROOT, "plots", "results", "*.csv"))):
        with open(path, newline="") as f:
            rows += [r for r in csv.DictReader(f) if r.get("chapter") == "07_mnist_mlp_dp"]
    for gpu in sorted({r["gpu"] for r in rows}):
        mine = [r for r in rows if r["gpu"] == gpu]
        value = {(r["kernel"], int(r["size"])): float(r["value"]) for r in mine}
        fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
        gpus = 1
        for kernel in dict.fromkeys(r["kernel"] for r in mine):
            if not kernel.startswith("dp_x") or kernel.startswith("dp_x1_"):
                continue
            n, hidden = kernel.split("_")[1], kernel.rsplit("_", 1)[1]
            gpus = max(gpus, int(n[1:]))
            pts = sorted((b, v / value[(f"dp_x1_{hidden}", b)]) for (k, b), v in value.items()
                         if k == kernel and value.get((f"dp_x1_{hidden}", b)))
            axes[0].plot([b for b, _ in pts], [x for _, x in pts], marker="o", label=kernel)
        for kernel in dict.fromkeys(r["kernel"] for r in mine):
            if not (kernel.startswith("allreduce_x") or kernel.startswith("exposed_x")):
                continue
            if kernel.startswith("allreduce_in_step"):
                continue
            hidden = kernel.rsplit("_", 1)[1]
            pts = sorted((b, 100.0 * v / value[(f"step_x1_{hidden}", b)]) for (k, b), v in value.items()
                         if k == kernel and value.get((f"step_x1_{hidden}", b)))
            axes[1].plot([b for b, _ in pts], [x for _, x in pts], marker="o", label=kernel)
        axes[0].axhline(gpus, color="#444444", linestyle="--", label=f"perfect: {gpus}x")
        axes[0].set_ylabel("images/s over one GPU's")
        axes[1].set_ylabel("% of one GPU's step")
        axes[1].set_yscale("log")
        for ax in axes:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("batch per GPU")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle(f"07 data parallel on {gpu}: scaling, and the all-reduce against the step")
        fig.tight_layout()
        save_figure(fig, out_dir, "07_mnist_mlp_dp_scaling", gpu, {r["gpu"] for r in rows})


def draw(rows, out_dir):
    draw_steps(out_dir)
    draw_dp_timeline(out_dir)
    draw_dp_scaling(out_dir)
    epochs = read_side_files("epochs", ["batch", "epoch"], ["test_accuracy", "epoch_ms"])
    if not epochs:
        return
    for gpu in sorted({r["gpu"] for r in epochs}):
        mine = [r for r in epochs if r["gpu"] == gpu]
        dataset = mine[0]["dataset"]
        batches = sorted({r["batch"] for r in mine}, reverse=True)
        fig, axes = plt.subplots(2, len(batches), figsize=(6.5 * len(batches), 8), squeeze=False)
        # One style a trainer in every panel (20 colours, then dashed, then dotted), so that
        # one legend beside the figure names them all.
        impls = list(dict.fromkeys(r["impl"] for r in mine))
        style = {impl: {"color": plt.cm.tab20(i % 20), "linestyle": ("-", "--", ":")[i // 20 % 3]}
                 for i, impl in enumerate(impls)}
        for col, batch in enumerate(batches):
            of_batch = [r for r in mine if r["batch"] == batch]
            acc, ms = series(of_batch, "test_accuracy"), series(of_batch, "epoch_ms")
            for (impl, _), pts in acc.items():
                if len(pts) > 1:
                    axes[0][col].plot([e for e, _ in pts], [v for _, v in pts], marker="o", markersize=3,
                                      label=impl, **style[impl])
            for (impl, _), pts in ms.items():
                axes[1][col].plot([e for e, _ in pts], [v for _, v in pts], marker="o", markersize=3,
                                  label=impl, **style[impl])
            axes[0][col].set_title(f"test accuracy, batch {batch} ({dataset})", fontsize=9)
            axes[0][col].set_xlabel("epoch")
            axes[0][col].set_ylabel("%")
            axes[1][col].set_title(f"epoch time, batch {batch}", fontsize=9)
            axes[1][col].set_xlabel("epoch")
            axes[1][col].set_ylabel("ms")
            axes[1][col].set_yscale("log")
            for ax in (axes[0][col], axes[1][col]):
                ax.grid(alpha=0.3)
        handles = [plt.Line2D([], [], marker="o", markersize=3, **style[impl]) for impl in impls]
        fig.legend(handles, impls, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 0.95))
        fig.suptitle(f"07_mnist_mlp per epoch on {gpu}")
        fig.tight_layout()
        save_figure(fig, out_dir, "07_mnist_mlp_epochs", gpu, {r["gpu"] for r in epochs})
