#!/usr/bin/env python3
"""Write the lessons' results tables and numbers from the committed runs.

usage: tables.py [--check] [--results DIR] [FILE.md ...]

Every number a lesson quotes from a benchmark sits between two markers, and this script
writes what goes between them from the committed files in plots/results/ (one per GPU:
<GPU>.csv, and chapter 07's <GPU>.epochs and <GPU>.stages). With no FILE, it rewrites the
top README.md and every chapter's *.md. --check writes nothing and exits 1 if any file
differs from what it would write (the test that keeps the lessons true to the CSVs).

A table, on lines of their own:

    <!-- table: chapter=03_reduction size=268435456 kernel=v1_divergent,v7_single_pass,cub -->
    <!-- /table -->

An inline number:

    <!-- num: chapter=01_vector_add kernel=float4 size=268435456 gpu=H100 field=value -->2880 GB/s<!-- /num -->

Options (key=value, separated by spaces; a value may be a comma-separated list):
  source=csv|epochs|stages  which file of each GPU (default csv)
  file=PATH                 a committed CSV of records (path from the repository root), one GPU
  pick=N                    (num) the N-th of the rows that match, in the file's order
  gpu=H100,H200             the GPUs, by a word of the file's name (default: every GPU,
                            H100 first); a num takes exactly one
  cols=time,value,pct       the fields shown for each GPU (table); field=... (num). Fields:
                              time     time_ms of the row ("1.118 ms")
                              value    the rate with its unit ("2880 GB/s"), or the time
                              pct      pct_of_ceiling ("96.9%")
                              speedup  the base row's time over this row's ("24.6x")
                              step     the previous row's time over this row's (table only:
                                       the step's own speedup, the rows in the table's order)
                              ceiling  the ceiling's name and value ("d2d_copy 2974 GB/s")
                            any other column of the source by its name (raw)
  base=KERNEL               the row that speedup divides (default: the table's first kernel),
                            taken at the same GPU and size, from the selection or else from
                            the rest of the chapter's rows (so a num can name any version)
  label=kernel,size         the columns that name a row (default: kernel, or impl for the
                            epochs and stages; size is added when several sizes are shown)
  stat=geomean|min|max|mean|median|count|argmin|argmax
                            (num) one number over all the rows selected: argmin/argmax give
                            the label of the row with the smallest/largest field
  pivot=kernel              (table) one row a size, one column per kernel and GPU, showing
                            the one field in cols
  titles=a,b,...            (table) replace the label columns' headings
  minwork=N                 the rows whose size, as a product of its dimensions (MxNxK), is at
                            least N (2^30 may be written as 2^30)
  any column of the source  a filter: the rows whose column is one of the listed values; for
                            kernel (impl), the list also orders the rows. size=* keeps all.
"""
import csv
import glob
import math
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESERVED = {"source", "file", "pick", "gpu", "cols", "field", "base", "label", "stat", "pivot", "titles", "minwork"}
SUFFIX = {"csv": ".csv", "epochs": ".epochs", "stages": ".stages"}
MARK = re.compile(r"<!-- (table|num): ([^>]*?) -->")
CLOSE = {"table": "<!-- /table -->", "num": "<!-- /num -->"}


class Bad(Exception):
    pass


def parse_opts(text):
    opts = {}
    for word in text.split():
        if "=" not in word:
            raise Bad(f"'{word}' is not key=value")
        k, v = word.split("=", 1)
        opts[k] = v.split(",") if v != "" else []
    return opts


def gpu_files(results, source):
    """{short name: path} for every GPU with a file of this source, e.g. {'H100': ...}."""
    out = {}
    for path in sorted(glob.glob(os.path.join(results, "*" + SUFFIX[source]))):
        name = os.path.basename(path)[: -len(SUFFIX[source])]
        m = re.search(r"([A-Z]\d{2,4}[A-Za-z]*)", name.replace("NVIDIA_", ""))
        out[m.group(1) if m else name] = path
    return out


