"""``hooke verify``: every registered integrator on ``spring1d``, and every one that handles joints
on the double pendulum — measured order of convergence and energy behaviour, the table a
numerical-methods course wants.

Contract: :func:`verify` returns one :class:`IntegratorReport` per registered integrator (new
integrators are enrolled automatically). The order is the least-squares slope of log(max error
against the analytic solution) over log(dt). The energy behaviour comes from a run of
``energy_steps`` steps at ``energy_dt``: "bounded" when the largest deviation |E − E0| in the
second half is at most 1.5× that of the first half (secular drift doubles it, oscillation does
not) or below round-off; otherwise "grows" or "decays". The factor is (E_N / E_0)^(1/N), the mean
change per step. Adaptive integrators are measured with fixed steps and Newton-type ones with a
tight tolerance, keyed on their options (``adaptive``, ``tol``), not on their names.

:func:`verify_joints` returns one :class:`JointReport` per registered integrator with
``supports_joints`` (enrolled by that capability), on seed 003's double pendulum (built-in scene
``pendulum``: started straight above its support with 0.01 m/s, it falls, and by 1.5 s its links
have swung through 45° and 70° at up to 4.7 m/s — large-amplitude, with no analytic solution):
- the order is the slope of log(max position error over the frames every 0.1 s up to 1.5 s)
  against a reference solution: ``rk45`` with fixed steps of ``reference_dt`` = 0.1/128 s and no
  stabilisation (the same index-reduced ODE the explicit methods solve). ``reference_error`` is
  its distance to the run at 2·reference_dt, an upper bound on the error of that coarser run
  (measured 7e-14 m; the adaptive rk45 at rtol = atol = 1e-12 is off by 5e-10 m and at 1e-14 by
  4e-12 m, too much for rk4 and rk45, whose finest errors here are 4e-9 and 2e-12 m). The steps
  lie in each order's asymptotic range (measured: coarser steps are pre-asymptotic, rk45's error
  nears the reference's below 3e-3 s, and generalized-α's stops falling near 1e-6 m below 4e-4 s,
  the round-off of its index-3 solve, ill-conditioned at small h);
- integrators of the unconstrained ODE run with ``stabilization=None`` (bare exact tensions): a
  stabilisation would add its own error terms to the positions and blur the orders, and the drift
  column shows what it would correct;
- the energy behaviour is classified as for spring1d over ``energy_steps`` steps of ``energy_dt``
  (10 s, chaotic motion), with the energy measured above the hanging rest state (the mirror image
  of the start through the support, E_rest = −U(x0)) so that the factor is a ratio of positive
  energies; ``drift`` is max |L − L0| over the joints and the frames of that run. A run that stops
  (non-finite state, Newton failure) is classified "fails" with ``failed_at`` its last time, and
  its energy and drift are those of the frames it computed. (Before the Newmark family projected
  its velocities onto G v = 0, ``newmark`` — the trapezoidal rule, no numerical dissipation — was
  weakly unstable here: its energy grew until the Newton solve failed after about 6 s.)
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .checks import _numbers
from .errors import HookeInputError, SimulationError, is_count, is_number
from .integrators.base import get, names
from .io.outputs import written_aside
from .io.scene_file import builtin_scene
from .limits import MAX_STEPS
from .simulate import simulate

DEFAULT_DTS = (0.02, 0.01, 0.005, 0.0025)
# Order-1 steps on the pendulum; higher orders use multiples (see _joint_dts_for). All divide the
# 0.1 s between compared frames.
JOINT_DTS = (0.1 / 16, 0.1 / 32, 0.1 / 64, 0.1 / 128)
JOINT_SCENE = "pendulum"
REFERENCE_DT = 0.1 / 128


# A Newton solve's round-off, in units of the least tol an integrator takes (implicit_euler's
# ROUND_OFF: 64 ε): its residual stalls there
ROUND_OFF_MARGIN = 64


def fixed_step_options(integrator: str, tol: float = 1e-12) -> dict:
    """Options that make an integrator a plain fixed-step method solved to ``tol``."""
    defaults = get(integrator).defaults
    options: dict = {}
    if "adaptive" in defaults:
        options["adaptive"] = False
    if "tol" in defaults:
        options["tol"] = tol
    return options


@dataclass
class IntegratorReport:
    name: str
    expected_order: int
    measured_order: float
    dts: np.ndarray
    errors: np.ndarray
    energy_factor: float
    behaviour: str

    @property
    def order_ok(self) -> bool:
        return abs(self.measured_order - self.expected_order) <= 0.3


@dataclass
class JointReport:
    """One integrator on the double pendulum (see the module docstring)."""
    name: str
    expected_order: int
    measured_order: float
    dts: np.ndarray
    errors: np.ndarray           # max |x − x_ref| over the compared frames [m], one per dt
    reference_error: float       # estimated error of the reference solution [m]
    energy_factor: float         # (E_N / E_0)^(1/N), energies above the hanging rest state
    behaviour: str               # "grows" | "bounded" | "decays" | "fails"
    drift: float                 # max |L − L0| over joints and frames of the energy run [m]
    options: dict                # the integrator options used
    failed_at: float | None = None  # last time reached when the energy run stopped

    @property
    def order_ok(self) -> bool:
        return abs(self.measured_order - self.expected_order) <= 0.3


# High-order methods reach round-off quickly: measure them on larger steps.
DTS_SCALE = {4: 8.0, 5: 16.0}
# Measured on the pendulum: orders 1 and 2 are asymptotic from 6e-3 and 1.3e-2 s down, rk4
# and rk45 from 2.5e-2 s; rk45's error nears the reference's below 3e-3 s.
JOINT_DTS_SCALE = {1: 1.0, 2: 2.0}
JOINT_DTS_LONGEST = 4.0  # the other orders'


def _dts_for(order: int, dts) -> np.ndarray:
    return np.asarray(dts, dtype=float) * DTS_SCALE.get(order, 1.0)


def _joint_dts_for(order: int, dts) -> np.ndarray:
    return np.asarray(dts, dtype=float) * JOINT_DTS_SCALE.get(order, JOINT_DTS_LONGEST)


def _check_settings(dts, t_end, energy_dt, energy_steps, scale: float) -> None:
    """Refuse, before any run, settings that cannot measure an order or an energy behaviour:
    the order is a slope, so at least two different steps, each (times ``scale``, the longest
    a higher order is measured on) at most ``t_end`` and at least ``t_end`` / MAX_STEPS."""
    for field, value in (("t_end", t_end), ("energy_dt", energy_dt)):
        if not is_number(value) or not 0 < value < math.inf:
            raise HookeInputError(field, "must be a finite number > 0", value)
    if not is_count(energy_steps) or not 10 <= energy_steps <= MAX_STEPS:
        raise HookeInputError("energy_steps", f"must be an integer from 10 to {MAX_STEPS:.0e}",
                              energy_steps)
    steps = _numbers(dts)
    if (steps is None or steps.ndim != 1 or len(set(steps.tolist())) < 2
            or not np.all(np.isfinite(steps)) or np.any(steps <= 0)):
        raise HookeInputError("dts", "must be at least two different finite steps > 0 [s] (the "
                              "order is the slope of log error over log dt)", dts)
    if float(np.max(steps)) * scale > t_end or t_end / float(np.min(steps)) > MAX_STEPS:
        raise HookeInputError("dts", f"each step must lie between t_end / {MAX_STEPS:.0e} and "
                              f"t_end / {scale:g} (the higher orders are measured on steps up to "
                              f"{scale:g} times longer), t_end = {t_end:g} s", dts)


def within_round_off(options: dict, integrator: str, model, dt: float) -> dict:
    """``options`` with a ``tol`` below the least the integrator takes for ``model`` at ``dt``
    (``least_tol``) raised to ROUND_OFF_MARGIN times that, where a solve's noise stalls: 1e-12
    m/s at dt = 1e-4 s on spring1d is below implicit_euler's (4.4e-12), and ``--dts`` that short
    failed after 100 Newton iterations a step, "try a smaller dt"; the default steps keep it."""
    least = get(integrator).least_tol(model, dt)
    if "tol" not in options or options["tol"] >= least:
        return options
    return {**options, "tol": ROUND_OFF_MARGIN * least}


def fitted_order(steps, errors) -> float:
    """The slope of log error against log dt (least squares); nan where an error is exactly 0
    (exact to round-off), whose log NumPy only warns of."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.polyfit(np.log(steps), np.log(errors), 1)[0])


