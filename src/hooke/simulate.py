"""``simulate``: run a scene with a chosen integrator and collect the saved frames.

Contract: one-way data flow scene → (System, State) → integrator steps → Result. Frames are saved
at step 0, every ``save_every`` steps and at the last step; the run has t_end / dt steps, which
must be a whole number (:func:`hooke.scene_setup.step_count`), and frames that fit in memory.
Options given as keywords go to the integrator (an option it does not know is an error) on top of
the scene's default options; with another integrator than the scene's, the scene's options that
it accepts still apply and the others are dropped (:func:`scene_options`). Every step is guarded
(see :class:`Run`): a non-finite state, a failing solver step or (optionally) an energy growing
past a factor stops the run with a :class:`SimulationError` that names the step, its time and the
worst particle, and carries the frames computed so far (``error.result``), the last finite state
last.

With ``store=PATH`` every frame is also written to an HDF5 trajectory as the run goes
(:mod:`hooke.io.store`); :func:`resume` continues such a file from its last frame.

``hooke.simulate(...)`` is :func:`simulate`: this module is callable (:mod:`hooke.callable_module`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import numpy as np

from .callable_module import make_callable
from .energies import contact, surface_barrier
from .errors import HookeInputError, SimulationError, StoreWriteError, is_count
from .integrators import get as get_integrator
from .integrators.base import NON_FINITE, StepFailed
from .io.scene_file import build, parse
from .io.lock import OutputLock
from .io.store import (CHECKPOINT_STAMP, TrajectoryWriter, input_hash, read_trajectory,
                       run_settings)
from .model import State
from .result import Result, frame_extras
from .scene_setup import Scene, check_frames_fit, check_positive, check_save_every, step_count
from .system import System
from .version import __version__


def frame_steps(n_steps: int, save_every: int) -> np.ndarray:
    steps = np.arange(0, n_steps + 1, save_every)
    return steps if steps[-1] == n_steps else np.append(steps, n_steps)


def energy_terms(system: System, state: State) -> dict[str, float]:
    """The kinetic energy and each potential term [J]."""
    return {"kinetic": system.kinetic_energy(state.v), **system.potential_energies(state.x, state.t)}


def frame_data(system: System, state: State, terms: dict[str, float] | None = None
               ) -> dict[str, np.ndarray]:
    """Everything saved per frame, keyed as in the trajectory store (``terms``: the state's
    :func:`energy_terms` when the caller has them already)."""
    model = system.model
    terms = dict(energy_terms(system, state) if terms is None else terms)
    kinetic = terms.pop("kinetic")
    potential = sum(terms.values())
    data = {"t": np.float64(state.t), "x": state.x, "v": state.v,
            "energy/kinetic": np.float64(kinetic), "energy/potential": np.float64(potential),
            "energy/total": np.float64(kinetic + potential)}
    data.update({f"energy/{key}": np.float64(value) for key, value in terms.items()})
    if system.joints is not None:
        data["joint_force"] = system.joint_tensions(state.x, state.v, state.t)
    if contact.active(model):
        data["contact_distance"] = np.float64(contact.min_distance(model, state.x, state.t))
        data["contact_force"] = contact.contact_forces(model, state.x, state.t)
    if surface_barrier.active(model):
        data["surface_distance"] = np.float64(surface_barrier.min_distance(model, state.x))
    return data


class FrameSeries:
    """Per-frame arrays, allocated from the first frame's shapes."""

    def __init__(self, n_frames: int):
        self.n_frames = n_frames
        self.arrays: dict[str, np.ndarray] = {}

    def put(self, frame: int, data: dict[str, np.ndarray]) -> None:
        for key, value in data.items():
            if key not in self.arrays:
                value = np.asarray(value)
                self.arrays[key] = np.empty((self.n_frames,) + value.shape, dtype=value.dtype)
            self.arrays[key][frame] = value

    def result(self, frames: int, **fields) -> Result:
        cut = {key: array[:frames] for key, array in self.arrays.items()}
        if "t" not in cut:  # the first frame failed (e.g. a singular joint set at the start)
            model = fields["scene"].model
            cut = {"t": np.empty(0), "x": np.empty((0, model.n_particles, model.dim)),
                   "v": np.empty((0, model.n_particles, model.dim))}
        energy = {key.split("/", 1)[1]: value for key, value in cut.items() if key.startswith("energy/")}
        extras = frame_extras(cut, frames, cut["x"].shape[-1])
        return Result(t=cut["t"], x=cut["x"], v=cut["v"], energy=energy, **extras, **fields)


