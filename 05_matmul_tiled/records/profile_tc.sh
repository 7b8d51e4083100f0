#!/usr/bin/env bash
# Nsight Compute on each bf16 version of the tensor-core ladder at one shape: the records
# behind the "ncu:" lines of tensor_cores/README.md and tensor_cores/hopper.md. Each version runs
# once under ncu (after cuBLAS, which the bench times first; the filter skips cuBLAS's own
# kernels) with the sections that show where its time goes: speed of light, the pipes'
# utilization (tensor pipe included), shared-memory bank conflicts, and warp stalls.
#   bash 05_matmul_tiled/records/profile_tc.sh [OUT.txt [SIZE]]   (default: stdout, 4096;
#   a relative OUT is taken from 05_matmul_tiled/)
set -u -o pipefail
cd "$(dirname "$0")/.."
out=${1:-/dev/stdout}
size=${2:-4096}
bin=./matmul_tiled
[ -x "$bin" ] || { echo "build the chapter first (make)" >&2; exit 1; }
command -v ncu >/dev/null 2>&1 || { echo "ncu (Nsight Compute) is not installed" >&2; exit 1; }
versions="wmma_bf16 mma_bf16 mma_swizzle_bf16 mma_pipeline_bf16 wgmma_bf16 wgmma_ws_bf16 wgmma_persistent_bf16"
{
    echo "Nsight Compute records of chapter 05's bf16 tensor-core versions at ${size}^3"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    date -u
    for v in $versions; do
        echo
        echo "=== $v"
        ncu --clock-control none -k regex:'^tc_(wmma|mma|wgmma|wgmma_ws)_kernel' --launch-count 1 \
            --section SpeedOfLight --section ComputeWorkloadAnalysis \
            --section MemoryWorkloadAnalysis_Tables --section WarpStateStats \
            "$bin" --bench --kernel "$v" -n "$size" --reps 1 2>&1 | grep -v '^==PROF=='
    done
} > "$out"
