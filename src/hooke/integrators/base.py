"""The step contract every integrator follows, and the registry that lists them.

Contract:

- An integrator is a class with ``name`` (its one-word handle), ``order`` (its global order of
  accuracy with fixed steps on smooth problems; the convergence tests assert it), ``defaults``
  (its options and their default values) and ``step(state) -> State`` which returns the state at
  ``state.t + dt``; it never modifies its input and never moves a pinned particle.
- ``advance(state, t_target, n_steps)`` reaches ``t_target``: fixed-step integrators take
  ``n_steps`` steps of ``dt``; adaptive ones choose their own steps, never past ``t_bound`` (the
  end of the run, set by ``simulate``; inf by default), and return the state at ``t_target``.
  It checks every step: a step that gives a non-finite state, or raises (a Newton failure, a
  linear solver refusing infs), raises :class:`StepFailed` with the last finite state, so the run
  stops at the exact step whatever its save interval (:mod:`hooke.simulate` words the message).
  An integrator whose ``frames_in_blocks()`` is True also has ``advance_frames(state, times,
  x_out, v_out)``: the states ``advance`` would return at each of ``times`` in turn, bit for bit,
  written into (frames, n, d) arrays in one call (a :class:`StepFailed` then carries the frames
  written before it as ``frames``).
- ``stats`` counts what a run did (``steps``, and ``rejected`` or ``newton_iterations`` where they
  apply).
- Resume: ``checkpoint()`` returns everything besides the state that the next step depends on —
  counters, a step size, accelerations or multipliers carried over, the point where a reused
  factorisation was made — as a dict of str to a number, a string or a NumPy array, with the same
  keys and shapes after every step (the store writes it with every saved frame). ``restore()`` on
  a fresh integrator of the same class and options takes it back, and the next ``step`` or
  ``advance`` — from the state the checkpoint was taken at — is then bit-identical to the
  uninterrupted run's (tests/test_store.py checks every registered integrator). Subclasses extend
  both and call ``super()``.
- Options: every problem at once, one line each — options the integrator does not know, a
  non-integer for an option whose default is a count (``max_iterations=2.5``) or one above
  ``MAX_COUNT_OPTION``, and each value ``check_options`` refuses. ``check_span(t_start, t_end)``,
  asked before a run, refuses an option that cannot take it from t_start to t_end (rk45's
  ``max_step``, ``first_step``).
- Motions: a fixed-step integrator refuses a sinusoid its steps sample fewer than twice per
  period (:mod:`.sampling`; ``motion_samples_per_dt``: xpbd's substeps, none for rk45's
  adaptive steps).
- Masses: an integrator whose step solves with M + c·h²·K sets ``stiffness_in_step_matrix`` and
  refuses a model whose masses that matrix cannot resolve at its dt (:mod:`.resolution`).
- ``@register`` enrolls a class in the registry; every generic test is parametrised over it.
- Capabilities: an integrator declares ``supports_joints`` and ``supports_contact`` (contact
  planes, spheres, obstacles and, with self-contact, surfaces: the barriers, their collision
  detection and lagged friction); one that lacks a capability
  refuses a model that needs it, naming the integrators that have it (``CAPABILITIES``).
- Joints: integrators of the unconstrained ODE (explicit, Runge–Kutta) inherit
  :class:`ConstraintForces`: the joints act through ``System.acceleration`` with the stabilisation
  chosen by their options (``stabilization``, ``k_c``, ``beta_c``, ``baumgarte_alpha``,
  ``baumgarte_beta``; see :mod:`hooke.constraints`). These options are accepted and validated
  for models without joints too, where they do nothing, so one set of options can drive a study
  over several scenes.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import numpy as np

from ..constraints import STABILIZATION_GAINS, JointForces, Stabilization, start_on_joints
from ..errors import (HookeInputError, SimulationError, is_count, is_number, raise_all,
                      python_scalars)
from ..limits import MAX_COUNT_OPTION
from ..model import State
from .compiled import all_finite
from .resolution import check_mass_resolution
from .sampling import check_motion_sampling

_REGISTRY: dict[str, type["Integrator"]] = {}
NON_FINITE = "the state became non-finite"
# (capability flag, the Model's count of what needs it, its name in the refusal)
CAPABILITIES = (("supports_joints", "n_joints", "joints"),
                ("supports_contact", "n_planes", "contact planes"),
                ("supports_contact", "n_contact_faces", "contact between surfaces"),
                ("supports_contact", "n_spheres", "contact spheres"),
                ("supports_contact", "n_obstacles", "obstacles"))


class StepFailed(SimulationError):
    """A step gave no finite state. ``last`` is the finite state it started from, ``bad`` the
    non-finite state it gave (None when it raised instead), ``reason`` what went wrong and
    ``advice`` what to change, when a smaller dt is not it (else None)."""

    def __init__(self, reason: str, last: State, bad: State | None = None,
                 advice: str | None = None):
        super().__init__(reason)
        self.reason, self.last, self.bad, self.advice = reason, last, bad, advice


# A model number above this (√ of the largest float) overflows when two of them meet in a step.
OVERFLOWING = float(np.sqrt(np.finfo(float).max))
# What a failing step raises besides HookeInputError: SimulationError (Newton failures),
# LinAlgError, SciPy's "array must not contain infs or NaNs", SuperLU's "exactly singular".
STEP_ERRORS = (ArithmeticError, ValueError, RuntimeError)


def is_finite(state: State) -> bool:
    """Whether every position and velocity is finite: the test run after every step."""
    return all_finite(np.ascontiguousarray(state.x), np.ascontiguousarray(state.v))


class Integrator:
    """The base of every integrator: options checked on construction, the step contract of the
    module docstring; ``system`` is the :class:`hooke.system.System` it steps."""

    name: ClassVar[str]
    order: ClassVar[int]
    summary: ClassVar[str] = ""
    adaptive: ClassVar[bool] = False
    defaults: ClassVar[dict[str, Any]] = {}
    supports_joints: ClassVar[bool] = False
    supports_contact: ClassVar[bool] = False
    stiffness_in_step_matrix: ClassVar[bool] = False

    def __init__(self, system, dt: float, /, **options: Any):
        for flag, count, what in CAPABILITIES:
            if getattr(system.model, count) and not getattr(self, flag):
                able = ", ".join(name for name, cls in _REGISTRY.items() if getattr(cls, flag))
                raise HookeInputError("integrator", f"'{self.name}' does not handle {what} "
                                      f"(integrators that do: {able})", self.name)
        if self.stiffness_in_step_matrix:
            check_mass_resolution(system.model, float(dt), self.name)
        known = ", ".join(sorted(self.defaults)) or "none"
        problems = [HookeInputError(key, f"is not an option of integrator '{self.name}' (its "
                                    f"options: {known})", options.pop(key))
                    for key in sorted(set(options) - set(self.defaults))]
        self.system = system
        self.dt = float(dt)
        self.t_bound = np.inf  # the end of the run: adaptive steps stop there
        self.options = {**self.defaults, **python_scalars(options)}  # stored as JSON
        for key, value in options.items():  # a count takes an integer: 2.5 is not quietly 2
            default = self.defaults[key]
            if is_count(default) and not (is_count(value) and value <= MAX_COUNT_OPTION):
                problems.append(HookeInputError(key, f"must be an integer (its default is {default})"
                                                if not is_count(value) else
                                                f"must be at most {MAX_COUNT_OPTION} (per step; "
                                                "for more, take a smaller dt)", value))
                self.options[key] = default
            # a name takes a str (or None, or a number, where its check allows it: iterations
            # = 'auto' or a count): a NumPy array compared with the known names was a raw
            # error, or ["projection"] matched "projection"
            # (an int too, a bool or one past float64's range: the option's own check names
            # what it takes, as "must be a name" misled for iterations=True or first_step=10**400)
            if isinstance(default, str) and not (value is None or isinstance(value, str)
                                                 or is_number(value)
                                                 or isinstance(value, (int, np.integer, np.bool_))):
                problems.append(HookeInputError(key, f"must be a name (a str; its default is "
                                                f"{default!r})", value))
                self.options[key] = default
        problems += self._option_problems()  # reported together with the unknown options
        problems += [HookeInputError(key, f"has no effect in integrator '{self.name}' with "
                                     f"{reason}; leave it out", value)
                     for key, value in python_scalars(options).items()
                     if not problems and not _is_default(value, self.defaults[key])
                     and (reason := self.inert_reason(self.options, key))]
        raise_all(problems)
        check_motion_sampling(system.model, self.dt, self.name, self.motion_samples_per_dt())
        self.stats: dict[str, int] = {"steps": 0}

    def consistent_start(self, state: State) -> State:
        """The state a run's first step starts from, given its initial ``state`` (``simulate``
        asks once, not on a resume): here ``state`` itself."""
        return state

    def motion_samples_per_dt(self) -> int | None:
        """How many times per dt the steps evaluate the prescribed motions at fixed times (1:
        once per step); None where adaptive steps follow them (:mod:`.sampling`)."""
        return 1

    def check_options(self) -> None:
        """Validate ``self.options``; raise HookeInputError naming the option."""

    @classmethod
    def inert_reason(cls, options: dict, key: str) -> str | None:
        """Why the option ``key`` takes no part in a run with ``options`` (the other options
        set so: "stabilization = 'projection'"), or None when it does. An option given that
        would change nothing is refused (``-O k_c=5`` with "projection" ran as if not given);
        a scene's own is dropped (:func:`hooke.simulate.plan`). Here: none."""
        return None

    def _option_problems(self) -> list[HookeInputError]:
        """Every problem :meth:`check_options` finds, though it stops at the first: an option it
        refuses is set back to its default and the check runs again."""
        problems: list[HookeInputError] = []
        for _ in range(len(self.options) + 1):
            try:
                self.check_options()
                break
            except HookeInputError as error:
                key = getattr(error, "field", None)
                if problems and key == getattr(problems[-1], "field", None):
                    break  # its default fails too, with another option's value (newmark's β
                    # with γ): the value given was named already
                problems.append(error)
                if key not in self.defaults or self.options[key] is self.defaults[key]:
                    break  # not one option's fault (or its default's): nothing to set back
                self.options[key] = self.defaults[key]
        return problems

    def positive_option(self, key: str, allow_inf: bool = False) -> float:
        """The option ``key`` as a float; HookeInputError unless it is a number > 0."""
        value = self.options[key]
        if is_number(value) and np.isinf(value) and value > 0 and not allow_inf:  # inf is > 0
            raise HookeInputError(key, f"must be a finite number > 0 for integrator '{self.name}'",
                                  value)
        if (not is_number(value) or np.isnan(value) or (np.isinf(value) and not allow_inf)
                or value <= 0):
            raise HookeInputError(key, f"must be a number > 0 for integrator '{self.name}'", value)
        return float(value)

    def tolerance_option(self, key: str, least: float, why: str) -> float:
        """The tolerance ``key``: a number > 0 (:meth:`positive_option`) and at least ``least``,
        below which float64 cannot meet it, ``why`` says how (rk45's rtol 1e-300 made the
        starting step NaN and the run hung; implicit_euler's tol 1e-300 ran 100 Newton
        iterations per step to fail with "try a smaller dt")."""
        value = self.positive_option(key)
        if value < least:
            raise HookeInputError(key, f"must be at least {least:.3g} for integrator "
                                  f"'{self.name}' ({why})", self.options[key])
        return value

    @classmethod
    def least_tol(cls, model, dt: float) -> float:
        """The least ``tol`` it takes for ``model`` at ``dt`` (here: any > 0; implicit_euler's
        is set by the round-off of the positions)."""
        return 0.0

    def check_span(self, t_start: float, t_end: float) -> None:
        """Refuse, naming the option, an option that cannot take a run from ``t_start`` to
        ``t_end`` in the steps a run may have (``simulate`` asks before the run; here: none)."""

    def checkpoint(self) -> dict[str, Any]:
        """What a resumed run needs besides the state to continue exactly (see the contract)."""
        return {"stats": json.dumps(self.stats)}

    def restore(self, checkpoint: dict[str, Any]) -> None:
        """Take back what :meth:`checkpoint` returned (see the contract)."""
        if "stats" in checkpoint:
            self.stats.update(stored_counts(checkpoint["stats"]))

    def step(self, state: State) -> State:  # pragma: no cover - abstract
        """The state at ``state.t + dt``."""
        raise NotImplementedError

    def advance(self, state: State, t_target: float, n_steps: int) -> State:
        """The state at ``t_target``, every step checked (see the contract)."""
        for _ in range(n_steps):
            state = self.checked_step(state)
        return State(float(t_target), state.x, state.v)

    def frames_in_blocks(self) -> bool:
        """Whether ``advance_frames(state, times, x_out, v_out)`` computes a block of frames in
        one call (rk45's and the α-methods' compiled steps); else ``simulate`` calls ``advance``
        per frame."""
        return False

    def checked_step(self, state: State) -> State:
        """``step``, raising :class:`StepFailed` when it fails or gives a non-finite state."""
        new = self.guarded(lambda: self.step(state), state)
        if not is_finite(new):
            raise StepFailed(NON_FINITE, state, new)
        return new

    def guarded(self, work, state: State):
        """``work()``; a failure of it (``STEP_ERRORS``) raised as :class:`StepFailed` from
        ``state``, the state it started from."""
        try:
            return work()
        except (StepFailed, HookeInputError, NotImplementedError):
            raise
        except STEP_ERRORS as error:
            raise self.failed(error, state) from error

    def failed(self, error: Exception, state: State) -> StepFailed:
        """The :class:`StepFailed` for an error (of ``STEP_ERRORS``) raised by a step from ``state``."""
        model = self.system.model
        scales = (("mass", model.mass, "kg"), ("stiffness", model.spring_stiffness, "N/m"),
                  ("damping", model.spring_damping, "N·s/m"))
        largest = {name: float(np.max(values, initial=0.0)) for name, values, _ in scales}
        if (isinstance(error, ValueError) and "infs or NaNs" in str(error)
                and max(largest.values()) > OVERFLOWING):
            # SciPy's refusal of a matrix whose entries overflowed: the model's scale, not dt (a
            # NaN from a motion or a state is left in SciPy's words)
            shown = ", ".join(f"{name} {largest[name]:.3g} {unit}" for name, _, unit in scales)
            return StepFailed(f"{self.name}: a number inside the step overflowed to inf or NaN "
                              f"from a finite state (largest {shown})", state,
                              advice="Give the model numbers of a smaller scale (other units).")
        words = f"{type(error).__name__}: {error}"
        if isinstance(error, SimulationError):
            return StepFailed(str(error), state, advice=error.advice)
        if ((isinstance(error, ZeroDivisionError) or "infs or NaNs" in str(error))
              and is_finite(state)):
            # a joint whose ends met, a matrix of overflowed entries from a finite state: Python's
            # or SciPy's words alone say nothing of the blow-up that made them
            reason = (f"{self.name}: a number inside the step became inf or NaN: the motion "
                      f"blew up ({words})")
        else:
            reason = f"{self.name}: {words}"
        return StepFailed(reason, state)

    def new_state(self, t: float, x: np.ndarray, v: np.ndarray, pins_placed: bool = False) -> State:
        """The state at t with pinned particles placed exactly (no round-off from stage sums;
        ``pins_placed``: the caller has done that already) and the joints' end-of-step work."""
        if not pins_placed:
            self.system.apply_pins(x, v, t)
        if self.system.joint_forces is not None:
            x, v = self.system.joint_forces.finish_step(x, v, t)
        return State(t, x, v)

    def newton_failure(self, iterations: int, t: float, details: str,
                       advice: str | None = None) -> SimulationError:
        """The error of a step whose Newton solve stopped unconverged after ``iterations`` at
        ``t``; ``details`` shows its last residuals and tolerance; ``advice``, what to change
        when a smaller dt cannot help (the error's ``advice``), else it says "try a smaller dt".
        (A line search that fails in the first iteration is not "0 iterations": it is said as
        the first.)"""
        done = ("in its first iteration" if iterations == 0 else
                f"in {iterations} iteration{'' if iterations == 1 else 's'}")
        error = SimulationError(f"{self.name}: Newton did not converge {done} at t = {t:.6g} "
                                f"({details})" + ("" if advice else "; try a smaller dt"))
        error.advice = advice
        return error


