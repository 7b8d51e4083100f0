# Included by every chapter Makefile. A chapter sets BIN (its binary), and optionally
# DEPS (extra headers), LDLIBS and BENCH_ARGS, then includes this file.
#
# ARCH: the GPU's own compute capability when nvidia-smi can tell (e.g. sm_90), else a
# list of common targets plus PTX for newer GPUs. `make ARCH=sm_90` overrides.
#
# Every binary is compiled through common/nvcc.sh, which says what nvcc is compiling while
# it runs, with nvcc's --threads (the targets of a multi-target build in parallel).

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
  # Machine code for sm_80, sm_86 and sm_89 from one compute_80 PTX (the sources tell only
  # __CUDA_ARCH__ >= 900 apart, so compute_86's and compute_89's PTX would be the same but
  # for its target line, and cicc, the slow part, runs once), sm_90a's, and compute_90 PTX
  # that newer GPUs compile when they load it.
  GENCODE := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_80,code=sm_86 \
             -gencode arch=compute_80,code=sm_89 -gencode arch=compute_90a,code=sm_90a \
             -gencode arch=compute_90,code=compute_90
endif
# The default list's virtual architectures other than sm_90a's: `make ptx_check` compiles
# main.cu to PTX for each (make test does, where it builds sm_90a alone).
PTX_ARCHS ?= compute_80 compute_90

# nvcc's threads: the targets of one build compiled in parallel (0: one per CPU).
NVCC_THREADS ?= 0
NVCCFLAGS ?= -O3 -std=c++17 -lineinfo $(GENCODE) -I$(ROOT) -Xcompiler -Wall,-Wextra \
             --threads $(NVCC_THREADS)
NVCC_RUN = bash $(ROOT)/common/nvcc.sh $(NVCC)
COMMON_DEPS := $(wildcard $(ROOT)/common/*.h $(ROOT)/common/*.cuh)

# Where `make bench` appends its rows; the top-level Makefile passes the per-GPU file.
CSV ?= bench.csv

.PHONY: all bench check clean ptx_check FORCE
all: $(BIN)

# .build_flags holds the command the binary was last built with: a different one (another
# ARCH, say) rebuilds it, as a changed source does.
$(BIN): main.cu kernels.cuh $(DEPS) $(COMMON_DEPS) .build_flags
	$(NVCC_RUN) $(NVCCFLAGS) -o $@ main.cu $(LDLIBS)

BUILD_CMD = $(NVCC) $(NVCCFLAGS) -o $(BIN) main.cu $(LDLIBS)
.build_flags: FORCE
	@echo '$(BUILD_CMD)' | cmp -s - $@ || echo '$(BUILD_CMD)' > $@

# (One target: no --threads, which makes nvcc 13.0 hang in some -ptx compiles.)
ptx_check: $(addprefix ptx_check_,$(PTX_ARCHS))
ptx_check_%: FORCE
	$(NVCC_RUN) $(filter-out $(GENCODE) --threads $(NVCC_THREADS),$(NVCCFLAGS)) -arch=$* -ptx \
	    -o .ptx_check_$*.ptx main.cu
	@rm -f .ptx_check_$*.ptx

check: $(BIN)
	./$(BIN) --check

bench: $(BIN)
	./$(BIN) --bench $(BENCH_ARGS) --csv $(CSV)

clean:
	rm -f $(BIN) bench.csv .build_flags .ptx_check_*.ptx