def joint_options(integrator: str, tol: float = 1e-12) -> dict:
    """Options for the pendulum runs: fixed steps, tight Newton, no stabilisation."""
    options = fixed_step_options(integrator, tol)
    if "stabilization" in get(integrator).defaults:
        options["stabilization"] = None
    return options


def energy_trend(deviation: np.ndarray, round_off: float) -> str:
    """"bounded" | "grows" | "decays": the trend of an energy's deviation from what it should be
    (e.g. E − E0), over saved frames. Bounded when the largest |deviation| in the second half is
    at most 1.5× that of the first half (secular drift doubles it, oscillation does not) or below
    ``round_off`` [J]; otherwise the sign of the last deviation."""
    size = np.abs(deviation)
    half = deviation.size // 2
    if size[half:].max() <= max(1.5 * size[:half].max(initial=0.0), round_off):
        return "bounded"
    return "grows" if deviation[-1] > 0 else "decays"


def energy_behaviour(total: np.ndarray, round_off: float = 1e-11) -> tuple[float, str]:
    """(mean factor per saved interval, :func:`energy_trend` of E − E0) of an energy series."""
    factor = float((total[-1] / total[0]) ** (1.0 / (total.size - 1)))
    return factor, energy_trend(total - total[0], round_off * abs(total[0]))


