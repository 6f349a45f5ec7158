# Two set-up commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
OUT    ?= out

.PHONY: run test install install-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

install-test: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test]"

# The main job: simulate the default scenes, write their plots and print the summaries.
run: install
	$(BIN)/hooke run cloth2d --dt 0.0025 --out $(OUT)/cloth2d
	$(BIN)/hooke run spring1d --out $(OUT)/spring1d

test: install-test
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)
	$(BIN)/python -m pytest -q tests --nbmake --nbmake-timeout=60 docs/notebooks  # s per cell; each notebook sets its own

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
