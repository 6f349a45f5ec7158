# Two set-up commands for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
OUT    ?= out

.PHONY: run test install install-test system-packages vendor-three clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

# The tests also cover the fast direct solvers of the [fast] extra (PARDISO, CHOLMOD).
install-test: $(BIN)/python system-packages
	$(BIN)/pip install --quiet -e ".[test,fast]"

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
test: install-test
	HOOKE_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -q tests --nbmake --nbmake-timeout=60 docs/notebooks  # s per cell; each notebook sets its own

# The viewer's three.js, rebuilt from the npm versions locked in web/ (needs node and npm; the
# result is committed, so installing hooke never needs them).
vendor-three:
	sh scripts/vendor_three.sh

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