def verify(dts=DEFAULT_DTS, t_end: float = 2.0, energy_dt: float = 0.005,
           energy_steps: int = 4000) -> list[IntegratorReport]:
    _check_settings(dts, t_end, energy_dt, energy_steps, max(DTS_SCALE.values()))
    spring = builtin_scene("spring1d")
    reports = []
    for name in names():
        cls = get(name)
        options = fixed_step_options(name)
        steps = _dts_for(cls.order, dts)
        errors = []
        for dt in steps:
            # the whole steps nearest t_end: 0.16 and 0.32 (rk4, rk45) do not divide 2 s
            result = simulate(spring, integrator=name, dt=dt, t_end=round(t_end / dt) * dt,
                              save_every=max(1, int(round(0.1 / dt))),
                              **within_round_off(options, name, spring.model, dt))
            errors.append(np.max(np.abs(result.x - spring.analytic(result.t))))
        errors = np.asarray(errors)
        order = fitted_order(steps, errors)
        run = simulate(spring, integrator=name, dt=energy_dt, t_end=energy_steps * energy_dt,
                       **within_round_off(options, name, spring.model, energy_dt))
        factor, behaviour = energy_behaviour(run.energy["total"])
        reports.append(IntegratorReport(name, cls.order, order, steps, errors, factor, behaviour))
    return reports


def _check_reference_dt(reference_dt, t_end: float, interval: float) -> None:
    """Refuse a reference step that cannot give the reference run and its check at twice the
    step: a finite number > 0, each run at most MAX_STEPS and saving at least one frame per
    ``interval`` (2·reference_dt < interval)."""
    if (not is_number(reference_dt) or not 0 < reference_dt < math.inf
            or not 2 * reference_dt < interval or t_end / reference_dt > MAX_STEPS):
        raise HookeInputError("reference_dt", f"must be a step [s] from t_end / {MAX_STEPS:.0e} "
                              f"to below {interval / 2:g} (the reference runs at it and at twice "
                              f"it, saving a frame every {interval:g} s), t_end = {t_end:g} s",
                              reference_dt)


def verify_joints(dts=JOINT_DTS, t_end: float = 1.5, energy_dt: float = 0.0025,
                  energy_steps: int = 4000,
                  reference_dt: float = REFERENCE_DT) -> list[JointReport]:
    """Every integrator that handles joints on the double pendulum (see the module docstring)."""
    _check_settings(dts, t_end, energy_dt, energy_steps, JOINT_DTS_LONGEST)
    interval = 0.1  # time between compared frames [s]
    _check_reference_dt(reference_dt, t_end, interval)
    pendulum = builtin_scene(JOINT_SCENE)

    def reference(dt):
        return simulate(pendulum, integrator="rk45", dt=dt, t_end=t_end,
                        save_every=int(round(interval / dt)), **joint_options("rk45")).x

    x_ref = reference(reference_dt)
    reference_error = float(np.max(np.abs(x_ref - reference(2 * reference_dt))))
    reports = []
    for name in names():
        cls = get(name)
        if not cls.supports_joints:
            continue
        options = joint_options(name)
        steps = _joint_dts_for(cls.order, dts)
        errors = []
        for dt in steps:
            result = simulate(pendulum, integrator=name, dt=dt, t_end=t_end,
                              save_every=int(round(interval / dt)),
                              **within_round_off(options, name, pendulum.model, dt))
            errors.append(np.max(np.abs(result.x - x_ref)))
        errors = np.asarray(errors)
        order = fitted_order(steps, errors)
        failed_at = None
        try:
            run = simulate(pendulum, integrator=name, dt=energy_dt, t_end=energy_steps * energy_dt,
                           **within_round_off(options, name, pendulum.model, energy_dt))
        except SimulationError as error:
            run = error.result
            failed_at = float(run.t[-1])
        rest = -run.energy["potential"][0]  # hanging straight down: the start mirrored, U → −U
        factor, behaviour = energy_behaviour(run.energy["total"] - rest)
        if failed_at is not None:
            behaviour = "fails"
        reports.append(JointReport(name, cls.order, order, steps, errors, reference_error, factor,
                                   behaviour, float(np.max(pendulum.model.joint_length_error(run.x))), options,
                                   failed_at))
    return reports