_cache = {}


def load(path):
    if path not in _cache:
        with open(path, newline="") as f:
            _cache[path] = list(csv.DictReader(f))
    return _cache[path]


def sig(x, digits):
    """x with `digits` significant digits, trailing zeros kept (2.130, 10.14, 491.0)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    return f"{x:.{decimals}f}"


def fmt_value(v, unit):
    if unit == "ms":
        return sig(v, 4) + " ms"
    if v >= 1000 or (unit == "GB/s" and v >= 100):
        return f"{v:.0f} {unit}"
    return sig(v, 3) + " " + unit


def field_of(row, field, base_row, prev_row=None):
    """The text and the number of one field of a row."""
    if field == "step":
        if prev_row is None:
            return "", float("nan")
        return field_of(row, "speedup", prev_row)
    if field == "time":
        t = float(row["time_ms"])
        return sig(t, 4) + " ms", t
    if field == "value":
        v = float(row["value"])
        return fmt_value(v, row["unit"]), v
    if field == "pct":
        p = float(row["pct_of_ceiling"])
        return f"{p:.1f}%", p
    if field == "speedup":
        if base_row is None:
            raise Bad("speedup needs a base row at the same GPU and size")
        s = float(base_row["time_ms"]) / float(row["time_ms"])
        return (f"{s:.0f}x" if s >= 100 else sig(s, 3) + "x"), s
    if field == "ceiling":
        v = float(row["ceiling_value"])
        return f"{row['ceiling']} {fmt_value(v, row['unit'])}", v
    if field not in row:
        raise Bad(f"no field or column '{field}'")
    try:
        return row[field], float(row[field])
    except ValueError:
        return row[field], float("nan")


def select(opts, results):
    """[(gpu, rows)] for the options' filters, rows in the filters' order."""
    source = opts.get("source", ["csv"])[0]
    if source not in SUFFIX:
        raise Bad(f"source '{source}' is not one of {', '.join(SUFFIX)}")
    files = gpu_files(results, source)
    if "file" in opts:  # a committed CSV of records beside a chapter, one GPU in it
        path = os.path.join(ROOT, opts["file"][0])
        if not os.path.isfile(path):
            raise Bad(f"no file {opts['file'][0]}")
        name = (load(path) or [{}])[0].get("gpu", "").replace("NVIDIA ", "")
        m = re.search(r"([A-Z]\d{2,4}[A-Za-z]*)", name)
        files = {m.group(1) if m else name: path}
    gpus = opts.get("gpu") or sorted(files)
    key = "kernel" if source == "csv" else "impl"
    out = []
    for g in gpus:
        if g not in files:
            raise Bad(f"no {SUFFIX[source]} file for GPU '{g}' in {results}")
        rows = load(files[g])
        filters = {k: v for k, v in opts.items() if k not in RESERVED}
        for k in filters:
            if rows and k not in rows[0]:
                raise Bad(f"'{k}' is no column of {os.path.basename(files[g])}")
        for r in rows:
            r["gpu_short"] = g
        sel = [r for r in rows
               if all(v == ["*"] or r[k] in v for k, v in filters.items())]
        if "minwork" in opts:
            sel = [r for r in sel if work_of(r.get("size", "")) >= parse_count(opts["minwork"][0])]
        if key in filters and filters[key] != ["*"]:
            order = {n: i for i, n in enumerate(filters[key])}
            sel.sort(key=lambda r: order[r[key]])  # stable: the file's order within a name
        out.append((g, sel))
        BASE_POOL[g] = [r for r in rows if "chapter" not in filters or r.get("chapter") in filters["chapter"]]
    return out, key


BASE_POOL = {}  # per GPU: the rows of the selection's chapter, where base= is looked up


def parse_count(text):
    """'1073741824' or '2^30'."""
    if "^" in text:
        b, e = text.split("^", 1)
        return int(b) ** int(e)
    return int(text)


def work_of(size):
    """The product of a size's dimensions ('4096x4096x4096'), 0 if it is not one."""
    n = 1
    for d in size.split("x"):
        if not d.isdigit():
            return 0
        n *= int(d)
    return n


