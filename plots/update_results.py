#!/usr/bin/env python3
"""Replace rows in a committed results CSV with those of a newer run.

usage: update_results.py [--rows] RESULTS_CSV NEW_ROWS_CSV

`make bench` rewrites plots/results/<GPU>.csv whole; after re-running one chapter alone
(make -C NN_topic bench CSV=new.csv), this puts its rows in place of that chapter's old
ones, so every chapter's rows still come from one run of that chapter on that GPU.
With --rows, only the rows of the same chapter, version and size are replaced (the new
ones added), for a run of some versions alone (chapter 05's tensor cores, say); where the
new file times a version at a size twice, its first row is kept.
"""
import csv
import os
import sys


def read(path, header=None):
    with open(path, newline="") as f:
        reader = csv.reader(f)
        head = next(reader)
        if header is not None and head != header:
            print(f"update_results.py: {path} has another header", file=sys.stderr)
            sys.exit(2)
        return head, list(reader)


def main():
    args = sys.argv[1:]
    by_row = "--rows" in args
    args = [a for a in args if a != "--rows"]
    if len(args) != 2 or any(a.startswith("-") for a in args):
        print("update_results.py: needs two file arguments", file=sys.stderr)
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(2)
    results, new = args
    header, fresh = read(new)
    old = read(results, header)[1] if os.path.exists(results) else []

    def key(r):
        return (r[1], r[2], r[4])

    if by_row:
        first = {}
        for r in fresh:
            first.setdefault(key(r), r)
        count = len(first)
        # In place where the old file has the row, after the chapter's rows where not.
        rows = [first.pop(key(r), r) for r in old]
        what = f"{count} rows ({len(first)} new)"
        for r in first.values():
            last = [i for i, o in enumerate(rows) if o[1] == r[1]]
            rows.insert(last[-1] + 1 if last else len(rows), r)
    else:
        chapters = {r[1] for r in fresh}
        kept = [r for r in old if r[1] not in chapters]
        what = f"{len(fresh)} rows of {', '.join(sorted(chapters))}"
        rows = sorted(kept + fresh, key=lambda r: r[1])  # stable: each chapter keeps its order
    with open(results, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    print(f"{results}: {what} replaced")


if __name__ == "__main__":
    main()
