"""What ``hooke run`` writes and prints once a run has ended: its plots, the XDMF sidecar of its
trajectory, ``summary.json`` and the summary table.

Contract: :func:`summary_data` is the run's summary as strict JSON values (non-finite numbers are
null; the energy change in joules and relative to a scale it names, :class:`hooke.result.EnergyChange`);
:func:`write_outputs` writes the files and returns their paths (and removes the plots of kinds it
did not draw: an earlier run's in the same folder); :func:`print_summary` prints the
same summary, never a number summary.json does not hold.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from rich.table import Table

from .console_text import shown
from .io.outputs import remove_files, written_aside
from .result import finite_or_none


def output_paths(out: Path) -> list[Path]:
    """Every file :func:`write_outputs` may write or remove in ``out``, for a run to check
    before its first step (:func:`hooke.io.outputs.check_replaceables`): a directory or a FIFO
    named like one of them failed only once the run had ended, or blocked it there."""
    from .viz import PLOT_KINDS  # the names only: Matplotlib is the plot worker's to import

    return [out / "trajectory.xdmf", out / "summary.json", *(out / f"{name}.png" for name in PLOT_KINDS)]


def remove_outputs(out: Path) -> None:
    """Remove the plots, sidecar and summary in ``out`` of the run whose file a stopped run's
    has replaced: they would pass for the new run's (`hooke run --resume` writes those)."""
    remove_files(output_paths(out))


def write_outputs(result, out: Path, worker=None) -> list[Path]:
    """Plots, the XDMF sidecar of the stored trajectory, and summary.json; the plots drawn by
    ``worker`` (:mod:`hooke.viz.plot_worker`) meanwhile when it takes them, else here."""
    from .io.export import write_xdmf

    submitted = worker is not None and worker.submit(result, out)
    written = [out / "trajectory.h5", write_xdmf(out / "trajectory.h5", verify=False)]
    drawn = worker.collect() if submitted else None
    written += draw_plots(result, out) if drawn is None else drawn
    summary = summary_data(result)
    with written_aside(out / "summary.json") as partial:
        partial.write_text(json.dumps(summary, indent=2, allow_nan=False))
    written.append(out / "summary.json")
    return written


def draw_plots(result, out: Path) -> list[Path]:
    """The run's plots in ``out`` (all that apply but the phase portrait), and no other: an
    earlier run's plot of a kind this run has not (spring1d's analytic.png beside cloth2d) would
    pass for its own; `hooke plot` draws them again."""
    from .viz import plots  # Matplotlib: loaded by the commands that plot, not by every command

    drawn = []
    if result.n_frames >= 2:
        for name in plots.available(result):
            if name != "phase":
                plots.PLOTS[name](result, out / f"{name}.png")
                drawn.append(out / f"{name}.png")
    for name in plots.PLOTS:
        if out / f"{name}.png" not in drawn:
            (out / f"{name}.png").unlink(missing_ok=True)
    return drawn


def summary_data(result) -> dict:
    model = result.scene.model
    with np.errstate(over="ignore", invalid="ignore"):
        data = {
            "scene": result.scene.name, "integrator": result.integrator, "dt": result.dt,
            "t_end": float(result.t[-1]), "frames": result.n_frames, "complete": result.complete,
            "particles": model.n_particles, "springs": model.n_springs, "dim": model.dim,
            "wall_time_s": round(result.wall_time, 4), "stats": result.stats,
            **energy_change_data(result.energy_change()),
        }
        if result.has_analytic:
            data["max_error_vs_analytic"] = finite_or_none(
                np.max(np.abs(result.x - result.analytic())))
        if result.joint_force.size:
            data["joint_force_range_N"] = [finite_or_none(result.joint_force.min()),
                                           finite_or_none(result.joint_force.max())]
    if np.isfinite(result.contact_distance).any():
        data["min_contact_distance_m"] = finite_or_none(np.nanmin(result.contact_distance))
    if np.isfinite(result.surface_distance).any():
        data["min_surface_distance_m"] = finite_or_none(np.nanmin(result.surface_distance))
    return data


def energy_change_data(change) -> dict:
    """summary.json's energy keys: joules, and the relative change with its scale named
    (:class:`hooke.result.EnergyChange`); null where a value is not finite or has no scale."""
    return {"energy_initial_J": change.initial, "energy_final_J": change.final,
            "energy_change_J": change.change, "energy_change_relative": change.relative,
            "energy_relative_to": change.relative_to, "energy_scale_J": change.scale}


def energy_change_text(summary: dict) -> str:
    """The change as printed, e.g. "ΔE = -0.003785 J = -1.514 % of the initial energy (0.25 J)",
    or the joules alone where there is no scale."""
    if summary["energy_change_J"] is None:
        return "not finite"
    text = f"ΔE = {summary['energy_change_J']:+.4g} J"
    if summary["energy_relative_to"] is None:
        return text
    return (f"{text} = {100 * summary['energy_change_relative']:+.4g} % of the "
            f"{summary['energy_relative_to']} ({summary['energy_scale_J']:.4g} J)")


def number(value, spec: str) -> str:
    return "not finite" if value is None else format(value, spec)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def print_summary(console, summary: dict, written: list[Path]) -> None:
    """The summary table of a run on ``console`` (Rich)."""
    table = Table(title=f"hooke run: {shown(summary['scene'])}", title_justify="left",
                  show_header=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")  # a long path goes on over lines, whole, not cut with "…"
    rows = [
        ("system", f"{plural(summary['particles'], 'particle')}, {plural(summary['springs'], 'spring')}, "
                   f"{summary['dim']}D"),
        ("integrator", f"{summary['integrator']}, dt = {summary['dt']:g}"),
        ("simulated", f"{summary['t_end']:g} s in {summary['frames']} frames"
                      + ("" if summary["complete"] else " (stopped early)")),
        ("counters", ", ".join(f"{k} {v}" for k, v in summary["stats"].items())),
        ("wall time", f"{summary['wall_time_s']:.3f} s"),
        ("total energy", f"{number(summary['energy_initial_J'], '.6g')} → "
                         f"{number(summary['energy_final_J'], '.6g')} J"),
        ("energy change", energy_change_text(summary)),
    ]
    if "max_error_vs_analytic" in summary:
        rows.append(("max |x − analytic|", f"{number(summary['max_error_vs_analytic'], '.3e')} m"))
    if "joint_force_range_N" in summary:
        low, high = (number(value, ".4g") for value in summary["joint_force_range_N"])
        rows.append(("joint tension", f"{low} … {high} N"))
    if "min_contact_distance_m" in summary:
        rows.append(("min distance to planes, spheres, obstacles",
                     f"{summary['min_contact_distance_m']:.3e} m"))
    if "min_surface_distance_m" in summary:
        rows.append(("min distance between surfaces",
                     f"{summary['min_surface_distance_m']:.3e} m"))
    rows.append(("written", "\n".join(shown(p) for p in written)))
    for row in rows:
        table.add_row(*row)
    console.print(table)
