#!/usr/bin/env python3
"""Fits the tensor-core dispatcher's parameters (tensor_cores/best_params.h) to measurements.

usage: tc_calibrate.py CSV [CSV ...] [--log LOG] [--gpu NAME] [--out HEADER | --no-write]

CSV: rows of `matmul_tiled --bench --sweep-tc-all --csv CSV` (any other rows of chapter 05's
tensor-core versions count too; the latest row of each version and shape wins, a later
file's over an earlier one's). LOG: that run's standard output, for the GPU's numbers the
model uses (its `tc_machine` lines); without it, an H100's (132 SMs, 1980 MHz, 3352 GB/s,
66 clusters of two).

For each input type (bf16, tf32) and each candidate of tensor_cores/model.h it fits the
candidate's efficiency and fixed cost a tile to the times of the version that runs it alone
(wgmma_ws_bf16 for TC_CAND_WS, ...), by least squares on the relative error, together with
one launch cost per type; the padding copy's share of the DRAM peak from wgmma_padded's time
minus wgmma_ws's on the same shapes. It prints the parameters, writes them into HEADER
(default: ../tensor_cores/best_params.h beside this script), and prints, per shape, what the
model now picks against the fastest version measured there, and best's and cuBLAS's times.

The predictions are those of model.h, computed here the same way (tc_part_us, tc_plan, ...):
change one, change the other (tests/host/test_05_tc_model.c prints a few of the C model's
predictions; `tc_calibrate.py --selftest` prints the same shapes from this port).
"""
import argparse
import csv
import math
import os
import re
import sys

CANDIDATES = [  # name, bm, bn, schedule, splits, tma  (model.h's TC_CANDIDATES)
    ("wgmma", 128, 128, "grid", 0, 1),
    ("wgmma_ws", 128, 256, "grid", 0, 1),
    ("wgmma_ws_128x128", 128, 128, "grid", 0, 1),
    ("wgmma_persistent", 128, 256, "persistent", 0, 1),
    ("wgmma_cluster", 128, 256, "cluster", 0, 1),
    ("wgmma_splitk", 64, 128, "grid", 1, 1),
    ("mma_pipeline", 128, 256, "grid", 0, 0),
    ("mma_skinny", 128, 128, "grid", 1, 0),
    ("wgmma_cload", 128, 256, "persistent", 0, 1),
]
NCAND = len(CANDIDATES)
CAND_INDEX = {c[0]: i for i, c in enumerate(CANDIDATES)}
SPLITK = CAND_INDEX["wgmma_splitk"]
SKINNY = CAND_INDEX["mma_skinny"]
CLOAD = CAND_INDEX["wgmma_cload"]
PLAN_MARGIN = 0.03  # TC_PLAN_MARGIN
MAX_SPLITS = 64  # TC_MAX_SPLITS
ALPHA, BETA = 0.75, -0.5  # the driver's
TYPES = {"bf16": {"elem": 2, "bk": 64, "flops_per_clock": 4096},
         "tf32": {"elem": 4, "bk": 32, "flops_per_clock": 2048}}
# Where a candidate has no measurement: efficiency and fixed cost a tile (us).
DEFAULT_FIT = {"bf16": [(0.60, 6.0)] * NCAND, "tf32": [(0.60, 6.0)] * NCAND}
DEFAULT_LAUNCH_US, DEFAULT_COPY_SHARE = 6.0, 0.6
# A candidate with no measurement borrows the fit of the nearest one that has some, so that a
# guess never wins by being optimistic: the same tile in the other kernel, or the same kernel.
BORROW = {"wgmma_ws_128x128": "wgmma", "wgmma": "wgmma_ws_128x128",
          "wgmma_persistent": "wgmma_ws", "wgmma_cluster": "wgmma_persistent",
          "wgmma_ws": "wgmma_persistent", "mma_skinny": "mma_pipeline",
          "wgmma_cload": "wgmma_persistent"}
