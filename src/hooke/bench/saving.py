"""W6: what a saved frame costs, and the double pendulum with a frame saved every step.

Contract: per case (``spring1d`` with its own integrator; ``pendulum`` under
``generalized_alpha``, ρ∞ = 0.8, dt = 1e-3, the setting of seed 002's C++ figure; the contact
scene ``square_drop``) four runs of the same steps through ``hooke.simulate`` are timed in turn,
``repeats`` rounds (A B C D A B C D …): a frame every step and only the first and last frames,
each in memory and written to a trajectory file. The cost of a saved frame is (time with a frame
every step − time without) / frames, per round, and its median over the rounds; it includes the
integrator's own cost of being called once per frame (the steps between two frames run in one
``advance`` call). Beside it, the saving alone: the frames of that run recorded and derived
(:class:`hooke.frames.FrameSeries`) without stepping. The pendulum's steps per second with a
frame every step are set against seed 002's C++ (22,601 steps/s, measured by the issue on a
machine like ours and not rerun: its trajectory cannot be compared here, and the table says so).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from .measure import Options, interleaved, per_frame, table

CPP_PENDULUM_STEPS_PER_S = 22601.0
# (scene, integrator and options (None: the scene's), dt (None: the scene's), steps)
CASES = (("spring1d", None, None, 20000),
         ("pendulum", {"integrator": "generalized_alpha", "rho_inf": 0.8}, 1e-3, 20000),
         ("square_drop", None, None, 500))
GOAL_US = 5.0  # issue 16: a saved frame of a small system


def saving_alone(scene, result) -> float:
    """Seconds to record and derive ``result``'s frames (no stepping)."""
    import time

    from ..frames import FrameSeries
    from ..model import State
    from ..system import System

    system = System(scene.model)
    states = [State(float(result.t[f]), result.x[f], result.v[f]) for f in range(result.n_frames)]
    series = FrameSeries(system, len(states))
    series.put_state(0, states[0])
    series.derive()  # compiles, allocates
    started = time.perf_counter()
    for frame, state in enumerate(states):
        series.put_state(frame, state)
        if frame % 1024 == 1023:
            series.derive()
    series.derive()
    return time.perf_counter() - started


def case(name: str, options: dict | None, dt: float | None, steps: int, repeats: int,
         folder: Path) -> dict:
    from ..io.scene_file import builtin_scene
    from ..simulate import simulate

    scene = builtin_scene(name)
    dt = dt or scene.dt
    options = dict(options or {})
    settings = {"dt": dt, "t_end": steps * dt, **options}
    store = folder / f"{name}.h5"
    contenders = {
        "every step": lambda: simulate(scene, save_every=1, **settings),
        "first and last": lambda: simulate(scene, save_every=steps, **settings),
        "every step, stored": lambda: simulate(scene, save_every=1, store=store, **settings),
        "first and last, stored": lambda: simulate(scene, save_every=steps, store=store,
                                                   **settings)}
    times = interleaved(contenders, repeats)
    result = simulate(scene, save_every=1, **settings)
    frames = result.n_frames - 2  # beyond the first and last, which both runs save
    memory = per_frame(times["every step"], times["first and last"], frames)
    stored = per_frame(times["every step, stored"], times["first and last, stored"], frames)
    alone = saving_alone(scene, result) / result.n_frames
    return {"case": name, "integrator": options.get("integrator", scene.integrator), "dt": dt,
            "steps": steps, "frames": result.n_frames, "particles": scene.model.n_particles,
            "us_per_step_without_frames": 1e6 * float(np.median(times["first and last"])) / steps,
            "steps_per_s_with_frames": steps / float(np.median(times["every step"])),
            "us_per_frame": 1e6 * memory, "us_per_frame_stored": 1e6 * stored,
            "us_per_frame_saving_alone": 1e6 * alone,
            "cpp_steps_per_s": CPP_PENDULUM_STEPS_PER_S if name == "pendulum" else None}


def w6(options: Options, bandwidth: float = 0.0) -> dict:
    repeats = options.repeat(5)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, settings, dt, steps in CASES:
            rows.append(case(name, settings, dt, max(20, steps // 100) if options.smoke else steps,
                             repeats, Path(folder)))
    table(f"W6: a saved frame (medians over {repeats} rounds of 4 runs in turn: a frame every "
          "step or the first and last only, in memory or stored)",
          ["case", "integrator", "steps", "µs/step (no frames)", "µs/frame", "stored µs/frame",
           "saving alone µs/frame", "steps/s with frames", "C++ steps/s"],
          [[row["case"], row["integrator"], row["steps"], f"{row['us_per_step_without_frames']:.2f}",
            f"{row['us_per_frame']:.2f}", f"{row['us_per_frame_stored']:.2f}",
            f"{row['us_per_frame_saving_alone']:.2f}", f"{row['steps_per_s_with_frames']:,.0f}",
            "" if row["cpp_steps_per_s"] is None else f"{row['cpp_steps_per_s']:,.0f} (not rerun)"]
           for row in rows])
    return {"rows": rows, "repeats": repeats, "goal_us_per_frame": GOAL_US}
