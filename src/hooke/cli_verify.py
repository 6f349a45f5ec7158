"""``hooke verify``: the integrators' measured orders of convergence and energy behaviour as tables,
a plot and CSV files (:mod:`hooke.verify`), or with ``--all`` the verification matrix
(:mod:`hooke.verification`).

Contract: the command is registered on ``hooke.cli.app`` as ``verify``; it exits 1 when a measured
order is off (or a matrix cell is off or failed, not a stated limitation), 2 on bad input.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.table import Table

from .cli_common import (console, fail, output_directory, output_files, shown, typed_int,
                         write_failure_exits)


def verify_command(
    out: Path = typer.Option(Path("out/verify"), "--out", "-o",
                             help="where to write the plot and the CSV tables"),
    energy_steps: int = typer.Option(4000, "--energy-steps", parser=typed_int,
                                     help="steps of each energy run (fewer: a quicker, rougher check)"),
    every: bool = typer.Option(False, "--all", help="the verification matrix: every integrator × "
                               "every built-in scene it accepts (about 30 min)"),
    quick: bool = typer.Option(False, "--quick", help="with --all: the reduced matrix the tests "
                               "run (a few scenes, three levels, short horizons)"),
) -> None:
    """Run every integrator on spring1d, and every one that handles joints on the double pendulum:
    measured order of convergence, energy behaviour and joint drift; writes convergence.png,
    verify_spring1d.csv and verify_pendulum.csv. With --all, the verification matrix instead:
    verification.csv and verification.png."""
    from .scene_setup import MAX_STEPS
    from .verify import convergence_plot, verify, verify_joints, write_reports

    if quick and not every:
        fail("--quick: only with --all")
    if not 10 <= energy_steps <= MAX_STEPS:  # past it: the run's own t_end refusal, unexplained
        fail(f"--energy-steps: must be an integer from 10 to {MAX_STEPS:.0e}, got {energy_steps}")
    output_directory(out)
    names = ("verification.csv", "verification.png") if every else (
        "convergence.png", "verify_spring1d.csv", "verify_pendulum.csv")
    output_files([out / name for name in names])  # before the runs, which take minutes
    if every:
        verify_matrix(out, quick)
        return
    reports = verify(energy_steps=energy_steps)
    table = Table(title=f"spring1d (ω = √10): convergence order; energy over {energy_steps} steps "
                        "of 0.005 s", title_justify="left")
    for column, justify in (("integrator", "left"), ("order", "right"), ("measured", "right"),
                            ("energy", "left"), ("E⁺/E − 1", "right")):
        table.add_column(column, justify=justify, no_wrap=True)
    for r in reports:
        mark = "" if r.order_ok else " [red](off)[/]"
        table.add_row(r.name, str(r.expected_order), f"{r.measured_order:.3f}{mark}", r.behaviour,
                      f"{r.energy_factor - 1:+.3e}")
    console.print(table)
    joint_reports = verify_joints(energy_steps=energy_steps)
    table = Table(title="pendulum (double, joints, stabilization=None): order of the positions over "
                        "1.5 s against rk45 at dt = 1/1280 s;\nenergy above the hanging rest state "
                        f"and joint drift max|L − L0| over {energy_steps} steps of 0.0025 s",
                  title_justify="left")
    for column, justify in (("integrator", "left"), ("order", "right"), ("measured", "right"),
                            ("energy", "left"), ("E⁺/E − 1", "right"), ("max|L − L0| \\[m]", "right")):
        table.add_column(column, justify=justify, no_wrap=True)
    for r in joint_reports:
        mark = "" if r.order_ok else " [red](off)[/]"
        behaviour = r.behaviour if r.failed_at is None else f"fails at t = {r.failed_at:.2f} s"
        table.add_row(r.name, str(r.expected_order), f"{r.measured_order:.3f}{mark}", behaviour,
                      f"{r.energy_factor - 1:+.3e}", f"{r.drift:.2e}")
    console.print(table)
    with write_failure_exits("--out", "the plot and tables", out):  # a full disk
        convergence_plot(reports, out / "convergence.png", joint_reports)
        write_reports(reports, out / "verify_spring1d.csv")
        write_reports(joint_reports, out / "verify_pendulum.csv")
    console.print(f"log-log plot: {shown(out / 'convergence.png')}\ntables: "
                  f"{shown(out / 'verify_spring1d.csv')}, {shown(out / 'verify_pendulum.csv')}",
                  highlight=False)
    if not all(r.order_ok for r in [*reports, *joint_reports]):
        raise typer.Exit(1)


def verify_matrix(out: Path, quick: bool) -> None:
    """``hooke verify --all``: run the matrix with a line per cell as it goes, print its table,
    write verification.csv and verification.png; exit 1 when a cell is off (not a stated
    limitation) or failed."""
    from .verification import FULL, QUICK, run_matrix
    from .verification.report import PLOT_TITLE, matrix_plot, table, write_matrix_csv

    configuration = QUICK if quick else FULL
    started = time.perf_counter()

    def report(cell) -> None:
        if cell.status != "n/a":
            order = f"{cell.measured_order:.2f}" if cell.errors else "—"
            console.print(f"{cell.scene} × {cell.integrator}: {cell.status} (order {order}, "
                          f"expected {cell.expected_order}; {cell.wall_time:.1f} s)", highlight=False)

    cells = run_matrix(configuration, on_cell=report)
    minutes = (time.perf_counter() - started) / 60
    command = f"hooke verify --all{' --quick' if quick else ''}"
    title = (f"{command}: measured order of convergence ({configuration.levels} levels of dt, "
             f"halving), {minutes:.1f} min")
    console.print(table(cells, title))
    console.print("✗ off its order, ‡ a stated limitation. Default options, with adaptive=False "
                  "where an integrator has it (fixed steps of dt).", highlight=False)
    for cell in cells:
        if cell.status in ("off", "failed", "limited"):
            console.print(f"[bold]{cell.scene} × {cell.integrator}[/] {cell.status}: errors "
                          f"{', '.join(f'{e:.2e}' for e in cell.errors)} m at dt = "
                          f"{', '.join(f'{dt:g}' for dt in cell.dts[:len(cell.errors)])} s. "
                          f"{cell.limitation or cell.note}")
    plot_path = out / "verification.png"
    with write_failure_exits("--out", "the table and plot", out):  # a full disk
        csv_path = write_matrix_csv(cells, out / "verification.csv")
        matrix_plot(cells, plot_path, PLOT_TITLE.format(command=command))
    console.print(f"table: {shown(csv_path)}\nplot: {shown(plot_path)}", highlight=False)
    if any(cell.failing for cell in cells):
        raise typer.Exit(1)
