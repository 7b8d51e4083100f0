#!/usr/bin/env python3
"""Draw one PNG per chapter from the benchmark CSVs in a results folder.

usage: plot.py RESULTS_DIR [--out DIR]

Every CSV in RESULTS_DIR (one per GPU, columns as in common/report.h) is read; for each
chapter a figure plots/<chapter>.png gets one panel per unit: a bar chart of every
version against its ceiling where the unit was measured at one size, and a line per
version across sizes where it was measured at several. A chapter folder may hold
plot_extra.py (in the folder or in its driver/ folder) with draw(rows, out_dir) for figures
of its own (timelines, curves), and main_rows(rows) to choose the rows of the main figure.
"""
import argparse
import csv
import importlib.util
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLUMNS = ["gpu", "chapter", "kernel", "role", "size", "time_ms", "value", "unit",
           "ceiling", "ceiling_value", "pct_of_ceiling"]
ROLE_COLOURS = {"naive": "#c44e52", "step": "#8c8c8c", "optimized": "#55a868", "ceiling": "#4c72b0",
                "exercise": "#dd8452"}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(msg):
    print(f"plot.py: {msg}", file=sys.stderr)
    print(__doc__.strip().splitlines()[2], file=sys.stderr)
    sys.exit(2)


def read_rows(results_dir):
    """All rows of all CSVs in results_dir, numbers converted; exits 2 on a malformed file."""
    files = sorted(f for f in os.listdir(results_dir) if f.endswith(".csv"))
    if not files:
        fail(f"no .csv files in {results_dir}")
    rows = []
    for name in files:
        path = os.path.join(results_dir, name)
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != COLUMNS:
                fail(f"{path}: header is {reader.fieldnames}, expected {','.join(COLUMNS)}")
            for line, r in enumerate(reader, start=2):
                try:
                    for k in ("time_ms", "value", "ceiling_value", "pct_of_ceiling"):
                        r[k] = float(r[k])
                except (TypeError, ValueError):
                    fail(f"{path}:{line}: a number column is not a number")
                rows.append(r)
    return rows


def elements(size):
    """Sort key of a size string such as '4096' or '127x129x131'."""
    n = 1
    for d in size.split("x"):
        n *= int(d) if d.isdigit() else 1
    return n


def unique(seq):
    return list(dict.fromkeys(seq))


def bar_panel(ax, rows, unit):
    """Each version at one size, its value as a bar, with the % of its ceiling written on it."""
    labels = [r["kernel"] for r in rows]
    bars = ax.bar(range(len(rows)), [r["value"] for r in rows],
                  color=[ROLE_COLOURS.get(r["role"], "#999999") for r in rows])
    many = len(rows) > MANY_BARS  # then the labels stand upright, to keep clear of each other
    for bar, r in zip(bars, rows):
        ax.annotate(f"{r['pct_of_ceiling']:.0f}%", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=7 if many else 8, rotation=90 if many else 0)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, rotation=60 if many else 35, ha="right", fontsize=8)
    ax.set_ylabel(unit)
    values = [r["value"] for r in rows if r["value"] > 0]
    if values and max(values) > 30 * min(values):  # a few slow versions would flatten the rest
        ax.set_yscale("log")
        ax.set_ylabel(f"{unit} (log scale)")
    ax.margins(y=0.15)
    ax.set_title(f"size {rows[0]['size']} (% of {rows[0]['ceiling']} on the bars)", fontsize=9)


MANY_BARS = 16  # bars whose labels fit lying at 35 degrees; more stand upright
MAX_WIDTH = 18  # inches of panels side by side; wider figures stack them
LEGEND_INSIDE = 12  # versions a line panel's legend holds inside the axes; more go beside it