def scene_options(scene: Scene, integrator: str) -> tuple[dict, list[str]]:
    """(the scene's default options that ``integrator`` accepts, the names of the others).

    E.g. ``pendulum`` (rk45: rtol, atol, stabilization, k_c, beta_c) run with ``rk4`` keeps its
    correction force (stabilization, k_c, beta_c) and drops rtol and atol. With the scene's own
    integrator every option is kept (one it does not know is then an error, as a typo should be)."""
    if integrator == scene.integrator:
        return dict(scene.options), []
    known = get_integrator(integrator).defaults
    kept = {key: value for key, value in scene.options.items() if key in known}
    return kept, sorted(set(scene.options) - set(kept))


def simulate(scene: Scene, integrator: str | None = None, dt: float | None = None,
             t_end: float | None = None, save_every: int | None = None,
             progress: Callable[[int, int], None] | None = None, store=None,
             max_energy_growth: float | None = None, **options) -> Result:
    """Simulate ``scene`` and return a :class:`Result`.

    Args:
        scene: from ``hooke.scene(name)``, ``hooke.load(path)`` or ``hooke.Scene(model, ...)``.
        integrator: a name from ``hooke.integrators()``; the scene's default when None. The
            scene's options this integrator accepts apply to it, the others are dropped.
        dt: time step [s] (adaptive integrators: the output interval).
        t_end: duration [s].
        save_every: save a frame every this many steps (the last step is always saved); the
            scene's ``save_every`` (default 1) when None.
        progress: optional callback ``progress(steps_done, steps_total)`` called per frame.
        store: optional path of an HDF5 trajectory file written frame by frame as the run goes.
        max_energy_growth: optional blow-up guard, checked after every step: stop when the total
            energy exceeds its start by more than (factor − 1)·S, S = Σ |energy components| at
            the start (or at the first step where they are not all zero).
        **options: integrator options, e.g. ``rtol=1e-8`` for ``rk45``, ``tol=`` for ``implicit_euler``.
    """
    run = plan(scene, integrator, dt, t_end, save_every, max_energy_growth, **options)
    writer = None
    if store is not None:
        writer = TrajectoryWriter(store, scene, run.name, run.dt, run.t_end, run.save_every,
                                  dict(run.stepper.options), run.max_energy_growth)
    return run.execute(progress=progress, writer=writer)


def plan(scene: Scene, integrator: str | None = None, dt: float | None = None,
         t_end: float | None = None, save_every: int | None = None,
         max_energy_growth: float | None = None,
         **options) -> "Run":
    """Validate a run's settings exactly as :func:`simulate` does (``hooke check`` uses it) and
    return its :class:`Run`: the integrator made with its options, the frames planned."""
    if not isinstance(scene, Scene):
        raise HookeInputError("scene", "must be a hooke.Scene (hooke.scene(name) or hooke.load(path))",
                              type(scene).__name__)
    name = scene.integrator if integrator is None else integrator
    get_integrator(name)
    dt = check_positive("dt", scene.dt if dt is None else dt)
    t_end = check_positive("t_end", scene.t_end if t_end is None else t_end)
    save_every = check_save_every(scene.save_every if save_every is None else save_every)
    merged = {**scene_options(scene, name)[0], **options}
    check_count_options(name, merged)
    if max_energy_growth is not None:
        check_positive("max_energy_growth", max_energy_growth)
        if max_energy_growth <= 1:
            raise HookeInputError("max_energy_growth", "must be > 1", max_energy_growth)
    return Run(scene, name, dt, t_end, save_every, merged, max_energy_growth)


def check_count_options(integrator: str, options: dict) -> None:
    """An option whose default is a count (``max_iterations``, ``iterations``, ``substeps`` …)
    takes an integer only: 2.5 is not quietly 2, nor 0.5 quietly 0 iterations."""
    defaults = get_integrator(integrator).defaults
    for key, value in options.items():
        if is_count(defaults.get(key)) and not is_count(value):
            raise HookeInputError(key, f"must be an integer (its default is {defaults[key]})", value)


