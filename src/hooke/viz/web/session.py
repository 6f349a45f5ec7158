"""One viewer connection's simulation: a scene, an integrator and a State, stepped in the server.

Contract: a :class:`Session` is driven by one thread at a time through :meth:`Session.tick`, which
applies the page's commands (see :mod:`.protocol`) in order, then, unless paused, advances by up
to ``steps_per_frame`` steps of the real hooke integrator, stopping early once ``frame_budget``
seconds have passed (default 12 ms: most of a 60 Hz frame, the rest left for sending and
drawing) so that a frame never waits for a long run. It returns the messages to send
(server → page, JSON objects with a ``type``):

- ``scene``: the scene just (re)started: name, description, dim, integrator, dt,
  steps_per_frame, its numeric ``parameters`` as form fields (name, value, integer, bounds:
  ``exclusive_minimum``, ``minimum``, ``maximum``),
  topology (``springs``, ``pinned``, ``joints``, ``planes``), ``surface`` (3D: the body's
  surface triangles, :meth:`hooke.Model.surface_triangles`, as particle index triples, those
  of tetrahedra facing out (:func:`hooke.mesh_topology.orient_outward`); [] in 1D and 2D),
  ``spheres`` ([{center, radius}] now), ``obstacles`` ([{vertices, faces}] per obstacle mesh at
  t = 0), ``gravity``, ``has_analytic``, ``tracked`` ([particle, coordinate] of the
  plotted position), ``energy_label`` (the energy plot's axis label, which names the zero of
  its energies: :func:`hooke.analysis.energy_reference`), ``observed`` (the observed motion
  drawn beside this run: {name, t: [first, last observed time]}, or null) with
  ``observed_note`` (why an observed motion the server was given is not drawn, or null) and the
  first ``frame``.
- ``settings``: integrator, dt and steps_per_frame after a ``set``.
- ``frame``: ``t``, ``steps``, ``paused``, positions ``x`` (n × d, rounded to 1e-6 m),
  ``step_ms`` (mean wall time of the last 100 steps), ``cursor``; ``energy`` {t, kinetic,
  potential, total} when the state changed (potential and total above the scene's energy zero;
  null where a value overflowed); ``position`` {t, numerical, analytic} with one
  sample per step since the last frame for scenes with an analytic solution; ``joint_error``
  (max | |x_j − x_i| − L | [m]) for models with joints; ``planes`` when planes move, ``spheres``
  when spheres move, ``obstacle_offsets`` (each obstacle's translation since t = 0) when
  obstacles move; ``observed`` {particles, x, rms} when an observed motion is drawn (the
  particles observed at t, their observed positions, the rms distance [m] of the simulated ones
  from them: :mod:`.observed`).
- ``error``: ``message`` and ``field`` (the input it is about, or null).

A command that fails (unknown scene or integrator, a parameter out of range or one that makes a
scene its builder refuses, named as that parameter in one line, an integrator that
refuses the model, a dt outside what a scene file allows with the scene's t_end — 1 to
``MAX_STEPS`` steps —, a drag target farther than ``DRAG_REACH`` times the scene's extent from
its centre) changes nothing and yields an ``error``. Work per frame is bounded by
``steps_per_frame`` (at most 10,000, :mod:`.protocol`) and the frame budget. A step that fails (non-finite state,
solver failure) keeps the last finite state, pauses and yields an ``error`` in the words of
``hooke run`` (the step, its time, the worst particle, the advice). Every message holds only
finite numbers when the state is finite, however large (positions are rounded only below 1e9).

Dragging attaches a critically damped spring from a particle to the cursor (:class:`CursorSpring`),
an external force of this session only. Its spring part is a potential term added to this
session's :class:`hooke.System` (so every integrator sees its force, and implicit ones its
Hessian); its damping is applied between steps as the exact decay v_i ← v_i·exp(−c h/m_i), the
same for every integrator and stable for all (a damping force inside the step would make the
Newton matrices of the implicit methods inconsistent, and without damping the particle would
ring about the cursor). The Model never changes and the reported energies leave the cursor out.
"""

