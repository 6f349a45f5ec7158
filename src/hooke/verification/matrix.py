"""The verification matrix: every registered integrator on every scene case it accepts.

Contract: :func:`run_matrix` returns one :class:`Cell` per integrator × scene case of a
:class:`~hooke.verification.plan.Configuration`, in registry × case order. A cell:

- is "n/a" when the integrator refuses the scene (the HookeInputError it raises when made, e.g.
  no contact planes), with that one-line reason; otherwise it runs the integrator at its default
  options — with ``adaptive=False`` where it has that option (fixed steps of dt; otherwise dt is
  only the output interval) — and the scene's options it accepts, as ``hooke.simulate`` does;
- runs a ladder of ``levels`` steps dt_k = dt₀/2^k from the horizon's start to its end, saving
  the positions at the compared frames (every step with contact planes, so that the smallest
  contact distance is over every step);
- measures the error of each level: the largest distance of any particle at any compared frame
  to the reference (:mod:`hooke.verification.reference`: the analytic solution, or the DOP853
  solution of the index-1 equations); with contact planes, by self-convergence: e_k =
  max|x_k − x_{k+1}|, so five levels give four differences, at dt_0 … dt_3;
- its measured order is the least-squares slope of log e against log dt, ``last_ratio`` the
  last e_k/e_{k+1}; "ok" when within ``ORDER_TOLERANCE`` of the class's ``order``, else "off",
  or "limited" when (integrator, scene) is a stated limitation (:data:`~.plan.LIMITATIONS`);
  "failed" when no ladder could be run (a finer level failing, or every start unstable).

The ladder's first step dt₀ starts at the scene's dt and moves by halvings (``shift``: how many
halvings below the scene's dt, negative when coarser), recorded in the cell's note:
- down while the run at dt₀ is unstable: it stops (non-finite state, failed solve) or its total
  energy grows past E₀ + (``GROWTH_LIMIT`` − 1)·S, with the energy scale S = Σ|energy terms| at
  the start + the work of gravity across the model's extent;
- up while the finest error is within ``FLOOR_MARGIN``× the error floor (the reference's error
  estimate, or position round-off: ``ROUND_OFF`` × the largest coordinate) — the case of high-order
  methods at the scene's dt — as far as the compared frames allow (``SceneCase.max_coarsening``),
  the coarser run is stable and its error ratio to the next level shows the order;
- then down, at most ``MAX_PRE_ASYMPTOTIC`` times, while the measured order is off but the local
  order (log₂ of e_k/e_{k+1}) is closer to it at the finest pair of levels than at the coarsest,
  and the finest error stays clear of the floor: the coarse steps of stiff scenes are
  pre-asymptotic (h ω > 1 for their fastest modes). An order lost at the fine end is never
  hidden this way.

Besides the order, each level records its energy error — max over the compared frames of
|E − E*| with E* = E₀ for a conservative scene (no damping, air drag, friction or moving
boundary) and the reference's energy otherwise (with self-convergence: the next finer level's) —
the joints' drift max|L − L0| and the smallest contact distance. ``energy_order`` is the slope of the energy errors
clear of round-off (above ``FLOOR_MARGIN`` × ``ENERGY_ROUND_OFF`` × S; NaN when fewer than two
are), and ``energy_behaviour`` the trend of E − E* over the horizon at dt₀ (see
:func:`hooke.verify.energy_trend`), with the physical cause named for a non-conservative scene.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import HookeInputError, SimulationError
from ..integrators.base import get, names
from ..io.scene_file import builtin_scene as load_scene
from ..simulate import scene_options, simulate
from ..system import System
from ..verify import energy_trend
from .plan import FULL, LIMITATIONS, Configuration, SceneCase
from .reference import Reference, analytic_reference, dae_reference

ORDER_TOLERANCE = 0.3
GROWTH_LIMIT = 10.0
FLOOR_MARGIN = 10.0
ROUND_OFF = 1e-13          # relative to the largest coordinate [m/m]
ENERGY_ROUND_OFF = 1e-12   # relative to the energy scale S
MAX_REFINEMENTS = 6        # halvings below the scene's dt in search of a stable start
MAX_PRE_ASYMPTOTIC = 2
SELF_CONVERGENCE = "self-convergence"


@dataclass
class Cell:
    """One integrator on one scene case (see the module docstring)."""

    integrator: str
    scene: str
    kind: str                         # springs | joints | contact
    dim: int
    particles: int
    status: str                       # ok | off | limited | n/a | failed
    expected_order: int
    measured_order: float = math.nan
    last_ratio: float = math.nan
    reference: str = ""
    reference_error: float = math.nan  # estimate of the reference's error [m]
    shift: int = 0                     # halvings from the scene's dt to dt₀ (< 0: coarser)
    dts: list[float] = field(default_factory=list)             # the ladder's steps [s]
    errors: list[float] = field(default_factory=list)          # [m], from dts[0] on, one per dt
                                                               # (one fewer: self-convergence)
    energy_errors: list[float] = field(default_factory=list)   # [J], one per level run
    energy_order: float = math.nan
    energy_behaviour: str = ""
    limitation: str = ""               # the stated cause, for a "limited" cell
    joint_drift: list[float] = field(default_factory=list)       # [m], one per level run
    contact_distance: list[float] = field(default_factory=list)  # [m], one per level run
    horizon: float = math.nan
    parameters: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    wall_time: float = 0.0             # every run the cell made [s]
    note: str = ""

    @property
    def failing(self) -> bool:
        """Off its order and not a stated limitation, or failed: ``hooke verify --all`` exits 1."""
        return self.status in ("off", "failed")


class Unstable(Exception):
    """A level whose run stopped or whose energy blew up; ``reason`` says how."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Level:
    """One run of the ladder, cut to the compared frames."""

    dt: float
    x: np.ndarray           # (frames, n, d)
    energy: np.ndarray      # (frames,) total energy [J]
    joint_drift: float
    contact_distance: float  # smallest to a plane or between surfaces, over every saved step [m]


