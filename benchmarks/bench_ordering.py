"""Particle ordering and the fused explicit kernels: the ``cloth`` scene in its natural (grid)
numbering against the same cloth with its particles (and springs) randomly renumbered.

    .venv/bin/python benchmarks/bench_ordering.py                  # n = 100 and 1000
    .venv/bin/python benchmarks/bench_ordering.py --sides 100 --repeats 7

Each row: symplectic Euler through the integrator's own step (the fused
:meth:`hooke.kernels.SpringGather.symplectic_euler`, as W1/W2 of ``hooke bench``), steps/s and
springs·steps/s as the median of ``--repeats`` runs after a warm-up, with 1 and with all Numba
threads, and whether :class:`~hooke.kernels.SpringGather` renumbered the particles internally
(its ``permutation``), with its ordering metric (mean spring span |i − j|) before and after.
Benchmarks print; they assert nothing.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

import hooke
from hooke.bench.cloth import symplectic_euler_rate
from hooke.bench.measure import fmt, table
from hooke.array_models import renumbered
from hooke.kernels import SpringGather
from hooke.provenance import LoadMonitor


def shuffled(model, seed: int = 0):
    """``model`` with its particles and springs in random order: the same physical system in the
    numbering an unordered mesh or script could give."""
    rng = np.random.default_rng(seed)
    return renumbered(model, rng.permutation(model.n_particles), rng.permutation(model.n_springs))


def rate(model, dt: float, steps: int, repeats: int, renumber=None) -> tuple[float, hooke.System]:
    system = hooke.System(model)
    if renumber is not None:  # the metric's choice overridden (System builds the default one)
        system._gather = SpringGather(model, renumber=renumber)
    return symplectic_euler_rate(system, dt, steps, repeats), system


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sides", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--forced", action="store_true",
                        help="also each order with the metric's choice reversed")
    args = parser.parse_args(argv)
    threads = numba.get_num_threads()
    counts = sorted({1, threads})
    for n in args.sides:
        scene = hooke.scene("cloth", n=n)
        steps = max(3, 20_000_000 // scene.model.n_springs)
        models = {"natural": scene.model, "shuffled": shuffled(scene.model)}
        rows = []
        with LoadMonitor() as load:
            for name, model in models.items():
                started = time.perf_counter()
                chosen = hooke.System(model).gather.permutation is not None
                setup = time.perf_counter() - started
                for renumber in (None, not chosen) if args.forced else (None,):
                    for count in counts:
                        numba.set_num_threads(count)
                        r, system = rate(model, scene.dt, steps, args.repeats, renumber)
                        g = system.gather
                        rows.append([name + ("" if renumber is None else " (forced)"), count,
                                     fmt(r), f"{r * model.n_springs:.3g}",
                                     "yes" if g.permutation is not None else "no",
                                     fmt(g.span), fmt(g.inner_span),
                                     f"{1e3 * setup:.0f}" if renumber is None else ""])
                        del system, g
                    numba.set_num_threads(threads)
        table(f"cloth {n} x {n}, {scene.model.n_springs:,} springs, symplectic Euler, {steps} "
              f"steps per run, medians of {args.repeats} (other processes: {load.others:.0%} "
              f"of the CPU)",
              ["order", "threads", "steps/s", "springs*steps/s", "renumbered", "span",
               "span inside", "setup ms"], rows)


if __name__ == "__main__":
    main()