class Run:
    """One run's fixed plan: the integrator, the steps at which frames are saved, the guard.

    The guard checks every step (the integrator's ``advance`` raises
    :class:`~hooke.integrators.base.StepFailed` at the first non-finite state or failing solve;
    with ``max_energy_growth`` the total energy is computed after every step). The run then stops
    with a :class:`SimulationError` naming the step, its time and the worst particle, and the last
    finite state (or the state past the energy limit) is written as a final frame, on the save
    grid or not. Steps are counted in ``dt`` from the start; an adaptive integrator's step k is
    the k-th interval of ``dt``.
    """

    def __init__(self, scene: Scene, integrator: str, dt: float, t_end: float, save_every: int,
                 options: dict, max_energy_growth: float | None = None):
        self.scene, self.name, self.dt, self.t_end = scene, integrator, dt, t_end
        self.save_every = save_every
        self.max_energy_growth = max_energy_growth
        self._energy_reference: tuple[float, float] | None = None  # (E0, scale S)
        self._guarded_terms: tuple[State, dict] | None = None  # the last state the guard checked
        self.n_steps = step_count(t_end, dt)
        check_frames_fit(scene.model, self.n_steps, save_every, t_end, dt)
        self.system = System(scene.model)
        self.stepper = get_integrator(integrator)(self.system, dt, **options)
        self.steps = frame_steps(self.n_steps, save_every)
        self.series = FrameSeries(self.steps.size)

    def execute(self, progress=None, writer=None, start_frame: int = 0, state: State | None = None,
                t0: float | None = None) -> Result:
        """Run from ``start_frame`` (whose state is ``state``; the scene's initial one at 0) to the
        end; frames before ``start_frame`` must already be in ``self.series``."""
        state = self.scene.state if state is None else state
        t0 = state.t if t0 is None else t0
        self.stepper.t_bound = t0 + self.steps[-1] * self.dt  # the last frame's time
        started = time.perf_counter()

        def result(frames: int, complete: bool) -> Result:
            return self.series.result(frames, scene=self.scene, integrator=self.name, dt=self.dt,
                                      options=dict(self.stepper.options), stats=dict(self.stepper.stats),
                                      wall_time=time.perf_counter() - started, complete=complete)

        kept = start_frame + 1 if start_frame else 0  # frames recorded (a resumed run's are in the file)

        def record(frame: int, current: State) -> None:
            nonlocal kept
            guarded = self._guarded_terms
            data = frame_data(self.system, current,
                              guarded[1] if guarded and guarded[0] is current else None)
            self.series.put(frame, data)
            kept = frame + 1
            if writer is not None:
                writer.write_frame(data, checkpoint=self.stepper.checkpoint())

        def close(complete: bool, failure: str = "") -> None:
            if writer is not None:
                try:
                    writer.close(complete=complete, stats=self.stepper.stats, failure=failure)
                except StoreWriteError as error:
                    error.result = result(kept, complete=False)
                    raise

        # The guard handles overflow and NaN: NumPy's warnings on the way there are noise.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            try:
                if start_frame == 0:
                    record(0, state)
                    self._guard_energy(state, t0)
                for frame in range(start_frame + 1, self.steps.size):
                    state = self._advance(state, t0, frame)
                    record(frame, state)
                    if progress is not None:
                        progress(int(self.steps[frame]), self.n_steps)
            except StoreWriteError as error:  # the file keeps its flushed frames; none is lost here
                error.result = result(kept, complete=False)
                raise
            except Stopped as stop:
                if stop.last.t > self.series.arrays["t"][kept - 1]:
                    try:
                        record(kept, stop.last)
                    except SimulationError:
                        pass  # its joint tensions overflow: the frames before it stay
                error = SimulationError(stop.message(kept))
                error.result = result(kept, complete=False)
                close(complete=False, failure=str(error))
                raise error from stop.__cause__
            except SimulationError as error:
                error.result = result(kept, complete=False)
                close(complete=False)
                raise
            except KeyboardInterrupt as interrupt:
                close(complete=False)
                interrupt.frames_kept = 0 if writer is None else writer.count  # for the CLI's message
                raise
        close(complete=True)
        return result(self.steps.size, complete=True)

    def _advance(self, state: State, t0: float, frame: int) -> State:
        """The state at ``frame``: in one ``advance`` call, or step by step with the energy guard."""
        first, last = int(self.steps[frame - 1]), int(self.steps[frame])
        try:
            if self.max_energy_growth is None:
                return self.stepper.advance(state, t0 + last * self.dt, last - first)
            for step in range(first + 1, last + 1):
                state = self.stepper.advance(state, t0 + step * self.dt, 1)
                self._guard_energy(state, t0)
            return state
        except StepFailed as failure:
            raise Stopped(self, failure, t0) from failure

    def _guard_energy(self, state: State, t0: float) -> None:
        if self.max_energy_growth is None:
            return
        terms = energy_terms(self.system, state)
        self._guarded_terms = (state, terms)  # the saved frame's energies, if it is this state
        total = sum(terms.values())
        if self._energy_reference is None:
            scale = sum(abs(value) for value in terms.values())
            if scale > 0:
                self._energy_reference = (total, scale)
            return
        start, scale = self._energy_reference
        if not total - start <= (self.max_energy_growth - 1.0) * scale:  # NaN counts as growth
            raise Stopped(self, None, t0, state, (
                f"the total energy grew from {start:.6g} J to {total:.6g} J (more than the allowed "
                f"factor {self.max_energy_growth:g} of the energy scale {scale:.6g} J)"))