def slope(dts, values) -> float:
    """Least-squares slope of log(values) against log(dts)."""
    return float(np.polyfit(np.log(dts), np.log(values), 1)[0])


def matrix_options(integrator: str) -> dict:
    """The options every cell adds to the defaults: fixed steps for an adaptive method."""
    return {"adaptive": False} if "adaptive" in get(integrator).defaults else {}


class SceneSetup:
    """One scene case, built once, with what all its cells share: the reference (computed on
    first use), whether it conserves energy, and its energy scale."""

    def __init__(self, case: SceneCase):
        self.case = case
        self.scene = load_scene(case.scene, **case.parameters)
        model = self.scene.model
        self.times = np.arange(case.frames + 1) * case.frame_interval
        # contact with planes, spheres or obstacles: self-convergence (no smooth reference)
        self.has_planes = bool(model.n_planes or model.n_spheres or model.n_obstacles)
        self.kind = "contact" if self.has_planes else "joints" if model.n_joints else "springs"
        friction = np.concatenate([model.plane_friction, model.sphere_friction,
                                   model.obstacle_friction])
        self.non_conservative = [cause for cause, present in (
            ("spring damping", model.has_damping),
            ("air drag", model.has_drag),
            ("friction", bool(np.any(friction > 0))),
            ("driven boundary", bool(model.pinned_motions or model.plane_motions
                                     or model.sphere_motions or model.obstacle_motions)))
            if present]
        system = System(model)
        state = self.scene.state
        terms = {"kinetic": system.kinetic_energy(state.v), **system.potential_energies(state.x, state.t)}
        self.energy_start = sum(terms.values())
        # S: the energies at the start, plus the work gravity can do across the model's extent
        # (a chain released at rest from y = 0 starts with no energy at all)
        extent = float(np.max(np.ptp(state.x, axis=0)))
        falling = float(np.sum(model.mass[~model.pinned]) * np.linalg.norm(model.gravity) * extent)
        self.energy_scale = sum(abs(value) for value in terms.values()) + falling
        self._reference: Reference | None = None

    @property
    def reference(self) -> Reference | None:
        """The reference at the compared frames; None for self-convergence (contact)."""
        if self.has_planes:
            return None
        if self._reference is None:
            self._reference = (analytic_reference(self.scene, self.times) if self.scene.has_analytic
                               else dae_reference(self.scene, self.times))
        return self._reference

    def reference_energy(self) -> np.ndarray:
        """E* at the compared frames for a scene with a reference (see the module docstring)."""
        if not self.non_conservative:
            return np.full(self.times.size, self.energy_start)
        system = System(self.scene.model)
        reference = self.reference
        return np.array([system.kinetic_energy(v) + system.potential_energy(x)
                         for x, v in zip(reference.x, reference.v)])


