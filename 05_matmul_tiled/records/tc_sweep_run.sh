#!/usr/bin/env bash
# The tensor-core sweep on this GPU, and tc_best's model fitted to it (about four minutes on
# an H100, never more than six):
#   bash 05_matmul_tiled/records/tc_sweep_run.sh OUT_DIR          # check, time every candidate, fit
#   bash 05_matmul_tiled/records/tc_sweep_run.sh OUT_DIR best     # time best and cuBLAS only
# OUT_DIR receives build.log, and:
#   check_any_k.log  --check of the padded step, the 128x128 tile and best at odd K and N + 1
#   check_sweep.log  --check --sweep-tc: every version tc_best may run on the 51 sweep shapes
#   bench_sweep.log  --bench --sweep-tc-all, with the twins at K rounded up (and the
#                    tc_machine lines tc_calibrate.py reads)
#   tc_sweep.csv     its rows
#   calibrate.log    records/tc_calibrate.py's fit and the model's plan against the fastest
#                    version measured on each shape
#   best_params.h    the fitted parameters: copy it over tensor_cores/best_params.h, rebuild,
#                    and run this script again with `best` to time the result
# With `best`: build.log, bench_best.log and tc_best.csv (best and cuBLAS on the sweep).
#   bash 05_matmul_tiled/records/tc_sweep_run.sh OUT_DIR rows [BASELINE_BIN]
# The tensor-core rows of plots/results/<GPU>.csv (about two minutes on an H100): every
# tensor-core version at the bench shapes and best and cuBLAS on the sweep, into rows.csv
# (bench_tc.log, bench_sweep.log; put them in with `python3 plots/update_results.py --rows
# plots/results/<GPU>.csv OUT_DIR/rows.csv`), then --check of every tensor-core version
# (check_tc.log). With BASELINE_BIN, another build of matmul_tiled (the code before a change),
# the sweep of best and cuBLAS alternates between it and this build three times
# (ab_base1..3.log and .csv, ab_this1..3.log and .csv) and their summaries are printed.
# Each step has a time limit; a step cut short keeps what it wrote (CSV rows are appended
# shape by shape, bf16 and TF32 in turn).
set -u
USAGE="usage: tc_sweep_run.sh OUT_DIR [all | best | rows [BASELINE_BIN]]"
OUT=${1:?$USAGE}
MODE=${2:-all}
BASE=${3:-}
case "$MODE" in
    all | best | rows) ;;
    *) printf 'tc_sweep_run.sh: no mode %s\n%s\n' "$MODE" "$USAGE"; exit 2 ;;
esac
if [ -n "$BASE" ]; then
    if [ "$MODE" != rows ]; then
        printf 'tc_sweep_run.sh: a baseline only with rows\n%s\n' "$USAGE"
        exit 2
    fi
    [ -x "$BASE" ] || { printf 'tc_sweep_run.sh: no program %s\n%s\n' "$BASE" "$USAGE"; exit 2; }
    BASE=$(realpath "$BASE")
fi
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
cd "$(dirname "$0")/../.." || exit 1
BIN=05_matmul_tiled/matmul_tiled
if ! make -C 05_matmul_tiled ARCH=sm_90 > "$OUT/build.log" 2>&1; then
    echo "build failed:"
    tail -n 20 "$OUT/build.log"
    exit 1
fi

step() {
    local name=$1 limit=$2 start=$SECONDS
    shift 2
    timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
    echo "$name: exit $? after $((SECONDS - start)) s"
}

if [ "$MODE" = rows ]; then
    # Every tensor-core version: the names --help lists that end in a precision.
    TC=$("$BIN" --help | grep -o -E '\b[a-z0-9_]+_(bf16|tf32|fp8)\b' | sort -u | paste -sd, -)
    PEERS=best_bf16,cublas_bf16,best_tf32,cublas_tf32
    rm -f "$OUT/rows.csv" "$OUT"/ab_*.csv
    step bench_tc 120 "$BIN" --bench --kernel "$TC" --csv "$OUT/rows.csv"
    step bench_sweep 120 "$BIN" --bench --sweep-tc --sweep-only --kernel $PEERS \
        --csv "$OUT/rows.csv"
    if [ -n "$BASE" ]; then
        for i in 1 2 3; do
            step ab_base$i 90 "$BASE" --bench --sweep-tc --sweep-only --kernel $PEERS \
                --csv "$OUT/ab_base$i.csv"
            step ab_this$i 90 "$BIN" --bench --sweep-tc --sweep-only --kernel $PEERS \
                --csv "$OUT/ab_this$i.csv"
        done
    fi
    step check_tc 120 "$BIN" --check --kernel "$TC"
    echo
    grep -h -E "all checks passed|CHECK FAILED" "$OUT/check_tc.log"
    for f in "$OUT/bench_sweep.log" "$OUT"/ab_*.log; do
        [ -f "$f" ] && { echo "$(basename "$f"):"; grep -A4 "sweep summary" "$f" | tail -n 4; }
    done
    exit 0
fi

if [ "$MODE" = best ]; then
    rm -f "$OUT/tc_best.csv"
    step bench_best 200 "$BIN" --bench --sweep-tc --sweep-only --kernel best_bf16,best_tf32 \
        --csv "$OUT/tc_best.csv"
    grep -A4 "sweep summary" "$OUT/bench_best.log"
    exit 0
fi

ANY_K=wgmma_padded_bf16,wgmma_padded_tf32,wgmma_ws_128x128_bf16,wgmma_ws_128x128_tf32
step check_any_k 30 "$BIN" --check --kernel "$ANY_K,best_bf16,best_tf32" \
    -n 1x1x1,7x13x5,64x64x1,127x129x131,300x20x785,2049x2049x2049,4097x4097x4097
step check_sweep 90 "$BIN" --check --sweep-tc --sweep-only
rm -f "$OUT/tc_sweep.csv"
step bench_sweep 150 "$BIN" --bench --sweep-tc-all --sweep-only --csv "$OUT/tc_sweep.csv"
step calibrate 30 python3 05_matmul_tiled/records/tc_calibrate.py "$OUT/tc_sweep.csv" \
    --log "$OUT/bench_sweep.log" --out "$OUT/best_params.h"
echo
grep -h -E "all checks passed|CHECK FAILED" "$OUT"/check_*.log
grep -h "FAIL" "$OUT"/check_*.log | head -n 20
grep -A4 "sweep summary" "$OUT/bench_sweep.log"
grep -E "^(bf16|tf32) on|efficiency|within 3%|geometric mean" "$OUT/calibrate.log"
exit 0
