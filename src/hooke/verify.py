"""``hooke verify``: every registered integrator on ``spring1d`` — measured order of convergence
and energy behaviour, the table a numerical-methods course wants.

Contract: :func:`verify` returns one :class:`IntegratorReport` per registered integrator (new
integrators are enrolled automatically). The order is the least-squares slope of log(max error
against the analytic solution) over log(dt). The energy behaviour comes from a run of
``energy_steps`` steps at ``energy_dt``: "bounded" when the largest deviation |E − E0| in the
second half is at most 1.5× that of the first half (secular drift doubles it, oscillation does
not) or below round-off; otherwise "grows" or "decays". The factor is (E_N / E_0)^(1/N), the mean
change per step. Adaptive integrators are measured with fixed steps and Newton-type ones with a
tight tolerance, keyed on their options (``adaptive``, ``tol``), not on their names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .integrators.base import get, names
from .scenes import scene as load_scene
from .simulate import simulate

DEFAULT_DTS = (0.02, 0.01, 0.005, 0.0025)


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


def _dts_for(order: int, dts) -> np.ndarray:
    # High-order methods reach round-off quickly: measure them on larger steps.
    scale = {4: 8.0, 5: 16.0}.get(order, 1.0)
    return np.asarray(dts, dtype=float) * scale


def energy_behaviour(total: np.ndarray, round_off: float = 1e-11) -> tuple[float, str]:
    """(mean factor per saved interval, "grows" | "decays" | "bounded") of an energy series."""
    deviation = np.abs(total - total[0])
    half = total.size // 2
    factor = float((total[-1] / total[0]) ** (1.0 / (total.size - 1)))
    if deviation[half:].max() <= max(1.5 * deviation[:half].max(), round_off * abs(total[0])):
        return factor, "bounded"
    return factor, "grows" if total[-1] > total[0] else "decays"


def verify(dts=DEFAULT_DTS, t_end: float = 2.0, energy_dt: float = 0.005,
           energy_steps: int = 4000) -> list[IntegratorReport]:
    spring = load_scene("spring1d")
    reports = []
    for name in names():
        cls = get(name)
        options = fixed_step_options(name)
        steps = _dts_for(cls.order, dts)
        errors = []
        for dt in steps:
            result = simulate(spring, integrator=name, dt=dt, t_end=t_end,
                              save_every=max(1, int(round(0.1 / dt))), **options)
            errors.append(np.max(np.abs(result.x - spring.analytic(result.t))))
        errors = np.asarray(errors)
        order = float(np.polyfit(np.log(steps), np.log(errors), 1)[0])
        run = simulate(spring, integrator=name, dt=energy_dt, t_end=energy_steps * energy_dt,
                       **options)
        factor, behaviour = energy_behaviour(run.energy["total"])
        reports.append(IntegratorReport(name, cls.order, order, steps, errors, factor, behaviour))
    return reports


def convergence_plot(reports: list[IntegratorReport], path) -> Path:
    from .viz.plots import plt, save_figure

    fig, ax = plt.subplots(figsize=(7, 5))
    for report in reports:
        ax.loglog(report.dts, report.errors, "o-",
                  label=f"{report.name} (order {report.measured_order:.2f})")
    ax.set_xlabel("dt [s]")
    ax.set_ylabel("max |x − x_exact| over 2 s [m]")
    ax.set_title("spring1d: convergence of every integrator")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return save_figure(fig, path)
