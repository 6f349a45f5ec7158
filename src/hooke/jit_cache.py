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
  the old friction Hessian (measured: −inf and NaN in its matrix where the new code was finite);
- makes a cache file that cannot be trusted a cache miss: each kernel's file is sealed with the
  SHA-256 of its content and the signature it was compiled for, and one whose seal does not
  match (truncated, a flipped bit, an index pointing at another signature's file, a file of
  an unsealed cache), or an index or file that cannot be read, is compiled again and
  rewritten. Numba trusted them: a truncated or emptied file ended a run as "unexpected
  UnpicklingError … (a bug in hooke)" or "interrupted" (exit 130, an EOFError), a flipped bit
  as an LLVM error or a segmentation fault, with the machine code of a damaged file run as is.
Every module that compiles with ``cache=True`` imports it before its first kernel.
"""

from __future__ import annotations

import functools
import hashlib
import pickle
from pathlib import Path

from numba.core import caching

PACKAGE = Path(__file__).resolve().parent

_save_overload = caching.Cache.save_overload
_file_stamp = caching._SourceFileBackedLocatorMixin.get_source_stamp
_load_overload = caching.Cache.load_overload
_save_entry = caching.IndexDataCacheFile.save
_load_entry = caching.IndexDataCacheFile.load
_load_index = caching.IndexDataCacheFile._load_index
SEAL = b"hooke-sealed-sha256\0"


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


def _load_overload_or_miss(self, sig, target_context):
    try:
        return _load_overload(self, sig, target_context)
    except Exception:  # a file whose code cannot be rebuilt: compiled again, and saved over it
        return None


def _save_keyed(self, key, data) -> None:
    _save_entry(self, key, (key, data))


def _load_keyed(self, key):
    stored = _load_entry(self, key)  # None: not there, or not whole (_load_sealed)
    if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == key:
        return stored[1]
    return None  # another signature's file (a damaged index)


def _load_index_or_none(self) -> dict:
    try:
        overloads = _load_index(self)
    except Exception:  # not readable (damaged, a folder …): empty; the next save rewrites it
        return {}
    return overloads if isinstance(overloads, dict) else {}


def _save_sealed(self, name, data) -> None:
    payload = self._dump(data)
    with self._open_for_write(self._data_path(name)) as file:
        file.write(SEAL + hashlib.sha256(payload).digest() + payload)
    caching._cache_log("[cache] data saved to %r", self._data_path(name))


def _load_sealed(self, name):
    with open(self._data_path(name), "rb") as file:  # an OSError: a miss (Numba's load)
        sealed = file.read()
    start = len(SEAL) + 32
    payload = sealed[start:]
    if sealed[:len(SEAL)] != SEAL or sealed[len(SEAL):start] != hashlib.sha256(payload).digest():
        caching._cache_log("[cache] data refused (its seal does not match) %r", file.name)
        return None
    caching._cache_log("[cache] data loaded from %r", file.name)
    return pickle.loads(payload)


caching.Cache.save_overload = _save_overload_if_room
caching.Cache.load_overload = _load_overload_or_miss
caching.IndexDataCacheFile.save = _save_keyed
caching.IndexDataCacheFile.load = _load_keyed
caching.IndexDataCacheFile._load_index = _load_index_or_none
caching.IndexDataCacheFile._save_data = _save_sealed
caching.IndexDataCacheFile._load_data = _load_sealed
caching._SourceFileBackedLocatorMixin.get_source_stamp = _stamp_with_package
