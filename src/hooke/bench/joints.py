"""Joints: steps per second of ``generalized_alpha`` on the jointed scenes, beside seed 002's C++.

Contract: each case (top, crane — seed 002's exact system, :func:`hooke.scenes.seeds.seed_crane`, the
one its C++ ran, and the ``crane`` scene in its wind with drag —, pendulum, the
``jointed_chain`` scene for each n in ``chains``:
n particles of 0.1 kg on joints of 1/n m from a fixed support, released from the horizontal,
timed over 10 s at dt = 1e-3, through the whip of its free end near t = 1.4 s) is run once
briefly (Numba compilation, caches) and then timed through ``hooke.simulate`` with only the
first and last frames saved: the median of ``repeats`` runs. ``scale`` multiplies every case's
number of steps. The C++ numbers are the issue's measurements of seed 002's code (dense
Jacobians) on a 2-core machine like ours, not rerun (the seed's code is not part of hooke): no
trajectory can be compared, and the table says so.
"""

from __future__ import annotations

from .measure import Options, median_time

REFERENCE = {"top": 3491.0, "crane": 3574.0, "pendulum": 22601.0, "chain n=80": 15.3}
CHAINS = (10, 20, 40, 80)


def cases(chains, scale: float):
    from ..io.scene_file import builtin_scene
    from ..scenes.seeds import seed_crane

    def steps(count: int) -> int:
        return max(1, int(round(count * scale)))

    yield "top", builtin_scene("top"), 1e-3, steps(3000)
    yield "crane", seed_crane(), 2e-3, steps(3000)
    yield "crane, wind", builtin_scene("crane"), 2e-3, steps(3000)
    yield "pendulum", builtin_scene("pendulum"), 1e-3, steps(5000)
    for n in chains:
        yield f"chain n={n}", builtin_scene("jointed_chain", n=n), 1e-3, steps(10000)


def measure(scene, dt: float, steps: int, repeats: int) -> tuple[float, dict]:
    from ..simulate import simulate

    options = {"rho_inf": 0.8}
    simulate(scene, integrator="generalized_alpha", dt=dt, t_end=20 * dt, **options)
    runs = []

    def run():
        runs.append(simulate(scene, integrator="generalized_alpha", dt=dt, t_end=steps * dt,
                             save_every=steps, **options))

    seconds = median_time(run, repeats, warmup=0)
    stats = runs[-1].stats
    return stats["steps"] / seconds, stats


def joints(options: Options, bandwidth: float = 0.0) -> dict:
    chains = options.extra.get("chains") or ((4,) if options.smoke else CHAINS)
    scale = options.extra.get("scale") or (0.01 if options.smoke else 1.0)
    repeats = options.repeat(3)
    print(f"{'case':<12} {'particles':>9} {'joints':>6} {'steps/s':>10} {'C++ ref':>9} "
          f"{'ratio':>7} {'Newton it/step':>14} {'factorisations':>14} {'split steps':>11}")
    rows = []
    for label, scene, dt, steps in cases(chains, scale):
        rows.append(row(label, scene, dt, *measure(scene, dt, steps, repeats)))
        report(rows[-1])
    return {"rows": rows, "scale": scale, "repeats": repeats}


def row(label: str, scene, dt: float, rate: float, stats: dict) -> dict:
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
