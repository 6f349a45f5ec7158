"""Steps per second of ``generalized_alpha`` on the jointed scenes, beside seed 002's C++ code.

    .venv/bin/python benchmarks/bench_joints.py

Each case is run once briefly (Numba compilation, caches) and then timed through
``hooke.simulate`` with only the first and last frames saved. The reference numbers are the
issue's measurements of the seed 002 C++ code (dense Jacobians) on a 2-core machine like ours.
The hanging chain: n particles on joints of length 1/n from a fixed support, released from the
horizontal, mass 0.1 each, gravity −9.81, dt = 1e-3, timed over its first second (near t = 1.46 s
the free end whips faster than Newton can follow at this dt).
"""

from __future__ import annotations

import time

import hooke

REFERENCE = {"top": 3491.0, "crane": 3574.0, "pendulum": 22601.0, "chain n=80": 15.3}


def hanging_chain(n: int) -> hooke.Scene:
    b = hooke.ModelBuilder(dim=3, gravity=(0.0, 0.0, -9.81))
    previous = b.add_particle((0.0, 0.0, 0.0), pinned=True)
    for k in range(1, n + 1):
        current = b.add_particle((k / n, 0.0, 0.0), mass=0.1)
        b.add_joint(previous, current)
        previous = current
    return hooke.Scene(b.finalize(), integrator="generalized_alpha", dt=1e-3, t_end=1.0,
                       options={"rho_inf": 0.8}, name=f"chain n={n}")


def cases():
    yield "top", hooke.scene("top"), 1e-3, 3000
    yield "crane", hooke.scene("crane"), 2e-3, 3000
    yield "pendulum", hooke.scene("pendulum"), 1e-3, 5000
    for n in (10, 20, 40, 80):
        yield f"chain n={n}", hanging_chain(n), 1e-3, 1000  # 1 s of fall: before the tip whips


def measure(scene: hooke.Scene, dt: float, steps: int) -> tuple[float, dict]:
    options = {"rho_inf": 0.8}
    hooke.simulate(scene, integrator="generalized_alpha", dt=dt, t_end=20 * dt, **options)
    started = time.perf_counter()
    result = hooke.simulate(scene, integrator="generalized_alpha", dt=dt, t_end=steps * dt,
                            save_every=steps, **options)
    elapsed = time.perf_counter() - started
    return result.stats["steps"] / elapsed, result.stats


def main() -> None:
    print(f"{'case':<12} {'particles':>9} {'joints':>6} {'steps/s':>10} {'C++ ref':>9} "
          f"{'ratio':>7} {'Newton it/step':>14} {'factorisations':>14}")
    for label, scene, dt, steps in cases():
        rate, stats = measure(scene, dt, steps)
        reference = REFERENCE.get(label)
        ratio = f"{rate / reference:7.2f}" if reference else f"{'':>7}"
        ref = f"{reference:9.1f}" if reference else f"{'':>9}"
        print(f"{label:<12} {scene.model.n_particles:>9d} {scene.model.n_joints:>6d} {rate:>10.0f} "
              f"{ref} {ratio} {stats['newton_iterations'] / stats['steps']:>14.2f} "
              f"{stats['factorizations']:>14d}")


if __name__ == "__main__":
    main()
