"""``simulate``: run a scene with a chosen integrator and collect the saved frames.

Contract: one-way data flow scene → (System, State) → integrator steps → Result. Frames are saved
at step 0, every ``save_every`` steps and at the last step; the run has round(t_end / dt) steps.
Options given as keywords go to the integrator (an option it does not know is an error); the
scene's default options apply only when its own integrator is used. A non-finite state stops the
run with a :class:`SimulationError` that carries the frames computed so far (``error.result``).
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from .energies import barrier
from .errors import HookeInputError, SimulationError
from .integrators import get as get_integrator
from .result import Result
from .scene import Scene, check_positive
from .system import System


def frame_steps(n_steps: int, save_every: int) -> np.ndarray:
    steps = np.arange(0, n_steps + 1, save_every)
    return steps if steps[-1] == n_steps else np.append(steps, n_steps)


def simulate(scene: Scene, integrator: str | None = None, dt: float | None = None,
             t_end: float | None = None, save_every: int = 1,
             progress: Callable[[int, int], None] | None = None, **options) -> Result:
    """Simulate ``scene`` and return a :class:`Result`.

    Args:
        scene: from ``hooke.scene(name)``, ``hooke.load(path)`` or ``hooke.Scene(model, ...)``.
        integrator: a name from ``hooke.integrators()``; the scene's default when None.
        dt: time step [s] (adaptive integrators: output interval and first trial step).
        t_end: duration [s].
        save_every: save a frame every this many steps (the last step is always saved).
        progress: optional callback ``progress(steps_done, steps_total)`` called per frame.
        **options: integrator options, e.g. ``rtol=1e-8`` for ``rk45``, ``tol=`` for ``implicit_euler``.
    """
    if not isinstance(scene, Scene):
        raise HookeInputError("scene", "must be a hooke.Scene (hooke.scene(name) or hooke.load(path))",
                              type(scene).__name__)
    name = scene.integrator if integrator is None else integrator
    integrator_class = get_integrator(name)
    dt = check_positive("dt", scene.dt if dt is None else dt)
    t_end = check_positive("t_end", scene.t_end if t_end is None else t_end)
    if isinstance(save_every, bool) or not isinstance(save_every, (int, np.integer)) or save_every < 1:
        raise HookeInputError("save_every", "must be an integer >= 1", save_every)
    merged = {**(scene.options if name == scene.integrator else {}), **options}

    system = System(scene.model)
    stepper = integrator_class(system, dt, **merged)
    n_steps = max(1, int(round(t_end / dt)))
    steps = frame_steps(n_steps, int(save_every))
    state = scene.state
    t0 = state.t
    n_frames = steps.size
    shape = (n_frames,) + state.x.shape
    t_out, x_out, v_out = np.empty(n_frames), np.empty(shape), np.empty(shape)
    joint_force = np.empty((n_frames, scene.model.n_joints))
    contact_distance = np.full(n_frames, np.inf)
    energy = {key: np.empty(n_frames) for key in
              ["kinetic", "potential", "total", *(term.NAME for term in system.terms)]}

    def record(frame: int, current) -> None:
        t_out[frame], x_out[frame], v_out[frame] = current.t, current.x, current.v
        terms = system.potential_energies(current.x, current.t)
        for key, value in terms.items():
            energy[key][frame] = value
        energy["kinetic"][frame] = system.kinetic_energy(current.v)
        energy["potential"][frame] = sum(terms.values())
        energy["total"][frame] = energy["kinetic"][frame] + energy["potential"][frame]
        if system.joints is not None:
            joint_force[frame] = system.joint_tensions(current.x, current.v, current.t)
        if barrier.active(scene.model):
            contact_distance[frame] = barrier.min_distance(scene.model, current.x, current.t)

    def result(frames: int, complete: bool) -> Result:
        return Result(t=t_out[:frames], x=x_out[:frames], v=v_out[:frames],
                      energy={k: v[:frames] for k, v in energy.items()}, scene=scene,
                      joint_force=joint_force[:frames], contact_distance=contact_distance[:frames],
                      integrator=name, dt=dt, options=dict(stepper.options),
                      stats=dict(stepper.stats), wall_time=time.perf_counter() - started,
                      complete=complete)

    started = time.perf_counter()
    record(0, state)
    for frame in range(1, n_frames):
        try:
            state = stepper.advance(state, t0 + steps[frame] * dt, int(steps[frame] - steps[frame - 1]))
        except SimulationError as error:
            error.result = result(frame, complete=False)
            raise
        finite = np.isfinite(state.x).all(axis=1) & np.isfinite(state.v).all(axis=1)
        if not finite.all():
            worst = int(np.flatnonzero(~finite)[0])
            error = SimulationError(
                f"the state became non-finite by step {steps[frame]} (t = {state.t:.6g}), first at "
                f"particle {worst}; {frame} finite frame(s) kept. Try a smaller dt or an implicit "
                "integrator (implicit_euler, implicit_euler_linear).")
            error.result = result(frame, complete=False)
            raise error
        record(frame, state)
        if progress is not None:
            progress(int(steps[frame]), n_steps)
    return result(n_frames, complete=True)
