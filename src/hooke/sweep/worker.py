"""Running one member on a Dask worker: :func:`run_member` is the task the client submits.

Contract: a member that raises (a non-finite state is a :class:`~hooke.errors.SimulationError`,
but any exception counts) gives a failed row with its error, never an exception out of the task;
a member still running ``timeout`` seconds after it started stops at its next saved frame
(status timeout, its trajectory keeps the frames so far). The task announces its start on an
event topic, so the client can tell a member stuck inside one frame (:mod:`.execution`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..errors import SimulationError
from .planning import Member
from .table import counts, failure_row, metrics


class MemberTimeout(SimulationError):
    """A member ran past its time limit (raised at a saved frame)."""


def _deadline(limit: float):
    """A ``simulate`` progress callback that raises :class:`MemberTimeout` after ``limit`` s."""
    end = time.monotonic() + limit

    def check(done: int, total: int) -> None:
        if time.monotonic() > end:
            raise MemberTimeout(f"stopped after {limit:g} s (the time limit) at step {done} of {total}")
    return check


def run_member(member: Member, store: str | None, timeout: float | None, topic: str) -> dict[str, Any]:
    """Run one member on a Dask worker; returns its row (status, error, wall time, metrics).

    Never raises for a failing member: the error becomes the row. Announces its start on the
    event ``topic`` so the client's watchdog can time it."""
    from distributed import get_worker  # Dask loads when a sweep runs, not on import

    worker = get_worker()
    worker.log_event(topic, {"key": worker.get_current_task(), "worker": worker.address})
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
