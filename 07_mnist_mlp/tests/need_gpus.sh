#!/usr/bin/env bash
# need_gpus.sh N: exit 0 if mnist_mlp can run --gpus N here; else print why and exit 77
# (tests/steps/40_gpu.sh reports a case that exits 77 as skipped, its last line the reason).
# Used by gpu_tests.txt: `bash 07_mnist_mlp/tests/need_gpus.sh 2 || exit $?; ...`
need=${1:?usage: need_gpus.sh N}
bin="$(dirname "$0")/../mnist_mlp"
if "$bin" --help | grep -q 'built without NCCL'; then
    echo "mnist_mlp was built without NCCL (make -C 07_mnist_mlp says why): --gpus is not available"
    exit 77
fi
have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "$have" -lt "$need" ]; then
    echo "needs $need GPUs, nvidia-smi -L lists $have"
    exit 77
fi
