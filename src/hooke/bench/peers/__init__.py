"""The peers of ``hooke bench``: other codes running the same problems as hooke.

Contract: a cloth peer (:data:`CLOTH_PEERS`: a plain Numba gather kernel, always installed with
hooke; Taichi, Warp, Newton with ``pip install hooke[bench]``) is a module here with ``MODULE`` (its import name), ``DISTRIBUTION`` (pip's name),
``NAME``, ``PRECISION`` and ``make(data) -> Stepper``, where ``data`` is
:func:`~hooke.bench.peers.common.cloth_arrays` (exactly hooke's ``cloth`` scene: particles,
springs, rest lengths, pins, k, m, dt, gravity; no damping) and the Stepper's ``run(count)`` takes
``count`` symplectic Euler steps (finished when it returns) and ``positions()`` gives x (n, 3).
Each peer runs in its own long-lived process (:class:`~hooke.bench.peers.process.PeerProcess`),
so their runtimes never mix with hooke's or each other's, and is timed in turn with hooke in
every round. :func:`status` says whether a peer is installed without importing it (importing a
peer is slow): a peer that is not installed is reported as such, never an error.

Same-process peers: :mod:`.book` (seed 004's square drop in the book's Python style) and
:mod:`.seed003` (seed 003's double pendulum script, SciPy's ``solve_ivp``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util

CLOTH_PEERS = ("numba_gather", "taichi", "warp", "newton")


def module(name: str):
    """The peer module ``name`` of this package."""
    return importlib.import_module(f"{__name__}.{name}")


def status(name: str) -> str:
    """"installed" or "not installed" (found without importing the peer's package)."""
    try:
        found = importlib.util.find_spec(module(name).MODULE) is not None
    except (ImportError, ValueError):
        found = False
    return "installed" if found else "not installed"


def version(name: str) -> str | None:
    """The installed version of peer ``name``, None when it is not installed."""
    try:
        return importlib.metadata.version(module(name).DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
