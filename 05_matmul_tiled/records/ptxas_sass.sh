#!/usr/bin/env bash
# The registers (nvcc -Xptxas -v) and the main loops' instructions (cuobjdump -sass) of the
# fp32 ladder's kernels and the exercises' answers, for sm_90a. No GPU needed.
#   bash 05_matmul_tiled/records/ptxas_sass.sh [OUT]   (default: records/ptxas_sass_sm90a.txt)
# cuobjdump must be on the PATH (it comes with the CUDA toolkit).
set -eu -o pipefail
cd "$(dirname "$0")/.."
OUT=${1:-records/ptxas_sass_sm90a.txt}
NVCC=${NVCC:-nvcc}
BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT
"$NVCC" -O3 -std=c++17 -lineinfo -gencode arch=compute_90a,code=sm_90a -I.. \
    -Xptxas -v -o "$BUILD/matmul_tiled" main.cu -lcublas 2> "$BUILD/ptxas.txt"
cuobjdump -sass "$BUILD/matmul_tiled" > "$BUILD/sass.txt"
KERNELS="sgemm_naive sgemm_coalesced sgemm_smem sgemm_blocktile_1d sgemm_blocktile_2d
sgemm_vectorized sgemm_warptile sgemm_pipelined_kernelI11SgemmConfigILi128ELi128ELi8ELi8ELi8ELi4ELi2ELi0EELi0ELb0
sgemm_pipelined_kernelI11SgemmConfigILi128ELi256ELi32ELi8ELi16ELi8ELi3ELi1EELi0ELb0
ex1_ ex3_ ex4_ ex5_ ex6_
sgemm_pipelined_kernelI11SgemmConfigILi128ELi256ELi32ELi8ELi16ELi8ELi2ELi1EELi0ELb0
sgemm_pipelined_kernelI11SgemmConfigILi128ELi256ELi32ELi8ELi16ELi8ELi3ELi0EELi0ELb0"
{
    echo "$("$NVCC" --version | grep release), -gencode arch=compute_90a,code=sm_90a -O3"
    echo
    echo "== registers (ptxas -v): the ladder's kernels (the pipelined kernel: its plain"
    echo "   epilogue, B unpitched) and the exercises' answers"
    sed 's/ptxas info    : //' "$BUILD/ptxas.txt" | c++filt |
        awk '/Compiling entry/ {name = $0; sub(/^Compiling entry function /, "", name)}
             /^Used/ {print "  " $2 " registers  " name}' |
        grep -E "sgemm_(naive|coalesced|smem|blocktile_[12]d|vectorized|warptile)_kernel|ex[1-6]_|pipelined_kernel<SgemmConfig<128, (128, 8, 8, 8, 4, 2, 0|128, 16, 8, 8, 4, 3, 0|256, 32, 8, 16, 8, [23], [01])>, 0, false>" |
        sed "s/ for 'sm_90a'//"
    echo
    echo "== main loops (cuobjdump -sass, static counts; records/sass_loops.py)"
    # shellcheck disable=SC2086
    python3 records/sass_loops.py "$BUILD/sass.txt" $KERNELS
} > "$OUT"
echo "wrote $OUT"