from __future__ import annotations

import time
import tomllib
from contextlib import nullcontext
from collections import deque
from typing import Any

import numpy as np

from ...analysis import energy_reference
from ...errors import HookeError, HookeInputError
from ...integrators import get as get_integrator
from ...integrators.base import StepFailed
from ...io.scene_file import builtin_scene
from ...limits import MAX_STEPS
from ...memory import available_memory, format_bytes
from ...mesh_topology import orient_outward
from ...model import State
from ...motion import displacements
from ...obstacles import sphere_centers
from ...result import finite_or_none
from ...scene_setup import check_positive
from ...scenes import names as scene_names
from ...scenes.builders import parameter_schema
from ...simulate import advice, failure_text, scene_options
from ...system import System
from .observed import ObservedMotion, ObservedOverlay
from .protocol import Drag, Load, Pause, Release, Restart, Set, Step

# The page asks for these to be > 0 even where a builder would accept 0: a massless particle or a
# spring without stiffness shows nothing in the viewer.
POSITIVE_IN_VIEWER = ("mass", "stiffness")
# Size limits, so that one page cannot make the server build a model that exhausts it: an integer
# parameter (a count: grid size, chain length) is at most COUNT_FACTOR·max(its default in the scene
# file, 10), and a model at most MAX_PARTICLES particles (cloth2d at its largest, 160 × 120, has
# 19,200 particles, builds in ~1 s and steps in ~10 ms here).
COUNT_FACTOR = 4
MAX_PARTICLES = 50_000
# The cursor spring's stiffness is m_i·(DRAG_RATE/dt)², i.e. h·ω = 0.5 on that spring alone, and
# it is critically damped (c = 2 m_i ω): explicit integrators stay stable while dragging.
DRAG_RATE = 0.5
# A drag target lies within DRAG_REACH times the scene's extent (its particles' bounding box at the
# start and now, at least 1 m) of its centre on every axis: a target at 1e308 made the cursor's
# force overflow at the next step, which then blamed dt.
DRAG_REACH = 10.0
# A page builds a scene only while the machine has this much memory free (MemAvailable): each
# page is a process whose scene took up to 0.64 GiB (the 49,600-particle lattice, implicit Euler)
# and 5.9 GiB with newmark's sparse LU; 24 such pages of one client would take more than the
# machine has, and the kernel would then kill a process of its choosing.
MEMORY_RESERVE = 2**30


class StepTooLong(Exception):
    """Raised inside a step that has run too long (by the session process's alarm, :mod:`.worker`):
    an implicit method splitting a failing step of a large dt in two, 8 deep, ran for minutes."""


class CursorSpring:
    """Potential term ½ k |x_i − c|² pulling particle i toward the cursor c (when attached), and
    the critical damping of particle i's velocity that :meth:`damp` applies after each step.

    It follows the potential-term contract of :mod:`hooke.energies` with a fixed diagonal
    Hessian pattern, so the assembled matrices keep one sparsity pattern while it moves.
    """

    NAME = "cursor"

    def __init__(self) -> None:
        self.particle: int | None = None
        self.target = np.zeros(0)
        self.stiffness = 0.0
        self.rate = 0.0  # c/m_i [1/s]

    def attach(self, particle: int, target: np.ndarray, stiffness: float, mass: float) -> None:
        self.particle, self.target, self.stiffness = particle, target, stiffness
        self.rate = 2.0 * np.sqrt(stiffness / mass)

    def damp(self, state: State, h: float) -> State:
        """``state`` with v_i decayed over h (new arrays, so integrators that remember their last
        state by identity start afresh)."""
        if self.particle is None:
            return state
        v = state.v.copy()
        v[self.particle] *= np.exp(-self.rate * h)
        return State(state.t, state.x.copy(), v)

    def release(self) -> None:
        self.particle = None

    def active(self, model) -> bool:
        return True

    def value(self, model, x: np.ndarray) -> float:
        if self.particle is None:
            return 0.0
        d = x[self.particle] - self.target
        return 0.5 * self.stiffness * float(d @ d)

    def gradient(self, model, x: np.ndarray) -> np.ndarray:
        grad = np.zeros_like(x, dtype=float)
        if self.particle is not None:
            grad[self.particle] = self.stiffness * (x[self.particle] - self.target)
        return grad

    def hessian_structure(self, model):
        index = np.arange(model.n_particles * model.dim, dtype=np.int64)
        return index, index

    def hessian_values(self, model, x: np.ndarray, project_psd: bool = False) -> np.ndarray:
        values = np.zeros(model.n_particles * model.dim)
        if self.particle is not None:
            values[self.particle * model.dim:(self.particle + 1) * model.dim] = self.stiffness
        return values


