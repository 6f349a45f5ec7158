"""Running a sweep's members on Dask, from the client: the cluster, retries and time limits.

With ``client=None`` the sweep starts a ``distributed.LocalCluster`` on this machine (one
single-threaded worker process per core this process may run on, ``os.sched_getaffinity``) and
closes it at the end; with an address (``"tcp://host:8786"``) it connects to that scheduler; a
``distributed.Client`` is used as it is (:func:`connect`). Workers write into DIR, so on a real
cluster DIR must be a path every worker can write (a shared file system), unless
``summary_only``. A scheduler that cannot be reached is an input error and writes nothing.

Failures (:func:`execute`): a member whose task fails (:mod:`.worker` makes a failing member a
row) or whose worker died (Dask's ``KilledWorker``) is recorded as failed with its error; one
still running ``max(2 s, timeout / 4)`` after its time limit (stuck inside one frame) is
recorded as timed out and cancelled. Its worker is restarted (a thread cannot be stopped from
outside its process) only with ``restart_workers``, which the sweep passes for its own
LocalCluster: a restart on a shared scheduler would kill other people's tasks on that worker,
so there the stuck task is left to end by itself. The other members go on. ``retries`` re-runs
a failed or timed-out member up to that many more times.
"""

from __future__ import annotations

import logging
import math
import os
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

from ..errors import HookeInputError
from .planning import Member
from .settings import SweepSettings
from .storage import trajectory_path
from .table import failure_row
from .worker import run_member


@contextmanager
def connect(client):
    """A ``distributed.Client``: the given one, one for a scheduler address, or a LocalCluster's."""
    from distributed import Client, LocalCluster  # Dask loads when a sweep runs, not on import

    if client is None:
        cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                 else os.cpu_count() or 1)
        with LocalCluster(n_workers=cores, threads_per_worker=1, processes=True,
                          dashboard_address=":0", silence_logs=logging.ERROR) as cluster, \
                Client(cluster) as local:
            yield local
    elif isinstance(client, str):
        try:
            remote = Client(client, timeout="10s")
        except (OSError, TimeoutError, ValueError) as error:
            raise HookeInputError("scheduler", f"cannot connect ({error})", client) from None
        with remote:
            yield remote
    elif isinstance(client, Client):
        yield client
    else:
        raise HookeInputError("client", "must be None, a scheduler address or a distributed.Client",
                              type(client).__name__)


def execute(client, members: list[Member], directory: Path, settings: SweepSettings,
            on_final: Callable[[Member, dict], None], restart_workers: bool = False) -> None:
    """Run ``members`` on ``client``, retrying failures; ``on_final(member, row)`` per member;
    ``restart_workers``: restart the worker of a member stuck past its time limit."""
    from distributed import wait

    topic = f"hooke-sweep-{uuid.uuid4().hex}"
    started: dict[str, tuple[float, str]] = {}  # task key → (client clock at start, worker)
    client.subscribe_topic(topic, lambda event: started.__setitem__(
        event[1]["key"], (time.monotonic(), event[1]["worker"])))
    pending: dict[Any, tuple[Member, int]] = {}

    def submit(member: Member, attempt: int) -> None:
        store = None if settings.summary_only else str(trajectory_path(directory, member.id))
        future = client.submit(run_member, member, store, settings.timeout, topic,
                               key=f"hooke-member-{member.id}-{uuid.uuid4().hex[:8]}")
        pending[future] = (member, attempt)

    def finish(member: Member, attempt: int, row: dict) -> None:
        if row["status"] != "ok" and attempt <= settings.retries:
            submit(member, attempt + 1)
        else:
            on_final(member, {**row, "attempts": attempt})

    hard_limit = None if settings.timeout is None else settings.timeout + max(2.0, settings.timeout / 4)
    for member in members:
        submit(member, 1)
    try:
        while pending:
            try:
                finished, _ = wait(list(pending), timeout=None if hard_limit is None else 0.5,
                                   return_when="FIRST_COMPLETED")
            except TimeoutError:
                finished = set()
            for future in finished:
                member, attempt = pending.pop(future)
                started.pop(future.key, None)
                try:
                    row = future.result()
                except Exception as error:  # the worker died (e.g. out of memory), or a cancel
                    row = failure_row("failed", f"{type(error).__name__}: {error}")
                    row["wall_time"] = math.nan
                finish(member, attempt, row)
            if hard_limit is not None:
                _stop_overdue(client, pending, started, hard_limit, finish, restart_workers)
    finally:
        client.unsubscribe_topic(topic)
        client.cancel(list(pending))


def _stop_overdue(client, pending: dict, started: dict, hard_limit: float, finish,
                  restart_workers: bool) -> None:
    """Cancel members stuck past ``hard_limit``, and with ``restart_workers`` restart their
    workers."""
    now = time.monotonic()
    for future, (member, attempt) in list(pending.items()):
        if future.done() or future.key not in started or now - started[future.key][0] < hard_limit:
            continue
        began, worker = started.pop(future.key)
        del pending[future]
        future.cancel()
        if restart_workers:
            client.restart_workers([worker], raise_for_error=False)
        fate = ("was restarted" if restart_workers else "was not restarted (the cluster is not "
                "the sweep's own; the task ends there by itself)")
        row = failure_row("timeout", f"MemberTimeout: still running {now - began:.1f} s after it "
                          f"started, inside one frame; its worker {worker} {fate}")
        row["wall_time"] = now - began
        finish(member, attempt, row)
