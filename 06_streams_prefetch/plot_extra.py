"""Chapter 06's own figures, called by plots/plot.py as draw(rows, out_dir).

06_streams_prefetch_bandwidth.png  host-to-device and device-to-host GB/s against the copy
                                   size for pageable, registered and pinned host memory,
                                   with the nominal rate of the PCIe link.
06_streams_prefetch_timeline.png   every copy and kernel of four pipelines as bars, one
                                   row per stream, from the timeline file the benchmark
                                   writes (plots/results/06_streams_prefetch_timeline.tsv).
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMELINE = os.path.join(ROOT, "plots", "results", "06_streams_prefetch_timeline.tsv")
KIND_STYLE = {"pageable": "#c44e52", "registered": "#dd8452", "pinned": "#55a868"}
OP_COLOURS = {"h2d": "#4c72b0", "kernel": "#55a868", "d2h": "#dd8452"}


def size_label(nbytes):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes // scale} {unit}"
    return f"{nbytes} B"


def draw_bandwidth(rows, out_dir):
    """One figure per GPU: a panel per direction, a line per kind of host memory."""
    rows = [r for r in rows if r["unit"] == "GB/s"]
    gpus = list(dict.fromkeys(r["gpu"] for r in rows))
    for gpu in gpus:
        mine = [r for r in rows if r["gpu"] == gpu]
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
        for ax, direction, title in zip(axes, ("h2d", "d2h"), ("host to device", "device to host")):
            for kind, colour in KIND_STYLE.items():
                pts = sorted((int(r["size"]), r["value"]) for r in mine if r["kernel"] == f"{direction}_{kind}")
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3,
                            color=colour, label=kind)
            ceiling = [r for r in mine if r["role"] == "ceiling" and r["value"] > 0]
            if ceiling:
                ax.axhline(ceiling[0]["value"], color="#4c72b0", linestyle="--",
                           label=f"{ceiling[0]['kernel']} nominal {ceiling[0]['value']:.1f} GB/s")
            sizes = sorted({int(r["size"]) for r in mine})
            ax.set_xscale("log", base=2)
            ax.set_xticks(sizes)
            ax.set_xticklabels([size_label(s) for s in sizes], rotation=35, ha="right", fontsize=8)
            ax.minorticks_off()
            ax.set_xlabel("bytes per copy")
            ax.set_title(title, fontsize=10)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="upper left")
        axes[0].set_ylabel("GB/s")
        fig.suptitle(f"cudaMemcpy bandwidth on {gpu}")
        fig.tight_layout()
        suffix = "" if len(gpus) == 1 else "_" + gpu.replace(" ", "_")
        path = os.path.join(out_dir, f"06_streams_prefetch_bandwidth{suffix}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        print(f"wrote {path}")


def read_timeline(path):
    """(meta, {pipeline: [(stream, op, chunk, start, end), ...]}) from a timeline file
    (event_timeline.cuh's format); meta holds the '#' line's key-value pairs."""
    meta, ops = {}, {}
    with open(path) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if line.startswith("#"):
                fields[0] = fields[0].lstrip("# ")
                meta = dict(zip(fields[0::2], fields[1::2]))
            elif fields[0] != "pipeline" and len(fields) == 6:
                ops.setdefault(fields[0], []).append(
                    (fields[1], fields[2], int(fields[3]), float(fields[4]), float(fields[5])))
    return meta, ops


def plot_timeline(ops, title, op_colours, op_labels, xlabel, path):
    """One panel per pipeline, one row per stream, a bar per op (coloured by op, labelled
    with its chunk unless that is negative); chapter 07's data-parallel timeline too."""
    heights = [len(dict.fromkeys(o[0] for o in v)) + 1 for v in ops.values()]
    fig, axes = plt.subplots(len(ops), 1, figsize=(12, 0.45 * sum(heights) + 1.5), sharex=True,
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, (pipeline, items) in zip(axes[:, 0], ops.items()):
        streams = list(dict.fromkeys(o[0] for o in items))
        for stream, op, chunk, start, end in items:
            y = streams.index(stream)
            ax.barh(y, end - start, left=start, height=0.7, color=op_colours.get(op, "#999999"),
                    edgecolor="white", linewidth=0.5)
            if chunk >= 0:
                ax.text((start + end) / 2, y, str(chunk), ha="center", va="center", fontsize=6, color="white")
        total = max(o[4] for o in items)
        ax.set_yticks(range(len(streams)))
        ax.set_yticklabels(streams, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(f"{pipeline}: {total:.2f} ms", fontsize=9, loc="left")
        ax.grid(axis="x", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in op_colours.values()]
    fig.legend(handles, op_labels, fontsize=8, loc="lower center", ncol=min(len(op_labels), 6))
    axes[-1, 0].set_xlabel(xlabel)
    fig.suptitle(f"timeline, {title}", fontsize=10, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0.07, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}")


def draw_timeline(out_dir):
    if not os.path.exists(TIMELINE):
        print(f"no {TIMELINE}: run the chapter's bench with --timeline to draw the timeline")
        return
    meta, ops = read_timeline(TIMELINE)
    if not ops:
        print(f"{TIMELINE} holds no ops; timeline not drawn")
        return
    title = (f"{meta.get('gpu', '?')}: {meta.get('floats', '?')} floats in "
             f"{meta.get('chunks', '?')} chunks, {meta.get('work', '?')} multiply-adds per element")
    plot_timeline(ops, title, OP_COLOURS, ["copy in (H2D)", "kernel", "copy out (D2H)"],
                  "ms since the pipeline was issued (bar = from the event before an op to the one after it)",
                  os.path.join(out_dir, "06_streams_prefetch_timeline.png"))


def draw(rows, out_dir):
    draw_bandwidth(rows, out_dir)
    draw_timeline(out_dir)