def parameter_fields(scene) -> list[dict[str, Any]]:
    """The scene's numeric builder parameters as form fields: name, value, integer, bounds
    (none for a scene that lists its particles)."""
    source = tomllib.loads(scene.source) if scene.source else {}
    builder = source.get("builder")
    if builder is None:
        return []
    properties = parameter_schema(builder).get("properties", {})
    defaults = source.get("parameters", {})
    fields = []
    for name, value in scene.parameters.items():
        kind = properties.get(name, {}).get("type")
        if kind not in ("number", "integer") or isinstance(value, bool):
            continue
        field: dict[str, Any] = {"name": name, "value": value, "integer": kind == "integer"}
        if kind == "integer":
            field["maximum"] = COUNT_FACTOR * max(int(defaults.get(name, value)), 10)
        bounds = properties[name]
        if name in POSITIVE_IN_VIEWER or "exclusiveMinimum" in bounds:
            field["exclusive_minimum"] = max(bounds.get("exclusiveMinimum", 0), 0)
        elif "minimum" in bounds:
            field["minimum"] = bounds["minimum"]
        fields.append(field)
    return fields


def viewer_dt(scene, dt: float) -> float:
    """``dt`` if the scene's t_end is 1 to ``MAX_STEPS`` steps of it, as in a scene file (the
    viewer runs on past t_end, but a dt of 1e-300 s left the time creeping and is refused)."""
    dt = check_positive("dt", dt)
    low, high = scene.t_end / MAX_STEPS, scene.t_end
    if not low <= dt <= high:
        raise HookeInputError("dt", f"must be between {low:.3g} s and {high:.3g} s in the viewer "
                              f"(scene {scene.name}'s t_end = {high:g} s in 1 to {MAX_STEPS:.0e} "
                              "steps)", dt)
    return dt


def _index_pairs(model, name: str) -> list[list[int]]:
    return np.asarray(getattr(model, name, np.empty((0, 2))), dtype=np.int64).tolist()