class Stopped(Exception):
    """Why the guard stopped a run, and the state written as its final frame (``last``)."""

    def __init__(self, run: Run, failure: StepFailed | None, t0: float, state: State | None = None,
                 growth: str = ""):
        last = failure.last if failure is not None else state
        # Steps in dt from the start; a failing step is the one after the last finite state.
        steps = (last.t - t0) / run.dt
        step = int(np.floor(steps + 1e-6)) + (failure is not None)
        if abs(steps - round(steps)) < 1e-6:  # on the step grid: its time without summed round-off
            last = State(t0 + round(steps) * run.dt, last.x, last.v)
        self.last = last
        if failure is None:
            kinetic = 0.5 * run.scene.model.mass * np.sum(state.v ** 2, axis=1)
            particle = int(np.argmax(kinetic))
            self.what = (f"{growth} at step {step} (t = {state.t:.6g}); most energetic particle "
                         f"{particle} (kinetic energy {kinetic[particle]:.6g} J)")
        else:
            bad = failure.bad
            particle = worst_particle(last, bad)
            at = f"step {step} (t = {t0 + step * run.dt:.6g})"
            self.what = (f"{failure.reason} at {at}" if failure.reason == NON_FINITE
                         else f"{at} failed: {failure.reason}")
            gone = "non-finite; " if bad is not None else ""  # a non-finite particle is the worst
            self.what += (f"; worst particle {particle} ({gone}at t = {last.t:.6g}: |x|∞ = "
                          f"{np.max(np.abs(last.x[particle])):.3g} m, |v|∞ = "
                          f"{np.max(np.abs(last.v[particle])):.3g} m/s)")
        self.advice = advice(run.name)

    def message(self, kept: int) -> str:
        return (f"{self.what}; {kept} frame(s) kept, the last at t = {self.last.t:.6g}. "
                f"{self.advice}")


IMPLICIT = ("implicit_euler", "implicit_euler_linear")


def advice(integrator: str) -> str:
    others = [name for name in IMPLICIT if name != integrator]
    kind = "another implicit integrator" if integrator in IMPLICIT else "an implicit integrator"
    return f"Try a smaller dt or {kind} ({', '.join(others)})."


def particle_sizes(state: State) -> np.ndarray:
    """max(|x_i|∞, |v_i|∞) per particle, +inf where not finite."""
    size = np.maximum(np.max(np.abs(state.x), axis=1), np.max(np.abs(state.v), axis=1))
    return np.where(np.isnan(size), np.inf, size)


def worst_particle(last: State, bad: State | None) -> int:
    """The particle with the largest |x|∞ or |v|∞ in ``bad`` (non-finite counts as largest;
    ties go to the largest in ``last``), or in ``last`` when there is no ``bad``."""
    before = particle_sizes(last)
    after = particle_sizes(bad) if bad is not None else before
    return int(np.lexsort((before, after))[-1])


