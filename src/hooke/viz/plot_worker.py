"""A run's plots drawn by a forked process while the run goes on, so that Matplotlib's import
and first figure (about half a second) overlap the run instead of following it.

Contract: :func:`start` forks a worker that imports Matplotlib, draws one figure in memory and
waits; it returns None where a fork is not safe — outside Linux (macOS's system libraries are
not safe in a fork without an exec; Windows has no fork), or beside other threads in this process
(Numba's parallel workers, a server's), whose locks a fork would copy in whatever state they
were. :meth:`PlotWorker.submit` hands the worker a Result whose scene is the one this process
held when it forked (sent by reference: a scene may hold functions that cannot be pickled; the
rest is pickled) and whose arrays fit in ``MAX_BYTES``, and says whether it was taken;
:meth:`PlotWorker.collect` returns what :func:`hooke.run_report.draw_plots` returned there —
the same files, drawn by the same code — or raises the OSError it met (a full disk), and
returns None when the worker died before answering: the caller then draws in-process, where any
other error shows as it would have. :meth:`PlotWorker.close` ends the worker and waits for it:
an idle worker exits at once, a drawing one after its plots, so no partial file is left and no
process outlives the command. The worker never prints (its output goes to /dev/null) and
ignores SIGINT: a Ctrl-C is the run's to handle, and the run closes the worker.
"""

from __future__ import annotations

import dataclasses
import io
import os
import pickle
import signal
import sys
import threading
from pathlib import Path

import numpy as np

SCENE = "scene"  # the persistent id of the forked scene in a pickled Result
# A larger Result is drawn in-process: its copy in the worker would double the memory it takes,
# and its drawing outlasts the half second the worker saves.
MAX_BYTES = 64 * 2**20


def start(scene) -> PlotWorker | None:
    """A worker forked with ``scene``, or None where a fork is not safe."""
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    if (not sys.platform.startswith("linux") or threading.active_count() > 1
            or getattr(parallel, "_is_initialized", False)):
        return None
    requests_read, requests_write = os.pipe()
    replies_read, replies_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: it never returns into the caller's stack (its finally clauses)
        code = 1
        try:
            os.close(requests_write)
            os.close(replies_read)
            _serve(scene, requests_read, replies_write)
            code = 0
        finally:
            os._exit(code)
    os.close(requests_read)
    os.close(replies_write)
    return PlotWorker(pid, scene, os.fdopen(requests_write, "wb"), os.fdopen(replies_read, "rb"))


class PlotWorker:
    """The parent's end of a worker made by :func:`start`."""

    def __init__(self, pid: int, scene, requests, replies):
        self.pid, self.scene, self.requests, self.replies = pid, scene, requests, replies

    def submit(self, result, out: Path) -> bool:
        """Send ``result`` to be drawn into ``out``; False when the worker cannot take it (its
        scene is another, its arrays are larger than ``MAX_BYTES``, or the worker is gone)."""
        if result.scene is not self.scene or array_bytes(result) > MAX_BYTES:
            return False
        try:
            _ScenePickler(self.requests, self.scene).dump((result, str(out)))
            self.requests.close()
        except (BrokenPipeError, ValueError):  # (ValueError: submitted twice, the pipe closed)
            return False
        return True

    def collect(self) -> list[Path] | None:
        """The files the worker wrote for the submitted Result (see the module docstring)."""
        try:
            reply = pickle.load(self.replies)
        except (EOFError, pickle.UnpicklingError):
            return None
        if reply[0] == "oserror":
            raise OSError(*reply[1:])
        return [Path(path) for path in reply[1]]

    def close(self) -> None:
        for pipe in (self.requests, self.replies):
            try:
                pipe.close()
            except OSError:  # the unsent rest of a Result whose worker died
                pass
        if self.pid is not None:
            os.waitpid(self.pid, 0)
            self.pid = None


def array_bytes(result) -> int:
    """The bytes of the NumPy arrays a Result holds (its frames, energies, tensions, ...)."""
    values = [getattr(result, field.name) for field in dataclasses.fields(result)]
    values += list(result.energy.values())
    return sum(value.nbytes for value in values if isinstance(value, np.ndarray))


class _ScenePickler(pickle.Pickler):
    def __init__(self, file, scene):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.scene = scene

    def persistent_id(self, obj):
        return SCENE if obj is self.scene else None


class _SceneUnpickler(pickle.Unpickler):
    def __init__(self, file, scene):
        super().__init__(file)
        self.scene = scene

    def persistent_load(self, pid):
        if pid != SCENE:
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        return self.scene


def _serve(scene, requests: int, replies: int) -> None:
    """The worker's life: get ready, draw the one Result it is sent, answer, return."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the run's handler, which it inherited
    silent = os.open(os.devnull, os.O_WRONLY)
    os.dup2(silent, 1)
    os.dup2(silent, 2)
    from ..run_report import draw_plots
    from . import plots  # Matplotlib's import: the cost this worker takes off the run's path

    warm = plots.new_figure(figsize=(2, 1))  # the first figure loads the fonts
    warm.subplots().set_title("t [s]")
    warm.savefig(io.BytesIO(), format="png")
    with os.fdopen(requests, "rb") as source, os.fdopen(replies, "wb") as sink:
        try:
            result, out = _SceneUnpickler(source, scene).load()
        except EOFError:  # closed without a Result: the run ended otherwise
            return
        try:
            reply = ("drawn", [str(path) for path in draw_plots(result, Path(out))])
        except OSError as error:
            reply = ("oserror", error.errno, error.strerror, error.filename)
        pickle.dump(reply, sink)
