# Two set-up commands for a fresh machine: `make run` and `make test`; `make docs` builds the API
# reference.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
OUT    ?= out

.PHONY: run test docs install install-test install-docs system-packages vendor-three clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

# The tests also cover the fast direct solvers of the [fast] extra (PARDISO, CHOLMOD), and build
# the docs (tests/test_docs.py: the [docs] extra) and run the notebooks' live views (the
# [notebook] extra).
install-test: $(BIN)/python system-packages
	$(BIN)/pip install --quiet -e ".[test,fast,docs,notebook]"

install-docs: $(BIN)/python
	$(BIN)/pip install --quiet -e ".[docs]"

# Debian packages the tests need: chromium for the browser tests, SuiteSparse's headers for
# building scikit-sparse (CHOLMOD).
system-packages:
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	dpkg -s libsuitesparse-dev >/dev/null 2>&1 || missing="$$missing libsuitesparse-dev"; \
	if [ -n "$$missing" ]; then apt-get update && apt-get install -y $$missing; fi

# The main job: simulate the default scenes, write their plots and print the summaries.
run: install
	$(BIN)/hooke run cloth2d --dt 0.0025 --out $(OUT)/cloth2d
	$(BIN)/hooke run spring1d --out $(OUT)/spring1d

# HOOKE_REQUIRE_BROWSER=1: the browser viewer tests fail, not skip, if chromium is missing.
# -n 2 (pytest-xdist): two test processes, one per core of the CI machine; more would only
# crowd the tests that watch a viewer's frame rate under load. --dist worksteal: a process that
# runs out of tests takes some of the other's, so the run does not end on one long queue.
test: install-test
	HOOKE_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -q -n 2 --dist worksteal tests --nbmake --nbmake-timeout=60 docs/notebooks  # s per cell; each notebook sets its own

# The API reference from the docstrings (Sphinx), into docs/_build/html (index.html). A warning
# fails the build (-W; --keep-going lists them all first), as in tests/test_docs.py; -E rereads
# every page, so a second build does not pass by skipping what failed.
docs: install-docs
	$(BIN)/python -m sphinx -E -W --keep-going -q -b html docs docs/_build/html
	@echo "API reference: docs/_build/html/index.html"

# The viewer's three.js, rebuilt from the npm versions locked in web/ (needs node and npm; the
# result is committed, so installing hooke never needs them).
vendor-three:
	sh scripts/vendor_three.sh

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache docs/_build
