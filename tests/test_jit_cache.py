"""Numba's cache of hooke's kernels (hooke.jit_cache) is stale as soon as any of hooke's files
changes, not only the file of the kernel: a kernel holds the code of the kernels it calls."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import hooke

CALLEE = "from numba import njit\n\n\n@njit(cache=True)\ndef value():\n    return {}\n"
CALLER = """from hooke import jit_cache  # noqa: F401 - before the first kernel
from numba import njit

from hooke._probe_callee import value


@njit(cache=True)
def twice():
    return 2 * value()


print(twice())
"""


def test_a_kernel_calling_one_in_another_file_is_recompiled_when_that_file_changes(tmp_path):
    """A copy of the package with a kernel calling one of another file, run in three processes:
    the callee edited between the first two (the caller's file untouched), not before the
    third. Before, the second printed the first's 2 (the caller's cached code); the third
    loads the second's cache: the stamp does not change from one process to the next."""
    package = tmp_path / "hooke"
    shutil.copytree(Path(hooke.__file__).parent, package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (package / "_probe_caller.py").write_text(CALLER)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "NUMBA_DEBUG_CACHE": "1"}
    env.pop("NUMBA_CACHE_DIR", None)  # beside the package copy

    def run(callee_value: int) -> subprocess.CompletedProcess:
        (package / "_probe_callee.py").write_text(CALLEE.format(callee_value))
        # as a module: run as a script, its folder (the package's) would come first on sys.path
        return subprocess.run([sys.executable, "-m", "hooke._probe_caller"], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)

    first, second, third = run(1), run(5), run(5)
    assert [done.stdout.split()[-1] for done in (first, second, third)] == ["2", "10", "10"]
    assert "data loaded" in third.stdout and "data loaded" not in second.stdout
