"""Steps per second of ``generalized_alpha`` on the jointed scenes, beside seed 002's C++ code.

    .venv/bin/python benchmarks/bench_joints.py                 # top, crane, pendulum, chains n = 10 … 80
    .venv/bin/python benchmarks/bench_joints.py --chains 4 --scale 0.01   # a smoke run (CI)

Each case is run once briefly (Numba compilation, caches) and then timed through
``hooke.simulate`` with only the first and last frames saved: the median of ``--repeats`` runs;
the last line says how much of the CPU other processes used meanwhile. The reference numbers are the
issue's measurements of the seed 002 C++ code (dense Jacobians) on a 2-core machine like ours.
The hanging chain is the built-in scene ``jointed_chain`` (n particles of 0.1 kg on joints of
length 1/n from a fixed support, released from the horizontal, gravity −9.81),
timed over 10 s at dt = 1e-3, through the whip of its free end near t = 1.4 s. ``--scale``
multiplies every case's number of steps.
"""

from __future__ import annotations

import argparse

import hooke
from bench import LoadMonitor, median_time

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
    args = parser.parse_args()
    print(f"{'case':<12} {'particles':>9} {'joints':>6} {'steps/s':>10} {'C++ ref':>9} "
          f"{'ratio':>7} {'Newton it/step':>14} {'factorisations':>14} {'split steps':>11}")
    with LoadMonitor() as load:
        for label, scene, dt, steps in cases(args.chains, args.scale):
            report(label, scene, *measure(scene, dt, steps, args.repeats))
    print(f"(other processes used {load.others:.0%} of the CPU meanwhile)")


def report(label: str, scene: hooke.Scene, rate: float, stats: dict) -> None:
    reference = REFERENCE.get(label)
    ratio = f"{rate / reference:7.2f}" if reference else f"{'':>7}"
    ref = f"{reference:9.1f}" if reference else f"{'':>9}"
    print(f"{label:<12} {scene.model.n_particles:>9d} {scene.model.n_joints:>6d} {rate:>10.0f} "
          f"{ref} {ratio} {stats['newton_iterations'] / stats['steps']:>14.2f} "
          f"{stats['factorizations']:>14d} {stats['split_steps']:>11d}")


if __name__ == "__main__":
    main()
