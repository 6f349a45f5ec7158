"""``hooke.fit``: the parameters that make a run reproduce observed positions, with uncertainties.

Contract: minimises L(z) = ½ Σ (simulated − observed)² over the observed coordinates
(:mod:`.problem`), z the unknowns (:mod:`.unknowns`: log space for positive quantities), by

- ``method="least_squares"`` (default): SciPy's ``least_squares`` (trust-region reflective: a
  Gauss–Newton / Levenberg–Marquardt step in a trust region, bounds respected), with the
  Jacobian dr/dz by central differences of the forward run;
- ``method="lbfgsb"``: SciPy's L-BFGS-B on L with its exact gradient from :func:`hooke.gradient`
  (the discrete adjoint: one forward and one reverse sweep per evaluation, whatever the number
  of unknowns), which needs an integrator with an adjoint.

Why the Jacobian is taken from differences: Gauss–Newton needs the whole m × P Jacobian, and the
adjoint gives one row combination Jᵀu per sweep, so m sweeps (m: hundreds of observed
coordinates); the exact alternative, forward sensitivities, costs P tangent runs, which hooke
does not have. P + P compiled forward runs (milliseconds each on small scenes) give the columns
to about 1e-10 relative (:data:`.problem.DIFFERENCE_STEP`), far below what the noise leaves of
the parameters; tests/test_fit.py checks Jᵀr against the adjoint gradient.

The uncertainty is that of the Gauss–Newton Hessian at the solution: cov(z) = σ² (JᵀJ)⁻¹ with
σ² = |r|² / (m − P) (the residual's variance; the noise is assumed independent, of one size);
1σ in the parameters' units is θ·σ_z in log space (first order). A direction the data do not
determine (a singular value of J below 1e-7 of the largest: e.g. scaling every mass of a jointed
pendulum together changes no motion) gives σ = inf for the parameters along it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import HookeInputError, SimulationError, check_count, is_number
from ..limits import MAX_STEPS
from ..scene_setup import step_count
from .problem import Problem

METHODS = ("least_squares", "lbfgsb")
# Of the largest singular value of J: below it, a direction the data do not determine. The
# differenced columns are accurate to ~1e-10 relative, which is what an exact null direction
# shows as (measured ~1e-9 on spring1d's k and m, whose ratio alone the motion fixes); 1e-7
# stays above that, and a direction at 1e-7 would carry σ of 1e7 × the noise anyway.
SINGULAR = 1e-7
# The smallest tolerance: SciPy's least_squares warns that one below it "effectively disables the
# corresponding termination condition" and raises ValueError when all three are below it.
EPSILON = float(np.finfo(float).eps)
# A fit that stops at its start is a minimum there unless the Gauss–Newton step from it moves an
# unknown by more than this (relative to max(1, |z|)): a start at the data's truth asks ~1e-16.
FAR = 1e-3
# A fitted coordinate this close to a bound (relative to max(1, |z|)) ends on it: the solvers
# stop within ~1e-15 of an active bound (trf stays strictly inside, L-BFGS-B lands on it).
AT_BOUND = 1e-9


@dataclass
class FitResult:
    """What :func:`fit` found. ``values`` and ``uncertainty``: name → a float (a shared value,
    a scalar) or an array (per element; NaN where an element is not fitted), in the parameters'
    units; ``labels``, ``x`` and ``sigma``: the same per unknown."""

    values: dict
    uncertainty: dict
    labels: list[str]
    x: np.ndarray
    sigma: np.ndarray
    log_space: list[bool]
    covariance: np.ndarray   # of z (ln θ where log_space)
    residual: np.ndarray     # (m,) simulated − observed at the fit [m]
    loss: float              # ½ |r|²
    noise: float             # σ = √(|r|² / (m − P)) [m]
    history: list[float] = field(default_factory=list)  # L at the start and after each iteration
    iterations: int = 0
    evaluations: int = 0     # forward runs (and gradient sweeps for lbfgsb)
    converged: bool = False
    message: str = ""
    method: str = ""
    scene: object = None     # the scene with the fitted values
    at_bound: list = field(default_factory=list)  # per unknown: "low", "high" or None

    def summary(self) -> dict:
        """A JSON-ready dict of the fit."""
        def plain(value):  # strict JSON: an undetermined σ (inf) or an unfitted element is null
            array = np.asarray(value, dtype=float)
            return np.where(np.isfinite(array), array, None).tolist()

        return {"method": self.method, "converged": self.converged, "message": self.message,
                "iterations": self.iterations, "evaluations": self.evaluations,
                "parameters": [{"name": label, "value": plain(x), "sigma": plain(s), "log_space": log,
                                "at_bound": side}
                               for label, x, s, log, side in zip(
                                   self.labels, self.x, self.sigma, self.log_space,
                                   self.at_bound or [None] * len(self.labels))],
                "values": {k: plain(v) for k, v in self.values.items()},
                "uncertainty": {k: plain(v) for k, v in self.uncertainty.items()},
                "loss": self.loss, "noise": self.noise, "observed_values": int(self.residual.size),
                "rms_residual": float(np.sqrt(np.mean(self.residual ** 2))),
                "history": [float(h) for h in self.history]}

    def text(self) -> str:
        """The fit as lines of text: each value ± 1σ, then the residual and the iterations."""
        sides = self.at_bound or [None] * len(self.labels)
        lines = [f"{label} = {x:.6g} ± {s:.2g}" + (
                     "" if side is None else f" (at its {'lower' if side == 'low' else 'upper'} "
                     "bound: the best fit within the bounds, not the loss's minimum; σ as if free)")
                 for label, x, s, side in zip(self.labels, self.x, self.sigma, sides)]
        lines.append(f"residual: rms {np.sqrt(np.mean(self.residual ** 2)):.3g} m over "
                     f"{self.residual.size} observed values (noise σ {self.noise:.3g} m); "
                     f"{self.iterations} iterations, {self.evaluations} runs, {self.method}"
                     f"{'' if self.converged else ' (not converged: ' + self.message + ')'}")
        return "\n".join(lines)


def covariance(jacobian: np.ndarray, residual: np.ndarray) -> tuple[np.ndarray, float]:
    """(cov(z) = σ² (JᵀJ)⁻¹ on the determined directions, inf on the rest; σ)."""
    m, p = jacobian.shape
    sigma2 = float(residual @ residual) / (m - p)
    _, singular, vt = np.linalg.svd(jacobian, full_matrices=False)
    keep = singular > SINGULAR * singular[0] if singular[0] > 0 else np.zeros(p, dtype=bool)
    inverse = (vt[keep].T / singular[keep] ** 2) @ vt[keep]
    cov = sigma2 * inverse
    undetermined = np.any(np.abs(vt[~keep]) > 1e-8, axis=0)
    cov[undetermined, :] = np.inf
    cov[:, undetermined] = np.inf
    return cov, float(np.sqrt(sigma2))


def _least_squares(problem: Problem, z0, bounds, iterations, tolerance, record):
    from scipy.optimize import least_squares

    cache: dict[bytes, np.ndarray] = {}

    def residual(z):
        cache.clear()
        cache[z.tobytes()] = r = problem.residual(z)
        return r

    def jacobian(z):  # trf evaluates it at the start and at every accepted step
        r = cache.get(z.tobytes())
        record(0.5 * float(r @ r) if r is not None else None)
        return problem.jacobian(z)

    done = least_squares(residual, z0, jac=jacobian, bounds=bounds, method="trf",
                         ftol=tolerance, xtol=tolerance, gtol=tolerance, max_nfev=iterations)
    return done.x, done.status > 0, done.message


def _lbfgsb(problem: Problem, z0, bounds, iterations, tolerance, record):
    from scipy.optimize import minimize

    scale = max(problem.loss_and_gradient(z0)[0], np.finfo(float).tiny)
    record(scale)

    def objective(z):
        value, grad = problem.loss_and_gradient(z)
        return value / scale, grad / scale

    done = minimize(objective, z0, jac=True, method="L-BFGS-B", bounds=list(zip(*bounds)),
                    callback=lambda intermediate_result: record(intermediate_result.fun * scale),
                    options={"maxiter": iterations, "ftol": tolerance, "gtol": tolerance})
    return done.x, bool(done.success), str(done.message)


def check_first_iteration(problem: Problem, method: str) -> None:
    """Refuse a fit whose first iteration alone would take more than MAX_STEPS steps: the run at
    the start and, for least_squares, the 2P runs of the differenced Jacobian (for lbfgsb a
    forward and a reverse sweep). Observations spanning 1e9 s ran for hours printing nothing."""
    settings = problem.settings
    steps = step_count(settings["t_end"], settings["dt"])
    runs = 1 + 2 * len(problem.unknowns.list) if method == "least_squares" else 2
    if steps * runs > MAX_STEPS:
        raise HookeInputError("times", f"the fit's first iteration would take {runs} runs of "
                              f"{steps:.3g} steps of dt = {settings['dt']:g} s ({steps * runs:.3g} "
                              f"steps), more than the {MAX_STEPS:.0e} hooke runs: observe a "
                              "shorter span or take a larger dt", float(problem.times[-1]))


def _moved_from_start(unknowns, jacobian, residual, sigma, message) -> tuple[bool, str]:
    """(converged, message) of a fit that stopped at its start: not converged where the loss is
    flat there along an unknown (σ = inf) or so nearly flat that its gradient met the tolerance
    while the Gauss–Newton step still asks to move it by more than ``FAR`` (stiffness 1e-12 in
    log space: by 2.6e11, reported converged at 1e-12 ± 0.46 where the data said 5)."""
    step = np.linalg.lstsq(jacobian, -residual, rcond=SINGULAR)[0]
    z0 = unknowns.z0
    stuck = [label for label, s, d, z in zip(unknowns.labels, sigma, step, z0)
             if not np.isfinite(s) or abs(d) > FAR * max(1.0, abs(z))]
    if not stuck:
        return True, message
    return False, (f"no step from the start ({_start_text(unknowns)}): the loss does not change "
                   f"with {', '.join(stuck)} there; start from other values (initial=, "
                   "--initial NAME=VALUE)")


def _start_text(unknowns) -> str:
    theta = unknowns.physical(unknowns.z0)
    return ", ".join(f"{label} = {value:.6g}" for label, value in zip(unknowns.labels, theta))


def fit(scene, observed, params, bounds=None, *, method: str = "least_squares", initial=None,
        times=None, max_iterations: int = 100, tolerance: float = 1e-10, progress=None,
        **options) -> FitResult:
    """Fit ``params`` of ``scene`` to ``observed`` positions.

    Args:
        scene: the model to fit (its values are the start unless ``initial`` says otherwise).
        observed: (times, n, d) positions [m], NaN rows where a particle is not observed, with
            ``times`` [s]; or a Result / :func:`hooke.io.observed.read_observed`'s record.
        params: as for :func:`hooke.gradient` (:mod:`hooke.fitting.unknowns`).
        bounds: name → (low, high) in the parameter's units.
        method: ``"least_squares"`` (Gauss–Newton / Levenberg–Marquardt) or ``"lbfgsb"``.
        initial: name → the value to start from.
        max_iterations: iterations (L-BFGS-B) or residual evaluations (least_squares) at most,
            1 to 10,000.
        tolerance: the solver's relative tolerances on L, z and the gradient, in [2.2e-16, 1).
        progress: optional ``progress(iteration, loss)`` after each iteration.
        **options: ``integrator``, ``dt``, ``t_end``, ``save_every`` and the integrator's
            options, as for :func:`hooke.simulate`.
    """
    if not isinstance(method, str) or method not in METHODS:  # an array: no raw NumPy error
        raise HookeInputError("method", f"must be one of {', '.join(METHODS)}", method)
    from ..scene_setup import Scene

    if not isinstance(scene, Scene):
        raise HookeInputError("scene", "must be a hooke.Scene (hooke.scene(name), hooke.load(path))",
                              type(scene).__name__)
    check_count("max_iterations", max_iterations)  # (10⁹ was taken: days of a fit not converging)
    if not (is_number(tolerance) and EPSILON <= tolerance < 1):  # below: SciPy warns, or raises
        raise HookeInputError("tolerance", f"must be a number in [{EPSILON:.3g}, 1) (machine "
                              "epsilon: a relative change below it cannot be seen)", tolerance)
    if progress is not None and not callable(progress):
        raise HookeInputError("progress", "must be a callable progress(iteration, loss) or None",
                              progress)
    problem = Problem(scene, observed, params, bounds=bounds, initial=initial, times=times,
                      **options)
    check_first_iteration(problem, method)
    if method == "lbfgsb":
        from ..adjoint import base

        base.check_model(scene.model, base.get(problem.settings["integrator"] or scene.integrator))
    history: list[float] = []

    def record(loss):
        if loss is not None:
            history.append(loss)
            if progress is not None and len(history) > 1:
                progress(len(history) - 1, loss)

    unknowns = problem.unknowns
    problem.finite_loss(problem.residual(unknowns.z0), "at the start")
    if problem.failure is not None:  # flat residuals around it: the solvers would stop there
        raise SimulationError(f"the run at the start ({_start_text(unknowns)}) fails, so the fit "
                              f"cannot begin: {str(problem.failure).rstrip('.')}; start from values whose run "
                              "does not blow up (initial=, --initial NAME=VALUE)")
    solver = _least_squares if method == "least_squares" else _lbfgsb
    z, converged, message = solver(problem, unknowns.z0, unknowns.bounds, int(max_iterations),
                                   float(tolerance), record)
    residual = problem.residual(z)
    loss = problem.finite_loss(residual, "at the fit")
    jacobian = problem.jacobian(z)
    cov, noise = covariance(jacobian, residual)
    if not history or not np.isclose(history[-1], loss, rtol=1e-9, atol=0.0):
        history.append(loss)
    theta = unknowns.physical(z)
    sigma = np.sqrt(np.diag(cov)) * np.where(unknowns.log, theta, 1.0)
    if converged and np.array_equal(z, unknowns.z0):  # a gradient below the tolerance at once
        converged, message = _moved_from_start(unknowns, jacobian, residual, sigma, message)
    return FitResult(values=unknowns.report(theta), uncertainty=unknowns.report(sigma),
                     labels=unknowns.labels, x=theta, sigma=sigma,
                     log_space=[bool(flag) for flag in unknowns.log], covariance=cov,
                     residual=residual, loss=loss, noise=noise, history=history,
                     iterations=len(history) - 1, evaluations=problem.evaluations,
                     converged=converged, message=message, method=method,
                     scene=unknowns.scene_at(z), at_bound=at_bounds(z, unknowns.bounds))


def at_bounds(z: np.ndarray, bounds) -> list:
    """Per unknown "low" or "high" where the fit ends on that bound (to AT_BOUND of the
    coordinate, ln θ in log space), else None: a fit stopped there is no minimum of the loss,
    and was reported as a plain value ± σ, converged."""
    low, high = bounds
    near = AT_BOUND * np.maximum(1.0, np.abs(z))
    return ["low" if z_k - lo <= tol else "high" if hi - z_k <= tol else None
            for z_k, lo, hi, tol in zip(z, low, high, near)]
