#!/usr/bin/env python3
"""Replace one chapter's rows in a committed results CSV with those of a newer run.

usage: update_results.py RESULTS_CSV NEW_ROWS_CSV

`make bench` rewrites plots/results/<GPU>.csv whole; after re-running one chapter alone
(make -C NN_topic bench CSV=new.csv), this puts its rows in place of that chapter's old
ones, so every chapter's rows still come from one run of that chapter on that GPU.
"""
import csv
import os
import sys


def main():
    if len(sys.argv) != 3:
        print("update_results.py: needs two arguments", file=sys.stderr)
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        sys.exit(2)
    results, new = sys.argv[1], sys.argv[2]
    with open(new, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        fresh = list(reader)
    chapters = {r[1] for r in fresh}
    old = []
    if os.path.exists(results):
        with open(results, newline="") as f:
            reader = csv.reader(f)
            if next(reader) != header:
                print(f"update_results.py: {results} has another header", file=sys.stderr)
                sys.exit(2)
            old = [r for r in reader if r[1] not in chapters]
    rows = sorted(old + fresh, key=lambda r: r[1])  # stable: each chapter keeps its order
    with open(results, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    print(f"{results}: {len(fresh)} rows of {', '.join(sorted(chapters))} replaced")


if __name__ == "__main__":
    main()
