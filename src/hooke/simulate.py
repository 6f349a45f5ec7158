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

import os
import time
from pathlib import Path
from typing import Callable

import numpy as np

from . import pending_stop
from .callable_module import make_callable
from .errors import (CompleteRunError, HookeInputError, SimulationError, StoreWriteError, as_path,
                     is_count, raise_all)
from .frames import FrameSeries, energy_terms, frame_data, frame_steps
from .integrators import get as get_integrator
from .integrators.base import NON_FINITE, StepFailed
from .io.lock import OutputLock
from .io.outputs import check_replaceable
from .model import State
from .result import Result
from .scene_setup import (Scene, check_frames_fit, check_positive, check_save_every,
                          check_start_time, frame_bytes, step_count)
from .system import System
from .version import __version__


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
             max_energy_growth: float | None = None, max_frames: int | None = None,
             store_outputs=(), **options) -> Result:
    """Simulate ``scene`` and return a :class:`Result`.

    Args:
        scene: from ``hooke.scene(name)``, ``hooke.load(path)`` or ``hooke.Scene(model, ...)``.
        integrator: a name from ``hooke.integrators()``; the scene's default when None. The
            scene's options this integrator accepts apply to it, the others are dropped.
        dt: time step [s] (adaptive integrators: the output interval).
        t_end: duration [s].
        save_every: save a frame every this many steps (the last step is always saved); the
            scene's ``save_every`` (default 1) when None.
        max_frames: with neither ``save_every`` nor a scene that sets it (``save_every_given``),
            save at most this many frames after the initial one (frame 0, the start, is always
            kept; the last step is always saved): ``save_every`` = ⌈steps / max_frames⌉, so a
            result has at most max_frames + 1 frames (1: the start and the end; ``hooke run``
            passes 1,000, :data:`FRAME_BUDGET`); None: every step.
        progress: optional callback ``progress(steps_done, steps_total)`` called after each
            saved frame, or after each block of frames an integrator computes in one call.
        store: optional path of an HDF5 trajectory file written frame by frame as the run goes.
        store_outputs: files that show the run ``store`` holds (``hooke run``'s plots, sidecar
            and summary): removed the moment this run's file replaces it.
        max_energy_growth: optional blow-up guard, checked after every step: stop when the total
            energy exceeds its start by more than (factor − 1)·S, S = Σ |energy components| at
            the start (or at the first step where they are not all zero).
        **options: integrator options, e.g. ``rtol=1e-8`` for ``rk45``, ``tol=`` for ``implicit_euler``.
    """
    run = plan(scene, integrator, dt, t_end, save_every, max_energy_growth, max_frames, **options)
    check_progress(progress)
    writer = None
    if store is not None:
        from .io.store import TrajectoryWriter  # h5py: loaded by runs that store

        store = as_path(store, "store")
        if os.path.isdir(store):  # (Path's raises for a name too long for the file system)
            raise HookeInputError("store", "is a directory, not a trajectory file (give the "
                                  "file to write, e.g. DIR/trajectory.h5)", str(store))
        writer = TrajectoryWriter(store, scene, run.name, run.dt, run.t_end, run.save_every,
                                  dict(run.stepper.options), run.max_energy_growth, field="store",
                                  outputs=store_outputs)
    return run.execute(progress=progress, writer=writer)


# The frames `hooke run` keeps at most (about) unless told otherwise: ~1,000 frames draw any plot
# and animation smoothly, where a frame per step made `hooke run cloth` write 738 MB in 33 s for
# 0.4 s of stepping.
FRAME_BUDGET = 1000


