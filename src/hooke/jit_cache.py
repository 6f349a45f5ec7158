"""Numba's on-disk cache of compiled kernels (``@njit(cache=True)``), made best-effort and kept
fresh across hooke's files.

Contract: importing this module
- makes a failed save of a compiled kernel to Numba's cache (a full disk or quota where the cache
  lives: beside the package, or ``NUMBA_CACHE_DIR``) a cache miss, not an error: the kernel,
  compiled in memory, runs all the same, and only the next process compiles it again. Numba
  raised the OSError from inside the first call of the kernel, so a run whose ``--out`` had room
  failed as "unexpected OSError … (a bug in hooke)" because another disk was full;
- stamps every cached kernel of hooke with the contents of all of hooke's source files, not only
  of the file that defines it. Numba checks only that file, and a kernel holds the machine code
  of the kernels it calls from other files: after an edit or a ``git pull`` that changed
  ``energies/friction.py`` alone, the compiled Newton of ``implicit_compiled.py`` kept running
  the old friction Hessian (measured: −inf and NaN in its matrix where the new code was finite).
Every module that compiles with ``cache=True`` imports it before its first kernel.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from numba.core import caching

PACKAGE = Path(__file__).resolve().parent

_save_overload = caching.Cache.save_overload
_file_stamp = caching._SourceFileBackedLocatorMixin.get_source_stamp


def _save_overload_if_room(self, sig, data) -> None:
    try:
        _save_overload(self, sig, data)
    except OSError:  # Numba removes its partial file itself; nothing of the run depends on it
        pass


@functools.cache
def package_stamp(root: Path = PACKAGE) -> bytes:
    """SHA-256 of the names and contents of every ``.py`` file under ``root`` (once a process:
    ~150 files, a few milliseconds)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.digest()


def _stamp_with_package(self):
    if Path(self._py_file).resolve().is_relative_to(PACKAGE):
        return package_stamp()
    return _file_stamp(self)


caching.Cache.save_overload = _save_overload_if_room
caching._SourceFileBackedLocatorMixin.get_source_stamp = _stamp_with_package
