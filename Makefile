# The two commands of the README: `make demo` (the main job) and `make test`.
# Each creates the virtual environment .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint gpu-check clean

$(BIN)/cuzk: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

demo: $(BIN)/cuzk
	$(BIN)/cuzk demo

lint: $(BIN)/cuzk
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

test: $(BIN)/cuzk lint
	$(BIN)/pytest -q

clean:
	rm -rf $(VENV) build *.egg-info