H100 = {"sms": 132, "clock_khz": 1980000, "dram_gbs": 3352.0, "cluster_fit": 66,
        "occupancy": [1, 1, 1, 1, 1, 2, 1, 2, 1]}


def ceil(a, b):
    return (a + b - 1) // b


class Machine:
    """model.h's TcMachine."""

    def __init__(self, t, gpu, fit, launch_us, copy_share):
        self.sms = gpu["sms"]
        self.cluster_fit = gpu["cluster_fit"]
        self.occupancy = list(gpu["occupancy"])
        # a log from before mma_skinny: an H100's count for the candidates it does not list
        self.occupancy += H100["occupancy"][len(self.occupancy):]
        self.flops_per_us = TYPES[t]["flops_per_clock"] * gpu["clock_khz"] / 1e3
        self.dram = gpu["dram_gbs"] * 1e3
        self.elem = TYPES[t]["elem"]
        self.bk = TYPES[t]["bk"]
        self.fit = list(fit)
        self.launch_us = launch_us
        self.copy_share = copy_share


def tma_rows(m, K):
    """Whether rows of K elements are whole 16 bytes, as TMA needs (else the float copy)."""
    return (K * m.elem) % 16 == 0


def padded_k(K, elem):
    q = 16 // elem
    return ceil(K, q) * q


def model_splits(slices, splits):
    if splits <= 1 or slices <= 1:
        return 1
    per = ceil(slices, splits)
    return ceil(slices, per)


SKINNY_FULL_ROWS = 240  # TC_SKINNY_FULL_ROWS


def full_blocks(m, c, M, N):
    """tc_model_full_blocks: the blocks an SM must hold to count as full."""
    if c == SKINNY and min(M, 128) + min(N, 128) >= SKINNY_FULL_ROWS:
        return 1
    return m.occupancy[c]


def rounds(m, c, tiles_m, tiles_n, splits, full):
    """tc_model_rounds: an SM counts as full with `full` blocks (full_blocks)."""
    sched = CANDIDATES[c][3]
    if sched == "cluster":
        return ceil(ceil(tiles_m, 2) * tiles_n, m.cluster_fit)
    b = ceil(tiles_m * tiles_n * splits, m.sms)
    if sched == "persistent":
        return b
    return full if b < full else b


def warp_share(c, M, N):
    """tc_model_warp_share: the share of its 64 x 64 mma_skinny's busiest warp multiplies."""
    if c != SKINNY:
        return 1.0
    mt, nt = ceil(min(M, 64), 16), ceil(min(N, 64), 8)
    nt = 8 if nt > 4 else 4 if nt > 2 else 2
    return mt * nt / 32.0


def part_terms(m, c, M, N, K, splits, beta_one, beta_zero):
    """The prediction as rounds * (flops_us / eff + fixed) against the memory floor, plus
    `const` (what does not depend on eff and fixed, launch costs included)."""
    name, bm, bn, sched, can_split, tma = CANDIDATES[c]
    slices = ceil(K, m.bk)
    splits = model_splits(slices, splits) if can_split else 1
    per = ceil(slices, splits)
    r = rounds(m, c, ceil(M, bm), ceil(N, bn), splits, full_blocks(m, c, M, N))
    flops_us = 2.0 * bm * bn * (per * m.bk) * warp_share(c, M, N) / m.flops_per_us
    mn = float(M) * N
    mem = (m.elem * (float(M) + N) * K + 4.0 * mn * (1.0 if beta_zero else 2.0)) / m.dram
    const = m.launch_us
    if splits > 1:
        const += 4.0 * mn * splits / m.dram
        if not beta_one:
            const += m.launch_us + 8.0 * mn / m.dram
    return r, flops_us, mem, const, splits


