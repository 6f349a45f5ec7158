"""Contact benchmark: time per implicit step and Newton iterations per step on the contact scenes,
and the square drop against a peer run in the same process.

    .venv/bin/python benchmarks/bench_contact.py                  # all contact scenes
    .venv/bin/python benchmarks/bench_contact.py square_drop      # some of them
    .venv/bin/python benchmarks/bench_contact.py --steps 5 --repeats 1 square_drop   # smoke run
    .venv/bin/python benchmarks/bench_contact.py --data docs/data  # also docs/data/bench_contact.json

``step`` times the integrator alone (``Integrator.step`` in a loop); ``simulate`` adds saving every
frame with its energies and contact distance; ``generic`` times the steps again with the compiled
Newton solve switched off (``hooke.integrators.implicit.COMPILED``), on the scenes that take it.
Times are medians over ``--repeats`` runs of each scene's whole run (or its first ``--steps``
steps). With ``square_drop`` the same steps are also run by the book's algorithm in the book's own
Python style (``peers_book.py``: a loop per spring, a per-spring eigen-decomposition, SciPy sparse
assembly and ``spsolve``), alternating with hooke's runs; the script prints both times per step,
the median ratio and how closely the trajectories agree, and at the end the share of the CPU that
other processes used meanwhile. ``--data DIR`` also writes the rows and the peer comparison with
their provenance (command, date, machine, load: ``hooke.provenance``) to
``DIR/bench_contact.json``, from which ``scripts/readme_tables.py`` renders the README's table.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import hooke
import peers_book
from bench import median_time
from hooke.integrators import get as get_integrator
from hooke.integrators import implicit
from hooke.provenance import LoadMonitor, command_line, write_measurement

SCENES = ["square_drop", "square_slope", "square_compress", "square_press", "cloth_drop",
          "cloth_valley", "soft3d_drop"]


def timed(function) -> float:
    """One run's seconds (the peer comparison alternates single runs of hooke and the peer)."""
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def stepping(scene: hooke.Scene, steps: int, compiled: bool = True):
    """A function running ``steps`` integrator steps of ``scene`` from its start (its ``stats``
    and ``compiled`` attributes: the last run's counters, whether it ran compiled)."""
    stepper_class = get_integrator(scene.integrator)

    def run():
        implicit.COMPILED = compiled
        stepper = stepper_class(hooke.System(scene.model), scene.dt, **scene.options)
        implicit.COMPILED = True
        state = scene.state
        for _ in range(steps):
            state = stepper.step(state)
        run.stats, run.compiled = stepper.stats, stepper.compiled

    return run


def bench(name: str, steps: int | None, repeats: int) -> dict:
    scene = hooke.scene(name)
    steps = steps or int(round(scene.t_end / scene.dt))
    t_end = steps * scene.dt
    run_steps = stepping(scene, steps)
    hooke.simulate(scene, t_end=min(10, steps) * scene.dt)  # load Numba's cache and warm up
    step_time = median_time(run_steps, repeats, warmup=0)
    simulate_time = median_time(lambda: hooke.simulate(scene, t_end=t_end), repeats, warmup=0)
    stats = run_steps.stats
    generic_time = None
    if run_steps.compiled:
        run_generic = stepping(scene, steps, compiled=False)
        generic_time = median_time(run_generic, repeats, warmup=0)
        assert run_generic.stats == stats  # the same iterations, step by step (tested)
    result = hooke.simulate(scene, t_end=t_end)
    touched = result.contact_distance < scene.model.contact_dhat
    return dict(name=name, particles=scene.model.n_particles, steps=steps,
                us_step=1e6 * step_time / steps, us_simulate=1e6 * simulate_time / steps,
                us_generic=None if generic_time is None else 1e6 * generic_time / steps,
                newton=stats["newton_iterations"] / steps,
                halvings=stats["line_search_halvings"] / steps,
                first_contact=int(np.argmax(touched)) if touched.any() else None,
                min_distance=float(result.contact_distance.min()), x=result.x)


