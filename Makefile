# The two commands: `make demo` runs the main job, `make test` runs the tests.
# Both create .venv when it is missing; torch==2.13.0 goes in first, then the
# project with its extras. On Linux x86-64 pip installs PyTorch's CUDA build
# (2.13.0+cu130, NVIDIA's CUDA libraries included; it runs on the CPU too):
# the .venv is about 5.2 GB, 2.7 GB of it the CUDA libraries. For the CPU-only
# build, install torch==2.13.0 from PyTorch's CPU wheel index into .venv first
# (docs/running.md, Installing); the torch line below then finds it there.
# A stamp file makes them quick when nothing changed. The install compiles the
# native experience decoder (protocol/_fastwire.c); `make test` fails if it is
# missing.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.saclstm-installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml setup.py protocol/_fastwire.c
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/saclstm demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy protocol actor deploy learner

test: lint
	SACLSTM_REQUIRE_NATIVE=1 $(BIN)/python -m pytest -q -p no:cacheprovider --durations=15 tests

bench: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[test,bench]'
	@for b in tests/bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) runs