def part_us(m, c, M, N, K, splits, beta_one, beta_zero):
    r, flops_us, mem, const, _ = part_terms(m, c, M, N, K, splits, beta_one, beta_zero)
    eff, fixed = m.fit[c]
    compute = r * (flops_us / eff + fixed)
    return max(compute, mem) + const


def usable(m, c, tma, N, beta_zero):
    if m.occupancy[c] < 1:
        return False
    if c == CLOAD and (beta_zero or N % 4 != 0):
        return False
    if CANDIDATES[c][3] == "cluster" and m.cluster_fit < 1:
        return False
    return bool(tma) or not CANDIDATES[c][5]


def best_part(m, M, N, K, beta_one, beta_zero, tma):
    best = (-1, 1, 0.0)
    slices = ceil(K, m.bk)
    for c in range(NCAND):
        if not usable(m, c, tma, N, beta_zero):
            continue
        most = min(slices if CANDIDATES[c][4] else 1, MAX_SPLITS)
        for s in range(1, most + 1):
            if model_splits(slices, s) != s:
                continue
            us = part_us(m, c, M, N, K, s, beta_one, beta_zero)
            if best[0] < 0 or us < best[2]:
                best = (c, s, us)
    return best


def plan_for(m, M, N, K, beta_one, beta_zero, tma):
    plan = {"pad_a": 0, "pad_b": 0, "k": K, "top_rows": 0, "top": None,
            "rest": best_part(m, M, N, K, beta_one, beta_zero, tma)}
    plan["us"] = plan["rest"][2]
    for c in range(NCAND):
        name, bm, bn, sched, _, _ = CANDIDATES[c]
        if not usable(m, c, tma, N, beta_zero) or sched == "cluster":
            continue
        tiles_m, tiles_n = ceil(M, bm), ceil(N, bn)
        wave = m.sms if sched == "persistent" else m.sms * full_blocks(m, c, M, N)
        rows = tiles_m * tiles_n // wave * wave // tiles_n
        if rows < 1 or rows >= tiles_m:
            continue
        top_rows = rows * bm
        top = part_us(m, c, top_rows, N, K, 1, beta_one, beta_zero)
        rest = best_part(m, M - top_rows, N, K, beta_one, beta_zero, tma)
        us = top + rest[2]
        if us < plan["us"] and us < (1.0 - PLAN_MARGIN) * plan["rest"][2]:
            plan.update(top_rows=top_rows, top=(c, 1, top), rest=rest, us=us)
    return plan


def copy_us(m, rows, K, kp):
    if rows == 0:
        return 0.0
    return m.launch_us + m.elem * rows * (K + kp) / (m.dram * m.copy_share)


def plan(m, M, N, K, beta, a_ok, b_ok):
    beta_one, beta_zero = beta == 1.0, beta == 0.0
    if a_ok and b_ok:
        return plan_for(m, M, N, K, beta_one, beta_zero, 1)
    plain = plan_for(m, M, N, K, beta_one, beta_zero, 0)
    kp = padded_k(K, m.elem)
    padded = plan_for(m, M, N, kp, beta_one, beta_zero, 1)
    padded["pad_a"], padded["pad_b"] = int(not a_ok), int(not b_ok)
    padded["us"] += copy_us(m, (M if padded["pad_a"] else 0) + (N if padded["pad_b"] else 0),
                            K, kp)
    if padded["rest"][0] < 0:
        return plain
    return padded if plain["rest"][0] < 0 or padded["us"] < plain["us"] else plain


def describe(p):
    out = ""
    if p["pad_a"] or p["pad_b"]:
        what = "A and Bt" if p["pad_a"] and p["pad_b"] else ("A" if p["pad_a"] else "Bt")
        out += f"copy {what} into rows of {p['k']}, "
    if p["top_rows"] > 0:
        out += f"{CANDIDATES[p['top'][0]][0]} on rows 0-{p['top_rows'] - 1}, then "
    c, s, _ = p["rest"]
    name = CANDIDATES[c][0] if c >= 0 else "none"
    return out + (f"{name} with {s} splits" if s > 1 else name)