def line_panel(ax, rows, unit):
    """Each version across sizes."""
    sizes = sorted(unique(r["size"] for r in rows), key=elements)
    kernels = unique(r["kernel"] for r in rows)
    palette = plt.cm.tab20.colors if len(kernels) > 10 else plt.cm.tab10.colors
    for k, kernel in enumerate(kernels):
        pts = {r["size"]: r["value"] for r in rows if r["kernel"] == kernel}
        xs = [i for i, s in enumerate(sizes) if s in pts]
        role = next(r["role"] for r in rows if r["kernel"] == kernel)
        ax.plot(xs, [pts[sizes[i]] for i in xs], marker="o", markersize=3, label=kernel,
                color=palette[k % len(palette)], linestyle="--" if role == "ceiling" else "-")
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels(sizes, rotation=35, ha="right", fontsize=7)
    ax.set_ylabel(unit)
    if unit == "ms":
        ax.set_yscale("log")
    if len(kernels) <= LEGEND_INSIDE:
        ax.legend(fontsize=7)
    else:  # beside the panel, in columns of up to twice LEGEND_INSIDE names
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  ncol=-(-len(kernels) // (2 * LEGEND_INSIDE)))
    ax.grid(alpha=0.3)


def draw_chapter(chapter, rows, out_dir):
    """One figure per GPU for the chapter: a panel per (unit, kind of panel)."""
    for gpu in unique(r["gpu"] for r in rows):
        mine = [r for r in rows if r["gpu"] == gpu]
        panels = []
        for unit in unique(r["unit"] for r in mine):
            of_unit = [r for r in mine if r["unit"] == unit]
            sizes = unique(r["size"] for r in of_unit)
            kernels_per_size = {s: sum(1 for r in of_unit if r["size"] == s) for s in sizes}
            if len(sizes) == 1 or all(v > 1 for v in kernels_per_size.values()) and len(sizes) <= 2:
                for s in sizes:
                    panels.append(("bar", unit, [r for r in of_unit if r["size"] == s]))
            else:
                panels.append(("line", unit, of_unit))
        # A line panel whose legend goes beside it gets the room of its legend too.
        widths = [max(6, 0.4 * len(prow)) if kind == "bar"
                  else 9 if len(unique(r["kernel"] for r in prow)) > LEGEND_INSIDE else 6
                  for kind, _, prow in panels]
        if sum(widths) <= MAX_WIDTH:  # side by side
            fig, axes = plt.subplots(1, len(panels), figsize=(sum(widths), 4.5), squeeze=False,
                                     gridspec_kw={"width_ratios": widths})
            axes = axes[0]
        else:  # one above the other
            fig, axes = plt.subplots(len(panels), 1, figsize=(max(widths), 5 * len(panels)), squeeze=False)
            axes = axes[:, 0]
        for ax, (kind, unit, prow) in zip(axes, panels):
            (bar_panel if kind == "bar" else line_panel)(ax, prow, unit)
        fig.suptitle(f"{chapter} on {gpu}")
        fig.tight_layout()
        suffix = "" if len(unique(r["gpu"] for r in rows)) == 1 else "_" + gpu.replace(" ", "_")
        path = os.path.join(out_dir, f"{chapter}{suffix}.png")
        fig.savefig(path, dpi=110, bbox_inches="tight")  # a legend beside a panel included
        plt.close(fig)
        print(f"wrote {path}")


def load_extra(chapter):
    """The chapter's own plot_extra.py (NN_topic/ or NN_topic/driver/) as a module, or None
    if it has none."""
    paths = [os.path.join(ROOT, chapter, sub, "plot_extra.py") for sub in ("", "driver")]
    path = next((p for p in paths if os.path.exists(p)), None)
    if path is None:
        return None
    spec = importlib.util.spec_from_file_location(f"plot_extra_{chapter}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser(description="Draw one PNG per chapter from benchmark CSVs.")
    parser.add_argument("results_dir", help="folder of <GPU>.csv files")
    parser.add_argument("--out", default=os.path.join(ROOT, "plots"), help="where the PNGs go")
    args = parser.parse_args()
    if not os.path.isdir(args.results_dir):
        fail(f"{args.results_dir} is not a folder")
    rows = read_rows(args.results_dir)
    os.makedirs(args.out, exist_ok=True)
    for chapter in sorted(unique(r["chapter"] for r in rows)):
        mine = [r for r in rows if r["chapter"] == chapter]
        extra = load_extra(chapter)
        # plot_extra.main_rows, where a chapter has it, keeps its own figures' rows (a
        # sweep over many shapes, say) out of the chapter's main figure.
        main_rows = extra.main_rows(mine) if extra and hasattr(extra, "main_rows") else mine
        if main_rows:
            draw_chapter(chapter, main_rows, args.out)
        if extra:
            extra.draw(mine, args.out)


if __name__ == "__main__":
    main()