class Session:
    """The simulation behind one page (see the module docstring for the messages)."""

    def __init__(self, scene: str, steps_per_frame: int = 8, frame_budget: float = 0.012,
                 observed: ObservedOverlay | None = None):
        self.overlay = observed
        self.steps_per_frame = steps_per_frame
        self.frame_budget = frame_budget
        self.cursor = CursorSpring()
        self._step_seconds: deque[float] = deque(maxlen=100)
        # Wraps each step; the session process sets one that stops a step with StepTooLong.
        self.step_limit = nullcontext
        self._open(scene, {}, None, None)

    # -- commands ---------------------------------------------------------------------------
    def tick(self, commands=()) -> list[dict[str, Any]]:
        """Apply ``commands``, advance one frame unless paused; the messages to send."""
        out: list[dict[str, Any]] = []
        for command in commands:
            try:
                reply = self.handle(command)
            except HookeError as error:
                out.append(error_message(error))
            else:
                if reply is not None:
                    out.append(reply)
        if not self.paused:
            self._advance(self.steps_per_frame, out)
        if self._changed:
            out.append(self.frame_message())
        return out

    def handle(self, command) -> dict[str, Any] | None:
        if isinstance(command, Load):
            _check_memory(command.scene)
            self._open(command.scene, {}, None, None)
            return self.scene_message()
        if isinstance(command, Restart):
            _check_memory(self.scene.name)
            self._open(self.scene.name, command.parameters, command.integrator, command.dt)
            return self.scene_message()
        if isinstance(command, Set):
            return self._set(command.integrator, command.dt, command.steps_per_frame)
        if isinstance(command, Pause):
            self.paused = command.paused
            self._changed = True
            return None
        if isinstance(command, Step):
            self.paused = True
            self._changed = True
            out: list[dict[str, Any]] = []
            self._advance(1, out)
            return out[0] if out else None
        if isinstance(command, Drag):
            self._drag(command.particle, command.target)
            return None
        if isinstance(command, Release):
            self.cursor.release()
            if self._held():  # back to the steps of `hooke run`
                self.stepper = self._stepper(self.scene, self.integrator, self.dt)
            self._changed = True
            return None
        raise TypeError(f"not a viewer command: {command!r}")  # pragma: no cover - protocol bug

    # -- building and stepping --------------------------------------------------------------
    def _stepper(self, scene, integrator: str, dt: float, held: bool = False):
        """A new System, with the cursor spring while a particle is ``held``, and an integrator
        on it; the scene's options that the integrator knows are passed on (e.g. soft3d's CG
        solver to either implicit Euler). Without the cursor the steps are ``hooke run``'s, bit
        for bit: any extra term, even one that adds nothing, takes the generic path instead of
        the fused kernels, whose round-off differs (cloth2d at the edge of symplectic Euler's
        stability blew up at t = 17.7 s on the generic path, not in ``hooke run``)."""
        system = System(scene.model)
        if held:
            system.terms.append(self.cursor)
        return get_integrator(integrator)(system, dt, **scene_options(scene, integrator)[0])

    def _held(self) -> bool:
        """Whether the current integrator's system has the cursor spring."""
        return self.cursor in self.stepper.system.terms

    def _open(self, name: str, parameters: dict[str, float], integrator: str | None,
              dt: float | None) -> None:
        """Build the scene and integrator, then (only if both succeed) start again from t = 0."""
        if not isinstance(name, str) or name not in scene_names():  # an array: no NumPy error
            raise HookeInputError("scene", f"unknown scene (built-in: {', '.join(scene_names())})", name)
        defaults = builtin_scene(name)
        fields = {field["name"]: field for field in parameter_fields(defaults)}
        parameters = dict(parameters)
        for key, value in parameters.items():
            if key not in fields:
                raise HookeInputError(f"parameters.{key}", f"is not a parameter of scene '{name}'", value)
            # Bounds before the cast to int: 1e300 is named as sent, not as its 301 digits.
            if fields[key]["integer"] and not float(value).is_integer():
                raise HookeInputError(f"parameters.{key}", "must be a whole number", value)
            bound = fields[key].get("exclusive_minimum")
            if bound is not None and not value > bound:
                raise HookeInputError(f"parameters.{key}", f"must be > {bound}", value)
            bound = fields[key].get("minimum")
            if bound is not None and not value >= bound:
                raise HookeInputError(f"parameters.{key}", f"must be >= {bound}", value)
            bound = fields[key].get("maximum")
            if bound is not None and value > bound:
                raise HookeInputError(f"parameters.{key}", f"must be <= {bound} in the viewer", value)
            if fields[key]["integer"]:  # JSON numbers arrive as floats; builders take counts as int
                parameters[key] = int(value)
        try:
            scene = builtin_scene(name, **parameters) if parameters else defaults
        except HookeInputError as error:
            raise parameters_error(error, fields, parameters) from None
        if scene.model.n_particles > MAX_PARTICLES:
            raise HookeInputError("parameters", f"make {scene.model.n_particles} particles; the "
                                  f"viewer takes at most {MAX_PARTICLES}", parameters)
        integrator = scene.integrator if integrator is None else integrator
        dt = viewer_dt(scene, scene.dt if dt is None else dt)
        try:
            stepper = self._stepper(scene, integrator, dt)
        except HookeInputError as error:  # blamed on what the page changed, parameters first
            changed = changed_parameters(fields, parameters)
            sent = (blamed_parameter(changed, parameters) if changed else ("dt", dt)
                    if dt != scene.dt else ("integrator", integrator))
            raise refused_error(error, *sent, integrator, dt) from None
        self.cursor.release()
        self.energy_zero, self.energy_label = energy_reference(scene)
        self.scene, self.integrator, self.dt, self.stepper = scene, integrator, dt, stepper
        self.state = scene.state.copy()
        self.steps = 0
        self._step_seconds.clear()
        free = np.flatnonzero(~scene.model.pinned)
        self.tracked = (int(free[0]) if free.size else 0, 0)
        self._samples: list[tuple[float, float]] = [(self.state.t, self._tracked_value())]
        self.observed = None if self.overlay is None else self.overlay.motion_for(scene)
        self._new_state = True
        self._changed = False
        self.paused = False

    def _set(self, integrator: str | None, dt: float | None,
             steps_per_frame: int | None) -> dict[str, Any]:
        if integrator is not None or dt is not None:
            integrator = self.integrator if integrator is None else integrator
            sent = ("integrator", integrator) if dt is None else ("dt", dt)
            dt = self.dt if dt is None else viewer_dt(self.scene, dt)
            if self.cursor.particle is not None:  # the held particle's spring at the new dt
                self._cursor_stiffness(self.cursor.particle, self.cursor.target, dt, "dt", dt)
            try:
                self.stepper = self._stepper(self.scene, integrator, dt)
            except HookeInputError as error:
                raise refused_error(error, *sent, integrator, dt) from None
            self.integrator, self.dt = integrator, dt
            self._step_seconds.clear()
            if self.cursor.particle is not None:
                self._drag(self.cursor.particle, self.cursor.target)
        if steps_per_frame is not None:
            self.steps_per_frame = steps_per_frame
        return {"type": "settings", "integrator": self.integrator, "dt": self.dt,
                "steps_per_frame": self.steps_per_frame}

    def _drag(self, particle: int, target) -> None:
        model = self.scene.model
        if particle >= model.n_particles:
            raise HookeInputError("particle", f"must be < {model.n_particles}", particle)
        if model.pinned[particle]:
            raise HookeInputError("particle", "is pinned and cannot be dragged", particle)
        target = np.asarray(target, dtype=float)
        if target.shape != (model.dim,):
            raise HookeInputError("target", f"must have {model.dim} coordinate(s)", target.tolist())
        points = np.concatenate([model.x0, self.state.x])
        low, high = points.min(axis=0), points.max(axis=0)
        centre, extent = 0.5 * (low + high), max(float(np.max(high - low)), 1.0)
        if np.any(np.abs(target - centre) > DRAG_REACH * extent):
            raise HookeInputError(
                "target", f"must lie within {DRAG_REACH * extent:.3g} m of the scene's centre "
                f"[{', '.join(f'{c:.3g}' for c in centre)}] on every axis ({DRAG_REACH:g} times "
                f"its extent, {extent:.3g} m)", target.tolist())
        mass = float(model.mass[particle])
        stiffness = self._cursor_stiffness(particle, target, self.dt, "particle", particle)
        self.cursor.attach(particle, target, stiffness, mass)
        if not self._held():  # the state carries on; the integrator's own history starts afresh
            self.stepper = self._stepper(self.scene, self.integrator, self.dt, held=True)
        self._changed = True

    def _cursor_stiffness(self, particle: int, target: np.ndarray, dt: float, field: str,
                          value: Any) -> float:
        """The cursor spring's stiffness m_i·(DRAG_RATE/dt)² for ``particle`` at ``dt``, or a
        HookeInputError naming ``field`` if it, its damping rate or its pull on the particle now
        overflows: a particle of 1e300 kg dragged at dt = 1e-7 s got a spring of inf N/m and
        every step then failed "non-finite … try a smaller dt", which only made it worse."""
        mass = float(self.scene.model.mass[particle])
        with np.errstate(over="ignore", invalid="ignore"):
            stiffness = mass * (DRAG_RATE / dt) ** 2
            pull = stiffness * float(np.max(np.abs(self.state.x[particle] - target)))
            rate = 2.0 * np.sqrt(stiffness / mass)
        if not (np.isfinite(stiffness) and np.isfinite(pull) and np.isfinite(rate)):
            raise HookeInputError(field, f"makes the cursor spring on particle {particle} "
                                  f"(m·({DRAG_RATE:g}/dt)² with m = {mass:.3g} kg, dt = {dt:g} s) "
                                  "overflow; it cannot be dragged at this dt", value)
        return stiffness

    def _advance(self, n_steps: int, out: list[dict[str, Any]]) -> None:
        # The limit is armed once a tick (per step it cost light scenes 7 µs of 11): the frame
        # budget ends a tick of light steps long before, so only one long step reaches it.
        # A step that overflows is told in hooke run's words (StepFailed): NumPy's warning, an
        # exception where warnings are errors, was reported as "the step … failed: overflow
        # encountered in multiply" instead.
        try:
            with self.step_limit(), np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                self._steps(n_steps, out)
        except StepTooLong as error:  # the integrator may be mid-step: a new one goes on
            self.stepper = self._stepper(self.scene, self.integrator, self.dt, self._held())
            self._stop(out, f"the step from t = {self.state.t:.6g} with {self.integrator} and "
                            f"dt = {self.dt:g} s used more than {error} s of CPU time and was "
                            f"stopped; paused at t = {self.state.t:.6g}. Try a smaller dt, "
                            "an explicit integrator or fewer particles")

    def _steps(self, n_steps: int, out: list[dict[str, Any]]) -> None:
        started = time.perf_counter()
        for _ in range(n_steps):
            before = time.perf_counter()
            try:
                new = self.stepper.advance(self.state, self.state.t + self.dt, 1)
            except StepFailed as failure:  # as `hooke run` says it, with its advice
                self._stop(out, f"{failure_text(failure, self.steps + 1, self.state.t + self.dt)}; "
                                f"paused at the last finite state (t = {self.state.t:.6g}). "
                                f"{advice(self.integrator)}")
                return
            except StepTooLong:  # said by _advance, which armed the limit
                raise
            except Exception as error:  # any other failure stops this run, never the server
                self._stop(out, f"the step from t = {self.state.t:.6g} failed: {error} (paused)")
                return
            self._step_seconds.append(time.perf_counter() - before)
            self.state = self.cursor.damp(new, self.dt)
            self.steps += 1
            self._samples.append((new.t, self._tracked_value()))
            self._new_state = self._changed = True
            if time.perf_counter() - started > self.frame_budget:
                return

    def _stop(self, out: list[dict[str, Any]], message: str) -> None:
        self.paused = True
        self._changed = True
        out.append({"type": "error", "message": message, "field": None})

    def _tracked_value(self) -> float:
        particle, coordinate = self.tracked
        return float(self.state.x[particle, coordinate])

    # -- messages ---------------------------------------------------------------------------
    def scene_message(self) -> dict[str, Any]:
        """The ``scene`` message, with the frame that starts the run (send it once per start)."""
        scene, model = self.scene, self.scene.model
        return {
            "type": "scene", "scene": scene.name, "description": scene.description,
            "dim": model.dim, "n_particles": model.n_particles,
            "integrator": self.integrator, "dt": self.dt, "steps_per_frame": self.steps_per_frame,
            "parameters": parameter_fields(scene),
            "springs": _index_pairs(model, "spring_indices"),
            "joints": _index_pairs(model, "joint_indices"),
            "pinned": np.flatnonzero(model.pinned).tolist(),
            "planes": self._planes(),
            "surface": orient_outward(model.surface_triangles(), model.tetrahedra,
                                      self.state.x).tolist() if model.dim == 3 else [],
            "spheres": self._spheres(),
            "obstacles": _obstacles(model),
            "gravity": np.asarray(model.gravity, dtype=float).tolist(),
            "has_analytic": scene.has_analytic, "tracked": list(self.tracked),
            "observed": {"name": self.observed.name,
                         "t": [float(self.observed.t[0]), float(self.observed.t[-1])]}
            if isinstance(self.observed, ObservedMotion) else None,
            "observed_note": self.observed if isinstance(self.observed, str) else None,
            "energy_label": self.energy_label, "frame": self.frame_message(),
        }

    def frame_message(self) -> dict[str, Any]:
        state, model = self.state, self.scene.model
        message: dict[str, Any] = {
            "type": "frame", "t": state.t, "steps": self.steps, "paused": self.paused,
            "x": rounded(state.x).tolist(),
            "step_ms": 1e3 * float(np.mean(self._step_seconds)) if self._step_seconds else None,
            "cursor": None if self.cursor.particle is None else
            {"particle": self.cursor.particle, "target": self.cursor.target.tolist()},
        }
        if self._new_state:
            system = self.stepper.system
            # An energy that overflows is sent as null; NumPy's warning about it is not news (in
            # a notebook, or under pytest's warnings-as-errors, it raised out of tick at a
            # blow-up's last finite state, v ~ 1e217 m/s).
            with np.errstate(over="ignore", invalid="ignore"):
                potential = sum(value for key, value in system.potential_energies(state.x).items()
                                if key != CursorSpring.NAME) - self.energy_zero
                kinetic = system.kinetic_energy(state.v)
            message["energy"] = {"t": state.t, "kinetic": finite_or_none(kinetic),
                                 "potential": finite_or_none(potential),
                                 "total": finite_or_none(kinetic + potential)}
            if getattr(model, "n_joints", 0):
                message["joint_error"] = finite_or_none(np.max(model.joint_length_error(state.x)))
        if isinstance(self.observed, ObservedMotion):
            message["observed"] = self.observed.message(state.t, state.x)
        if self.scene.has_analytic and self._samples:
            times = np.array([t for t, _ in self._samples])
            particle, coordinate = self.tracked
            message["position"] = {
                "t": times.tolist(), "numerical": [value for _, value in self._samples],
                "analytic": self.scene.analytic(times)[:, particle, coordinate].tolist()}
        if getattr(model, "plane_motions", ()):
            message["planes"] = self._planes()
        if model.sphere_motions:
            message["spheres"] = self._spheres()
        if model.obstacle_motions:
            message["obstacle_offsets"] = displacements(
                model.obstacle_motions, model.n_obstacles, model.dim, self.state.t).tolist()
        self._samples = []
        self._new_state = self._changed = False
        return message

    def _planes(self) -> list[dict[str, list[float]]]:
        """Every contact plane (normal, point) at the current time."""
        model = self.scene.model
        normals = np.asarray(getattr(model, "plane_normals", np.empty((0, model.dim))))
        points = np.array(getattr(model, "plane_points", np.empty((0, model.dim))), dtype=float)
        for k, motion in getattr(model, "plane_motions", ()):
            points[k] += motion(self.state.t)[0] - motion(0.0)[0]
        return [{"normal": n.tolist(), "point": p.tolist()} for n, p in zip(normals, points)]

    def _spheres(self) -> list[dict[str, Any]]:
        """Every contact sphere (circle in 2D): centre at the current time, radius."""
        model = self.scene.model
        return [{"center": c.tolist(), "radius": float(r)}
                for c, r in zip(sphere_centers(model, self.state.t), model.sphere_radii)]


