# The two commands of the README: `make demo` (the main job) and `make test`.
# Each creates the virtual environment .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo prove-demo test lint clean

# The CPU backend's C kernels are compiled by the install: rebuild when they change.
NATIVE := $(wildcard src/cuzk/backends/native/*.c src/cuzk/backends/native/*.h)

$(BIN)/cuzk: pyproject.toml setup.py $(NATIVE)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# The main job: start cuzk-daemon on its built-in defaults, run a cuzk-bench batch, stop it.
demo: $(BIN)/cuzk
	$(BIN)/cuzk-bench demo-service

# The prover alone, without the service: set up, prove and verify the demo circuit.
prove-demo: $(BIN)/cuzk
	$(BIN)/cuzk demo

lint: $(BIN)/cuzk
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

# Pinned snarkjs and circom2 (package-lock.json): the other side of the interop tests.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

test: $(BIN)/cuzk lint node_modules/.package-lock.json
	$(BIN)/pytest -q

clean:
	rm -rf $(VENV) build *.egg-info node_modules
