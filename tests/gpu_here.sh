#!/usr/bin/env bash
# gpu_here.sh: exit 0 if this machine looks able to run the chapters' kernels: an NVIDIA
# driver that lists a GPU and supports the CUDA major version of the nvcc on the PATH.
# Else print one line saying why and exit 77. It asks nvidia-smi only and builds nothing,
# so it answers in a moment: `make bench` and `make sanitize` ask it before building, and
# tests/lib.sh's have_gpu. (The binaries tell the same cases apart themselves:
# common/cuda_utils.cuh's require_gpu.)
if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "no NVIDIA driver on this machine: nvidia-smi not found"
    exit 77
fi
list=$(nvidia-smi -L 2>&1)
rc=$?
if ! printf '%s\n' "$list" | grep -q '^GPU '; then
    # nvidia-smi exits 6 when it finds no GPU, and other codes when the driver fails
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 6 ]; then
        echo "no NVIDIA GPU on this machine: nvidia-smi lists none"
    else
        echo "the NVIDIA driver does not answer: $(printf '%s\n' "$list" | head -n 1)"
    fi
    exit 77
fi
# A driver serves the CUDA versions up to the one its header names; within a major version
# a newer toolkit's programs still run on it (CUDA's minor version compatibility).
driver=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9.]*\).*/\1/p' | head -n 1)
toolkit=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9.]*\).*/\1/p' | head -n 1)
if [ -n "$driver" ] && [ -n "$toolkit" ] && [ "${driver%%.*}" -lt "${toolkit%%.*}" ]; then
    echo "the NVIDIA driver is too old: it supports CUDA $driver, and nvcc is CUDA $toolkit (update the driver)"
    exit 77
fi
exit 0
