# Included by every chapter Makefile. A chapter sets BIN (its binary), and optionally
# DEPS (extra headers), LDLIBS and BENCH_ARGS, then includes this file.
#
# ARCH: the GPU's own compute capability when nvidia-smi can tell (e.g. sm_90), else a
# list of common targets plus PTX for newer GPUs. `make ARCH=sm_90` overrides.

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
NVCC ?= nvcc

ifeq ($(origin ARCH), undefined)
  GPU_CC := $(shell nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '. ')
  ifneq ($(GPU_CC),)
    ARCH := sm_$(GPU_CC)
  endif
endif
# Hopper builds are sm_90a: the same chip, with the instructions (wgmma, setmaxnreg) that
# only run on it; chapter 05's tensor-core versions need them and skip themselves elsewhere.
ifeq ($(ARCH),sm_90)
  GENCODE := -gencode arch=compute_90a,code=sm_90a
else ifneq ($(ARCH),)
  GENCODE := -arch=$(ARCH)
else
  GENCODE := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 \
             -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90a,code=sm_90a \
             -gencode arch=compute_90,code=compute_90
endif

NVCCFLAGS ?= -O3 -std=c++17 -lineinfo $(GENCODE) -I$(ROOT) -Xcompiler -Wall,-Wextra
COMMON_DEPS := $(wildcard $(ROOT)/common/*.h $(ROOT)/common/*.cuh)

# Where `make bench` appends its rows; the top-level Makefile passes the per-GPU file.
CSV ?= bench.csv

.PHONY: all bench check clean
all: $(BIN)

$(BIN): main.cu kernels.cuh $(DEPS) $(COMMON_DEPS)
	$(NVCC) $(NVCCFLAGS) -o $@ main.cu $(LDLIBS)

check: $(BIN)
	./$(BIN) --check

bench: $(BIN)
	./$(BIN) --bench $(BENCH_ARGS) --csv $(CSV)

clean:
	rm -f $(BIN) bench.csv
