# The two commands of the README: `make demo` (the main job) and `make test`.
# Each creates the virtual environment .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo prove-demo test lint clean chromium

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

# The status page is tested in a real headless Chromium: Debian's package, installed here
# when it is missing and this runs as root with apt-get (CI: a clean Debian machine);
# otherwise that test is skipped and says why.
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's chromium for the status page test"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium \
			>/dev/null || echo "WARNING: apt-get could not install chromium; the status page test will be skipped"; \
	else echo "chromium is missing and cannot be installed here (not root, or no apt-get): the status page test will be skipped"; fi

test: $(BIN)/cuzk lint node_modules/.package-lock.json chromium
	$(BIN)/pytest -q

clean:
	rm -rf $(VENV) build *.egg-info node_modules
