"""Chapter 07's own figures, drawn by plots/plot.py: test accuracy after each epoch and
the time of each epoch, per trainer, from the per-epoch files that `make bench` writes
beside the results CSV (plots/results/<GPU>.epochs: gpu,impl,dataset,batch,epoch,
train_loss,test_accuracy,epoch_ms)."""
import csv
import glob
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_epochs():
    rows = []
    for path in sorted(glob.glob(os.path.join(ROOT, "plots", "results", "*.epochs"))):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                try:
                    r["batch"], r["epoch"] = int(r["batch"]), int(r["epoch"])
                    r["test_accuracy"], r["epoch_ms"] = float(r["test_accuracy"]), float(r["epoch_ms"])
                except (KeyError, TypeError, ValueError):
                    continue
                rows.append(r)
    return rows


def series(rows, key):
    """{(impl, batch): [(epoch, value)]} in epoch order."""
    out = {}
    for r in rows:
        out.setdefault((r["impl"], r["batch"]), []).append((r["epoch"], r[key]))
    return {k: sorted(v) for k, v in out.items()}


def draw(rows, out_dir):
    epochs = read_epochs()
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