def splitk_count(m, M, N, K):
    """tc_wgmma_splits: the split count of the registered wgmma_splitk version."""
    tiles, k_tiles = ceil(M, 64) * ceil(N, 128), ceil(K, m.bk)
    want, most = ceil(2 * m.sms, tiles), k_tiles // 2
    return max(1, min(want, most))


def skinny_count(m, M, N, K):
    """tc_mma_skinny_splits: the split count of the registered mma_skinny version."""
    tiles, k_tiles = ceil(M, 128) * ceil(N, 128), ceil(K, m.bk)
    want, most = m.occupancy[SKINNY] * m.sms // tiles, k_tiles // 2
    return max(1, min(want, most))


# ---------------------------------------------------------------- reading the run

def read_rows(paths, gpu_filter):
    rows = {}
    gpus = []
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r.get("chapter") != "05_matmul_tiled":
                    continue
                k = r["kernel"]
                if not (k.endswith("_bf16") or k.endswith("_tf32")):
                    continue
                if not re.fullmatch(r"\d+x\d+x\d+", r["size"]):
                    continue
                if gpu_filter and gpu_filter not in r["gpu"]:
                    continue
                if r["gpu"] not in gpus:
                    gpus.append(r["gpu"])
                M, N, K = (int(x) for x in r["size"].split("x"))
                rows[(r["gpu"], k, (M, N, K))] = float(r["time_ms"]) * 1e3  # latest wins
    if not gpus:
        sys.exit(f"{', '.join(paths)}: no tensor-core rows of chapter 05" +
                 (f" for a GPU named like '{gpu_filter}'" if gpu_filter else ""))
    gpu = gpus[-1]
    if len(gpus) > 1:
        print(f"several GPUs in {', '.join(paths)}; fitting {gpu} (--gpu picks another)")
    return gpu, {(k, s): us for (g, k, s), us in rows.items() if g == gpu}


def read_machine(log):
    """The `tc_machine` lines of a run's output: {type: gpu numbers}."""
    found = {}
    if not log:
        return found
    pat = re.compile(r"tc_machine (\w+) sms=(\d+) clock_khz=(\d+) dram_gbs=([\d.]+) "
                     r"cluster_fit=(\d+) occupancy=([\d,]+)")
    with open(log) as f:
        for line in f:
            mm = pat.search(line)
            if mm:
                found[mm.group(1)] = {"sms": int(mm.group(2)), "clock_khz": int(mm.group(3)),
                                      "dram_gbs": float(mm.group(4)),
                                      "cluster_fit": int(mm.group(5)),
                                      "occupancy": [int(x) for x in mm.group(6).split(",")]}
    return found


# ---------------------------------------------------------------- the fit

def lsq(points):
    """min over x >= 1, y >= 0 of sum ((a x + b y - d) / w)^2: (x, y)."""
    saa = sab = sbb = sad = sbd = 0.0
    for a, b, d, w in points:
        a, b, d = a / w, b / w, d / w
        saa += a * a
        sab += a * b
        sbb += b * b
        sad += a * d
        sbd += b * d
    det = saa * sbb - sab * sab
    x = y = None
    if det > 1e-12 * saa * sbb and saa > 0:
        x = (sad * sbb - sbd * sab) / det
        y = (saa * sbd - sab * sad) / det
    if x is None or y < 0.0:
        y = 0.0
        x = sad / saa if saa > 0 else 1.0
    if x < 1.0:
        x = 1.0
        y = max(0.0, (sbd - sab * x) / sbb) if sbb > 0 else 0.0
    return x, y


