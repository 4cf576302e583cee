# Two commands on a fresh machine: `make demo` (the main job) and `make test` (the tests).
# Both create .venv when missing and install the project with the extras they need.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
DEMO_EXTRAS := fast,fftw
TEST_EXTRAS := dev,fast,fftw,dist,plot,data,torch
# The tests run minsep.torch on CPU torch, installed before the extras so that the `torch`
# extra is already satisfied and pip never pulls a CUDA build (gigabytes). Where pip's index is
# PyPI, take the CPU wheel from PyTorch's index:
#   make test TORCH_PIP="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
TORCH_PIP ?= torch==2.13.0

.PHONY: demo test test-all lint bench gpu-check clean venv shell paper-check

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# One stamp per extras set, rebuilt when pyproject.toml changes.
$(VENV)/.stamp-%: pyproject.toml | $(PY)
	$(PIP) install -q -e ".[$(subst +,$(comma),$*)]"
	touch $@

comma := ,
DEMO_STAMP := $(VENV)/.stamp-$(subst $(comma),+,$(DEMO_EXTRAS))
TEST_STAMP := $(VENV)/.stamp-$(subst $(comma),+,$(TEST_EXTRAS))

$(VENV)/.stamp-cpu-torch: | $(PY)
	$(PIP) install -q $(TORCH_PIP)
	touch $@

$(TEST_STAMP): $(VENV)/.stamp-cpu-torch

venv: $(TEST_STAMP)

# An interactive shell with .venv activated, so that `minsep` is on PATH (`exit` leaves it).
shell: $(DEMO_STAMP)
	@echo "minsep is on PATH in this shell; 'exit' leaves it"
	@. $(VENV)/bin/activate && exec $${SHELL:-/bin/sh} -i

demo: $(DEMO_STAMP)
	$(VENV)/bin/minsep compare --steps 1024 --rate 1/256 --delta 1e-3 --epsilon 2 \
		--bands 4,8,16 --min-seps 16,64,128 --samples 30000 --seed 0 --workers 2

test: $(TEST_STAMP)
	$(PY) -m pytest -q

test-all: $(TEST_STAMP)
	$(PY) -m pytest -q -m ""

# Are the committed paper outputs current? Reruns a subset of every paper script (about 2 min
# on 2 cores) and compares; a stale output is named with the command that regenerates it.
paper-check: $(TEST_STAMP)
	$(PY) -m minsep.paper.staleness

# mypy cannot follow setuptools' editable import hook, so it checks a symlinked minsep/ tree.
MYPY_TREE := build/mypy-tree
lint: $(TEST_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	rm -rf $(MYPY_TREE) && mkdir -p $(MYPY_TREE)/minsep
	for f in minsep/*.py; do ln -s $(CURDIR)/$$f $(MYPY_TREE)/minsep/; done
	for d in framework schemes strategies accountants training paper; do \
		ln -s $(CURDIR)/$$d $(MYPY_TREE)/minsep/$$d; done
	ln -s $(CURDIR)/training/torch $(MYPY_TREE)/minsep/torch
	ln -s $(CURDIR)/minsep/testing $(MYPY_TREE)/minsep/testing
	MYPYPATH=$(MYPY_TREE) $(PY) -m mypy -p minsep

# Prints the throughput and records it in docs/performance.md (machine, date, commit).
bench: $(TEST_STAMP)
	$(PY) -m minsep.bench --docs docs/performance.md
	$(PY) -m pytest tests/benchmarks --benchmark-only -q -m "not gpu and not slow or slow"

# On a machine with an NVIDIA GPU: install the gpu extra, run the gpu tests, compare the GPU and
# CPU paths on the same samples and time every loss model on cupy (exit 2 without a GPU).
gpu-check:
	PYTHON=$(PYTHON) VENV=$(VENV) bash scripts/gpu_check.sh

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