class Ladder:
    """The runs of one integrator on one scene, by level index j (dt = scene dt / 2^j), each
    made once."""

    def __init__(self, setup: SceneSetup, integrator: str):
        self.setup, self.integrator = setup, integrator
        self.options = matrix_options(integrator)
        self.runs: dict[int, Level | Unstable] = {}
        self.wall_time = 0.0

    def dt(self, j: int) -> float:
        return self.setup.scene.dt * 2.0 ** -j

    def __call__(self, j: int) -> Level:
        if j not in self.runs:
            self.runs[j] = self._run(self.dt(j))
        run = self.runs[j]
        if isinstance(run, Unstable):
            raise run
        return run

    def _run(self, dt: float) -> Level | Unstable:
        setup = self.setup
        every = setup.case.frame_steps(dt)
        # with contact, every step: the smallest distance may fall between compared frames
        save_every = 1 if setup.has_planes else every
        started = time.perf_counter()
        try:
            result = simulate(setup.scene, integrator=self.integrator, dt=dt,
                              t_end=setup.case.horizon, save_every=save_every, **self.options)
        except SimulationError as error:
            return Unstable(str(error).split("; ")[0])
        finally:
            self.wall_time += time.perf_counter() - started
        total = result.energy["total"]
        limit = setup.energy_start + (GROWTH_LIMIT - 1.0) * setup.energy_scale
        if not np.all(total <= limit):
            worst = int(np.argmax(np.nan_to_num(total, nan=np.inf)))
            return Unstable(f"the total energy grew from {total[0]:.4g} J to {total[worst]:.4g} J "
                            f"at t = {result.t[worst]:.4g} s")
        frames = slice(None, None, every // save_every)
        model = setup.scene.model
        drift = float(np.max(model.joint_length_error(result.x[frames]))) if model.n_joints else math.nan
        distance = (min(float(np.min(result.contact_distance)), float(np.min(result.surface_distance)))
                    if setup.has_planes else math.nan)
        return Level(dt, result.x[frames], total[frames], drift, distance)


@dataclass
class Window:
    """The levels of a measurement: from ``start``, their dts and errors, how they were chosen."""

    start: int
    dts: np.ndarray
    errors: np.ndarray
    notes: list[str]
    floor_bound: bool  # the error floor, not the method, kept the window where it is


class Measurement:
    """Errors of one integrator's ladder against a reference, or by self-convergence when
    ``reference`` is None, and the choice of its window (see the module docstring)."""

    def __init__(self, ladder: Ladder, levels: int, order: int, reference: Reference | None):
        self.ladder, self.levels, self.order, self.reference = ladder, levels, order, reference

    def error(self, j: int) -> float:
        """Level j's error: to the reference, or to level j + 1."""
        x = self.ladder(j).x
        other = self.reference.x if self.reference is not None else self.ladder(j + 1).x
        return float(np.max(np.abs(x - other)))

    @property
    def count(self) -> int:
        """Errors per window: one per level, or one per pair of neighbours."""
        return self.levels if self.reference is not None else self.levels - 1

    def window(self, start: int) -> tuple[np.ndarray, np.ndarray]:
        """(dts, errors) of the window from level ``start`` (Unstable when a run of it is)."""
        js = range(start, start + self.count)
        return np.array([self.ladder.dt(j) for j in js]), np.array([self.error(j) for j in js])

    def floor(self, start: int) -> float:
        """Below this an error is not the method's: the reference's own error, or round-off."""
        round_off = ROUND_OFF * float(np.max(np.abs(self.ladder(start).x)))
        return max(round_off, 0.0 if self.reference is None else self.reference.error)

    def choose(self, stable_start: int, coarsest: int) -> Window:
        """The window (see the module docstring): from the first stable level, up while the
        finest error is within the floor's margin — first as predicted from the first level's
        error at the expected order, before the finer runs are made, then as measured — and
        then down while pre-asymptotic."""
        start, notes = stable_start, []
        floor = self.floor(start)
        margin = FLOOR_MARGIN * floor

        def coarser() -> bool:
            """Move the window a level up, if the frames allow it, that run is stable and it is
            not pre-asymptotic: its error ratio to the current first level shows the order
            (where that level's error is far enough above the floor, FLOOR_MARGIN × the margin,
            to tell: within 1 % of its value)."""
            nonlocal start
            if start <= coarsest:
                return False
            try:
                ratio = self.error(start - 1) / self.error(start)
            except Unstable:
                return False
            if (self.error(start) >= FLOOR_MARGIN * margin
                    and not abs(np.log2(ratio) - self.order) <= ORDER_TOLERANCE):
                return False
            start -= 1
            return True

        while self.error(start) / 2.0 ** (self.order * (self.count - 1)) < margin and coarser():
            pass
        dts, errors = self.window(start)
        while errors[-1] < margin and coarser():
            dts, errors = self.window(start)
        if start < stable_start:
            notes.append(f"coarsened ×{2 ** (stable_start - start)}: at finer steps the finest "
                          f"error would be within {FLOOR_MARGIN:g}× the error floor {floor:.1e} m")
        bound = start < stable_start or errors[-1] < margin
        refined = 0
        while pre_asymptotic(errors, dts, self.order) and refined < MAX_PRE_ASYMPTOTIC:
            if errors[-1] / 2.0 ** self.order < margin:
                bound = True
                break
            start, refined = start + 1, refined + 1
            dts, errors = self.window(start)
        if refined:
            notes.append(f"refined ×{2 ** refined}: coarser levels pre-asymptotic")
        if errors[-1] < margin:
            notes.append(f"the finest error is within {FLOOR_MARGIN:g}× the error floor {floor:.1e} m")
        return Window(start, dts, errors, notes, bound)


def order_off(errors: np.ndarray, dts: np.ndarray, order: int) -> bool:
    return not (np.all(errors > 0) and abs(slope(dts, errors) - order) <= ORDER_TOLERANCE)


def pre_asymptotic(errors: np.ndarray, dts: np.ndarray, order: int) -> bool:
    """Off the order over the window, and closer to it between the two finest levels than
    between the two coarsest: converging towards it as the steps shrink."""
    if not np.all(errors > 0) or errors.size < 3:
        return False
    local = np.log2(errors[:-1] / errors[1:]) / np.log2(dts[:-1] / dts[1:])
    return order_off(errors, dts, order) and abs(local[-1] - order) < abs(local[0] - order)


def stable_start(ladder: Ladder) -> tuple[int, list[str]]:
    """The first level from the scene's dt down whose run is stable, and a note when it is not
    the scene's dt."""
    start = 0
    while True:
        try:
            ladder(start)
            return start, [] if start == 0 else [
                f"unstable at the scene's dt = {ladder.dt(0):g} s ({ladder.runs[0].reason})"]
        except Unstable as unstable:
            if start == MAX_REFINEMENTS:
                raise Unstable(f"unstable down to dt = {ladder.dt(start):g} s ({unstable.reason})")
            start += 1


def measure(setup: SceneSetup, ladder: Ladder, levels: int, order: int) -> tuple[Window, str, float]:
    """The cell's window, its kind of reference and that reference's error estimate. Against
    the scene's reference where it has one; when that is off the order while the reference's
    own error set the floor, the reference may be what keeps the ladder out of the asymptotic
    range (a fifth-order error spans 10⁶ over four halvings): then by self-convergence, whose
    floor is round-off, with the order against the reference in the note."""
    first, notes = stable_start(ladder)
    coarsest = -setup.case.max_coarsening(setup.scene.dt)
    reference = setup.reference
    window = Measurement(ladder, levels, order, reference).choose(first, coarsest)
    if reference is None:
        kind, error = SELF_CONVERGENCE, math.nan
    else:
        kind, error = reference.kind, reference.error
        if (order_off(window.errors, window.dts, order) and window.floor_bound
                and reference.error > ROUND_OFF * float(np.max(np.abs(reference.x)))):
            against = slope(window.dts, window.errors) if np.all(window.errors > 0) else math.nan
            notes.append(f"self-convergence: against the {reference.kind} (error {reference.error:.1e} "
                         f"m) the order is {against:.2f}")
            window = Measurement(ladder, levels, order, None).choose(first, coarsest)
            kind, error = SELF_CONVERGENCE, math.nan
    window.notes[:0] = notes
    return window, kind, error


def run_cell(setup: SceneSetup, integrator: str, levels: int) -> Cell:
    """One cell of the matrix (see the module docstring)."""
    case = setup.case
    order = get(integrator).order
    model = setup.scene.model
    cell = Cell(integrator, case.scene, setup.kind, model.dim, model.n_particles, "failed", order,
                horizon=case.horizon, parameters=dict(case.parameters),
                options={**scene_options(setup.scene, integrator)[0], **matrix_options(integrator)})
    ladder = Ladder(setup, integrator)
    try:
        ladder(0)
    except HookeInputError as refusal:
        cell.status, cell.note = "n/a", str(refusal).splitlines()[0]
        return cell
    except Unstable:
        pass  # measure() moves the ladder
    try:
        window, cell.reference, cell.reference_error = measure(setup, ladder, levels, order)
        runs = [ladder(j) for j in range(window.start, window.start + levels)]
    except Unstable as unstable:
        cell.wall_time, cell.note = ladder.wall_time, f"failed: {unstable.reason}"
        return cell
    notes, errors = window.notes, window.errors
    cell.shift, cell.errors = window.start, errors.tolist()
    cell.dts = [run.dt for run in runs]
    if np.all(errors > 0):
        cell.measured_order = slope(window.dts, errors)
        cell.last_ratio = float(errors[-2] / errors[-1])
    measure_energy(setup, cell, runs)
    cell.joint_drift = [run.joint_drift for run in runs]
    cell.contact_distance = [run.contact_distance for run in runs]
    cell.wall_time = ladder.wall_time
    stated = LIMITATIONS.get((integrator, case.scene), "")
    if not order_off(errors, window.dts, order):
        cell.status = "ok"
        if stated:
            notes.append("a stated limitation of this cell no longer shows")
    elif stated:
        cell.status, cell.limitation = "limited", stated
    else:
        cell.status = "off"
    if cell.options.get("adaptive") is False:
        notes.insert(0, "adaptive=False: fixed steps of dt")
    cell.note = "; ".join(notes)
    return cell


def measure_energy(setup: SceneSetup, cell: Cell, runs: list[Level]) -> None:
    """The cell's energy errors, their order and the behaviour at dt₀ (see the module docstring)."""
    if setup.reference is None:
        targets = [run.energy for run in runs[1:]] if setup.non_conservative else (
            [np.full(setup.times.size, setup.energy_start)] * len(runs))
    else:
        targets = [setup.reference_energy()] * len(runs)
    deviations = [run.energy - target for run, target in zip(runs, targets)]
    cell.energy_errors = [float(np.max(np.abs(deviation))) for deviation in deviations]
    round_off = ENERGY_ROUND_OFF * setup.energy_scale
    errors = np.array(cell.energy_errors)
    clear = errors > FLOOR_MARGIN * round_off
    if clear.sum() >= 2:
        cell.energy_order = slope(np.array([run.dt for run in runs[:errors.size]])[clear], errors[clear])
    behaviour = energy_trend(deviations[0], round_off)
    if setup.non_conservative:
        behaviour += f" (physical: {', '.join(setup.non_conservative)})"
    cell.energy_behaviour = behaviour


def run_matrix(configuration: Configuration = FULL, integrators: list[str] | None = None,
               scenes: list[str] | None = None,
               on_cell: Callable[[Cell], None] | None = None) -> list[Cell]:
    """Every integrator (or those named) on every case of ``configuration`` (or those named)."""
    chosen = names() if integrators is None else list(integrators)
    cells = []
    for case in configuration.cases:
        if scenes is not None and case.scene not in scenes:
            continue
        setup = SceneSetup(case)
        for integrator in chosen:
            cell = run_cell(setup, integrator, configuration.levels)
            cells.append(cell)
            if on_cell is not None:
                on_cell(cell)
    return cells
