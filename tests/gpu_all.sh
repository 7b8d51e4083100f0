#!/usr/bin/env bash
# On a machine with a GPU: build, test, sanitize and bench the given chapters (default:
# all) in one go, leaving logs and the CSV in $OUT (default tests/build/gpu_all).
#   bash tests/gpu_all.sh [--no-sanitize] [--no-bench] [CHAPTER...]
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/tests/build/gpu_all}
mkdir -p "$OUT"
sanitize=1 bench=1 chapters=()
for a in "$@"; do
    case "$a" in
        --no-sanitize) sanitize=0 ;;
        --no-bench) bench=0 ;;
        *) chapters+=("${a%/}") ;;
    esac
done
[ ${#chapters[@]} -gt 0 ] || chapters=($(ls -d 0[1-7]_*/ | tr -d /))
export ARCH=${ARCH:-sm_90}
{
    date -u; nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
    for ch in "${chapters[@]}"; do make -C "$ch" 2>&1 | tail -n 5; done
} 2>&1 | tee "$OUT/build.log"
make test 2>&1 | tee "$OUT/test.log"
if [ "$sanitize" = 1 ]; then bash tests/sanitize.sh "${chapters[@]}" 2>&1 | tee "$OUT/sanitize.log"; fi
if [ "$bench" = 1 ]; then
    for ch in "${chapters[@]}"; do
        make -C "$ch" bench CSV="$OUT/bench.csv" 2>&1 | tee -a "$OUT/bench.log"
    done
fi
