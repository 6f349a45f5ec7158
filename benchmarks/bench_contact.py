"""Contact benchmark: time per implicit step and Newton iterations per step on the contact scenes.

    .venv/bin/python benchmarks/bench_contact.py            # all contact scenes
    .venv/bin/python benchmarks/bench_contact.py square_drop

``step`` times the integrator alone (``Integrator.step`` in a loop); ``simulate`` adds saving every
frame with its energies and contact distance. The reference is the phys-sim-book's own Python
square drop (seed 004), 16–30 ms per step on a 2-core machine like ours.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import hooke
from hooke.integrators import get as get_integrator

SCENES = ["square_drop", "square_slope", "square_compress", "cloth_drop", "soft3d_drop"]
BOOK_MS_PER_STEP = (16.0, 30.0)


def best_of(repeats: int, function) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def bench(name: str, repeats: int = 3) -> dict:
    scene = hooke.scene(name)
    steps = int(round(scene.t_end / scene.dt))
    stepper_class = get_integrator(scene.integrator)

    def run_steps():
        stepper = stepper_class(hooke.System(scene.model), scene.dt, **scene.options)
        state = scene.state
        for _ in range(steps):
            state = stepper.step(state)
        run_steps.stats = stepper.stats

    hooke.simulate(scene, t_end=10 * scene.dt)  # load Numba's cache and warm up
    step_time = best_of(repeats, run_steps)
    simulate_time = best_of(repeats, lambda: hooke.simulate(scene))
    stats = run_steps.stats
    result = hooke.simulate(scene)
    return dict(name=name, particles=scene.model.n_particles, steps=steps,
                ms_step=1e3 * step_time / steps, ms_simulate=1e3 * simulate_time / steps,
                newton=stats["newton_iterations"] / steps,
                halvings=stats["line_search_halvings"] / steps,
                first_contact=int(np.argmax(result.contact_distance < scene.model.contact_dhat)),
                min_distance=float(result.contact_distance.min()))


def main(names: list[str]) -> None:
    print(f"{'scene':16s} {'n':>5s} {'steps':>6s} {'ms/step':>8s} {'+frames':>8s} "
          f"{'newton/step':>11s} {'halvings/step':>13s} {'1st contact':>11s} {'min d [m]':>10s}")
    for name in names:
        r = bench(name, repeats=3 if name.startswith("square") else 1)
        print(f"{r['name']:16s} {r['particles']:5d} {r['steps']:6d} {r['ms_step']:8.3f} "
              f"{r['ms_simulate']:8.3f} {r['newton']:11.2f} {r['halvings']:13.2f} "
              f"{r['first_contact']:11d} {r['min_distance']:10.2e}")
        if name == "square_drop":
            low, high = (book / r["ms_step"] for book in BOOK_MS_PER_STEP)
            print(f"{'':16s} vs the book's Python ({BOOK_MS_PER_STEP[0]:g}–{BOOK_MS_PER_STEP[1]:g} "
                  f"ms/step): {low:.0f}–{high:.0f}× faster")


if __name__ == "__main__":
    main(sys.argv[1:] or SCENES)