def frame_budget(n_steps: int, max_frames: int = FRAME_BUDGET) -> int:
    """``save_every`` that keeps at most ``max_frames`` + 1 frames of a run of ``n_steps``: the
    initial one and at most ``max_frames`` saved steps, the last among them."""
    if not is_count(max_frames) or max_frames < 1:
        raise HookeInputError("max_frames", "must be an integer >= 1 (the frames saved after the "
                              "initial one, which is always kept, the last step among them)",
                              max_frames)
    return max(1, -(-int(n_steps) // int(max_frames)))


def plan(scene: Scene, integrator: str | None = None, dt: float | None = None,
         t_end: float | None = None, save_every: int | None = None,
         max_energy_growth: float | None = None, max_frames: int | None = None,
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
    if save_every is not None and max_frames is not None:  # max_frames was dropped in silence
        raise HookeInputError("max_frames", "cannot be given with save_every, which sets the "
                              "frames itself: give one of them", max_frames)
    if save_every is None and not scene.save_every_given and max_frames is not None:
        save_every = frame_budget(step_count(t_end, dt), max_frames)
    save_every = check_save_every(scene.save_every if save_every is None else save_every)
    from_scene = scene_options(scene, name)[0]
    merged = {**from_scene, **options}
    if max_energy_growth is not None:
        check_positive("max_energy_growth", max_energy_growth)
        if max_energy_growth <= 1:
            raise HookeInputError("max_energy_growth", "must be > 1", max_energy_growth)
    run = Run(scene, name, dt, t_end, save_every, merged, max_energy_growth)
    # an option that would change nothing: given here, or by the scene with what leaves it unused
    unused = run.stepper.unused_options()
    raise_all([HookeInputError(key, unused[key][0], merged[key]) for key in merged if key in unused
               and (key in options or unused[key][1] not in options)])
    return run


def check_progress(progress) -> None:
    if progress is not None and not callable(progress):
        raise HookeInputError("progress", "must be a callable progress(steps_done, steps_total) "
                              "or None", progress)


# Frames derived together when no store sets the blocks: large enough that a block's fixed
# cost vanishes per frame, small enough that its arrays stay in the cache.
DERIVE_FRAMES = 1024
# Frames computed in one call (by an integrator that can) double from 1 while a block takes less
# than this, and halve when one takes longer: whole blocks of fast frames, yet progress, time
# limits and the store's timed flushes still come about this often when frames take long.
BLOCK_SECONDS = 0.01
# An advance that takes this long or longer is followed by a checkpoint (see StoreFeed): a few
# microseconds then cost under 1% of the run.
EAGER_CHECKPOINT_SECONDS = 1e-3


class StoreFeed:
    """Writes a run's frames to its :class:`~hooke.io.store.TrajectoryWriter` in blocks.

    A block is written when the writer is due (:meth:`TrajectoryWriter.due`: by frame count or
    by time since its last write), right after a frame is recorded: the integrator's state is
    then the last frame's, so the checkpoint written with the block is taken there, once per
    block instead of once per frame (4–12 µs each). A Ctrl-C can also arrive while the
    integrator is between frames; then only the frames up to the last checkpoint taken are
    written: the last block's, or a frame's whose advance took ``EAGER_CHECKPOINT_SECONDS`` or
    more (each such frame takes its checkpoint as it is recorded). What such a Ctrl-C does not
    write is at most one block, which a resumed run computes again; a resumed run always
    continues exactly from the file's last frame."""

    def __init__(self, writer, series: FrameSeries, stepper, frame_bytes: int):
        from .io.store import flush_frames  # h5py: loaded by runs that store

        self.writer, self.series, self.stepper = writer, series, stepper
        self.frame_bytes = frame_bytes
        self.block_frames = flush_frames(frame_bytes)  # frames after which the writer is due
        self.held: tuple[int, dict] | None = None  # (frames it follows, checkpoint)

    def checkpoint(self) -> dict:
        """The integrator's checkpoint, copied (an integrator may reuse its arrays)."""
        return {key: np.array(value) if isinstance(value, np.ndarray) else value
                for key, value in self.stepper.checkpoint().items()}

    def room(self) -> int:
        """Frames to record before the writer is due by frame count (at least 1)."""
        pending = self.series.recorded - self.writer.count
        return max(1, self.block_frames - pending)

    def recorded(self, advance_seconds: float) -> None:
        """After a frame's state is recorded: write a block when the writer is due."""
        series = self.series
        if advance_seconds >= EAGER_CHECKPOINT_SECONDS:
            self.held = (series.recorded, self.checkpoint())
        if self.writer.due(series.recorded - self.writer.count, self.frame_bytes):
            self.write(series.recorded, self.checkpoint())

    def write(self, frames: int, checkpoint: dict) -> None:
        """Derive and write the frames up to ``frames`` with the checkpoint that follows them."""
        self.series.derive(frames)
        frames = min(frames, self.series.derived)
        if frames > self.writer.count:
            self.writer.write_frames(self.series.block(self.writer.count, frames), checkpoint)
        self.held = (frames, checkpoint)

    def close(self, complete: bool, failure: str = "", in_sync: bool = True) -> None:
        """Write what is left and close the writer. ``in_sync``: the integrator's state is the
        last recorded frame's (else only frames up to the last checkpoint are written; a run
        with a ``failure`` is not resumed, so any checkpoint does)."""
        if in_sync or failure:
            try:
                self.write(self.series.recorded, self.checkpoint())
            except SimulationError:  # a frame's derivation failed: those before it are written
                self.write(self.series.derived, self.checkpoint())
        elif self.held is not None:
            self.write(*self.held)
        self.writer.close(complete=complete, stats=self.stepper.stats, failure=failure)


class Run:
    """One run's fixed plan: the integrator, the steps at which frames are saved, the guard.

    The guard checks every step (the integrator's ``advance`` raises
    :class:`~hooke.integrators.base.StepFailed` at the first non-finite state or failing solve;
    with ``max_energy_growth`` the total energy is computed after every step). The run then stops
    with a :class:`SimulationError` naming the step, its time and the worst particle, and the last
    finite state (or the state past the energy limit) is written as a final frame, on the save
    grid or not. A run whose states all stayed finite but whose total energy overflowed at a
    saved frame stops the same way after its last step, naming the first such frame and keeping
    every frame (issue 15: a sweep recorded it as ok with an infinite energy error). Steps are
    counted in ``dt`` from the start; an adaptive integrator's step k is the k-th interval of
    ``dt``.
    """

    def __init__(self, scene: Scene, integrator: str, dt: float, t_end: float, save_every: int,
                 options: dict, max_energy_growth: float | None = None):
        self.scene, self.name, self.dt, self.t_end = scene, integrator, dt, t_end
        self.save_every = save_every
        self.max_energy_growth = max_energy_growth
        self._energy_reference: tuple[float, float] | None = None  # (E0, scale S)
        self.n_steps = step_count(t_end, dt)
        check_start_time(scene.state.t, dt, t_end)  # the run's dt may be finer than the scene's
        check_frames_fit(scene.model, self.n_steps, save_every, t_end, dt)
        self.system = System(scene.model)
        self.stepper = get_integrator(integrator)(self.system, dt, **options)
        self.steps = frame_steps(self.n_steps, save_every)
        t0 = scene.state.t
        self.stepper.check_span(t0, t0 + self.steps[-1] * dt)  # the last frame's time
        self.series = FrameSeries(self.system, self.steps.size)

    def execute(self, progress=None, writer=None, start_frame: int = 0, state: State | None = None,
                t0: float | None = None) -> Result:
        """Run from ``start_frame`` (whose state is ``state``; the scene's initial one at 0) to the
        end; frames before ``start_frame`` must already be in ``self.series``. A saved frame
        records its state only; the rest is derived in blocks (:mod:`hooke.frames`), when the
        writer is due to write (:class:`StoreFeed`) and at the end."""
        state = self.scene.state if state is None else state
        t0 = state.t if t0 is None else t0
        self.stepper.t_bound = t0 + self.steps[-1] * self.dt  # the last frame's time
        started = time.perf_counter()
        series = self.series
        feed = None if writer is None else StoreFeed(writer, series, self.stepper,
                                                     frame_bytes(self.scene.model))

        def result(frames: int, complete: bool) -> Result:
            return self.result(frames, complete, time.perf_counter() - started)

        def close(complete: bool, failure: str = "", in_sync: bool = True) -> None:
            if feed is not None:
                try:
                    feed.close(complete, failure, in_sync)
                except StoreWriteError as error:
                    error.result = result(series.derived, complete=False)
                    raise

        # The guard handles overflow and NaN: NumPy's warnings on the way there are noise.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            in_sync = True  # the stepper's state is the last recorded frame's (see StoreFeed)
            try:
                if start_frame == 0:
                    series.put_state(0, state)
                    series.derive()  # a problem with the start shows before any step
                    self._guard_energy(state, t0)
                    state = self.stepper.consistent_start(state)
                frame, block = start_frame + 1, 1
                while frame < self.steps.size:
                    in_sync = False
                    began = time.perf_counter()
                    # a block ends where its frames are due to be derived or written
                    room = (DERIVE_FRAMES - (series.recorded - series.derived) if feed is None
                            else feed.room())
                    end = min(self.steps.size, frame + max(1, min(block, room)))
                    state = self._advance(state, t0, frame, end)
                    in_sync = True
                    seconds = time.perf_counter() - began
                    if feed is not None:
                        feed.recorded(seconds)
                    elif series.recorded - series.derived >= DERIVE_FRAMES:
                        series.derive()
                    if progress is not None:
                        progress(int(self.steps[end - 1]), self.n_steps)
                    pending_stop.raise_if_pending()  # a Ctrl-C Python swallowed (in a __del__)
                    frame = end
                    if self._blocks():
                        block = (min(2 * block, self.steps.size) if seconds < BLOCK_SECONDS
                                 else max(1, block // 2))
                series.derive()
                self._guard_overflow(t0)
            except StoreWriteError as error:  # the file keeps its flushed frames; none is lost here
                error.result = result(series.derived, complete=False)
                raise
            except Stopped as stop:
                try:
                    series.derive()
                    if stop.last.t > series.arrays["t"][series.derived - 1]:
                        series.put(series.derived, frame_data(self.system, stop.last))
                except SimulationError:
                    pass  # a frame's joint tensions overflow: the frames before it stay
                error = SimulationError(stop.message(series.derived))
                error.result = result(series.derived, complete=False)
                close(complete=False, failure=str(error))
                raise error from stop.__cause__
            except (SimulationError, HookeInputError) as error:
                # a saved frame's derivation failed, or bad input showed only during the run (a
                # prescribed motion not finite at some t): the frames before it are kept
                error.result = result(series.derived, complete=False)
                close(complete=False, failure=str(error))
                raise
            except KeyboardInterrupt as interrupt:
                try:
                    close(complete=False, in_sync=in_sync)
                except StoreWriteError:
                    raise
                except KeyboardInterrupt as again:  # a second Ctrl-C while the file closed: it
                    again.frames_kept = 0 if writer is None else writer.count  # keeps its flushes
                    raise
                except Exception:  # the stop cut a lazy import short (Numba's registries, h5py's
                    writer.abandon()  # types): the last frames cannot be made; the flushed stay
                interrupt.frames_kept = 0 if writer is None else writer.count  # for the CLI's message
                raise
            except BaseException:  # the caller's progress raising, say: closed as for a Ctrl-C,
                close(complete=False, in_sync=in_sync)  # else the file stayed open and locked
                raise
        try:
            close(complete=True)
            return result(self.steps.size, complete=True)
        except KeyboardInterrupt as interrupt:  # in its closing compaction or after: all kept
            interrupt.frames_kept = 0 if writer is None else writer.count
            raise

    def result(self, frames: int, complete: bool, wall_time: float) -> Result:
        """The run's first ``frames`` frames as a Result."""
        return self.series.result(frames, scene=self.scene, integrator=self.name, dt=self.dt,
                                  options=dict(self.stepper.options),
                                  stats=dict(self.stepper.stats), wall_time=wall_time,
                                  complete=complete)

    def _blocks(self) -> bool:
        """Whether frames are computed in blocks: by an integrator that can
        (``frames_in_blocks``) when no energy guard needs every step."""
        return self.max_energy_growth is None and self.stepper.frames_in_blocks()

    def _advance(self, state: State, t0: float, frame: int, end: int) -> State:
        """Record the states of frames [frame, end) and return the last: a block in one
        ``advance_frames`` call (see :meth:`_blocks`), else frame by frame in ``advance`` calls,
        or step by step with the energy guard."""
        series = self.series
        try:
            if self._blocks():
                times = t0 + self.steps[frame:end] * self.dt
                x, v = series.state_block(frame, end)
                try:
                    state = self.stepper.advance_frames(state, times, x, v)
                except StepFailed as failure:  # the frames before the failing step are kept
                    series.put_times(frame, times[:failure.frames])
                    raise
                series.put_times(frame, times)
                return state
            for index in range(frame, end):
                first, last = int(self.steps[index - 1]), int(self.steps[index])
                if self.max_energy_growth is None:
                    state = self.stepper.advance(state, t0 + last * self.dt, last - first)
                else:
                    for step in range(first + 1, last + 1):
                        state = self.stepper.advance(state, t0 + step * self.dt, 1)
                        self._guard_energy(state, t0)
                    state = self.stepper.consistent_start(state)
                series.put_state(index, state)
            return state
        except StepFailed as failure:
            raise Stopped(self, failure, t0) from failure

    def _guard_energy(self, state: State, t0: float) -> None:
        if self.max_energy_growth is None:
            return
        terms = energy_terms(self.system, state)
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

    def _guard_overflow(self, t0: float) -> None:
        """After the last step: stop a run whose saved energy overflowed although every state
        stayed finite (explicit Euler's growth passes 1.8e308 J long before x does). The check
        is at the end, where the frames' energies are all derived whatever the block sizes, so
        which failure a run reports (this or a non-finite state's) never depends on timing;
        every frame is kept, their states being finite."""
        arrays = self.series.arrays
        overflowed = np.flatnonzero(~np.isfinite(arrays["energy/total"][:self.series.derived]))
        if not overflowed.size:
            return
        first = int(overflowed[0])
        state = State(float(arrays["t"][first]), arrays["x"][first], arrays["v"][first])
        stop = Stopped(self, None, t0, state,
                       f"the total energy overflowed to {arrays['energy/total'][first]:g} J")
        last = self.series.derived - 1
        stop.last = State(float(arrays["t"][last]), arrays["x"][last], arrays["v"][last])
        raise stop


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
            self.what = failure_text(failure, step, t0 + step * run.dt, last)
        self.advice = (failure.advice if failure is not None and failure.advice
                       else advice(run.name))

    def message(self, kept: int) -> str:
        return (f"{self.what}; {kept} frame(s) kept, the last at t = {self.last.t:.6g}. "
                f"{self.advice}")


def failure_text(failure: StepFailed, step: int, t: float, last: State | None = None) -> str:
    """What went wrong in ``failure`` at ``step`` (ending at time ``t``) and where: the worst
    particle of the state it gave, with its size in ``last`` (default: the failure's last finite
    state). The text ``hooke run`` and the viewer print."""
    last = failure.last if last is None else last
    bad = failure.bad
    particle = worst_particle(last, bad)
    at = f"step {step} (t = {t:.6g})"
    what = (f"{failure.reason} at {at}" if failure.reason == NON_FINITE
            else f"{at} failed: {failure.reason}")
    gone = "non-finite; " if bad is not None else ""  # a non-finite particle is the worst
    return what + (f"; worst particle {particle} ({gone}at t = {last.t:.6g}: |x|∞ = "
                   f"{np.max(np.abs(last.x[particle])):.3g} m, |v|∞ = "
                   f"{np.max(np.abs(last.v[particle])):.3g} m/s)")


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
    that fails any of these is refused and left unchanged; so is every file whose resume fails or
    is killed before its first new frames are flushed (it is continued in a copy beside it,
    :meth:`hooke.io.store.TrajectoryWriter.append`)."""
    from .io.files import check_regular
    from .io.store import TrajectoryWriter

    path = as_path(path, "path")
    check_progress(progress)
    # before the lock, whose own error would read "cannot be written"; a name too long for the
    # file system is named too, not an OSError of Path.exists
    check_regular(path, "path", "trajectory file")
    check_replaceable(path, "path")  # a read-only stored run is kept as it is, not continued
    lock = OutputLock(path)
    try:
        run, stored = _stored_run(path)
        frames = stored["total_frames"]
        run.series.put_block(0, {"t": stored["t"], "x": stored["x"], "v": stored["v"],
                                 **{f"energy/{k}": v for k, v in stored["energy"].items()},
                                 **stored["extras"]})
        _restore(run, stored["checkpoint"], path)
        t0 = float(stored["t"][0])
        run._guard_energy(State(t0, stored["x"][0], stored["v"][0]), t0)  # its reference: the start
        last = State(float(stored["t"][-1]), stored["x"][-1].copy(), stored["v"][-1].copy())
        try:
            writer = TrajectoryWriter.append(path, frames, lock=lock)
        except StoreWriteError as error:  # no room for its copy: the stored frames, as they were
            error.result = run.result(frames, complete=False, wall_time=0.0)
            raise
    except BaseException:
        lock.release()
        raise
    return run.execute(progress=progress, writer=writer, start_frame=frames - 1, state=last, t0=t0)


def _restore(run: Run, checkpoint: dict, path: Path) -> None:
    """The integrator's state after the last frame, from the file's checkpoint; a checkpoint an
    integrator cannot take back (edited: stats that are not JSON, arrays of another shape) is one
    line naming the file."""
    try:
        run.stepper.restore(checkpoint)
    except (ValueError, TypeError, KeyError, IndexError) as error:  # JSON errors are ValueErrors
        raise HookeInputError("path", f"its checkpoint cannot be restored ({type(error).__name__}: "
                              f"{error}): the file was edited or damaged", str(path)) from None


def _changed_model_array(model, stored) -> str | None:
    """The name of the first array or number or word of ``model`` (rebuilt from a file's scene
    text) that differs from the ``stored`` model's, else None (motions, stored as descriptions
    only, are the scene text's)."""
    import dataclasses

    for item in dataclasses.fields(model):
        mine, theirs = getattr(model, item.name), getattr(stored, item.name, None)
        if isinstance(mine, np.ndarray) and not (isinstance(theirs, np.ndarray)
                                                 and mine.shape == theirs.shape
                                                 and np.array_equal(mine, theirs)):
            return item.name
        if isinstance(mine, (bool, int, float, str)) and theirs != mine:
            return item.name
    return None


def _stored_run(path: Path) -> tuple[Run, dict]:
    """The stored run's :class:`Run` (its plan rebuilt) and its content, or a one-line refusal."""
    from .io.store import (CHECKPOINT_STAMP, check_finite, input_hash, read_trajectory,
                           run_settings, stored_scene)

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
        raise CompleteRunError("path", "holds a complete run; nothing to resume", str(path))
    if settings.get("failure"):
        raise HookeInputError("path", "holds a run the blow-up guard stopped (its last frame is "
                              "the last finite state, off the save grid); run it again with a "
                              "smaller dt or another integrator", str(path))
    try:
        scene = stored_scene(settings, path)
    except HookeInputError as error:  # it named a field of the text alone, not the file (issue 15)
        raise HookeInputError("path", "its stored scene (attributes scene_source, parameters, "
                              "scene_folder) no longer builds: " + "; ".join(str(error).splitlines())
                              + "; it cannot be continued", str(path)) from None
    rebuilt = {key: settings[key] for key in ("integrator", "dt", "t_end", "save_every", "options")}
    changed = _changed_model_array(scene.model, stored["model"])
    if input_hash(scene, rebuilt) != stored["attrs"].get("input_hash"):
        if changed is not None:  # the stored model is the original's: the text was edited
            edited = "scene_source or parameters attribute was" if scene.parameters else (
                "scene_source attribute was")
            raise HookeInputError("path", f"its {edited} edited (it builds another model than "
                                  f"the one stored, {changed} differs): it cannot be continued "
                                  "exactly", str(path))
        raise HookeInputError("path", "its settings or scene text differ from those its "
                              "input_hash was made of (the file was edited): it cannot be "
                              "continued exactly", str(path))
    if changed is not None:  # the text and settings as written: the stored model was edited
        raise HookeInputError("path", f"is corrupted: model/{changed} differs from the model its "
                              "scene text builds (the file was edited or damaged)", str(path))
    # the continuation's energy guard and the summary read them: a NaN was "the total energy
    # overflowed … try a smaller dt" once the continuation had run to its end (other derived
    # frames may be inf: no surface near, surface_distance is)
    check_finite({f"energy/{term}": values for term, values in stored["energy"].items()},
                 slice(0, stored["total_frames"]), path)
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
