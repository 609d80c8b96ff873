# The two commands of the README. Each creates .venv and installs what it needs on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
# CPU wheel by default; on a GPU machine: make run TORCH_SPEC="torch" (or a CUDA index pin)
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
# the package and what `make run` needs; then the test tools and Ray (the sweep tests drive a local cluster)
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# the report test drives Debian's Chromium (through Playwright); installed here when missing
CHROMIUM ?= /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# extra options: make run ARGS="--seed 1", make test PYTEST_ARGS="-k report"
ARGS ?=
PYTEST_ARGS ?=
# tests run in one process per core (pytest-xdist), each torch on one thread: no oversubscription
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(max(1, min(4, len(os.sched_getaffinity(0)))))" 2>/dev/null || echo 2)

.PHONY: run test install clean
run: $(STAMP)
	$(BIN)/evalsuite run --task recall --model linear $(ARGS)

test: $(TEST_STAMP) $(CHROMIUM)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n $(TEST_WORKERS) $(PYTEST_ARGS)

$(CHROMIUM):
	$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install "$(TORCH_SPEC)"
	$(BIN)/pip install -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(BIN)/pip install -e ".[dev,ray]"
	touch $(TEST_STAMP)

clean:
	rm -rf $(VENV) results test-artifacts .pytest_cache build dist
