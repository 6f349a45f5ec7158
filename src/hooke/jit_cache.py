"""Numba's on-disk cache of compiled kernels (``@njit(cache=True)``), made best-effort.

Contract: importing this module makes a failed save of a compiled kernel to Numba's cache (a
full disk or quota where the cache lives: beside the package, or ``NUMBA_CACHE_DIR``) a cache
miss, not an error: the kernel, compiled in memory, runs all the same, and only the next process
compiles it again. Numba raised the OSError from inside the first call of the kernel, so a run
whose ``--out`` had room failed as "unexpected OSError … (a bug in hooke)" because another disk
was full. Every module that compiles with ``cache=True`` imports it before its first kernel.
"""

from __future__ import annotations

from numba.core import caching

_save_overload = caching.Cache.save_overload


def _save_overload_if_room(self, sig, data) -> None:
    try:
        _save_overload(self, sig, data)
    except OSError:  # Numba removes its partial file itself; nothing of the run depends on it
        pass


caching.Cache.save_overload = _save_overload_if_room
