"""A fit's least-squares problem: observed positions against the run at parameters z.

Contract: ``observed`` is an array (times, n, d) of positions — NaN rows for particles not
observed at a time — with ``times`` (one per row; None: the run's saved frames, every
``save_every`` steps), or anything with ``.t`` and ``.x`` (a :class:`hooke.Result`, what
:func:`hooke.io.observed.read_observed` returns). Each time is put on the step grid t0 + k·dt
(within :data:`TIME_SNAP` of a step; otherwise one line naming the time and dt); the run ends at
the last observed time unless ``t_end`` is given, and saves every g steps, g the greatest common
divisor of the observed steps, so that every observed time is a saved frame.

The residual r(z) is (simulated − observed) over the observed coordinates (m = observed rows ×
d; pinned particles' rows only when x0 is fitted: otherwise they never move); L = ½|r|² is :func:`hooke.losses.tracking`'s loss, whose exact gradient
:meth:`Problem.loss_and_gradient` takes from :func:`hooke.gradient`. :meth:`Problem.jacobian`
gives dr/dz by central differences of the forward run (why: :mod:`hooke.fitting.solve`).
A run that fails (blows up at a trial z) gives residuals of :data:`FAILED_SCALE` × the observed
motion's size, a value the solvers step back from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..checks import _numbers
from ..errors import HookeInputError, SimulationError
from ..losses import frame_index, tracking
from ..scene_setup import MAX_STEPS, check_positive, check_save_every, step_count
from ..simulate import plan, simulate
from .unknowns import Unknowns

TIME_SNAP = 1e-3  # of a step: how far an observed time may be from the step grid
# Central-difference step in z (a relative change of 1e-5 in log space): the truncation error
# is O(ε²) ~ 1e-10 of the derivative, round-off ~ 1e-16/ε ~ 1e-11.
DIFFERENCE_STEP = 1e-5
FAILED_SCALE = 1e3


@dataclass
class Observation:
    """Observed positions: t (k,) [s], x (k, n, d) [m], NaN rows where a particle is not seen."""

    t: np.ndarray | None
    x: np.ndarray


def _shape(value):
    """How a refused array is shown: its shape; a scalar or a string itself; a ragged list's
    type."""
    try:
        return np.shape(value) or value
    except ValueError:
        return type(value).__name__


def as_observation(observed, times, model) -> Observation:
    """``observed`` (and ``times``) checked against the model's particles and dimension."""
    if hasattr(observed, "x") and hasattr(observed, "t"):
        if times is not None:
            raise HookeInputError("times", "must be None when observed carries its own times",
                                  times)
        times, observed = observed.t, observed.x
    x = _numbers(observed)  # strict: strings, bools and complex numbers are no positions
    if x is None:
        raise HookeInputError("observed", "must be an array of positions (times, particles, "
                              "dim)", _shape(observed))
    shape = (model.n_particles, model.dim)
    if x.ndim != 3 or x.shape[1:] != shape or x.shape[0] == 0:
        raise HookeInputError("observed", f"must have shape (times, {shape[0]}, {shape[1]}) "
                              "(times, particles, dim) for this scene", x.shape)
    seen = np.all(np.isfinite(x), axis=-1)
    if not np.any(seen):
        raise HookeInputError("observed", "observes no particle (every row is NaN)", x.shape)
    if np.any(np.isinf(x)) or np.any(np.isnan(x[seen])):
        raise HookeInputError("observed", "must hold finite rows or NaN rows (not observed)", x.shape)
    if times is None:
        return Observation(None, x)
    t = _numbers(times)
    if t is None or t.shape != (x.shape[0],) or not np.all(np.isfinite(t)):
        raise HookeInputError("times", f"must be {x.shape[0]} finite times [s], one per row of "
                              "observed", _shape(times))
    if np.any(np.diff(t) <= 0):
        raise HookeInputError("times", "must increase", t)
    return Observation(t, x)


def run_settings(scene, observation: Observation, integrator, dt, t_end, save_every):
    """(times on the step grid, t_end, save_every) of the runs that see every observation."""
    dt = check_positive("dt", scene.dt if dt is None else dt)
    t0 = scene.state.t
    if observation.t is None:
        run = plan(scene, integrator, dt, t_end, save_every)
        if run.steps.size != observation.x.shape[0]:
            raise HookeInputError("observed", f"has {observation.x.shape[0]} rows but the run saves "
                                  f"{run.steps.size} frames: give times=", observation.x.shape)
        return t0 + run.steps * dt, run.t_end, run.save_every
    with np.errstate(over="ignore"):  # t = 1e308 over a small dt: inf steps, refused below
        exact = (observation.t - t0) / dt
    if np.any(exact > MAX_STEPS):  # before the cast to int64, which would wrap it round
        bad = float(observation.t[np.argmax(exact > MAX_STEPS)])
        raise HookeInputError("times", f"{bad!r} is more than the {MAX_STEPS:.0e} steps of dt = "
                              f"{dt:g} s hooke runs after the start", bad)
    steps = np.rint(exact).astype(np.int64)
    if np.any(steps < 0):
        bad = float(observation.t[np.argmax(steps < 0)])
        raise HookeInputError("times", f"{bad!r} is before the run's start (t0 = {t0:g} s)", bad)
    off = np.abs(exact - steps) > TIME_SNAP
    if np.any(off):
        bad = float(observation.t[np.argmax(off)])
        raise HookeInputError("times", f"{bad!r} is not on the step grid t0 + k·dt (t0 = {t0:g}, "
                              f"dt = {dt:g} s): choose a dt that divides the observation times",
                              bad)
    if steps[-1] < 1:
        raise HookeInputError("times", "must reach past the start of the run", observation.t)
    n_steps = steps[-1] if t_end is None else step_count(check_positive("t_end", t_end), dt)
    if steps[-1] > n_steps:
        raise HookeInputError("times", f"{float(observation.t[-1])!r} is after the run's end "
                              f"(t_end = {t_end:g} s)", float(observation.t[-1]))
    if save_every is None:
        save_every = math.gcd(*(int(k) for k in steps if k > 0))
    elif any(k % check_save_every(save_every) and k != n_steps for k in steps):
        raise HookeInputError("save_every", "must divide every observed step (the run saves "
                              "every save_every-th step)", save_every)
    return t0 + steps * dt, float(n_steps * dt), int(save_every)