def fit_points(m, t, times, c):
    """(M, N, K, measured us, splits) of the version that runs candidate c alone."""
    name = CANDIDATES[c][0] + "_" + t
    pts = []
    for (k, (M, N, K)), us in times.items():
        if k != name:
            continue
        if CANDIDATES[c][5] and not tma_rows(m, K):
            continue
        if c == CLOAD and N % 4 != 0:  # wgmma_cload_<t> runs step 7's epilogue there
            continue
        s = splitk_count(m, M, N, K) if c == SPLITK else (
            skinny_count(m, M, N, K) if c == SKINNY else 1)
        pts.append((M, N, K, us, s))
    return pts if m.occupancy[c] > 0 else []  # a candidate this GPU's plans never use


def fit_candidate(m, c, pts):
    """Efficiency and fixed cost of candidate c (the machine's launch cost held), and the
    sum of squared relative errors."""
    beta_one, beta_zero = BETA == 1.0, BETA == 0.0
    terms = [part_terms(m, c, M, N, K, s, beta_one, beta_zero) + (us,) for M, N, K, us, s in pts]
    use = list(range(len(terms)))
    x = y = None
    for _ in range(3):  # drop the points the memory floor predicts, and fit again
        lin = [(terms[i][0] * terms[i][1], terms[i][0], terms[i][5] - terms[i][3], terms[i][5])
               for i in use]
        if len(lin) < 2:
            break
        x, y = lsq(lin)
        use = [i for i in range(len(terms))
               if terms[i][0] * (terms[i][1] * x + y) >= terms[i][2]]
    if x is None:
        return None, 0.0
    m.fit[c] = (1.0 / x, y)
    err = 0.0
    for M, N, K, us, s in pts:
        pred = part_us(m, c, M, N, K, s, beta_one, beta_zero)
        err += ((pred - us) / us) ** 2
    return m.fit[c], err