def resume(path, progress: Callable[[int, int], None] | None = None) -> Result:
    """Continue the run stored in ``path`` (an HDF5 trajectory written with ``store=``) from its
    last frame to its planned end, appending to the same file; returns the whole Result.

    The continuation is bit-for-bit the uninterrupted run: the file holds, besides the last
    frame's state, what ``Integrator.checkpoint()`` saved after it (see
    :mod:`hooke.integrators.base`). Before anything is written the output is locked (another
    writer is refused) and the stored run is checked: its attributes as a scene file's fields
    (:func:`hooke.io.store.run_settings`), the hooke version that wrote it (another one might
    not continue it exactly), its ``input_hash`` against the scene and settings rebuilt from
    it (an edited dt or scene text), and its checkpoint's frame count against its own. A file
    that fails any of these is refused and left unchanged."""
    path = Path(path)
    lock = OutputLock(path)
    try:
        run, stored = _stored_run(path)
        frames = stored["total_frames"]
        prefix = {"t": stored["t"], "x": stored["x"], "v": stored["v"],
                  **{f"energy/{k}": v for k, v in stored["energy"].items()}, **stored["extras"]}
        for frame in range(frames):
            run.series.put(frame, {key: value[frame] for key, value in prefix.items()})
        run.stepper.restore(stored["checkpoint"])
        t0 = float(stored["t"][0])
        run._guard_energy(State(t0, stored["x"][0], stored["v"][0]), t0)  # its reference: the start
        last = State(float(stored["t"][-1]), stored["x"][-1].copy(), stored["v"][-1].copy())
        writer = TrajectoryWriter.append(path, frames, lock=lock)
    except BaseException:
        lock.release()
        raise
    return run.execute(progress=progress, writer=writer, start_frame=frames - 1, state=last, t0=t0)


def _stored_run(path: Path) -> tuple[Run, dict]:
    """The stored run's :class:`Run` (its plan rebuilt) and its content, or a one-line refusal."""
    stored = read_trajectory(path)
    settings = run_settings(stored["attrs"], path)
    if settings.get("hooke_version", __version__) != __version__:
        version = settings["hooke_version"]
        raise HookeInputError("path", f"was written by hooke {version}, this is hooke "
                              f"{__version__}: it would not continue the run exactly; resume it "
                              f"with hooke {version}", str(path))
    source = settings["scene_source"]
    if not source:
        raise HookeInputError("path", "was written from a scene built in code; only scenes from "
                              "files or built-in scenes can be resumed", str(path))
    if settings["complete"]:
        raise HookeInputError("path", "holds a complete run; nothing to resume", str(path))
    if settings.get("failure"):
        raise HookeInputError("path", "holds a run the blow-up guard stopped (its last frame is "
                              "the last finite state, off the save grid); run it again with a "
                              "smaller dt or another integrator", str(path))
    scene = build(parse(source, source=str(path)), source, overrides=settings["parameters"],
                  default_name=settings["scene_name"])
    rebuilt = {key: settings[key] for key in ("integrator", "dt", "t_end", "save_every", "options")}
    if input_hash(scene, rebuilt) != stored["attrs"].get("input_hash"):
        raise HookeInputError("path", "its settings or scene text differ from those its "
                              "input_hash was made of (the file was edited): it cannot be "
                              "continued exactly", str(path))
    run = Run(scene, settings["integrator"], settings["dt"], settings["t_end"],
              settings["save_every"], settings["options"], settings.get("max_energy_growth"))
    frames, stamp = stored["total_frames"], stored["checkpoint"].pop(CHECKPOINT_STAMP, None)
    if not 0 < frames <= run.steps.size:
        raise HookeInputError("path", f"holds {frames} frame(s), where its run has 1 to "
                              f"{run.steps.size}: it cannot be continued", str(path))
    if stamp not in (None, frames):  # None: a file from before the stamp
        raise HookeInputError("path", f"its checkpoint follows frame {stamp}, not its last frame "
                              f"{frames} (a write was cut short): it cannot be continued exactly",
                              str(path))
    return run, stored


make_callable(__name__, simulate)
