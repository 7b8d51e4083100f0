#!/usr/bin/env bash
# Tries parameter sets of the pipelined kernel ("hopper") on this GPU and records each.
#   bash 05_matmul_tiled/records/sweep.sh [OUT.csv [LABEL]]
# (default OUT: 05_matmul_tiled/records/sweep_results.csv; a relative OUT is taken from
# 05_matmul_tiled/; LABEL names the round in every row.)
# For each line of CONFIGS (BM,BN,BK,TM,TN,WTR,STAGES,FRAG_PIPE: block tile, K slice,
# thread tile, rows of threads in a warp, pipeline stages, fragment prefetch across
# slices on/off) it rebuilds the chapter with
# -DSGEMM_TUNED_BM=... (one define per parameter), checks the kernel on awkward shapes,
# times it at 2048^3 and 4096^3 next to cuBLAS, and appends one row per size to OUT.
# The builds run in parallel. Adopt the winner in the SGEMM_TUNED_* defaults
# (fp32/10_hopper.cuh). CONFIGS="..." in the environment replaces the list below.
#
# The list is round 4 (run on an H100 on 2026-11-25: the default won, README.md's
# `hopper` section; the history in records/lesson_history.md): is the
# tuned kernel's gap to cuBLAS at 4096^3 the instruction cache? Its fully unrolled
# 32-deep slice is 78 KB of SASS and ncu counts 0.24 "no instruction" stalls per issue
# against cuBLAS's 0.02 (README.md, "How close"). BK = 16 halves the
# loop and BK = 8 (cuBLAS's depth) quarters it, at the price of a barrier every 16 or 8
# k steps instead of 32; deeper rings keep as many bytes in flight. Round 3 tried BK = 16
# only with WTR = 4 (88-90% against 92.9-93.5% for BK = 32); here with the winner's 64x64
# warp tiles (WTR = 8). The first line is the current default, timed in the same run.
# Rounds 1-4 and their lists are in sweep_results.csv.
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${1:-records/sweep_results.csv}
LABEL=${2:-sweep}
CONFIGS=${CONFIGS:-"
128,256,32,8,16,8,3,1
128,256,16,8,16,8,3,1
128,256,16,8,16,8,4,1
128,256,16,8,16,8,5,1
128,256,8,8,16,8,4,1
128,256,8,8,16,8,6,1
"}
NVCC=${NVCC:-nvcc}
ARCH=${ARCH:-sm_90}
BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT

build() {  # build CONFIG: one binary per parameter set
    local tag=${1//,/_} defs="" i=0 v
    local names=(BM BN BK TM TN WTR STAGES FRAG_PIPE)
    for v in ${1//,/ }; do defs="$defs -DSGEMM_TUNED_${names[$i]}=$v"; i=$((i + 1)); done
    # shellcheck disable=SC2086
    $NVCC -O3 -std=c++17 -arch="$ARCH" -I.. $defs -Xptxas -v \
        -o "$BUILD/sgemm_$tag" main.cu -lcublas > "$BUILD/build_$tag.log" 2>&1
}
export -f build
export NVCC ARCH BUILD
echo "$CONFIGS" | grep , | xargs -P "$(nproc)" -I{} bash -c 'build {}'

[ -s "$OUT" ] || echo "round,config,size,tflops,cublas_tflops,pct_of_cublas,registers,check" > "$OUT"
for cfg in $CONFIGS; do
    tag=${cfg//,/_}
    bin="$BUILD/sgemm_$tag"
    if [ ! -x "$bin" ]; then
        echo "$cfg: build failed"; tail -n 3 "$BUILD/build_$tag.log"
        echo "$LABEL,\"$cfg\",,,,,,build_failed" >> "$OUT"; continue
    fi
    mangled="pipelined_kernelI11SgemmConfigILi${cfg//,/ELi}EELi0ELb0E"  # EPI = SGEMM_EPI_STORE, B not pitched
    regs=$(grep -A2 "$mangled" "$BUILD/build_$tag.log" | grep -o 'Used [0-9]* registers' | \
           head -n 1 | grep -o '[0-9]*')
    check=pass
    "$bin" --check --kernel hopper -n 127x129x131,1000x1x4097,256x10x1024,300x520x260,256x512x320 > "$BUILD/check.log" || check=FAIL
    rm -f "$BUILD/rows.csv"
    "$bin" --bench --kernel hopper -n 2048,4096 --reps 10 --csv "$BUILD/rows.csv" > /dev/null
    # rows: gpu,chapter,kernel,role,size,time_ms,value,unit,ceiling,ceiling_value,pct
    awk -F, -v lab="$LABEL" -v cfg="$cfg" -v regs="$regs" -v check="$check" \
        '$3 == "hopper" { printf "%s,\"%s\",%s,%.3f,%.3f,%.1f,%s,%s\n", lab, cfg, $5, $7, $10, $11, regs, check }' \
        "$BUILD/rows.csv" | tee -a "$OUT"
done