def fit_type(t, gpu, times):
    best = None
    for launch in [x * 0.5 for x in range(2, 31)]:
        m = Machine(t, gpu, DEFAULT_FIT[t], launch, DEFAULT_COPY_SHARE)
        total, fitted = 0.0, []
        for c in range(NCAND):
            pts = fit_points(m, t, times, c)
            f, err = fit_candidate(m, c, pts)
            total += err
            fitted.append((len(pts), f is not None))
        for c in range(NCAND):
            other = CAND_INDEX.get(BORROW.get(CANDIDATES[c][0], ""), -1)
            if not fitted[c][1] and other >= 0 and fitted[other][1]:
                m.fit[c] = m.fit[other]
        if best is None or total < best[0]:
            best = (total, m, fitted)
    total, m, fitted = best
    # the copy's share of the DRAM peak: wgmma_padded minus wgmma_ws on the same shapes
    shares = []
    for (k, (M, N, K)), us in times.items():
        if k != "wgmma_padded_" + t or not tma_rows(m, K):
            continue
        ws = times.get(("wgmma_ws_" + t, (M, N, K)))
        kp = padded_k(K, m.elem)
        nbytes = m.elem * (M + N) * (K + kp)
        if ws is None or nbytes < 8e6 or us - ws - m.launch_us <= 0:
            continue
        shares.append(nbytes / (m.dram * (us - ws - m.launch_us)))
    if shares:
        shares.sort()
        m.copy_share = min(1.0, max(0.2, shares[len(shares) // 2]))
    return m, fitted, len(shares), total


# ---------------------------------------------------------------- the report and the header

def by_alignment(t, m, times):
    """The candidates that run on rows TMA refuses (no TMA): the geometric mean and the range
    of measured / predicted, apart for rows of K that are whole 16 bytes and for those that
    are not (copied by 4 bytes for tf32, 2 for bf16: a cost the model does not have)."""
    lines = []
    for c in range(NCAND):
        if CANDIDATES[c][5] or m.occupancy[c] < 1:
            continue
        groups = {True: [], False: []}
        for M, N, K, us, s in fit_points(m, t, times, c):
            pred = part_us(m, c, M, N, K, s, BETA == 1.0, BETA == 0.0)
            groups[tma_rows(m, K)].append(us / pred)
        for ok in (True, False):
            r = groups[ok]
            if not r:
                continue
            gm = math.exp(sum(math.log(x) for x in r) / len(r))
            lines.append(f"  {CANDIDATES[c][0]:<18} K {'a whole' if ok else 'not a whole':<11}"
                         f" 16 bytes: measured / predicted {gm:.2f} (geometric mean of"
                         f" {len(r)}), {min(r):.2f} to {max(r):.2f}")
    return lines


def report(t, m, times):
    shapes = sorted({s for (k, s) in times if k.endswith("_" + t)},
                    key=lambda s: (s[0] * s[1] * s[2], s))
    names = [c[0] + "_" + t for c in CANDIDATES] + ["wgmma_padded_" + t]
    print(f"\n{t}: per shape, the model's plan (predicted) against the fastest version measured,"
          f" best_{t} and cublas_{t}")
    print(f"  {'shape':>18} {'plan':<58} {'pred':>8} {'fastest measured':<26} {'us':>8}"
          f" {'best':>8} {'cublas':>8} {'best%':>6}")
    hits = ratio_n = 0
    ratio_log = 0.0
    for s in shapes:
        M, N, K = s
        stride_ok = tma_rows(m, K)
        p = plan(m, M, N, K, BETA, stride_ok, stride_ok)
        measured = [(times[(n, s)], n) for n in names if (n, s) in times]
        fastest = min(measured) if measured else None
        best_us, cublas_us = times.get(("best_" + t, s)), times.get(("cublas_" + t, s))
        pct = f"{100.0 * cublas_us / best_us:6.1f}" if best_us and cublas_us else "     -"
        fm = f"{fastest[1]:<26} {fastest[0]:8.1f}" if fastest else f"{'-':<26} {'-':>8}"
        print(f"  {'x'.join(map(str, s)):>18} {describe(p)[:58]:<58} {p['us']:8.1f} {fm}"
              f" {best_us if best_us else 0.0:8.1f} {cublas_us if cublas_us else 0.0:8.1f}"
              f" {pct}")
        if p["top_rows"] == 0 and not p["pad_a"] and fastest:
            c, splits, _ = p["rest"]
            name = CANDIDATES[c][0] + "_" + t
            same_split = ((c != SPLITK or splits == splitk_count(m, M, N, K)) and
                          (c != SKINNY or splits == skinny_count(m, M, N, K)))
            if same_split and (name, s) in times and times[(name, s)] <= 1.03 * fastest[0]:
                hits += 1
        if best_us:
            ratio_log += math.log(best_us / p["us"])
            ratio_n += 1
    print(f"  the plan is a measured version within 3% of the fastest on {hits} of"
          f" {len(shapes)} shapes")
    if ratio_n:
        print(f"  best's measured time / the model's prediction, geometric mean over {ratio_n}"
              f" shapes: {math.exp(ratio_log / ratio_n):.2f}")


def aligned(pairs, indent):
    """Lines of code with trailing comments, the comments aligned as clang-format does."""
    width = max(len(code) for code, _ in pairs)
    return [f"{indent}{code:<{width}} /* {comment} */" for code, comment in pairs]


def c_params(t, m, fitted):
    fits = []
    for c in range(NCAND):
        eff, fixed = m.fit[c]
        n, ok = fitted[c]
        unused = m.occupancy[c] < 1
        why = f"{n} shapes" if ok else ("never used here: " if unused else "not measured: ") + (
            f"{BORROW[CANDIDATES[c][0]]}'s" if CANDIDATES[c][0] in BORROW else "a default")
        fits.append((f"{{{eff:.4f}, {fixed:.3f}}},", f"{CANDIDATES[c][0]}: {why}"))
    lines = [f"static const TcParams TC_PARAMS_{t.upper()} = {{", "    {"]
    lines += aligned(fits, "        ")
    lines.append("    },")
    lines += aligned([(f"{m.launch_us:.2f},", "launch_us"), (f"{m.copy_share:.3f},", "copy_share")],
                     "    ")
    lines.append("};")
    return "\n".join(lines)


def write_header(path, gpu, csv_name, machines):
    text = f"""/* Chapter 05, part two: the fitted parameters of the tensor-core model (model.h), one set
 * per input type: each candidate's {{efficiency, fixed cost a tile}} in TC_CAND_* order, the
 * cost of a launch and the padding copy's share of the DRAM peak.
 * Written by records/tc_calibrate.py (run it again on a new sweep rather than editing the
 * numbers by hand) from the tensor-core rows of
 *     {gpu} in {csv_name}
 * (matmul_tiled --bench --sweep-tc-all --csv FILE). */
#ifndef CH05_TENSOR_CORES_BEST_PARAMS_H
#define CH05_TENSOR_CORES_BEST_PARAMS_H

#include "05_matmul_tiled/tensor_cores/model.h"

"""
    for t in ("bf16", "tf32"):
        m, fitted = machines[t]
        text += c_params(t, m, fitted) + "\n\n"
    text += "#endif\n"
    with open(path, "w") as f:
        f.write(text)


def selftest():
    """The predictions test_05_tc_model.c prints (the same machine and parameters)."""
    gpu = dict(H100)
    fit = [(0.55, 4.0), (0.65, 8.0), (0.60, 5.0), (0.68, 6.0), (0.70, 6.0), (0.45, 3.0),
           (0.35, 5.0), (0.30, 3.0), (0.68, 6.0)]
    for t in ("bf16", "tf32"):
        m = Machine(t, gpu, fit, 6.0, 0.6)
        for M, N, K in [(4096, 4096, 4096), (4097, 4097, 4097), (2048, 2048, 2048),
                        (256, 1024, 784), (1024, 784, 32), (4095, 4095, 4095),
                        (8192, 8192, 8192), (32, 1024, 7000), (33, 7391, 4502),
                        (2413, 1, 3798), (1822, 123, 6427), (121, 2913, 1078)]:
            ok = tma_rows(m, K)
            p = plan(m, M, N, K, BETA, ok, ok)
            print(f"{t} {M}x{N}x{K}: {describe(p)}; {p['us']:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="*")
    ap.add_argument("--log", help="the run's standard output (its tc_machine lines)")
    ap.add_argument("--gpu", help="fit this GPU's rows (a part of its name)")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "..", "tensor_cores", "best_params.h"))
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        selftest()
        return
    if not a.csv:
        ap.error("a CSV is needed")
    gpu_name, times = read_rows(a.csv, a.gpu)
    found = read_machine(a.log)
    machines = {}
    for t in ("bf16", "tf32"):
        gpu = found.get(t)
        if gpu is None:
            print(f"{t}: no tc_machine line (--log): an H100's numbers")
            gpu = H100
        m, fitted, nshares, err = fit_type(t, gpu, times)
        machines[t] = (m, fitted)
        print(f"\n{t} on {gpu_name}: launch {m.launch_us:.2f} us, copy at {m.copy_share:.3f} of"
              f" the DRAM peak ({nshares} shapes), sum of squared relative errors {err:.3f}")
        for c in range(NCAND):
            n, ok = fitted[c]
            eff, fixed = m.fit[c]
            print(f"  {CANDIDATES[c][0]:<18} efficiency {eff:.4f}, fixed {fixed:7.3f} us a tile"
                  f"  ({n} shapes{'' if ok else ': not measured'})")
        for line in by_alignment(t, m, times):
            print(line)
        report(t, m, times)
    if not a.no_write:
        write_header(os.path.normpath(a.out), gpu_name, "\n *     and ".join(a.csv), machines)
        print(f"\nwrote {os.path.normpath(a.out)}")


if __name__ == "__main__":
    main()
