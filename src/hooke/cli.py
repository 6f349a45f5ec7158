"""The ``hooke`` command.

Contract: bad input (unknown scene or integrator, invalid scene file, dt ≤ 0, …) prints one line
per problem to stderr and exits with code 2, never a traceback. A run that blows up writes the
frames it computed before it stopped and exits with code 1.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from .errors import HookeInputError, SimulationError
from .integrators import base as integrator_registry
from .scenes import names as scene_names

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="hooke: dynamics of mass-spring systems.")
console = Console()
errors = Console(stderr=True)


def fail(message: str, code: int = 2) -> None:
    for line in str(message).splitlines():
        errors.print(f"[bold red]error:[/] {line}", highlight=False, markup=True, soft_wrap=True)
    raise typer.Exit(code)


def load_scene(scene_or_file: str):
    from .io.scene_file import load
    from .scenes import scene

    if scene_or_file in scene_names():
        return scene(scene_or_file)
    if scene_or_file.endswith(".toml") or Path(scene_or_file).exists():
        return load(scene_or_file)
    raise HookeInputError("SCENE_OR_FILE", "is neither a built-in scene "
                          f"({', '.join(scene_names())}) nor a scene file", scene_or_file)


@app.command("list")
def list_command() -> None:
    """List the built-in scenes and the integrators."""
    from .scenes import scene

    table = Table(title="scenes", title_justify="left")
    table.add_column("name", style="bold")
    table.add_column("description")
    for name in scene_names():
        table.add_row(name, scene(name).description)
    console.print(table)
    table = Table(title="integrators", title_justify="left")
    table.add_column("name", style="bold")
    table.add_column("order", justify="right")
    table.add_column("method")
    for name in integrator_registry.names():
        cls = integrator_registry.get(name)
        table.add_row(name, str(cls.order), cls.summary)
    console.print(table)


class LazyProgress:
    """A progress bar that appears only once a run has taken longer than ``delay`` seconds."""

    def __init__(self, label: str, delay: float = 1.0):
        self.label, self.delay = label, delay
        self.started = time.perf_counter()
        self.bar: Progress | None = None
        self.task = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if time.perf_counter() - self.started < self.delay:
                return
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                TextColumn("{task.completed}/{task.total} steps"),
                                TimeElapsedColumn(), TimeRemainingColumn(), console=errors,
                                transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=total)
        self.bar.update(self.task, completed=done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def write_outputs(result, out: Path) -> list[Path]:
    from .viz import plots

    out.mkdir(parents=True, exist_ok=True)
    written = [out / "trajectory.npz"]
    result.save_npz(written[0])
    if result.n_frames >= 2:
        written.append(plots.energy_plot(result, out / "energy.png"))
        written.append(plots.snapshot_plot(result, out / "snapshot.png"))
        if result.scene.has_analytic:
            written.append(plots.analytic_plot(result, out / "analytic.png"))
    summary = summary_data(result)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    written.append(out / "summary.json")
    return written


def summary_data(result) -> dict:
    model = result.scene.model
    data = {
        "scene": result.scene.name, "integrator": result.integrator, "dt": result.dt,
        "t_end": float(result.t[-1]), "frames": result.n_frames, "complete": result.complete,
        "particles": model.n_particles, "springs": model.n_springs, "dim": model.dim,
        "wall_time_s": round(result.wall_time, 4), "stats": result.stats,
        "energy_initial": float(result.energy["total"][0]),
        "energy_final": float(result.energy["total"][-1]),
        "energy_relative_change": result.energy_drift(),
    }
    if result.scene.has_analytic:
        data["max_error_vs_analytic"] = float(np.max(np.abs(result.x - result.analytic())))
    return data


def print_summary(summary: dict, written: list[Path]) -> None:
    table = Table(title=f"hooke run: {summary['scene']}", title_justify="left", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    rows = [
        ("system", f"{summary['particles']} particles, {summary['springs']} springs, {summary['dim']}D"),
        ("integrator", f"{summary['integrator']}, dt = {summary['dt']:g}"),
        ("simulated", f"{summary['t_end']:g} s in {summary['frames']} frames"
                      + ("" if summary["complete"] else " (stopped early)")),
        ("steps", ", ".join(f"{k} {v}" for k, v in summary["stats"].items())),
        ("wall time", f"{summary['wall_time_s']:.3f} s"),
        ("total energy", f"{summary['energy_initial']:.6g} → {summary['energy_final']:.6g} J "
                         f"({100 * summary['energy_relative_change']:+.4g} %)"),
    ]
    if "max_error_vs_analytic" in summary:
        rows.append(("max |x − analytic|", f"{summary['max_error_vs_analytic']:.3e} m"))
    rows.append(("written", "\n".join(str(p) for p in written)))
    for row in rows:
        table.add_row(*row)
    console.print(table)


@app.command("run")
def run_command(
    scene_or_file: str = typer.Argument(..., metavar="SCENE_OR_FILE",
                                        help="a built-in scene name (see `hooke list`) or a .toml scene file"),
    integrator: Optional[str] = typer.Option(None, "--integrator", "-i", help="integrator name"),
    dt: Optional[float] = typer.Option(None, "--dt", help="time step [s]"),
    t_end: Optional[float] = typer.Option(None, "--t-end", help="duration [s]"),
    save_every: int = typer.Option(1, "--save-every", help="save a frame every N steps"),
    out: Path = typer.Option(Path("out"), "--out", "-o", help="output directory"),
) -> None:
    """Simulate a scene; write trajectory.npz, energy.png, snapshot.png (and analytic.png when
    the scene has an analytic solution) and summary.json into --out; print a summary."""
    from .simulate import simulate

    try:
        scene = load_scene(scene_or_file)
        progress = LazyProgress(f"{scene.name}")
        try:
            result = simulate(scene, integrator=integrator, dt=dt, t_end=t_end,
                              save_every=save_every, progress=progress)
        finally:
            progress.close()
    except HookeInputError as error:
        fail(str(error))
    except SimulationError as error:
        partial = getattr(error, "result", None)
        if partial is not None and partial.n_frames > 0:
            written = write_outputs(partial, out)
            print_summary(summary_data(partial), written)
        fail(str(error), code=1)
    print_summary(summary_data(result), write_outputs(result, out))


@app.command("verify")
def verify_command(
    out: Path = typer.Option(Path("out/verify"), "--out", "-o", help="where to write convergence.png"),
) -> None:
    """Run every integrator on spring1d: measured order of convergence and energy behaviour."""
    from .verify import convergence_plot, verify

    reports = verify()
    table = Table(title="spring1d (ω = √10): convergence order; energy over 4000 steps of 0.005 s",
                  title_justify="left")
    for column, justify in (("integrator", "left"), ("order", "right"), ("measured", "right"),
                            ("energy", "left"), ("E⁺/E − 1", "right")):
        table.add_column(column, justify=justify, no_wrap=True)
    for r in reports:
        mark = "" if r.order_ok else " [red](off)[/]"
        table.add_row(r.name, str(r.expected_order), f"{r.measured_order:.3f}{mark}", r.behaviour,
                      f"{r.energy_factor - 1:+.3e}")
    console.print(table)
    out.mkdir(parents=True, exist_ok=True)
    console.print(f"log-log plot: {convergence_plot(reports, out / 'convergence.png')}")
    if not all(r.order_ok for r in reports):
        raise typer.Exit(1)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:  # Ctrl-C: a clean message, not a traceback
        errors.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
