"""Studies that reproduce experiments of the seeds.

:func:`run_pendulum_correction_study` is seed 003's experiment on the double pendulum (built-in
scene ``pendulum``): the string-length error ΔL(t) = Σ_k |L_k(t) − L0_k| over 100 s with RK45 at
rtol = atol = 1e-4 for the tension-weighted correction force with k_c ∈ {0, 0.01, …, 0.04} at
β_c = 0.2 and β_c ∈ {0, 0.1, …, 0.4} at k_c = 0, next to Baumgarte stabilisation, the post-step
projection (both with RK45) and generalized-α (joints as index-3 constraints, fixed steps of at
most 0.01 s). It writes ``pendulum_correction.png`` (ΔL on a log scale, one panel per sweep with the
three alternatives in both) and ``pendulum_correction.csv`` (ΔL of every curve at every output
time) into ``out_dir`` and returns a :class:`StudyTable`; an OSError writing them (a full disk)
carries the computed table as its ``table``.

RK45 steps as freely as the seed's ``solve_ivp`` and interpolates the frames at the output
times (dense output, :mod:`hooke.integrators.adaptive`): with the same first step, controller and
last-step cut it takes the seed's steps (identical to 1e-12 s for the first ~80–290 steps, 6–9 s,
until round-off grows through the chaotic motion), and ``stabilization="correction"`` is the
seed's right-hand side (:mod:`hooke.constraints`). ``output_interval`` only sets the frames (and
generalized-α's fixed step, at most 0.01 s).

The motion is chaotic, so a single max ΔL depends on round-off: RK45 sums its stages with NumPy's
dot product, whose BLAS kernel OpenBLAS picks for the CPU (:mod:`hooke.provenance`), and the
AVX-512 and AVX2 kernels give visibly different values on the same code (``OPENBLAS_CORETYPE``
forces one). A run is deterministic on one machine, with 1 or 2 Numba threads. The README's
table is rendered from :meth:`StudyTable.write_data`'s file with the kernel named.
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .checks import _number
from .errors import HookeInputError, as_path
from .io.outputs import written_aside
from .io.scene_file import builtin_scene
from .provenance import write_measurement
from .scene_setup import step_count
from .simulate import simulate

K_C_SWEEP = (0.0, 0.01, 0.02, 0.03, 0.04)
BETA_C_SWEEP = (0.0, 0.1, 0.2, 0.3, 0.4)


@dataclass
class StudyRow:
    label: str
    integrator: str
    options: dict
    max_drift: float
    final_drift: float
    steps: int
    wall_time: float


@dataclass
class StudyTable:
    """One row per curve; ``text()`` formats it, ``plot`` and ``csv`` are the written files."""

    t_end: float
    rtol: float
    rows: list[StudyRow] = field(default_factory=list)
    plot: Path | None = None
    csv: Path | None = None

    def text(self) -> str:
        lines = [f"{'curve':<28} {'integrator':<18} {'max ΔL [m]':>11} {'final ΔL [m]':>12} "
                 f"{'steps':>7} {'time [s]':>8}"]
        for row in self.rows:
            lines.append(f"{row.label:<28} {row.integrator:<18} {row.max_drift:>11.3e} "
                         f"{row.final_drift:>12.3e} {row.steps:>7d} {row.wall_time:>8.2f}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def write_data(self, path, command: str, others_cpu_share: float) -> Path:
        """The rows (without their wall times, so that a rerun writes the same rows) and the
        study's settings, with their provenance, as JSON (:func:`hooke.provenance.write_measurement`)."""
        rows = [{"curve": row.label, "integrator": row.integrator,
                 "stabilization": row.options.get("stabilization"),
                 "k_c": row.options.get("k_c"), "beta_c": row.options.get("beta_c"),
                 "max_drift_m": row.max_drift, "final_drift_m": row.final_drift,
                 "steps": row.steps} for row in self.rows]
        return write_measurement(path, rows, command, others_cpu_share, t_end=self.t_end,
                                 rtol=self.rtol)


def length_drift(model, x: np.ndarray) -> np.ndarray:
    """ΔL (frames,) = Σ_k | |x_j − x_i| − L_k | for positions x (frames, n, d)."""
    return np.sum(model.joint_length_error(x), axis=1)


def _window_max(t: np.ndarray, values: np.ndarray, window: float):
    """(window end times, max of ``values`` in each window) for a readable log plot."""
    per = max(1, int(round(window / max(float(t[1] - t[0]), 1e-300)))) if t.size > 1 else 1
    count = (values.size - 1) // per
    if count == 0:
        return t, values
    blocks = values[1: 1 + count * per].reshape(count, per)
    return t[per: 1 + count * per: per], blocks.max(axis=1)


