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

Self-contact (issue 14 §7, :func:`self_contact`): one row per ``SELF_CONTACT`` case — ms per
step, Newton iterations per step and the share of the step time spent in collision detection
(ipctk's pair building, broad and narrow phase, and CCD, timed by
:func:`hooke.energies.surface_barrier.collision_clock`) over ``steps`` steps taken after an
untimed lead-in (the cloth lands on the ball first); medians over ``repeats`` runs of those steps
from the same landed state. ``squares_self_contact`` is also run by the book's self-contact
simulator in the book's Python style (:mod:`.peers.book_self_contact`), alternated with hooke,
the ratio quoted when the trajectories agree to 1e-9 m.
"""

from __future__ import annotations

import numpy as np

from .measure import Options, median_time, timed

SCENES = ("square_drop", "square_slope", "square_compress", "square_press", "cloth_drop",
          "cloth_valley", "soft3d_drop")
AGREEMENT_M = 1e-9
# name (scene:n for a size) → (scene, its parameters, untimed lead-in [s], timed steps): the cloth lands on the ball
# at about 0.2 s; the big cloths get fewer steps (about 4 s per step at n = 80 before issue 14 §7)
SELF_CONTACT = {
    "squares_self_contact": ("squares_self_contact", {}, 0.0, 300),
    "cloth_sphere:40": ("cloth_sphere", {"n": 40}, 0.25, 20),
    "cloth_sphere:80": ("cloth_sphere", {"n": 80}, 0.25, 10),
    "cloth_sphere:160": ("cloth_sphere", {"n": 160}, 0.25, 3),
    "soft3d_pile": ("soft3d_pile", {}, 0.1, 20),
}
SMOKE_SELF_CONTACT = {"squares_self_contact": ("squares_self_contact", {}, 0.0, 5),
                      "cloth_sphere:40": ("cloth_sphere", {"n": 40}, 0.0, 2)}


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
                min_distance=float(result.contact_distance.min()))


def peer_comparison(name: str, steps: int, repeats: int) -> dict:
    """hooke's and the peer's runs of the first ``steps`` steps of ``name`` (``square_drop``:
    :mod:`.peers.book`; ``squares_self_contact``: :mod:`.peers.book_self_contact`), alternated so
    that both see the same load on a shared machine; medians of the times and of the per-pair
    ratios."""
    from ..io.scene_file import builtin_scene
    from ..simulate import simulate
    from .peers import book, book_self_contact

    peer_run, module = {"square_drop": (book.square_drop, "book"),
                        "squares_self_contact": (book_self_contact.squares_self_contact,
                                                 "book_self_contact")}[name]
    scene = builtin_scene(name)
    mine = simulate(scene, t_end=steps * scene.dt).x
    run_hooke = stepping(scene, steps)
    peer = {}

    def run_peer():
        peer["frames"], peer["iterations"] = peer_run(steps)

    peer_run(min(steps, 5))  # warm up
    pairs = np.array([(timed(run_hooke), timed(run_peer)) for _ in range(repeats)])
    ms = 1e3 * np.median(pairs, axis=0) / steps
    agree = float(np.abs(peer["frames"] - mine).max())
    comparison = {"scene": name, "steps": steps, "repeats": repeats,
                  "hooke_ms_per_step": float(ms[0]), "peer_ms_per_step": float(ms[1]),
                  "ratio": float(np.median(pairs[:, 1] / pairs[:, 0])),
                  "hooke_newton_per_step": run_hooke.stats["newton_iterations"] / steps,
                  "peer_newton_per_step": float(peer["iterations"].sum() / steps),
                  "hooke_compiled": bool(run_hooke.compiled), "positions_agree_m": agree,
                  "agrees": agree <= AGREEMENT_M}
    print(f"\n{name}, {steps} steps, {repeats} alternated runs each (medians), in one process: "
          f"hooke against the book's algorithm in the book's Python style "
          f"(hooke.bench.peers.{module})")
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


def self_contact_row(label: str, scene_name: str, parameters: dict, lead_in: float, steps: int,
                     repeats: int) -> dict:
    """One ``SELF_CONTACT`` row: ``steps`` steps after ``lead_in`` seconds, timed ``repeats``
    times from the same state after one untimed step from it (the same stepper: its caches
    warm, as in a long run)."""
    from ..energies.surface_barrier import collision_clock
    from ..integrators import get
    from ..io.scene_file import builtin_scene
    from ..system import System

    scene = builtin_scene(scene_name, **parameters)
    stepper = get(scene.integrator)(System(scene.model), scene.dt, **scene.options)
    state = scene.state
    for _ in range(int(round(lead_in / scene.dt))):
        state = stepper.step(state)
    stepper.step(state)  # untimed: the first step loads Numba's cache and the solver
    runs = []
    for _ in range(repeats):
        before = stepper.stats["newton_iterations"]
        current = [state]

        def run():
            for _ in range(steps):
                current[0] = stepper.step(current[0])

        with collision_clock() as clock:
            seconds = timed(run)
        runs.append((seconds, clock.total, stepper.stats["newton_iterations"] - before))
    seconds, detection, newton = (float(np.median(column)) for column in zip(*runs))
    return {"name": label, "particles": scene.model.n_particles,
            "springs": scene.model.n_springs, "from_s": lead_in, "steps": steps,
            "ms_step": 1e3 * seconds / steps, "newton": newton / steps,
            "detection_share": detection / seconds}


def self_contact(options: Options) -> tuple[list[dict], dict | None]:
    """The self-contact rows (and the squares' peer comparison when they are among them)."""
    cases = SMOKE_SELF_CONTACT if options.smoke else SELF_CONTACT
    wanted = options.extra.get("self_contact")
    wanted = list(cases) if wanted is None else wanted
    if not wanted:
        return [], None
    steps = options.extra.get("self_steps")
    repeats = options.repeat(3)
    print(f"\nself-contact: {repeats} timed run(s) of each case's steps after its lead-in "
          "(medians); detection = ipctk's pair building (broad + narrow phase) and CCD")
    print(f"{'case':20s} {'particles':>9s} {'springs':>8s} {'from [s]':>8s} {'steps':>6s} "
          f"{'ms/step':>9s} {'newton/step':>11s} {'detection':>9s}")
    rows = []
    for label in wanted:
        if label not in SELF_CONTACT:
            raise ValueError(f"unknown self-contact case {label!r} (known: "
                             f"{', '.join(SELF_CONTACT)})")
        scene_name, parameters, lead_in, default_steps = cases.get(label, SELF_CONTACT[label])
        r = self_contact_row(label, scene_name, parameters, lead_in, steps or default_steps,
                             repeats)
        rows.append(r)
        print(f"{label:20s} {r['particles']:9d} {r['springs']:8d} {r['from_s']:8.2f} "
              f"{r['steps']:6d} {r['ms_step']:9.1f} {r['newton']:11.2f} "
              f"{r['detection_share']:9.0%}")
    peer = None
    if "squares_self_contact" in wanted:
        squares = next(r for r in rows if r["name"] == "squares_self_contact")
        peer = peer_comparison("squares_self_contact", squares["steps"], repeats)
    return rows, peer


def contact(options: Options, bandwidth: float = 0.0) -> dict:
    scenes = options.extra.get("scenes")
    if scenes is None:
        scenes = ("square_drop",) if options.smoke else SCENES
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
        peer = peer_comparison("square_drop", results["square_drop"]["steps"], repeats)
    rows = list(results.values())
    self_rows, self_peer = self_contact(options)
    return {"rows": rows, "repeats": repeats, "peer": peer, "self_contact": self_rows,
            "self_contact_peer": self_peer}