def csv_field(value) -> str:
    """A value as a CSV field: numbers as %.6g (empty when NaN or None: not measured), sequences
    (one entry per dt) joined by ';', dicts as JSON, anything else as its text."""
    if value is None:
        return ""
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return ";".join(csv_field(item) for item in value)
    if isinstance(value, (bool, str, int, np.integer)):
        return str(value)
    return "" if math.isnan(value) else f"{float(value):.6g}"


def write_csv(rows: list[dict], path) -> Path:
    """``rows`` (dicts with the same keys, the columns) as a CSV file of :func:`csv_field`s."""
    from .viz.plots import output_path

    path = output_path(path, "path", (".csv",))
    if not (isinstance(rows, list) and rows and all(isinstance(row, dict) for row in rows)):
        raise HookeInputError("rows", "must be a non-empty list of dicts (the columns)", rows)
    with written_aside(path) as partial, open(partial, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows({key: csv_field(value) for key, value in row.items()} for row in rows)
    return path


def write_reports(reports: list[IntegratorReport] | list[JointReport], path) -> Path:
    """One row per report, its fields as columns, and ``energy_change`` = energy_factor − 1 (the
    factor's six printed digits would lose it) (``hooke verify`` writes verify_spring1d.csv and
    verify_pendulum.csv: the README's tables are rendered from them)."""
    from .viz.plots import output_path

    path = output_path(path, "path", (".csv",))
    _check_reports(reports, "reports", empty=False)
    return write_csv([{**asdict(report), "energy_change": report.energy_factor - 1}
                      for report in reports], path)


def _check_reports(reports, field: str, empty: bool = True) -> None:
    """Refuse ``reports`` that are not a list of verify()'s or verify_joints()' reports (and,
    unless ``empty``, an empty one)."""
    if (not isinstance(reports, (list, tuple)) or (not empty and not reports)
            or not all(isinstance(row, (IntegratorReport, JointReport)) for row in reports)):
        raise HookeInputError(field, "must be a list of IntegratorReport or JointReport (from "
                              "verify() or verify_joints())" + ("" if empty else ", at least one"),
                              reports)


def convergence_plot(reports: list[IntegratorReport], path=None,
                     joint_reports: list[JointReport] | None = None):
    """The log-log plot of error against dt (one line per report, its ``dts`` and ``errors``); a
    second panel for the pendulum when given. Each integrator keeps its colour and marker (from
    its place in the registry) in both panels. Returns the Matplotlib Figure, also written to
    ``path`` when given."""
    from matplotlib import colormaps

    from .viz.plots import finish, new_figure, output_path

    path = output_path(path, "path")
    _check_reports(reports, "reports")
    if joint_reports is not None:
        _check_reports(joint_reports, "joint_reports")
    registry = names()
    colors = [*colormaps["tab10"].colors, (0.0, 0.0, 0.0), (0.6, 0.6, 0.0)]
    markers = "os^Dv<>ph*"

    def curves(ax, rows, ylabel, title):
        for row in rows:
            k = registry.index(row.name) if row.name in registry else len(registry)
            ax.loglog(row.dts, row.errors, "-", marker=markers[k % len(markers)], ms=5,
                      color=colors[k % len(colors)],
                      label=f"{row.name} (order {row.measured_order:.2f})")
        ax.set_xlabel("dt [s]")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(alpha=0.3, which="both")

    panels = 1 if joint_reports is None else 2
    fig = new_figure(figsize=(6.5 * panels, 7.0))
    axes = fig.subplots(1, panels, squeeze=False)
    ax = axes[0, 0]
    curves(ax, reports, "max |x − x_exact| over 2 s [m]",
           "spring1d: every integrator\n(against x0 cos(ωt))")
    if joint_reports is not None:
        ax = axes[0, 1]
        curves(ax, joint_reports, "max |x − x_ref| over 1.5 s [m]",
               "double pendulum: every integrator with joints\n(stabilization=None)")
        if joint_reports:
            ax.axhline(joint_reports[0].reference_error, color="0.4", ls=":", lw=1.2,
                       label="bound on the reference's error")
    for ax in axes[0]:
        ax.legend(fontsize=8, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    return finish(fig, path)