class ConstraintForces:
    """Mixin for integrators of the unconstrained ODE: joints act as constraint forces.

    A class using it adds ``STABILIZATION_DEFAULTS`` to its ``defaults`` and calls
    :meth:`configure_joints` from ``check_options``.
    """

    supports_joints: ClassVar[bool] = True

    @classmethod
    def inert_reason(cls, options: dict, key: str) -> str | None:
        """The stabilisation's gains take part only in their method: k_c and beta_c in
        "correction", baumgarte_alpha and baumgarte_beta in "baumgarte"."""
        method = STABILIZATION_GAINS.get(key)
        stabilization = options.get("stabilization")
        if method is None or not isinstance(stabilization, (str, type(None))) \
                or stabilization == method:
            return super().inert_reason(options, key)  # (not a name: refused by its own check)
        return f"stabilization = {stabilization!r} (a gain of stabilization {method!r})"

    def configure_joints(self) -> None:
        """Give the system's joints their constraint forces with the chosen stabilisation."""
        stabilization = Stabilization.from_options(self.options, self.name)
        if self.system.joints is not None:
            self.system.joint_forces = JointForces(self.system.joints, stabilization)

    def consistent_start(self, state: State) -> State:
        """With "projection": ``state`` put on the joints (:func:`state_on_joints`)."""
        forces = self.system.joint_forces
        if forces is None or not forces.projects:
            return state
        return state_on_joints(forces.joints, state)


