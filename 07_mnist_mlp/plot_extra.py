"""Chapter 07's own figures, drawn by plots/plot.py from the files `make bench` writes
beside the results CSV:
  plots/results/<GPU>.epochs  gpu,impl,dataset,batch,epoch,train_loss,test_accuracy,epoch_ms
      -> 07_mnist_mlp_epochs.png: test accuracy and time of every epoch, per trainer
  plots/results/<GPU>.stages  gpu,batch,impl,launch,us
      -> 07_mnist_mlp_step.png: where a fused step's time goes, launch by launch"""
import csv
import glob
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def draw_steps(out_dir):
    """One horizontal bar per (trainer, batch): its launches stacked, and the measured
    step inside the epoch graph beside it."""
    stages = read_side_files("stages", ["batch"], ["us"])
    for gpu in sorted({r["gpu"] for r in stages}):
        mine = [r for r in stages if r["gpu"] == gpu]
        keys = list(dict.fromkeys((r["impl"], r["batch"]) for r in mine))
        launches = list(dict.fromkeys(r["launch"] for r in mine if r["launch"] != "step_in_epoch_graph"))
        fig, ax = plt.subplots(figsize=(12, 1.2 + 0.9 * len(keys)))
        labels = []
        for i, (impl, batch) in enumerate(keys):
            rows = {r["launch"]: r["us"] for r in mine if r["impl"] == impl and r["batch"] == batch}
            left = 0.0
            for j, name in enumerate(launches):
                us = rows.get(name, 0.0)
                ax.barh(2 * i, us, left=left, color=plt.cm.tab10(j), label=name if i == 0 else None)
                left += us
            ax.barh(2 * i + 0.8, rows.get("step_in_epoch_graph", 0.0), color="#444444",
                    label="step inside the epoch graph" if i == 0 else None)
            labels.append((2 * i + 0.4, f"{impl}, batch {batch}"))
        ax.set_yticks([y for y, _ in labels])
        ax.set_yticklabels([t for _, t in labels], fontsize=8)
        ax.set_xlabel("us (launches timed one at a time, so each includes its launch overhead)")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.set_title(f"07_mnist_mlp: one training step, launch by launch, on {gpu}", fontsize=10)
        fig.tight_layout()
        suffix = "" if len({r["gpu"] for r in stages}) == 1 else "_" + gpu.replace(" ", "_")
        path = os.path.join(out_dir, f"07_mnist_mlp_step{suffix}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        print(f"wrote {path}")


def series(rows, key):
    """{(impl, batch): [(epoch, value)]} in epoch order."""
    out = {}
    for r in rows:
        out.setdefault((r["impl"], r["batch"]), []).append((r["epoch"], r[key]))
    return {k: sorted(v) for k, v in out.items()}


def draw(rows, out_dir):
    draw_steps(out_dir)
    epochs = read_side_files("epochs", ["batch", "epoch"], ["test_accuracy", "epoch_ms"])
    if not epochs:
        return
    for gpu in sorted({r["gpu"] for r in epochs}):
        mine = [r for r in epochs if r["gpu"] == gpu]
        dataset = mine[0]["dataset"]
        batches = sorted({r["batch"] for r in mine}, reverse=True)
        fig, axes = plt.subplots(2, len(batches), figsize=(6.5 * len(batches), 8), squeeze=False)
        for col, batch in enumerate(batches):
            of_batch = [r for r in mine if r["batch"] == batch]
            acc, ms = series(of_batch, "test_accuracy"), series(of_batch, "epoch_ms")
            for (impl, _), pts in acc.items():
                if len(pts) > 1:
                    axes[0][col].plot([e for e, _ in pts], [v for _, v in pts], marker="o", markersize=3, label=impl)
            for (impl, _), pts in ms.items():
                axes[1][col].plot([e for e, _ in pts], [v for _, v in pts], marker="o", markersize=3, label=impl)
            axes[0][col].set_title(f"test accuracy, batch {batch} ({dataset})", fontsize=9)
            axes[0][col].set_xlabel("epoch")
            axes[0][col].set_ylabel("%")
            axes[1][col].set_title(f"epoch time, batch {batch}", fontsize=9)
            axes[1][col].set_xlabel("epoch")
            axes[1][col].set_ylabel("ms")
            axes[1][col].set_yscale("log")
            for ax in (axes[0][col], axes[1][col]):
                ax.grid(alpha=0.3)
                ax.legend(fontsize=7)
        fig.suptitle(f"07_mnist_mlp per epoch on {gpu}")
        fig.tight_layout()
        suffix = "" if len({r["gpu"] for r in epochs}) == 1 else "_" + gpu.replace(" ", "_")
        path = os.path.join(out_dir, f"07_mnist_mlp_epochs{suffix}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        print(f"wrote {path}")
