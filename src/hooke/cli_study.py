"""``hooke study``: reproduce a study of the seeds (:mod:`hooke.studies`).

Contract: every argument is checked before the first run (bad input: one line naming the flag,
exit 2); the table is printed, the plot and CSV written to ``--out`` and, with ``--data``, the
table with its provenance. A full disk after the runs is one line naming the flag, exit 1, with
the table printed first: the minutes of runs are never lost without a word. Registered on the
``hooke`` app by :mod:`hooke.cli`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Optional

import typer

from .cli_common import console, errors, fail, output_directory, output_files, shown, typed_float
from .errors import HookeInputError
from .io.outputs import check_replaceable, writable_directory


def study_command(
    name: str = typer.Argument(..., metavar="STUDY", help="pendulum-correction"),
    out: Path = typer.Option(Path("out/study"), "--out", "-o"),
    t_end: float = typer.Option(100.0, "--t-end", help="duration of each run [s]", parser=typed_float),
    output_interval: float = typer.Option(0.01, "--output-interval", help="RK45 output interval [s]", parser=typed_float),
    data: Optional[Path] = typer.Option(
        None, "--data", help="also write the table with its provenance (command, date, machine, "
        "BLAS kernel) as JSON to this file; docs/data/pendulum_correction.json is the README's"),
) -> None:
    """Reproduce a study. pendulum-correction: seed 003's string-length drift ΔL(t) of the double
    pendulum for k_c ∈ {0 … 0.04} (β_c = 0.2) and β_c ∈ {0 … 0.4} (k_c = 0) with RK45 at
    rtol = atol = 1e-4, plus Baumgarte, projection and generalized-α; a log plot and a table."""
    from .provenance import LoadMonitor, command_line
    from .scene_setup import step_count
    from .studies import run_pendulum_correction_study

    if name != "pendulum-correction":
        fail(f"STUDY: unknown study (known: pendulum-correction), got {name!r}")
    for label, value in (("--t-end", t_end), ("--output-interval", output_interval)):
        if not math.isfinite(value) or value <= 0:
            fail(f"{label}: must be a number > 0, got {value}")
    try:  # before any run: every curve saves a frame each output interval
        step_count(t_end, output_interval, names=("--t-end", "--output-interval"))
    except HookeInputError as error:
        fail(str(error))
    if data is not None and os.path.isdir(data):  # (Path's raises for a name too long)
        fail(f"--data: is a directory; give the JSON file to write, e.g. "
             f"{data / 'pendulum_correction.json'}, got {str(data)!r}")
    if data is not None:  # before the study's runs, as --out: a table it cannot write is lost
        try:
            writable_directory(data.parent, "--data")
            check_replaceable(data, "--data")
        except HookeInputError as error:
            fail(str(error))
    output_directory(out)
    output_files([out / "pendulum_correction.png", out / "pendulum_correction.csv"])
    try:
        with LoadMonitor() as load:
            table = run_pendulum_correction_study(
                out, t_end=t_end, output_interval=output_interval,
                progress=lambda label: errors.print(f"running {label}"))
    except OSError as error:  # a full disk: the table computed is printed all the same
        if getattr(error, "table", None) is None:
            raise
        console.print(error.table.text(), markup=False, highlight=False)
        fail(f"--out: cannot write the study's plot and table ({error.strerror or error}), got "
             f"{str(out)!r}", code=1)
    console.print(table.text(), markup=False, highlight=False)
    console.print(f"plot: {shown(table.plot)}\ntable: {shown(table.csv)}")
    if data is not None:
        try:
            written = table.write_data(data, command_line("hooke"), load.others)
        except OSError as error:  # a full disk: the table is printed and in --out all the same
            fail(f"--data: cannot write the table ({error.strerror or error}), got {str(data)!r}",
                 code=1)
        console.print(f"data: {shown(written)}")
