"""Running a sweep's members on Dask, from the client: the cluster, retries and time limits.

With ``client=None`` the sweep starts a ``distributed.LocalCluster`` on this machine (one
single-threaded worker process per core this process may run on, ``os.sched_getaffinity``) and
closes it at the end; with an address (``"tcp://host:8786"``) it connects to that scheduler; a
``distributed.Client`` is used as it is (:func:`connect`). Workers write into DIR, so on a real
cluster DIR must be a path every worker can write (a shared file system), unless
``summary_only``. A scheduler that cannot be reached is an input error and writes nothing.

Failures (:func:`execute`): a member whose task fails (:mod:`.worker` makes a failing member a
row) or whose worker died (Dask's ``KilledWorker``) is recorded as failed with its error. Time
limits are kept on the worker, where a member stuck inside one frame is killed in its own
process (:mod:`.worker`): the client never restarts a worker, on any cluster, and a stuck member
never holds one. The other members go on. ``retries`` re-runs a failed or timed-out member up to
that many more times.
"""

from __future__ import annotations

import logging
import math
import os
import uuid
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

from .. import pending_stop
from ..errors import HookeInputError
from .planning import Member
from .settings import SweepSettings
from .storage import trajectory_path
from .table import failure_row
from .worker import run_member

CONNECT_SECONDS = 10  # for a scheduler to answer
TASKS_PER_THREAD = 4  # members on the cluster per worker thread (see execute)
MIN_WINDOW = 16


@contextmanager
def _workers_ignore_ctrl_c():
    """SIGINT ignored while the local workers start: they inherit that (a spawned process keeps an
    ignored signal, and Python then installs no KeyboardInterrupt handler), so a terminal's Ctrl-C,
    sent to the whole process group, stops the sweep in this process alone, with one line, instead
    of a traceback from each worker (a worker started again later ignores it through
    :mod:`.worker_start`). This process's own handler is back once they are up: a Ctrl-C in
    the second or two they take to start is not seen (press it again). A SIGTERM then (sent to
    this process alone) is held until they are up and delivered then: raised in the middle of
    their start, it left a half-made cluster whose close at exit printed Dask's tracebacks."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers are the main thread's to set
        return
    held = []
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous_term = signal.signal(signal.SIGTERM, lambda number, frame: held.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
    if held:
        signal.raise_signal(signal.SIGTERM)  # to the handler it was sent to


class _CancelRace(logging.Filter):
    """Drops Tornado's report of an error in Dask's ``sync`` cancel callback: a Ctrl-C that
    lands before ``sync`` has made its future sends that callback a name it does not have yet
    (a NameError), whose traceback came before the sweep's one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "sync.<locals>.cancel" not in record.getMessage()


@contextmanager
def connect(client):
    """A ``distributed.Client``: the given one, one for a scheduler address, or a LocalCluster's."""
    tornado_errors, race = logging.getLogger("tornado.application"), _CancelRace()
    tornado_errors.addFilter(race)
    try:
        with _connected(client) as connected:
            yield connected
    finally:
        tornado_errors.removeFilter(race)


@contextmanager
def _connected(client):
    from distributed import Client, LocalCluster  # Dask loads when a sweep runs, not on import

    if client is None:
        cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                 else os.cpu_count() or 1)
        # Dask's errors stay quiet (CRITICAL shows): what a member or a worker hits reaches the
        # user as the member's row, while a worker's heartbeat racing the scheduler's shutdown
        # after a Ctrl-C printed a traceback before the sweep's one line.
        with _workers_ignore_ctrl_c():
            cluster = LocalCluster(n_workers=cores, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=logging.CRITICAL,
                                   preload=["hooke.sweep.worker_start"])
        with cluster, Client(cluster) as local:
            yield local
    elif isinstance(client, str):
        _check_scheduler(client)
        try:
            remote = Client(client, timeout=f"{CONNECT_SECONDS}s")
        except (OSError, TimeoutError, ValueError) as error:
            raise HookeInputError("client", f"cannot connect ({error})", client) from None
        with remote:
            yield remote
    elif isinstance(client, Client):
        yield client
    else:
        raise HookeInputError("client", "must be None, a scheduler address or a distributed.Client",
                              type(client).__name__)


def _check_scheduler(address: str) -> None:
    """Refuse an address where nothing answers Dask's handshake within ``CONNECT_SECONDS``.
    Dask's connect waits for that answer without a limit (a server that accepted the
    connection and stayed silent hung the sweep for good) and reads any other answer as the
    length of a message (a 3 EiB allocation, a MemoryError)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from distributed.comm import connect as dask_connect

    async def handshake() -> None:
        comm = await asyncio.wait_for(dask_connect(address, timeout=CONNECT_SECONDS),
                                      CONNECT_SECONDS)
        await comm.close()

    with ThreadPoolExecutor(1) as pool:  # an event loop of its own, also under a notebook's
        try:
            pool.submit(asyncio.run, handshake()).result()
        except TimeoutError:  # (before OSError, of which it is one)
            raise HookeInputError("client", "cannot connect (no Dask scheduler answered "
                                  f"within {CONNECT_SECONDS:g} s)", address) from None
        except (OSError, ValueError) as error:
            raise HookeInputError("client", f"cannot connect ({error})", address) from None
        except Exception as error:  # noqa: BLE001 (any other answer: not Dask's protocol)
            raise HookeInputError("client", "cannot connect (what answers there is not a "
                                  f"Dask scheduler: {type(error).__name__})", address) from None


def execute(client, members: list[Member], directory: Path, settings: SweepSettings,
            on_final: Callable[[Member, dict], None]) -> None:
    """Run ``members`` on ``client``, retrying failures; ``on_final(member, row)`` per member.

    At most a few tasks per worker thread are on the cluster at a time (:func:`_window`), the
    next submitted as one ends: 200,000 members submitted at once kept the scheduler busy for
    88 s before the first one ran, and a Ctrl-C then took minutes to cancel them."""
    from distributed import wait

    waiting = deque((member, 1) for member in members)
    pending: dict[Any, tuple[Member, int]] = {}
    window = _window(client)

    def submit_more() -> None:
        while waiting and len(pending) < window:
            member, attempt = waiting.popleft()
            store = None if settings.summary_only else str(trajectory_path(directory, member.id))
            future = client.submit(run_member, member, store, settings.timeout,
                                   key=f"hooke-member-{member.id}-{uuid.uuid4().hex[:8]}")
            pending[future] = (member, attempt)

    submit_more()
    try:
        while pending:
            finished, _ = wait(list(pending), return_when="FIRST_COMPLETED")
            for future in finished:
                member, attempt = pending.pop(future)
                try:
                    row = future.result()
                except Exception as error:  # the worker died (e.g. out of memory), or a cancel
                    row = failure_row("failed", f"{type(error).__name__}: {error}")
                    row["wall_time"] = math.nan
                if row["status"] != "ok" and attempt <= settings.retries:
                    waiting.appendleft((member, attempt + 1))
                else:
                    on_final(member, {**row, "attempts": attempt})
            # a Ctrl-C whose KeyboardInterrupt Python swallowed (raised inside a released
            # future's __del__) ran the sweep to its end, exit 0: it stops here instead
            pending_stop.raise_if_pending()
            submit_more()
    finally:
        client.cancel(list(pending))


def _window(client) -> int:
    """How many members are on the cluster at once: enough to keep every worker thread busy
    while the client hears of one ending and submits the next (a cluster that grows later
    gets at least ``MIN_WINDOW``)."""
    threads = sum(client.nthreads().values())
    return max(MIN_WINDOW, TASKS_PER_THREAD * threads)