def _obstacles(model) -> list[dict[str, list]]:
    """Each obstacle mesh at t = 0: its own vertices and its faces (segments or triangles)
    numbered within them."""
    out = []
    for k in range(model.n_obstacles):
        mine = np.flatnonzero(model.obstacle_of_vertex == k)
        faces = model.obstacle_faces[np.isin(model.obstacle_faces[:, 0], mine)]
        out.append({"vertices": model.obstacle_vertices[mine].tolist(),
                     "faces": (faces - mine[0]).tolist()})
    return out


def rounded(x: np.ndarray) -> np.ndarray:
    """``x`` rounded to 1e-6 (shorter messages) where that changes it: from 1e9 on a float has no
    digits below 1e-6, and rounding a blown-up 1e307 would overflow to inf."""
    out = x.astype(float)
    small = np.abs(out) < 1e9
    out[small] = np.round(out[small], 6)
    return out


# The fields of the page's commands (:mod:`.protocol`): an error naming one of them, or a
# parameter, names what the page sent; any other (``particles[1].mass``) is the model's.
PAGE_FIELDS = ("scene", "integrator", "dt", "steps_per_frame", "particle", "target")


def changed_parameters(fields: dict[str, dict[str, Any]], parameters: dict[str, float]) -> list[str]:
    """The names of the page's ``parameters`` that differ from the scene's own values."""
    return [key for key, value in parameters.items() if value != fields[key]["value"]]


