#!/usr/bin/env python3
"""Checks that keep the lessons true: prints PASS/FAIL/SKIP lines for tests/run_tests.sh.

usage: lesson_check.py [ROOT]

For every chapter's lesson (NN_topic/README.md, the part files *.md beside it and those in its
part folders, NN_topic/<part>/*.md):
  - every code excerpt (a fenced block right after `<!-- excerpt: PATH -->`) still appears in
    PATH: its lines, in order and one after another, leading and trailing blanks ignored;
    a line `// ...` marks an elision; at most 15 lines; every ```cuda block is an excerpt;
  - no commit hash, and a date on at most two lines (the lines that name the runs);
  - the core lesson is at most 500 lines, a part file at most 400;
  - the core lesson has the anatomy's sections (what you will learn, run it, the idea,
    pitfalls, exercises) and draws at least one figure of the chapter's figures/;
  - every version the chapter's binary lists for --kernel has a heading that names it in
    backquotes, but for ceilings (role "ceiling" in the committed CSVs) and exercise
    solutions (names starting with "ex").
"""
import csv
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
EXCERPT = re.compile(r"<!-- excerpt: (\S+) -->\s*\n```[a-z]*\n(.*?)\n```", re.S)
FENCE_CUDA = re.compile(r"^```cuda\s*$", re.M)
HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
ELIDE = {"// ...", "/* ... */", "..."}
SECTIONS = ["what you will learn", "run it", "the idea", "pitfalls", "exercises"]
CORE_MAX, PART_MAX, EXCERPT_MAX = 500, 400, 15

failures = 0


def report(ok, name, why=""):
    global failures
    if ok:
        print(f"PASS {name}")
    else:
        failures += 1
        print(f"FAIL {name}" + (f": {why}" if why else ""))


def norm(lines):
    return [l.strip() for l in lines if l.strip()]


def contains_in_order(hay, chunks):
    """Whether each chunk is a run of consecutive lines of hay, the chunks in order."""
    start = 0
    for chunk in chunks:
        if not chunk:
            continue
        found = -1
        for i in range(start, len(hay) - len(chunk) + 1):
            if hay[i:i + len(chunk)] == chunk:
                found = i
                break
        if found < 0:
            return False, chunk[0]
        start = found + len(chunk)
    return True, None


def check_excerpts(md, text):
    rel = os.path.relpath(md, ROOT)
    marked = 0
    for m in EXCERPT.finditer(text):
        marked += 1
        src, body = m.group(1), m.group(2).split("\n")
        line = text.count("\n", 0, m.start()) + 1
        path = os.path.join(ROOT, src)
        name = f"excerpt {rel}:{line} ({src})"
        if not os.path.isfile(path):
            report(False, name, "no such file")
            continue
        chunks, cur = [], []
        for l in body:
            if l.strip() in ELIDE:
                chunks.append(norm(cur))
                cur = []
            else:
                cur.append(l)
        chunks.append(norm(cur))
        n = sum(len(c) for c in chunks)
        with open(path, encoding="utf-8") as f:
            hay = norm(f.read().split("\n"))
        ok, missing = contains_in_order(hay, chunks)
        if n > EXCERPT_MAX:
            report(False, name, f"{n} lines, at most {EXCERPT_MAX}")
        else:
            report(ok, name, f"not in the source: '{missing}'" if not ok else "")
    fences = len(FENCE_CUDA.findall(text))
    cuda_marked = len(re.findall(r"<!-- excerpt: \S+ -->\s*\n```cuda", text))
    if fences:
        report(fences == cuda_marked, f"{rel}: every ```cuda block is an excerpt",
               f"{fences - cuda_marked} without <!-- excerpt: PATH -->")
    return marked


def check_history(md, text):
    rel = os.path.relpath(md, ROOT)
    hashes = sorted(set(HASH.findall(text)))
    report(not hashes, f"{rel}: no commit hash", ", ".join(hashes[:5]))
    dated = [i + 1 for i, l in enumerate(text.split("\n")) if DATE.search(l)]
    report(len(dated) <= 2, f"{rel}: a date only where the runs are named",
           f"dates on lines {dated[:8]}")


def kernel_names(ch):
    binary = os.path.join(ROOT, ch, ch[3:])
    if not os.access(binary, os.X_OK):
        return None
    try:
        out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"one of:((?:.|\n)*?)\n\s*(?:-n|--)", out)
    return m.group(1).split() if m else None


def ceilings(ch):
    names = set()
    for path in glob.glob(os.path.join(ROOT, "plots", "results", "*.csv")):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["chapter"] == ch and r["role"] == "ceiling":
                    names.add(r["kernel"])
    return names


PART_DIRS_SKIPPED = ("records", "solutions", "tests", "figures")


def lesson_files(ch):
    """The chapter's README.md, the part files beside it, and those in its part folders
    (NN_topic/<part>/*.md: README.md is the part's lesson), records and answers aside."""
    out = glob.glob(os.path.join(ROOT, ch, "*.md"))
    for d in sorted(os.listdir(os.path.join(ROOT, ch))):
        if d not in PART_DIRS_SKIPPED and os.path.isdir(os.path.join(ROOT, ch, d)):
            out += glob.glob(os.path.join(ROOT, ch, d, "*.md"))
    return out


LINK = re.compile(r"\]\(([^)\s]+)\)")


def check_links(md, text):
    """Every relative link and image of a lesson names a file or folder that exists."""
    rel = os.path.relpath(md, ROOT)
    bad = []
    for t in LINK.findall(text):
        if re.match(r"[a-z]+:", t) or t.startswith("#"):
            continue
        path = t.split("#", 1)[0]
        if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(md), path))):
            bad.append(t)
    report(not bad, f"{rel}: every relative link resolves", ", ".join(bad[:6]))


def main():
    chapters = sorted(d for d in os.listdir(ROOT) if re.match(r"0[1-7]_", d)
                      and os.path.isfile(os.path.join(ROOT, d, "README.md")))
    top = os.path.join(ROOT, "README.md")
    with open(top, encoding="utf-8") as f:
        check_links(top, f.read())
    for ch in chapters:
        core = os.path.join(ROOT, ch, "README.md")
        parts = sorted(p for p in lesson_files(ch) if p != core)
        headings = []
        for md in [core] + parts:
            with open(md, encoding="utf-8") as f:
                text = f.read()
            rel = os.path.relpath(md, ROOT)
            limit = CORE_MAX if md == core else PART_MAX
            n = text.count("\n")
            report(n <= limit, f"{rel}: at most {limit} lines", f"{n} lines")
            check_excerpts(md, text)
            check_history(md, text)
            check_links(md, text)
            headings += [l for l in text.split("\n") if re.match(r"#{1,5} ", l)]
        with open(core, encoding="utf-8") as f:
            text = f.read()
        lower = [h.lower() for h in headings]
        for s in SECTIONS:
            report(any(s in h for h in lower), f"{ch}: a section '{s}'")
        figs = re.findall(r"\]\((figures/[^)]+)\)", text)
        report(any(os.path.isfile(os.path.join(ROOT, ch, f)) for f in figs),
               f"{ch}: the lesson draws a figure of {ch}/figures/")
        names = kernel_names(ch)
        if names is None:
            print(f"SKIP {ch}: every version has a section: the binary is not built")
            continue
        skip = ceilings(ch)
        missing = [k for k in names if k not in skip and not k.startswith("ex")
                   and not any(f"`{k}`" in h for h in headings)]
        report(not missing, f"{ch}: every version has a section headed by its name",
               "none for " + ", ".join(missing[:12]) + (" ..." if len(missing) > 12 else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
