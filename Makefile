# The two commands of the README: `make demo` (the main job) and `make test`.
# Each creates the virtual environment .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo prove-demo gpu-extra test lint clean chromium

# The CPU backend's C kernels are compiled by the install: rebuild when they change.
NATIVE := $(wildcard src/cuzk/backends/native/*.c src/cuzk/backends/native/*.h)

# The main job's environment: cuzk and its runtime dependencies, nothing for the tests.
# A host whose own python3 has CuPy (a GPU machine's preinstalled one) lends it to .venv.
$(BIN)/cuzk: pyproject.toml setup.py $(NATIVE)
	$(PYTHON) -m venv $$($(PYTHON) -c 'import cupy' >/dev/null 2>&1 && echo --system-site-packages) $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $@

# The test tools (pytest, ruff, vulture, hypothesis, grpcio-tools): `make test` and `make lint` only.
$(VENV)/.test-extra: $(BIN)/cuzk
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# On a host whose NVIDIA driver shows a GPU: the CuPy of its CUDA version (pyproject.toml's
# cuda12 / cuda13 extra) unless .venv has one; nothing on a host without a GPU.
gpu-extra: $(BIN)/cuzk
	@$(BIN)/python src/cuzk/backends/cuda/driver.py ensure

# The main job: start cuzk-daemon on its built-in defaults, run a cuzk-bench batch, stop it.
demo: gpu-extra
	$(BIN)/cuzk-bench demo-service

# The prover alone, without the service: set up, prove and verify the demo circuit.
prove-demo: gpu-extra
	$(BIN)/cuzk demo

lint: $(VENV)/.test-extra
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

# The dead-code check: pyproject.toml's [tool.vulture] says what it reads.
test: $(VENV)/.test-extra lint node_modules/.package-lock.json chromium
	$(BIN)/vulture
	$(BIN)/pytest -q

clean:
	rm -rf $(VENV) build *.egg-info node_modules