def blamed_parameter(changed: list[str], parameters: dict[str, float]) -> tuple[str, Any]:
    """The field and value an error about the page's ``parameters`` names: the one ``changed``
    if only one is, else all of them."""
    return ((f"parameters.{changed[0]}", parameters[changed[0]]) if len(changed) == 1
            else ("parameters", parameters))


def named_for_page(error: HookeInputError, field: str, value: Any, why: str) -> HookeInputError:
    """``error`` (one line or several) as one line naming the page's ``field`` and ``value``:
    ``why``, then what was refused in parentheses; an error naming a page's field already is
    returned as it is."""
    if (error.field or "").startswith("parameters") or error.field in PAGE_FIELDS:
        return error
    problems = getattr(error, "problems", None) or [str(error)]
    return HookeInputError(field, f"{why} ({'; '.join(problems)})", value)


def parameters_error(error: HookeInputError, fields: dict[str, dict[str, Any]],
                     parameters: dict[str, float]) -> HookeInputError:
    """``error`` from building a scene with the page's ``parameters``, in one line naming the
    parameter (the one that differs from the scene's own value, if only one does) the page can
    mark: the builder names the model's fields (``particles[1].x``, ``planes[0]``, one line each),
    which no input on the page is."""
    changed = changed_parameters(fields, parameters)
    return named_for_page(error, *blamed_parameter(changed, parameters),
                          "makes a scene that cannot be built")


