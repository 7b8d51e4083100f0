#!/usr/bin/env python3
"""Counts the instructions of each kernel's main loop in `cuobjdump -sass` output.

usage: sass_loops.py FILE.sass [NAME_PART ...]

For every function (only those whose mangled name contains one of the NAME_PARTs, if
given), the main loop is the backward branch whose body holds the most FFMA; the script
prints the body's length and its instructions by opcode, most frequent first. Static code:
an edge path inside the loop counts as much as the path every slice takes."""
import collections
import re
import sys


def functions(lines):
    out, cur = [], None
    for line in lines:
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = [m.group(1), []]
            out.append(cur)
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m and cur:
            cur[1].append((int(m.group(1), 16), m.group(2)))
    return out


def main_loop(ins):
    best = None
    for addr, op in ins:
        t = re.search(r"\bBRA\b.*?(0x[0-9a-f]+)", op)
        if not t or int(t.group(1), 16) >= addr:
            continue
        lo = int(t.group(1), 16)
        body = [o for a, o in ins if lo <= a <= addr]
        n = sum(1 for o in body if o.split()[0:1] and "FFMA" in o)
        if best is None or n > best[0]:
            best = (n, body)
    return best[1] if best else None


def main(argv):
    with open(argv[1]) as f:
        funcs = functions(f.read().split("\n"))
    for name, ins in funcs:
        if argv[2:] and not any(w in name for w in argv[2:]):
            continue
        body = main_loop(ins)
        if not body:
            print(f"{name}: no loop")
            continue
        ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", o).split()[0] for o in body)
        top = ", ".join(f"{k} {v}" for k, v in ops.most_common(14))
        print(f"{name}\n    main loop {len(body)} instructions: {top}")


if __name__ == "__main__":
    main(sys.argv)
