"""Steps per second of ``generalized_alpha`` on the jointed scenes, beside seed 002's C++ code.

    .venv/bin/python benchmarks/bench_joints.py                 # top, crane, pendulum, chains n = 10 … 80
    .venv/bin/python benchmarks/bench_joints.py --chains 4 --scale 0.01   # a smoke run (CI)
    .venv/bin/python benchmarks/bench_joints.py --data docs/data   # also docs/data/bench_joints.json

Each case is run once briefly (Numba compilation, caches) and then timed through
``hooke.simulate`` with only the first and last frames saved: the median of ``--repeats`` runs;
the last line says how much of the CPU other processes used meanwhile. The reference numbers are the
issue's measurements of the seed 002 C++ code (dense Jacobians) on a 2-core machine like ours.
The hanging chain is the built-in scene ``jointed_chain`` (n particles of 0.1 kg on joints of
length 1/n from a fixed support, released from the horizontal, gravity −9.81),
timed over 10 s at dt = 1e-3, through the whip of its free end near t = 1.4 s. ``--scale``
multiplies every case's number of steps. ``--data DIR`` also writes the rows with their provenance
(command, date, machine, load: ``hooke.provenance``) to ``DIR/bench_joints.json``, from which
``scripts/readme_tables.py`` renders the README's table.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import hooke
from bench import median_time
from hooke.provenance import LoadMonitor, command_line, write_measurement

# Steps/s of seed 002's C++ code (dense Jacobians), measured by the issue on a 2-core machine like
# ours; not rerun here (the seed's code is not part of hooke).
REFERENCE = {"top": 3491.0, "crane": 3574.0, "pendulum": 22601.0, "chain n=80": 15.3}


def cases(chains, scale: float):
    def steps(count: int) -> int:
        return max(1, int(round(count * scale)))

    yield "top", hooke.scene("top"), 1e-3, steps(3000)
    yield "crane", hooke.scene("crane"), 2e-3, steps(3000)
    yield "pendulum", hooke.scene("pendulum"), 1e-3, steps(5000)
    for n in chains:
        yield f"chain n={n}", hooke.scene("jointed_chain", n=n), 1e-3, steps(10000)


def measure(scene: hooke.Scene, dt: float, steps: int, repeats: int) -> tuple[float, dict]:
    options = {"rho_inf": 0.8}
    hooke.simulate(scene, integrator="generalized_alpha", dt=dt, t_end=20 * dt, **options)
    runs = []

    def run():
        runs.append(hooke.simulate(scene, integrator="generalized_alpha", dt=dt,
                                   t_end=steps * dt, save_every=steps, **options))

    seconds = median_time(run, repeats, warmup=0)
    stats = runs[-1].stats
    return stats["steps"] / seconds, stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, nargs="*", default=[10, 20, 40, 80],
                        help="chain sizes n (default: 10 20 40 80)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply every case's number of steps (default 1)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per case (median)")
    parser.add_argument("--data", type=Path, default=None,
                        help="also write the rows with their provenance to DIR/bench_joints.json")
    args = parser.parse_args()
    print(f"{'case':<12} {'particles':>9} {'joints':>6} {'steps/s':>10} {'C++ ref':>9} "
          f"{'ratio':>7} {'Newton it/step':>14} {'factorisations':>14} {'split steps':>11}")
    rows = []
    with LoadMonitor() as load:
        for label, scene, dt, steps in cases(args.chains, args.scale):
            rows.append(row(label, scene, dt, *measure(scene, dt, steps, args.repeats)))
            report(rows[-1])
    print(f"(other processes used {load.others:.0%} of the CPU meanwhile)")
    if args.data is not None:
        write_measurement(args.data / "bench_joints.json", rows,
                          command_line("python benchmarks/bench_joints.py"), load.others,
                          smoke=args.scale < 1, scale=args.scale, repeats=args.repeats)


def row(label: str, scene: hooke.Scene, dt: float, rate: float, stats: dict) -> dict:
    return {"case": label, "particles": scene.model.n_particles, "joints": scene.model.n_joints,
            "dt": dt, "steps": stats["steps"], "steps_per_s": rate,
            "cpp_steps_per_s": REFERENCE.get(label),
            "newton_iterations_per_step": stats["newton_iterations"] / stats["steps"],
            "factorizations": stats["factorizations"], "split_steps": stats["split_steps"]}


def report(row: dict) -> None:
    reference = row["cpp_steps_per_s"]
    ratio = f"{row['steps_per_s'] / reference:7.2f}" if reference else f"{'':>7}"
    ref = f"{reference:9.1f}" if reference else f"{'':>9}"
    print(f"{row['case']:<12} {row['particles']:>9d} {row['joints']:>6d} "
          f"{row['steps_per_s']:>10.0f} {ref} {ratio} {row['newton_iterations_per_step']:>14.2f} "
          f"{row['factorizations']:>14d} {row['split_steps']:>11d}")


if __name__ == "__main__":
    main()