def _curves(rtol: float) -> list[tuple[str, str, str, dict]]:
    """(panel, label, integrator, options) of every curve; panel "k_c", "beta_c" or "both"."""
    rk45 = {"rtol": rtol, "atol": rtol}
    curves = [("beta_c", f"k_c=0, β_c={b:g}", "rk45",
               {**rk45, "stabilization": "correction", "k_c": 0.0, "beta_c": b})
              for b in BETA_C_SWEEP]
    curves += [("k_c", f"k_c={k:g}, β_c=0.2", "rk45",
                {**rk45, "stabilization": "correction", "k_c": k, "beta_c": 0.2})
               for k in K_C_SWEEP]
    curves += [("both", "Baumgarte (α=β=10/s)", "rk45",
                {**rk45, "stabilization": "baumgarte", "baumgarte_alpha": 10.0,
                 "baumgarte_beta": 10.0}),
               ("both", "projection", "rk45", {**rk45, "stabilization": "projection"}),
               ("both", "generalized-α ρ∞=0.8", "generalized_alpha", {"rho_inf": 0.8})]
    return curves


def run_pendulum_correction_study(out_dir, t_end: float = 100.0, output_interval: float = 0.01,
                                  rtol: float = 1e-4, progress=None) -> StudyTable:
    """Seed 003's length-correction experiment; see the module docstring.

    ``progress(label)``, if given, is called before each run.
    """
    from .viz.plots import new_figure

    for name, value in (("t_end", t_end), ("output_interval", output_interval), ("rtol", rtol)):
        _number(value, name, positive=True)
    step_count(t_end, output_interval, names=("t_end", "output_interval"))  # a frame per interval
    if progress is not None and not callable(progress):
        raise HookeInputError("progress", "must be None or a callable progress(label)", progress)
    out = as_path(out_dir, "out_dir")
    out.mkdir(parents=True, exist_ok=True)
    scene = builtin_scene("pendulum")
    for integrator in dict.fromkeys(integrator for _, _, integrator, _ in _curves(rtol)):
        # Numba compiles (or loads its cache) here, so that no curve's time includes that.
        simulate(scene, integrator=integrator, dt=0.01, t_end=0.1)
    table = StudyTable(t_end=t_end, rtol=rtol)
    series = []
    for panel, label, integrator, options in _curves(rtol):
        if progress is not None:
            progress(label)
        started = time.perf_counter()
        dt, save_every = output_interval, 1
        if integrator == "generalized_alpha":  # fixed steps: no longer than the scene's 0.01 s
            save_every = max(1, int(round(output_interval / min(output_interval, 0.01))))
            dt = output_interval / save_every
        result = simulate(scene, integrator=integrator, dt=dt, t_end=t_end, save_every=save_every,
                          **options)
        drift = length_drift(scene.model, result.x)
        table.rows.append(StudyRow(label, integrator, options, float(drift.max()),
                                   float(drift[-1]), int(result.stats["steps"]),
                                   time.perf_counter() - started))
        series.append((panel, label, result.t, drift))

    plot_window = 0.5  # the seed plotted every 0.5 s; here each point is the max over 0.5 s
    figure = new_figure(figsize=(14, 5.5))
    axes = figure.subplots(1, 2, sharey=True)
    titles = {"beta_c": "β_c sweep at k_c = 0", "k_c": "k_c sweep at β_c = 0.2"}
    floor = 1e-16  # a projection keeps ΔL at round-off, possibly exactly 0
    for axis, panel in zip(axes, ("beta_c", "k_c")):
        for curve_panel, label, t, drift in series:
            if curve_panel in (panel, "both"):
                style = "--" if curve_panel == "both" else "-"
                times, peaks = _window_max(t, drift, plot_window)
                axis.plot(times, np.maximum(peaks, floor), style, label=label, linewidth=1.5)
        axis.set_yscale("log")
        axis.set_xlabel("t [s]")
        axis.set_title(f"{titles[panel]} (RK45, rtol = atol = {rtol:g})")
        axis.grid(True, which="major", alpha=0.6)
        axis.legend(fontsize=8, loc="lower right")
    axes[0].set_ylabel("max over 0.5 s of ΔL = Σ |L − L0| [m]")
    figure.suptitle("Double pendulum (seed 003): string-length drift")
    figure.tight_layout()
    try:
        _write(table, out, figure, series)
    except OSError as error:  # a full disk: the rows, minutes of runs, go with the error
        error.table = table
        raise
    return table


def _write(table: StudyTable, out: Path, figure, series: list) -> None:
    """The plot and the CSV of every curve's ΔL into ``out``, each written whole."""
    table.plot = out / "pendulum_correction.png"
    with written_aside(table.plot) as partial:
        figure.savefig(partial, dpi=120)
    table.csv = out / "pendulum_correction.csv"
    with written_aside(table.csv) as partial, open(partial, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["t"] + [label for _, label, _, _ in series])
        times = series[0][2]
        columns = [np.interp(times, t, drift) for _, _, t, drift in series]
        for index, t in enumerate(times):
            writer.writerow([f"{t:.6g}"] + [f"{column[index]:.6e}" for column in columns])
