"""Running one member on a Dask worker: :func:`run_member` is the task the client submits.

Contract: a member that raises (a non-finite state is a :class:`~hooke.errors.SimulationError`,
but any exception counts) gives a failed row with its error, never an exception out of the task.

Without a time limit a member runs in the worker's own thread (:func:`run_here`). With
``timeout`` it runs in a child process of the worker (:mod:`.member_process`), because a thread
stuck inside one frame cannot be stopped from outside and would hold its worker forever (the
scheduler, which forgets a cancelled task, would queue other members behind it that never
start). The member stops at its next saved frame once ``timeout`` seconds have passed since it
started (status timeout, its trajectory keeps the frames so far); one still running
``max(5 s, timeout / 4)`` later is stuck inside one frame: its process is killed (status
timeout; its trajectory keeps the frames flushed before, as a killed run's does) and the task
returns at once. So the worker is free again on any cluster, and no worker is ever restarted
(on a shared scheduler that would kill other people's tasks). The child's start (importing
hooke, about a second) does not count towards the limit; a child that does not start within
``STARTUP_LIMIT`` seconds, or dies (out of memory, a signal), fails the member with the reason.
The child dies with the worker (it watches its parent).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SimulationError
from .planning import Member
from .table import counts, failure_row, metrics

STARTUP_LIMIT = 120.0  # s for a child process to import hooke and read its member (a loaded machine)
STARTED = b"S"  # what the child writes once its member starts, before its row


class MemberTimeout(SimulationError):
    """A member ran past its time limit (raised at a saved frame)."""


def _deadline(limit: float):
    """A ``simulate`` progress callback that raises :class:`MemberTimeout` after ``limit`` s."""
    end = time.monotonic() + limit

    def check(done: int, total: int) -> None:
        if time.monotonic() > end:
            raise MemberTimeout(f"stopped after {limit:g} s (the time limit) at step {done} of {total}")
    return check


def grace(timeout: float) -> float:
    """How long after its time limit a member still running is taken as stuck inside one frame:
    long enough for a fresh process's first step (loading compiled kernels and h5py, ~0.3 s
    here, several times that on a loaded machine) to reach its first saved frame."""
    return max(5.0, timeout / 4)


def run_here(member: Member, store: str | None, timeout: float | None) -> dict[str, Any]:
    """Run one member in this thread; its row (status, error, wall time, metrics). Never raises
    for a failing member: the error becomes the row."""
    started = time.perf_counter()
    try:
        with np.errstate(all="ignore"):  # a member that blows up is a row, not console noise
            result = member.simulate(store=store,
                                     progress=None if timeout is None else _deadline(timeout))
            row = {"status": "ok", "error": "", **metrics(result)}
    except SimulationError as error:
        partial = getattr(error, "result", None)
        row = failure_row("timeout" if isinstance(error, MemberTimeout) else "failed",
                          f"{type(error).__name__}: {error}",
                          **(counts(partial) if partial is not None else {}))
    except Exception as error:  # any failure of one member is its row, not the sweep's end
        row = failure_row("failed", f"{type(error).__name__}: {error}")
    row["wall_time"] = time.perf_counter() - started
    return row


def run_member(member: Member, store: str | None, timeout: float | None) -> dict[str, Any]:
    """The task of one member on a Dask worker: its row. With ``timeout``, the member runs in a
    child process that is killed if it is stuck (see the module's contract)."""
    if timeout is None:
        return run_here(member, store, None)
    package_root = str(Path(__file__).resolve().parents[2])  # the child imports this same hooke
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    with subprocess.Popen([sys.executable, "-m", "hooke.sweep.member_process"], bufsize=0,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env) as child:
        try:
            return _watch(child, member, store, timeout)
        finally:
            if child.poll() is None:
                child.kill()


def _readable(stream, seconds: float) -> bool:
    """Whether ``stream`` has bytes (or its end) to read within ``seconds``."""
    return bool(select.select([stream], [], [], seconds)[0])


def _watch(child: subprocess.Popen, member: Member, store: str | None,
           timeout: float) -> dict[str, Any]:
    """Hand ``member`` to ``child`` and wait for its row, killing it once stuck."""
    child.stdin.write(pickle.dumps((member, store, timeout)))
    child.stdin.close()
    if not _readable(child.stdout, STARTUP_LIMIT):
        return failure_row("failed", f"MemberProcessError: its process did not start within "
                           f"{STARTUP_LIMIT:g} s") | {"wall_time": float("nan")}
    if child.stdout.read(1) != STARTED:
        return _died(child, 0.0)
    began = time.monotonic()
    if not _readable(child.stdout, timeout + grace(timeout)):
        child.kill()
        child.wait()
        waited = time.monotonic() - began
        return failure_row("timeout", f"MemberTimeout: still running {waited:.1f} s after it "
                           f"started (time limit {timeout:g} s), stuck inside one frame: its "
                           "process was killed, its worker is free") | {"wall_time": waited}
    reply = child.stdout.readall()
    return pickle.loads(reply) if reply else _died(child, time.monotonic() - began)


def _died(child: subprocess.Popen, wall_time: float) -> dict[str, Any]:
    """The row of a member whose process ended without a row."""
    code = child.wait()
    how = (f"signal {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals()
           else f"exit code {code}")
    return failure_row("failed", f"MemberProcessError: its process ended ({how}) before the "
                       "member finished") | {"wall_time": wall_time}