def peer_comparison(mine: dict, repeats: int) -> dict:
    """hooke's and the peer's runs of the same steps, alternated so that both see the same load
    on a shared machine; medians of the times and of the per-pair ratios."""
    steps = mine["steps"]
    run_hooke = stepping(hooke.scene("square_drop"), steps)
    peer = {}

    def run_peer():
        peer["frames"], peer["iterations"] = peers_book.square_drop(steps)

    peers_book.square_drop(min(steps, 5))  # warm up
    pairs = np.array([(timed(run_hooke), timed(run_peer)) for _ in range(repeats)])
    ms = 1e3 * np.median(pairs, axis=0) / steps
    comparison = {"steps": steps, "repeats": repeats, "hooke_ms_per_step": float(ms[0]),
                  "peer_ms_per_step": float(ms[1]),
                  "ratio": float(np.median(pairs[:, 1] / pairs[:, 0])),
                  "hooke_newton_per_step": run_hooke.stats["newton_iterations"] / steps,
                  "peer_newton_per_step": float(peer["iterations"].sum() / steps),
                  "hooke_compiled": bool(run_hooke.compiled),
                  "positions_agree_m": float(np.abs(peer["frames"] - mine["x"]).max())}
    print(f"\nsquare_drop, {steps} steps, {repeats} alternated runs each (medians), in one process: "
          "hooke against the book's algorithm in the book's Python style (peers_book.py)")
    print(f"  hooke     {comparison['hooke_ms_per_step']:9.3f} ms/step  "
          f"{comparison['hooke_newton_per_step']:5.2f} Newton iterations/step"
          f"  ({'compiled' if run_hooke.compiled else 'generic'} Newton solve)")
    print(f"  book peer {comparison['peer_ms_per_step']:9.3f} ms/step  "
          f"{comparison['peer_newton_per_step']:5.2f} Newton iterations/step")
    print(f"  ratio     {comparison['ratio']:9.1f}×  (positions agree to "
          f"{comparison['positions_agree_m']:.1e} m)")
    return comparison


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenes", nargs="*", default=SCENES)
    parser.add_argument("--steps", type=int, default=None,
                        help="steps per run (default: each scene's whole run)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per scene (median)")
    parser.add_argument("--data", type=Path, default=None,
                        help="also write the rows with their provenance to DIR/bench_contact.json")
    args = parser.parse_args()
    print(f"{'scene':16s} {'n':>5s} {'steps':>6s} {'µs/step':>8s} {'+frames':>8s} {'generic':>8s} "
          f"{'newton/step':>11s} {'halvings/step':>13s} {'1st contact':>11s} {'min d [m]':>10s}")
    results, peer = {}, None
    with LoadMonitor() as load:
        for name in args.scenes:
            r = results[name] = bench(name, args.steps, args.repeats)
            first = "-" if r["first_contact"] is None else str(r["first_contact"])
            generic = "-" if r["us_generic"] is None else f"{r['us_generic']:8.0f}"
            print(f"{r['name']:16s} {r['particles']:5d} {r['steps']:6d} {r['us_step']:8.0f} "
                  f"{r['us_simulate']:8.0f} {generic:>8s} {r['newton']:11.2f} "
                  f"{r['halvings']:13.2f} {first:>11s} {r['min_distance']:10.2e}")
        if "square_drop" in results:
            peer = peer_comparison(results["square_drop"], args.repeats)
    print(f"\nOther processes used {load.others:.0%} of the CPU meanwhile (load average "
          f"{os.getloadavg()[0]:.1f} at the end; {os.cpu_count()} cores).")
    if args.data is not None:
        rows = [{key: value for key, value in r.items() if key != "x"} for r in results.values()]
        write_measurement(args.data / "bench_contact.json", rows,
                          command_line("python benchmarks/bench_contact.py"), load.others,
                          smoke=args.steps is not None, repeats=args.repeats, peer=peer)


if __name__ == "__main__":
    main()
