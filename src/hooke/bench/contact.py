"""Contact: time per implicit step and Newton iterations per step on the contact scenes, and the
square drop against a peer run in the same process.

Contract: ``step`` times the integrator alone (``Integrator.step`` in a loop); ``simulate`` adds
saving every frame (energies, contact distance and forces); ``generic`` times the steps again
with the compiled Newton solve switched off (``hooke.integrators.implicit.COMPILED``), on the
scenes that take it, and checks they take the same iterations. Times are medians over
``repeats`` runs of each scene's whole run (or its first ``steps`` steps). With ``square_drop``
the same steps are also run by the book's algorithm in the book's own Python style
(:mod:`.peers.book`), alternating with hooke's runs (A B A B …); the median of the per-pair
ratios is quoted when the two trajectories agree to 1e-9 m (the same scheme: round-off).
"""

from __future__ import annotations

import numpy as np

from .measure import Options, median_time, timed

SCENES = ("square_drop", "square_slope", "square_compress", "square_press", "cloth_drop",
          "cloth_valley", "soft3d_drop")
AGREEMENT_M = 1e-9


def stepping(scene, steps: int, compiled: bool = True):
    """A function running ``steps`` integrator steps of ``scene`` from its start (its ``stats``
    and ``compiled`` attributes: the last run's counters, whether it ran compiled)."""
    from ..integrators import get, implicit
    from ..system import System

    stepper_class = get(scene.integrator)

    def run():
        implicit.COMPILED = compiled
        stepper = stepper_class(System(scene.model), scene.dt, **scene.options)
        implicit.COMPILED = True
        state = scene.state
        for _ in range(steps):
            state = stepper.step(state)
        run.stats, run.compiled = stepper.stats, stepper.compiled

    return run


def bench(name: str, steps: int | None, repeats: int) -> dict:
    from ..io.scene_file import builtin_scene
    from ..simulate import simulate

    scene = builtin_scene(name)
    steps = steps or int(round(scene.t_end / scene.dt))
    t_end = steps * scene.dt
    run_steps = stepping(scene, steps)
    simulate(scene, t_end=min(10, steps) * scene.dt)  # load Numba's cache and warm up
    step_time = median_time(run_steps, repeats, warmup=0)
    simulate_time = median_time(lambda: simulate(scene, t_end=t_end), repeats, warmup=0)
    stats = run_steps.stats
    generic_time = None
    if run_steps.compiled:
        run_generic = stepping(scene, steps, compiled=False)
        generic_time = median_time(run_generic, repeats, warmup=0)
        assert run_generic.stats == stats  # the same iterations, step by step (tested)
    result = simulate(scene, t_end=t_end)
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
    from ..io.scene_file import builtin_scene
    from .peers import book

    steps = mine["steps"]
    run_hooke = stepping(builtin_scene("square_drop"), steps)
    peer = {}

    def run_peer():
        peer["frames"], peer["iterations"] = book.square_drop(steps)

    book.square_drop(min(steps, 5))  # warm up
    pairs = np.array([(timed(run_hooke), timed(run_peer)) for _ in range(repeats)])
    ms = 1e3 * np.median(pairs, axis=0) / steps
    agree = float(np.abs(peer["frames"] - mine["x"]).max())
    comparison = {"steps": steps, "repeats": repeats, "hooke_ms_per_step": float(ms[0]),
                  "peer_ms_per_step": float(ms[1]),
                  "ratio": float(np.median(pairs[:, 1] / pairs[:, 0])),
                  "hooke_newton_per_step": run_hooke.stats["newton_iterations"] / steps,
                  "peer_newton_per_step": float(peer["iterations"].sum() / steps),
                  "hooke_compiled": bool(run_hooke.compiled), "positions_agree_m": agree,
                  "agrees": agree <= AGREEMENT_M}
    print(f"\nsquare_drop, {steps} steps, {repeats} alternated runs each (medians), in one process: "
          "hooke against the book's algorithm in the book's Python style (hooke.bench.peers.book)")
    print(f"  hooke     {comparison['hooke_ms_per_step']:9.3f} ms/step  "
          f"{comparison['hooke_newton_per_step']:5.2f} Newton iterations/step"
          f"  ({'compiled' if run_hooke.compiled else 'generic'} Newton solve)")
    print(f"  book peer {comparison['peer_ms_per_step']:9.3f} ms/step  "
          f"{comparison['peer_newton_per_step']:5.2f} Newton iterations/step")
    if comparison["agrees"]:
        print(f"  ratio     {comparison['ratio']:9.1f}×  (positions agree to {agree:.1e} m)")
    else:
        print(f"  no ratio: the positions differ by {agree:.1e} m, more than round-off")
    return comparison


def contact(options: Options, bandwidth: float = 0.0) -> dict:
    scenes = options.extra.get("scenes") or (("square_drop",) if options.smoke else SCENES)
    steps = options.extra.get("steps") or (45 if options.smoke else None)
    repeats = options.repeat(3)
    print(f"{'scene':16s} {'n':>5s} {'steps':>6s} {'µs/step':>8s} {'+frames':>8s} {'generic':>8s} "
          f"{'newton/step':>11s} {'halvings/step':>13s} {'1st contact':>11s} {'min d [m]':>10s}")
    results, peer = {}, None
    for name in scenes:
        r = results[name] = bench(name, steps, repeats)
        first = "-" if r["first_contact"] is None else str(r["first_contact"])
        generic = "-" if r["us_generic"] is None else f"{r['us_generic']:8.0f}"
        print(f"{r['name']:16s} {r['particles']:5d} {r['steps']:6d} {r['us_step']:8.0f} "
              f"{r['us_simulate']:8.0f} {generic:>8s} {r['newton']:11.2f} "
              f"{r['halvings']:13.2f} {first:>11s} {r['min_distance']:10.2e}")
    if "square_drop" in results:
        peer = peer_comparison(results["square_drop"], repeats)
    rows = [{key: value for key, value in r.items() if key != "x"} for r in results.values()]
    return {"rows": rows, "repeats": repeats, "peer": peer}