class Problem:
    """r(z), L(z) with dL/dz, and dr/dz for a scene, observations and unknowns."""

    def __init__(self, scene, observed, params, *, bounds=None, initial=None, times=None,
                 integrator=None, dt=None, t_end=None, save_every=None, **options):
        self.unknowns = Unknowns(scene, params, initial, bounds)
        observation = as_observation(observed, times, scene.model)
        self.times, t_end, save_every = run_settings(scene, observation, integrator, dt, t_end,
                                                     save_every)
        self.observed = observation.x
        if "x0" not in self.unknowns.parsed:  # pinned particles stay at x0: nothing to fit there,
            self.observed[:, scene.model.pinned] = np.nan  # and zeros would shrink σ's estimate
        self.seen = np.all(np.isfinite(self.observed), axis=-1)
        self.size = int(self.seen.sum()) * scene.model.dim
        if self.size <= len(self.unknowns.list):
            raise HookeInputError("observed", f"holds {self.size} observed coordinates, not more "
                                  f"than the {len(self.unknowns.list)} unknowns", self.observed.shape)
        self.settings = dict(integrator=integrator, dt=scene.dt if dt is None else dt,
                             t_end=t_end, save_every=save_every, **options)
        plan(self.unknowns.scene_at(self.unknowns.z0), **self.settings)  # bad settings: now
        self.loss = tracking(self.observed, times=self.times)
        rows = self.observed[self.seen]
        with np.errstate(over="ignore"):
            self.failed_residual = FAILED_SCALE * (1.0 + float(np.ptp(rows)))
        self.evaluations = 0
        self.failure: SimulationError | None = None  # of the last residual's run

    def run(self, z: np.ndarray):
        self.evaluations += 1
        return simulate(self.unknowns.scene_at(z), **self.settings)

    def residual(self, z: np.ndarray) -> np.ndarray:
        self.failure = None
        try:
            result = self.run(z)
        except SimulationError as error:
            self.failure = error
            return np.full(self.size, self.failed_residual)
        frames = frame_index(self.times, np.asarray(result.t))
        return (result.x[frames] - np.nan_to_num(self.observed))[self.seen].ravel()

    def finite_loss(self, residual: np.ndarray, where: str) -> float:
        """½|residual|², or HookeInputError naming the observed value whose distance from the
        run overflows it (observed positions of 1e308 m gave rms = inf, "converged", exit 0)."""
        with np.errstate(over="ignore", invalid="ignore"):
            loss = 0.5 * float(residual @ residual)
            failed = 0.5 * self.size * np.float64(self.failed_residual) ** 2
        if np.isfinite(loss) and np.isfinite(failed):
            return loss
        bound = float(np.sqrt(np.finfo(float).max) * np.sqrt(2.0 / self.size))
        if not np.isfinite(failed):
            rows = self.observed[self.seen]
            with np.errstate(over="ignore"):
                span = float(rows.max()) - float(rows.min())
            raise HookeInputError("observed", f"positions span {span:.3g} m: the fit's loss "
                                  "½|simulated − observed|² overflows to inf; observed positions "
                                  f"must lie within about {bound / FAILED_SCALE:.3g} m of each other",
                                  float(np.abs(rows).max()))
        dim = self.observed.shape[-1]
        j = int(np.argmax(np.abs(np.nan_to_num(residual, nan=np.inf))))
        frame, particle = np.argwhere(self.seen)[j // dim]
        value = float(self.observed[frame, particle, j % dim])
        raise HookeInputError(
            "observed", f"the loss ½|simulated − observed|² {where} overflows to inf: the "
            f"observed {'xyz'[j % dim]} of particle {particle} at t = {self.times[frame]:.6g} s "
            f"is {abs(float(residual[j])):.3g} m from the run's; observed positions must lie "
            f"within about {bound:.3g} m of the simulated ones", value)

    def loss_and_gradient(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        from ..adjoint import gradient

        scene = self.unknowns.scene_at(z)
        self.evaluations += 1
        try:
            value, grads = gradient(scene, self.loss, self.unknowns.parsed, **self.settings)
        except SimulationError:
            return 0.5 * self.size * self.failed_residual ** 2, np.zeros(z.size)
        return value, self.unknowns.chain(z, grads)

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        """(m, unknowns) dr/dz by central differences of the forward run."""
        columns = []
        for k in range(z.size):
            step = np.zeros(z.size)
            step[k] = DIFFERENCE_STEP * max(1.0, abs(z[k]))
            columns.append((self.residual(z + step) - self.residual(z - step)) / (2 * step[k]))
        return np.stack(columns, axis=1)