def refused_error(error: HookeInputError, field: str, value: Any, integrator: str,
                  dt: float) -> HookeInputError:
    """``error`` from setting up ``integrator`` at ``dt`` on the page's scene, naming the
    page's ``field`` (a parameter, ``dt`` or ``integrator``): implicit_euler's mass check named
    ``particles[1].mass`` for a page that had sent ``parameters.mass`` (or ``stiffness``)."""
    return named_for_page(error, field, value, f"integrator '{integrator}' refuses the scene's "
                          f"model at dt = {dt:g} s")


def _check_memory(scene) -> None:
    """Refuse to build another scene while the machine has less than ``MEMORY_RESERVE`` free (a
    page's first scene, opened with its process, is always built: the page needs one)."""
    free = available_memory()
    if free < MEMORY_RESERVE:
        raise HookeInputError("scene", f"cannot be built now: the server's machine has "
                              f"{format_bytes(free)} of memory free, less than the "
                              f"{format_bytes(MEMORY_RESERVE)} a page keeps in reserve; close "
                              "other pages or try again later", scene)


def error_message(error: HookeError) -> dict[str, Any]:
    """An ``error`` message for a rejected command, naming the input field when there is one."""
    return {"type": "error", "message": str(error), "field": getattr(error, "field", None)}