def state_on_joints(joints, state: State, tolerance: float | None = None) -> State:
    """``state``, or where the joints do not hold (to ``tolerance``) or its velocities change
    their lengths, ``state`` projected onto them at its time (:func:`start_on_joints`); the
    initial frame keeps the state given. ``joints`` None: ``state``."""
    if joints is None:
        return state
    x, v = start_on_joints(joints, state.x, state.v, state.t, tolerance)
    return state if x is state.x and v is state.v else State(state.t, x, v)


def _is_default(value, default) -> bool:
    """Whether an option given is its default (given or not, the run is the same)."""
    return type(value) is type(default) and (value == default or value != value != default)


def register(cls: type[Integrator]) -> type[Integrator]:
    """Class decorator: enroll ``cls`` in the registry under ``cls.name``."""
    if cls.name in _REGISTRY:
        raise ValueError(f"integrator {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def get(name: str) -> type[Integrator]:
    """The integrator class registered as ``name`` (``hooke.get_integrator``); HookeInputError
    naming the known ones otherwise."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise HookeInputError("integrator", f"unknown integrator (known: {', '.join(_REGISTRY)})",
                              name) from None


def names() -> list[str]:
    """Names of every registered integrator (``hooke.integrators()``)."""
    return list(_REGISTRY)


def stored_counts(text: str) -> dict[str, int]:
    """A checkpoint's ``stats`` (JSON of :attr:`Integrator.stats`) back as counts; a ValueError
    for anything else (an edited or damaged file: deeply nested, a count that is a word, inf or
    negative), which a resume reports as a checkpoint it cannot restore."""
    try:
        counts = json.loads(text)
    except RecursionError:
        raise ValueError("stats: nested past Python's recursion limit") from None
    if not isinstance(counts, dict) or not all(
            isinstance(count, int) and not isinstance(count, bool) and count >= 0
            for count in counts.values()):
        raise ValueError(f"stats: must be counts (whole numbers >= 0), got {str(text)[:80]!r}")
    return counts
