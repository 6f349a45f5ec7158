"""How the workloads of ``hooke bench`` measure and print.

Contract: :func:`median_time` times a function after a warm-up; :func:`interleaved` times several
contenders in turn, A B C A B C … (a burst of load on a shared machine then hits them alike), and
:func:`ratio` quotes one contender against another only from times of the same rounds;
:func:`agreement` says whether two trajectories of the same scheme agree to round-off, the check
that comes before any ratio. :class:`Options` carries a run's settings to every workload. Times
are wall-clock seconds (``time.perf_counter``); printing goes to stdout as plain text tables.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np


# The most ``repeats`` and ``rounds`` a run may ask for: a median settles within tens of runs
# (each workload's default is a handful), and 1e20 repeats would never end (issue 15).
MAX_REPEATS = 1000
MAX_ROUNDS = 100


@dataclass
class Options:
    """A ``hooke bench`` run's settings: ``smoke`` (a few steps of small sizes: a check that it
    runs, not a measurement), ``peers`` (run the installed peers too), ``repeats`` and
    ``rounds`` (None: each workload's own), and ``extra`` (a workload's own settings, e.g.
    ``w5_scenes``, ``chains``, ``scale``, ``scenes``, ``steps``)."""

    smoke: bool = False
    peers: bool = False
    repeats: int | None = None
    rounds: int | None = None
    extra: dict = field(default_factory=dict)

    def repeat(self, default: int) -> int:
        return 1 if self.smoke else (self.repeats or default)

    def round(self, default: int) -> int:
        return 1 if self.smoke else (self.rounds or default)


def median_time(function: Callable[[], object], repeats: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def timed(function: Callable[[], object]) -> float:
    """One run's seconds."""
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def interleaved(contenders: dict[str, Callable[[], object]], rounds: int,
                warmup: bool = True) -> dict[str, list[float]]:
    """Each contender run once per round, in turn: the seconds of every round, by name."""
    if warmup:
        for function in contenders.values():
            function()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, function in contenders.items():
            times[name].append(timed(function))
    return times


def ratio(slow: list[float], fast: list[float]) -> float:
    """The median over the rounds of slow / fast within a round."""
    return float(np.median(np.asarray(slow) / np.asarray(fast)))


def per_frame(with_frames: list[float], without: list[float], frames: int) -> float:
    """Seconds a saved frame adds: the median over the rounds of the difference within a round
    between a run saving ``frames`` more frames and the same run without them, / ``frames``."""
    return float(np.median(np.asarray(with_frames) - np.asarray(without))) / frames


# Of the motion: how far two runs of one scheme may differ, by the precision they compute in.
AGREEMENT = {"float64": 1e-8, "float32": 1e-4}


def agreement(mine: np.ndarray, theirs: np.ndarray, start: np.ndarray,
              precision: str = "float64") -> tuple[bool, float]:
    """(agree, max |mine − theirs|): two runs of the same scheme from ``start`` agree when they
    differ by at most ``AGREEMENT[precision]`` of how far ``mine`` moved, plus 8 units of
    round-off of the positions themselves (a float32 peer stores x = 1 m to 6e-8 m). Another
    scheme differs by far more: explicit against symplectic Euler by O(h) of the motion, 1e-2
    after 100 steps."""
    mine, theirs, start = (np.asarray(a, dtype=float) for a in (mine, theirs, start))
    difference = float(np.max(np.abs(mine - theirs)))
    moved = float(np.max(np.abs(mine - start)))
    floor = 8 * float(np.finfo(precision).eps) * float(np.max(np.abs(mine)))
    return bool(difference <= AGREEMENT[precision] * moved + floor), difference


def peak_rss() -> int:
    """This process's peak resident set size [bytes]: VmHWM, which starts afresh at exec (Linux
    keeps ru_maxrss across fork + exec, so a child would report its parent's peak)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def memory_bandwidth(megabytes: int = 256, repeats: int = 5) -> float:
    """Copy bandwidth [bytes/s]: read + write of a ``megabytes`` array by NumPy (one core)."""
    source = np.ones(megabytes * 2**20 // 8)
    target = np.empty_like(source)
    seconds = median_time(lambda: np.copyto(target, source), repeats)
    return 2 * source.nbytes / seconds


def table(title: str, header: list[str], rows: list[list]) -> None:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[k]) for r in cells)) if cells else len(h)
              for k, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for row in cells:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))


def fmt(value: float | None, digits: int = 3) -> str:
    if value is None or value != value:  # not measured, or NaN
        return "-"
    return f"{value:.{digits}g}" if abs(value) < 1e4 else f"{value:,.0f}"
