"""A stop a signal asked for, kept until a run honours it.

Python drops an exception raised inside a ``__del__`` method or a garbage-collector callback
(it prints "Exception ignored in …" and goes on): a Ctrl-C whose handler happened to run there
was lost, and ``hooke run`` went on to its end and exited 0. The command line's handlers
(:mod:`hooke.cli_stop`) raise the stop as usual and also :func:`record` it here; a run calls
:func:`raise_if_pending` after each block of steps, so a swallowed stop is raised again there,
and ``hooke run`` once more after its outputs are written.

Contract: :func:`raise_if_pending` raises the recorded stop (a KeyboardInterrupt, or its
subclass for SIGTERM) once and forgets it; without a recorded stop (the library used from a
script or a notebook, whose Ctrl-C is Python's own) it does nothing.
"""

from __future__ import annotations

_pending: type[KeyboardInterrupt] | None = None


def record(kind: type[KeyboardInterrupt]) -> None:
    """Keep ``kind`` for :func:`raise_if_pending`."""
    global _pending
    _pending = kind


def raise_if_pending() -> None:
    """Raise the recorded stop, if any (see the module's contract)."""
    global _pending
    kind, _pending = _pending, None
    if kind is not None:
        raise kind


def is_pending() -> bool:
    """Whether a stop is recorded and not yet raised: an exception that ends a command then
    is the stop's doing (a Ctrl-C or SIGTERM inside Numba's compiler left it half done, "no
    compiled object yet for <Library …>"), not a bug of hooke's."""
    return _pending is not None


def forget() -> None:
    """Drop a recorded stop (a command starting afresh in the same process: a test's)."""
    global _pending
    _pending = None