def base_for(row, rows, base):
    pool = BASE_POOL.get(row.get("gpu_short"), []) if row.get("gpu_short") else []
    for r in list(rows) + pool:
        if r.get("kernel") == base and r.get("size") == row.get("size"):
            return r
    return None


def render_num(opts, results):
    field = (opts.get("field") or ["value"])[0]
    sel, key = select(opts, results)
    if len(sel) != 1:
        raise Bad("a num takes exactly one gpu=")
    _, rows = sel[0]
    if not rows:
        if measured_elsewhere(opts, results):
            return "not yet measured"
        raise Bad("no row matches")
    if "pick" in opts:  # a run's log of rows where a key repeats: the n-th match, file order
        n = int(opts["pick"][0])
        if not 1 <= n <= len(rows):
            raise Bad(f"pick={n}: {len(rows)} rows match")
        rows = [rows[n - 1]]
    base = (opts.get("base") or [None])[0]
    stat = (opts.get("stat") or [None])[0]
    if stat is None:
        if len(rows) != 1:
            raise Bad(f"{len(rows)} rows match; a num needs one (or stat=)")
        return field_of(rows[0], field, base_for(rows[0], rows, base) if base else None)[0]
    labels = opts.get("label") or [key, "size"]
    vals = [(field_of(r, field, None)[1], r) for r in rows]
    if stat == "count":
        return str(len(rows))
    if stat in ("argmin", "argmax"):
        v, r = (min if stat == "argmin" else max)(vals, key=lambda t: t[0])
        return " ".join(r[c] for c in labels if c in r)
    nums = [v for v, _ in vals]
    if stat == "geomean":
        x = math.exp(sum(math.log(v) for v in nums) / len(nums))
    elif stat == "min":
        x = min(nums)
    elif stat == "max":
        x = max(nums)
    elif stat == "mean":
        x = sum(nums) / len(nums)
    elif stat == "median":  # repeated runs of one key, e.g. builds alternated on one GPU
        x = statistics.median(nums)
    else:
        raise Bad(f"stat '{stat}' is not one of geomean, min, max, mean, median, count, argmin, "
                  "argmax")
    return f"{x:.1f}%" if field == "pct" else sig(x, 4)


def measured_elsewhere(opts, results):
    """True when the selection matches rows on another GPU: a run this GPU has not had yet,
    not a wrong name (which matches nowhere and stays an error)."""
    if "gpu" not in opts:
        return False
    others = {k: v for k, v in opts.items() if k != "gpu"}
    for g in gpu_files(results, opts.get("source", ["csv"])[0]):
        if g not in opts["gpu"]:
            sel, _ = select(dict(others, gpu=[g]), results)
            if sel[0][1]:
                return True
    return False


TITLES = {"time": "time", "value": "rate", "pct": "% of ceiling", "speedup": "speedup",
          "step": "step speedup",
          "ceiling": "ceiling", "kernel": "version", "impl": "trainer"}


