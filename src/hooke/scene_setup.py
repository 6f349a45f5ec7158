"""Scene: a Model, its initial State and default run settings.

Contract: a Scene is validated when made (known integrator, dt > 0, t_end > 0, state shapes match
the model, every value finite, every pinned particle where its pin holds it and moving as it
moves at the state's time, no contact particle on or below a plane, in or on a sphere or touching
an obstacle where they are at the state's time). ``hooke.simulate`` reads it and never changes it.

(Not named ``scene``: ``hooke.scene`` is the function that loads a built-in scene, and a public
name must not hide a module.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .builder import check_clear_of_planes
from .checks import _numbers
from .energies.barrier import plane_displacements
from .errors import (HookeInputError, HookeInputErrors, format_value, is_count, is_number,
                     python_scalars)
from .integrators import get as get_integrator
from .limits import MAX_STEPS  # noqa: F401  (imported from here by the store and fits)
from .memory import check_fits
from .model import Model, State
from .obstacles import obstacle_problems, obstacle_vertices, sphere_centers, sphere_problems


EPS = np.finfo(float).eps


def check_positive(name: str, value) -> float:
    if not is_number(value):
        raise HookeInputError(name, "must be a number", value)
    number = float(value)
    if not np.isfinite(number) or number <= 0:
        raise HookeInputError(name, "must be a finite number > 0", value)
    return number


ENERGY_REFERENCES = ("zero", "rest")  # the zero of plotted energies: see Scene.energy_reference


def check_save_every(value) -> int:
    if not is_count(value) or value < 1:
        raise HookeInputError("save_every", "must be an integer >= 1", value)
    if value > MAX_STEPS:  # also what an HDF5 attribute (int64) holds
        raise HookeInputError("save_every", f"must be at most {MAX_STEPS:.0e} steps (the most a "
                              "run has)", value)
    return int(value)
STEP_TOLERANCE = 1e-9  # of a step: how far t_end may be from a whole number of steps
# Of a step: the most round-off the times t0 + k·dt of a run may carry (float64 spacing at its
# end). Past it the steps are no longer dt; at t0 = 1e300, t0 + dt == t0 and time stood still.
TIME_RESOLUTION = 1e-6
# Relative to |t| + dt: how far a run's own state's time may be from the time its steps placed
# the moving pins at (advance() gives a frame the time t0 + k·dt, its steps summed t + h + h …),
# so that such a state, given back to a Scene, is taken (Scene._check_pinned_where_held).
PIN_TIME_ROUNDOFF = 1e-9


def check_start_time(t, dt: float, t_end: float = 0.0) -> float:
    """A state's time ``t`` (field ``state.t``) as a float: a finite number at which steps of
    ``dt`` until ``t + t_end`` keep their length to TIME_RESOLUTION of a step (``t_end``: once
    it is known to be at most MAX_STEPS steps, so that it is not t's fault)."""
    if not is_number(t):
        raise HookeInputError("state.t", "must be a number", t)
    if not math.isfinite(t):
        raise HookeInputError("state.t", "must be finite", t)
    end = abs(float(t)) + t_end
    if t_end and not end < np.finfo(float).max:  # the last float64 (no step past it) or beyond
        raise HookeInputError("t_end", f"takes the run from t = {float(t):g} s to the end of "
                              f"float64 (|t| + t_end = {end:.6g} s), where no step has room",
                              t_end)
    if np.spacing(end) > TIME_RESOLUTION * dt:
        largest = TIME_RESOLUTION * dt / np.finfo(float).eps
        raise HookeInputError("state.t", f"is too large for steps of dt = {dt:g}: float64 times "
                              f"near it are {np.spacing(abs(float(t)) + t_end):.3g} s apart, more "
                              f"than {TIME_RESOLUTION:g} of a step (|t| must be below about "
                              f"{largest:.2g} s)", t)
    return float(t)


def step_count(t_end: float, dt: float, names: tuple[str, str] = ("t_end", "dt")) -> int:
    """The number of steps of ``dt`` that make ``t_end``: t_end / dt must be a whole number n ≥ 1
    to within 1e-9 (plus the division's round-off, 4nε, for runs of millions of steps), so that a
    run never silently stops short of t_end or runs past it. ``names``: what the errors call
    t_end and dt (``hooke study``'s flags)."""
    end, step = names
    ratio = t_end / dt
    if not np.isfinite(ratio) or ratio > MAX_STEPS:
        pieces = (f", or run it in pieces of at most {MAX_STEPS:.0e} steps, each from the state "
                  "the last one ended in (hooke.simulate of dataclasses.replace(scene, state=...))"
                  if step == "dt" else "")  # (a run's, not a study's)
        raise HookeInputError(end, f"{end} / {step} = {ratio:.3g} steps of {step} = {dt!r}, more "
                              f"than the {MAX_STEPS:.0e} hooke runs: choose a shorter {end} or a "
                              f"larger {step}{pieces}", t_end)
    n = round(ratio)
    if n >= 1 and abs(ratio - n) <= STEP_TOLERANCE + 4 * n * np.finfo(float).eps:
        return n
    counts = sorted({max(1, math.floor(ratio)), max(1, math.ceil(ratio))})
    ends = " or ".join(f"{k * dt:.12g}" for k in counts)
    steps = " or ".join(f"{t_end / k:.12g} ({k} step{'s' * (k > 1)})" for k in counts)
    raise HookeInputError(end, f"must be a whole number of steps of {step} = {dt:.12g} ({end} / "
                          f"{step} = {ratio:.10g}); nearest valid: {end} = {ends}, or {step} = "
                          f"{steps}", t_end)


def frame_count(n_steps: int, save_every: int) -> int:
    """Frames saved: step 0, every ``save_every`` steps, and the last step."""
    return n_steps // save_every + 1 + (n_steps % save_every > 0)


def frame_bytes(model: Model) -> int:
    """Bytes of one saved frame: x, v (and contact_force), energies, joint forces."""
    vectors = 3 if model.n_planes or model.n_spheres or model.n_obstacles else 2
    return 8 * (vectors * model.n_particles * model.dim + model.n_joints + 8)


def check_frames_fit(model: Model, n_steps: int, save_every: int, t_end: float, dt: float) -> None:
    """A run keeps every saved frame (x and v, contact forces with planes, energies, joint
    forces) in memory: refuse one whose frames would not fit in this machine's memory, before
    anything is allocated."""
    frames = frame_count(n_steps, save_every)
    size = frame_bytes(model)
    check_fits("t_end", t_end, frames * size, f"the run would keep {frames:.4g} frames of {size} bytes",
               f"choose a shorter t_end, a larger dt = {dt!r} or a larger save_every = {save_every}")


@dataclass
class Scene:
    """What to simulate and how, by default.

    Attributes:
        model: the mass-spring system.
        integrator: default integrator name (see ``hooke.integrators()``).
        dt: default time step [s] (for adaptive integrators: the output interval).
        t_end: default duration [s].
        state: initial state; ``model.initial_state()`` when not given.
        options: default integrator options.
        save_every: default number of steps between saved frames.
        save_every_given: whether ``save_every`` was set on purpose (a scene file's [run]
            ``save_every``); when not, ``hooke run`` keeps at most about 1,000 frames
            (:func:`hooke.simulate.frame_budget`), where ``hooke.simulate`` saves every step.
        name, description: labels.
        parameters: the values the scene was built from (for builder scenes).
        analytic_solution: optional t (frames,) -> x (frames, n, d).
        source: the scene file's text, when it came from one.
        folder: that file's folder (absolute), from which its obstacle meshes were read: a
            stored run keeps it, so that its resume reads them from there again.
        energy_reference: the zero of the energies that plots show: ``"zero"``, hooke's own
            (springs at rest length and gravity at the origin have none); ``"rest"``, the
            potential energy of the static equilibrium (:func:`hooke.analysis.rest_energy`),
            for a body that moves about its rest state.
    """

    model: Model
    integrator: str = "symplectic_euler"
    dt: float = 1e-3
    t_end: float = 1.0
    state: State | None = None
    options: dict[str, Any] = field(default_factory=dict)
    save_every: int = 1
    save_every_given: bool = False
    name: str = "custom"
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    analytic_solution: Callable[[np.ndarray], np.ndarray] | None = None
    source: str | None = None
    energy_reference: str = "zero"
    folder: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, Model):
            raise HookeInputError("model", "must be a hooke Model (ModelBuilder.finalize())",
                                  type(self.model).__name__)
        get_integrator(self.integrator)
        for label in ("name", "description"):
            if not isinstance(getattr(self, label), str):
                raise HookeInputError(label, "must be a str", getattr(self, label))
        if not (isinstance(self.options, dict) and all(isinstance(key, str) for key in self.options)):
            raise HookeInputError("options", "must be a dict of integrator options by name",
                                  self.options)
        # stored with a run as JSON and as text: anything else made a file hooke.open refused
        if not (isinstance(self.parameters, dict)
                and all(isinstance(key, str) for key in self.parameters)):
            raise HookeInputError("parameters", "must be a dict of parameters by name",
                                  self.parameters)
        self.parameters = python_scalars(self.parameters)
        if self.source is not None and not isinstance(self.source, str):
            raise HookeInputError("source", "must be None or the scene file's text (a str)",
                                  self.source)
        if self.folder is not None and not isinstance(self.folder, str):
            raise HookeInputError("folder", "must be None or the scene file's folder (a str)",
                                  self.folder)
        if self.analytic_solution is not None and not callable(self.analytic_solution):
            raise HookeInputError("analytic_solution", "must be None or a callable x(t)",
                                  self.analytic_solution)
        if not isinstance(self.save_every_given, (bool, np.bool_)):
            raise HookeInputError("save_every_given", "must be True or False",
                                  self.save_every_given)
        if not isinstance(self.energy_reference, str) or (  # an array: no raw NumPy error
                self.energy_reference not in ENERGY_REFERENCES):
            raise HookeInputError("energy_reference", f"must be one of {', '.join(ENERGY_REFERENCES)}",
                                  self.energy_reference)
        self.dt = check_positive("dt", self.dt)
        self.t_end = check_positive("t_end", self.t_end)
        if self.state is None:
            self.state = self.model.initial_state()
        if not isinstance(self.state, State):
            raise HookeInputError("state", "must be a hooke.State(t, x, v)", type(self.state).__name__)
        check_start_time(self.state.t, self.dt)
        shape = (self.model.n_particles, self.model.dim)
        for label, array in (("state.x", self.state.x), ("state.v", self.state.v)):
            if np.shape(array) != shape:
                raise HookeInputError(label, f"must have shape {shape}", np.shape(array))
            if np.asarray(array).dtype.kind not in "iuf":
                raise HookeInputError(label, "must be an array of numbers", np.asarray(array).dtype.name)
            if not np.all(np.isfinite(array)):
                bad = int(np.argwhere(~np.isfinite(np.asarray(array)))[0][0])
                raise HookeInputError(f"{label}[{bad}]", "must be finite", np.asarray(array)[bad])
        self._check_pinned_where_held()
        if self.model.n_planes:
            points = self.model.plane_points + plane_displacements(self.model, self.state.t)
            check_clear_of_planes(self.model.plane_normals, points, self.model.contact_area,
                                  np.asarray(self.state.x), field="state.x")
        self._check_clear_of_obstacles()
        self.save_every = check_save_every(self.save_every)

    def _check_pinned_where_held(self) -> None:
        """Each pinned particle of the state where its pin holds it, moving as it moves, at the
        state's time: the first step puts it there, a jump no force made, and a velocity it
        does not have showed in frame 0's kinetic energy. Round-off of a run's own end state is
        taken: its time may differ from t0 + k·dt in the last bits (positions to 1e-9 of their
        size; a moving pin's velocity is its u̇ at a time within PIN_TIME_ROUNDOFF of t, to a few
        ulps). A still pin's velocity is 0 exactly, as every step leaves it."""
        index = self.model.pinned_index
        if not index.size:
            return
        model, t = self.model, self.state.t
        held = model.pinned_positions(t)
        given = np.asarray(self.state.x, dtype=float)[index]
        self._refuse_off_pin("x", held, np.max(np.abs(given - held), axis=1)
                             - 1e-9 * (1.0 + np.max(np.abs(held), axis=1)), "position", "holds at")
        held = model.pinned_velocities(t)
        given = np.asarray(self.state.v, dtype=float)[index]
        # still pins: 0 exactly; moving ones: u̇(s) at some s within PIN_TIME_ROUNDOFF of t (to
        # what ü(s) changes it by there, and a few ulps), never a value between two of them
        miss = np.max(np.abs(given - held), axis=1) - 4 * EPS * np.max(np.abs(held), axis=1)
        if model.pinned_motions:
            delta = PIN_TIME_ROUNDOFF * (abs(t) + self.dt)
            for near in (max(t - delta, min(t, 0.0)), t, t + delta):  # no motion asked before 0
                du, ddu = model.pin_rates(near)
                miss = np.minimum(miss, np.max(np.abs(given - du), axis=1) - 4 * EPS * np.max(
                    np.abs(du), axis=1) - 2 * delta * np.max(np.abs(ddu), axis=1))
        self._refuse_off_pin("v", held, miss, "velocity", "sets to")

    def _refuse_off_pin(self, label: str, held: np.ndarray, miss: np.ndarray, what: str,
                        verb: str) -> None:
        """The first pinned particle whose ``miss`` (one per pinned particle: how far its
        ``state.<label>`` is off its pin's past the round-off taken) is > 0, refused by name
        with ``held``, its pin's value at the state's time."""
        index = self.model.pinned_index
        off = np.flatnonzero(~(miss <= 0))  # NaN (inf − inf of an overflow) is a miss
        if off.size:
            k = int(off[0])
            given = np.asarray(getattr(self.state, label), dtype=float)[index[k]]
            raise HookeInputError(f"state.{label}[{index[k]}]", f"is a pinned particle's {what}, "
                                  f"which its pin {verb} {format_value(held[k])} at t = "
                                  f"{self.state.t:g}", given)

    def _check_clear_of_obstacles(self) -> None:
        """No contact particle of the state inside or on a sphere or obstacle at its time."""
        model, x, t = self.model, np.asarray(self.state.x), self.state.t
        problems = sphere_problems(sphere_centers(model, t), model.sphere_radii,
                                   model.contact_area, x, field="state.x")
        if model.n_obstacles:
            problems += obstacle_problems(obstacle_vertices(model, t), model.obstacle_faces,
                                          model.obstacle_of_vertex,
                                          model.surface_faces.reshape(-1, model.dim),
                                          model.contact_area, x, field="state.x")
        if problems:
            raise HookeInputErrors(problems)

    @property
    def has_analytic(self) -> bool:
        """Whether the scene has an analytic solution and its state is where that starts."""
        return self.analytic_solution is not None and self.starts_the_analytic(self.state)

    def starts_the_analytic(self, start: State) -> bool:
        """Whether a run from ``start`` is the one the analytic solution describes: it starts
        from the model's own ``x0`` and ``v0`` (at any time)."""
        return (np.array_equal(start.x, self.model.x0)
                and np.array_equal(start.v, self.model.v0))

    def analytic(self, t, start: State | None = None) -> np.ndarray:
        """Analytic positions at times t of the run from ``start`` (default: the scene's
        state): shape (len(t), n, d) (or (n, d) for a scalar t).

        The solution is that of the model's initial-value problem, x0 and v0 at the start's
        time, so it is taken at t − start.t: a scene started at t = 1000 s was compared with
        the solution of a run started at 0 (3.15 m off on spring1d). A start elsewhere (a state
        of one's own) has no analytic solution and is refused, not compared with one."""
        if self.analytic_solution is None:
            raise HookeInputError("analytic", f"scene '{self.name}' has no analytic solution", self.name)
        start = self.state if start is None else start
        if not self.starts_the_analytic(start):
            raise HookeInputError("state", f"is not scene '{self.name}''s initial positions and "
                                  "velocities (its model's x0 and v0), from which its analytic "
                                  "solution starts", f"a state at t = {start.t:g}")
        times = _numbers(t)  # strict: "0.5" and True are no times
        if times is None or times.ndim > 1 or not np.all(np.isfinite(times)):
            raise HookeInputError("t", "must be a finite time or a sequence of them", t)
        with np.errstate(all="ignore"):  # refused below, not a NumPy warning and NaN positions
            x = self.analytic_solution(np.atleast_1d(times) - start.t)
        if not np.all(np.isfinite(x)):  # e.g. ω·t overflowing in cos(ω·t) at t = 1e308
            raise HookeInputError("t", "gives analytic positions that are not finite numbers (the "
                                  "time is too large for the solution)", t)
        return x[0] if times.ndim == 0 else x
