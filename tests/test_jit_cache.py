"""Numba's cache of hooke's kernels (hooke.jit_cache) is stale as soon as any of hooke's files
changes, not only the file of the kernel: a kernel holds the code of the kernels it calls."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


PROBE = """from hooke import jit_cache  # noqa: F401 - before the first kernel
from numba import njit


@njit(cache=True)
def affine(x):
    return 3 * x + 1


print(affine(2), affine(2.5))
"""


def damage_truncated(files):
    data = files[".1.nbc"].read_bytes()
    files[".1.nbc"].write_bytes(data[:len(data) // 2])


def damage_emptied_index(files):
    files[".nbi"].write_bytes(b"")


def damage_flipped_bits(files):
    data = bytearray(files[".2.nbc"].read_bytes())
    for at in range(len(data) // 3, len(data), 509):
        data[at] ^= 0x01
    files[".2.nbc"].write_bytes(bytes(data))


def damage_swapped(files):  # the index names each signature's file for the other
    one, two = files[".1.nbc"].read_bytes(), files[".2.nbc"].read_bytes()
    files[".1.nbc"].write_bytes(two)
    files[".2.nbc"].write_bytes(one)


def damage_index_a_folder(files):
    files[".nbi"].unlink()
    files[".nbi"].mkdir()


@pytest.mark.parametrize("damage", [damage_truncated, damage_emptied_index, damage_flipped_bits,
                                    damage_swapped, damage_index_a_folder])
def test_a_damaged_cache_file_is_compiled_again_not_run(tmp_path, damage):
    """Numba trusted its cache files: a truncated one ended a run as "unexpected
    UnpicklingError … (a bug in hooke)", an emptied index as "interrupted" (exit 130: an
    EOFError), a flipped bit in a kernel's machine code as an LLVM error or a segmentation fault
    (measured on spring_runs._serial), another signature's file ran as this one's. Each is now
    a cache miss: the kernel is compiled again, gives its value, and its file is written anew
    (the next process loads it; a folder where the index goes stays: nothing is cached)."""
    (tmp_path / "probe.py").write_text(PROBE)
    cache = tmp_path / "cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "NUMBA_DEBUG_CACHE": "1",
           "PYTHONPATH": os.pathsep.join([str(Path(hooke.__file__).parent.parent), str(tmp_path)])}

    def run() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "probe"], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)

    first = run()
    assert first.returncode == 0 and first.stdout.splitlines()[-1] == "7 8.5", first.stderr
    tag = f".py{sys.version_info.major}{sys.version_info.minor}"
    files = {path.name[path.name.index(tag) + len(tag):]: path for path in cache.rglob("probe*")}
    assert sorted(files) == [".1.nbc", ".2.nbc", ".nbi"]
    damage(files)
    damaged = run()
    assert (damaged.returncode, damaged.stderr, damaged.stdout.splitlines()[-1]) == (0, "", "7 8.5")
    if damage is damage_index_a_folder:
        assert "data saved" not in damaged.stdout and files[".nbi"].is_dir()
        return
    assert "data saved" in damaged.stdout  # compiled again and written anew
    healed = run()
    assert healed.stdout.count("data loaded") == 2 and "data saved" not in healed.stdout
    assert healed.stdout.splitlines()[-1] == "7 8.5"