def render_table(opts, results):
    sel, key = select(opts, results)
    cols = opts.get("cols") or ["time", "value", "pct"]
    base = (opts.get("base") or [None])[0]
    kernels = opts.get(key)
    if base is None and kernels and kernels != ["*"] and "speedup" in cols:
        base = kernels[0]
    sizes = [] if opts.get("size", ["*"]) == ["*"] else list(opts["size"])
    for _, rows in sel:
        for r in rows:
            if r.get("size") is not None and r["size"] not in sizes:
                sizes.append(r["size"])
    labels = opts.get("label") or ([key] + (["size"] if len(sizes) > 1 else []))
    titles = opts.get("titles") or [TITLES.get(c, c) for c in labels]
    if "pivot" in opts:
        return render_pivot(opts, sel, key, cols, sizes, titles)
    # rows by label, in the order of the first GPU that has them
    order, cells = [], {}
    for g, rows in sel:
        prev = {}  # the row before, by size: what step divides
        for r in rows:
            lab = tuple(r.get(c, "") for c in labels)
            if lab not in cells:
                order.append(lab)
                cells[lab] = {}
            if g in cells[lab]:
                raise Bad(f"two rows for {' '.join(lab)} on {g}: add a filter (size=...)")
            b = base_for(r, rows, base) if base else None
            cells[lab][g] = [field_of(r, c, b, prev.get(r.get("size")))[0] for c in cols]
            prev[r.get("size")] = r
    if not order:
        raise Bad("no row matches")
    gpus = [g for g, _ in sel]
    head = titles + [f"{g} {TITLES.get(c, c)}" for g in gpus for c in cols]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] * len(titles) + ["---:"] * (len(head) - len(titles))) + "|"]
    for lab in order:
        row = [f"`{lab[0]}`" if labels[0] == key else lab[0]] + list(lab[1:])
        for g in gpus:
            row += cells[lab].get(g, ["-"] * len(cols))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def render_pivot(opts, sel, key, cols, sizes, titles):
    if len(cols) != 1:
        raise Bad("pivot shows one field: cols=FIELD")
    kernels = opts.get(key) or []
    if not kernels or kernels == ["*"]:
        kernels = []
        for _, rows in sel:
            for r in rows:
                if r[key] not in kernels:
                    kernels.append(r[key])
    base = (opts.get("base") or [kernels[0]])[0]
    head = ["size"] + [f"{g} `{k}`" for g, _ in sel for k in kernels]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for s in sizes:
        row = [s]
        for _, rows in sel:
            for k in kernels:
                r = [x for x in rows if x[key] == k and x.get("size") == s]
                row.append(field_of(r[0], cols[0], base_for(r[0], rows, base))[0] if r else "-")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def rewrite(text, results, where):
    out, pos = [], 0
    for m in MARK.finditer(text):
        if m.start() < pos:
            continue
        kind = m.group(1)
        close = text.find(CLOSE[kind], m.end())
        if close < 0:
            raise Bad(f"{where}: {kind} marker without {CLOSE[kind]}")
        try:
            body = (render_table if kind == "table" else render_num)(parse_opts(m.group(2)), results)
        except Bad as e:
            line = text.count("\n", 0, m.start()) + 1
            raise Bad(f"{where}:{line}: {e}")
        out.append(text[pos:m.end()])
        out.append("\n" + body + "\n" if kind == "table" else body)
        pos = close
    out.append(text[pos:])
    return "".join(out)


def lessons():
    files = [os.path.join(ROOT, "README.md")]
    files += sorted(glob.glob(os.path.join(ROOT, "0[1-7]_*", "*.md")))
    files += sorted(p for p in glob.glob(os.path.join(ROOT, "0[1-7]_*", "*", "*.md"))
                    if os.path.basename(os.path.dirname(p)) not in ("records", "solutions"))
    return files


def main(argv):
    check, results, files = False, os.path.join(ROOT, "plots", "results"), []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--check":
            check = True
        elif a == "--results" and i + 1 < len(argv):
            results = argv[i + 1]
            i += 1
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        elif a.startswith("-"):
            print(f"tables.py: unknown option '{a}'", file=sys.stderr)
            print(__doc__.strip().splitlines()[2], file=sys.stderr)
            return 2
        else:
            files.append(a)
        i += 1
    stale, errors = [], 0
    for path in files or lessons():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            new = rewrite(text, results, os.path.relpath(path, ROOT))
        except Bad as e:
            print(f"tables.py: {e}", file=sys.stderr)
            errors += 1
            continue
        if new != text:
            stale.append(os.path.relpath(path, ROOT))
            if not check:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
    if errors:
        return 1
    for p in stale:
        print(("differs from the committed results: " if check else "rewrote ") + p)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
