"""Regenerate the measured tables of README.md from the data files their commands write.

Every measured table of the README sits in a generated block:

    <!-- begin NAME -->
    ...the text a renderer below makes from docs/data/...
    <!-- end NAME -->

A renderer (``@block("NAME")``) reads the data files a command wrote into ``docs/data/`` and
returns the block's Markdown, whose visible text names that command (the reader sees where every
number comes from; :func:`render` refuses a block that does not). So a number in a table is never
typed by hand: change the code, rerun the command, rerun this script.

    .venv/bin/python scripts/readme_tables.py            # rewrite README.md's blocks
    .venv/bin/python scripts/readme_tables.py --check    # exit 1 when a block differs (a test runs it)

The test suite runs ``--check``: a hand edit inside a block, or a data file changed without
rerunning this script, fails it.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DATA = ROOT / "docs" / "data"

BLOCK = re.compile(r"<!-- begin (?P<name>[\w-]+) -->\n(?P<body>.*?)<!-- end (?P=name) -->\n",
                   re.DOTALL)


class Renderer:
    """One block: its command (shown to the reader) and the function that renders its data."""

    def __init__(self, name: str, command: str, function: Callable[[Path], str]):
        self.name, self.command, self.function = name, command, function

    def __call__(self, data: Path) -> str:
        text = self.function(data).rstrip("\n") + "\n"
        if f"`{self.command}`" not in text:
            raise ValueError(f"block {self.name!r} does not name its command `{self.command}`")
        return text


RENDERERS: dict[str, Renderer] = {}


def block(name: str, command: str):
    """Register the renderer of the README block ``name``, whose data ``command`` writes."""
    def register(function: Callable[[Path], str]) -> Callable[[Path], str]:
        if name in RENDERERS:
            raise ValueError(f"block {name!r} registered twice")
        RENDERERS[name] = Renderer(name, command, function)
        return function
    return register


def read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file as dicts of strings (a renderer formats them)."""
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def markdown_table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    """A Markdown table; ``align`` one character per column: l (default) or r."""
    align = align or "l" * len(header)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = [header, rule, *rows]
    return "".join("| " + " | ".join(cells) + " |\n" for cells in lines)


def render(text: str, data: Path = DATA) -> str:
    """``text`` (the README) with every generated block re-rendered from ``data``. A block with
    no renderer, or a renderer with no block, is an error: both name what is missing."""
    seen = set()

    def replace(match: re.Match) -> str:
        name = match["name"]
        if name not in RENDERERS:
            raise ValueError(f"README block {name!r} has no renderer in {Path(__file__).name}")
        seen.add(name)
        return f"<!-- begin {name} -->\n{RENDERERS[name](data)}<!-- end {name} -->\n"

    result = BLOCK.sub(replace, text)
    missing = sorted(set(RENDERERS) - seen)
    if missing:
        raise ValueError(f"renderers without a README block: {', '.join(missing)}")
    return result


# == Figures: hooke study and the benchmarks ======================================================
# Data files written with hooke.provenance.write_measurement: {"command", "measured", "smoke",
# …, "rows"}. A missing file renders as a line naming the command that writes it.

def read_measurement(path: Path) -> dict | None:
    """A data file of :func:`hooke.provenance.write_measurement`, or None where it is missing."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def not_measured(command: str) -> str:
    return f"Not measured yet: run `{command}`.\n"


def provenance(data: dict, load: bool = True) -> str:
    """Where and when: date, commit, CPU, threads, BLAS kernel and, for timings (``load``), how
    busy the machine was; SMOKE in bold when the rows come from a smoke run."""
    m = data["measured"]
    commit = f", commit {m['commit']}" if m.get("commit") else ""
    text = (f"{m['date'][:10]}{commit}, {m['cpu']}, {m['cores']} cores, {m['numba_threads']} "
            f"Numba threads, OpenBLAS kernel {m['blas_kernel']}")
    if load:
        text += f"; other processes used {m['others_cpu_share']:.0%} of the CPU meanwhile"
    return ("**SMOKE RUN (a few steps of small sizes): these are not measurements** — " + text
            if data.get("smoke") else text)


def significant(value: float | None) -> str:
    """A table cell: 3 significant digits from 1 up (13.9, 4,840), 2 in e-notation below (2.8e-2)."""
    if value is None:
        return "–"
    if value == 0 or abs(value) >= 1:
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


STUDY = "docs/data/pendulum_correction.json"
STUDY_COMMAND = f"hooke study pendulum-correction --data {STUDY}"
# The same study with OpenBLAS's AVX2 kernel forced (this machine picks AVX-512's): the spread that
# round-off alone makes in a chaotic run.
STUDY_AVX2 = "docs/data/pendulum_correction_haswell.json"
STUDY_AVX2_COMMAND = f"OPENBLAS_CORETYPE=Haswell hooke study pendulum-correction --data {STUDY_AVX2}"
# Seed 003's own script (../shared/seeds/003_*.txt: SciPy's solve_ivp, RK45, rtol = atol = 1e-4),
# run unchanged on our 2-core machine in 2026-11 for the README (commit 396d2ac): max ΔL over
# 100 s [m]. Not regenerated here: the seed's code is not part of hooke.
SEED_003_BETA_C = {0.0: 13.9, 0.1: 0.079, 0.2: 5.1e-2, 0.3: 1.2e-2, 0.4: 9.5e-3}  # at k_c = 0
SEED_003_K_C = {0.01: 1.2e-2, 0.02: 9.3e-3, 0.03: 9.5e-3, 0.04: 5.4e-3}          # at β_c = 0.2
# The same script at β_c = 0.4, k_c = 0, 20 runs with the initial speed of the top mass changed by
# 0, 1e-10, …, 1.9e-9 m/s: the spread of max ΔL that chaos makes of a change at round-off level.
SEED_003_PERTURBED = {"runs": 20, "smallest": 8.9e-3, "largest": 1.7e-2, "median": 1.2e-2,
                      "below_1e-2": 6}
# The study's three tables: (key, title, the seed's numbers where it measured them).
STUDY_TABLES = (("beta_c", "β_c (k_c = 0)", SEED_003_BETA_C),
                ("k_c", "k_c (β_c = 0.2)", SEED_003_K_C),
                ("other", "other stabilisations", None))


def study_tables(rows: list[dict]) -> dict[str, dict]:
    """One run's max ΔL by table and column: the β_c sweep at k_c = 0, the k_c sweep at β_c = 0.2
    (k_c > 0; k_c = 0 is in the β_c table), the other stabilisations by name."""
    tables: dict[str, dict] = {"beta_c": {}, "k_c": {}, "other": {}}
    for row in rows:
        if row["stabilization"] != "correction":
            tables["other"][row["curve"]] = row["max_drift_m"]
        elif row["k_c"] == 0:
            tables["beta_c"][row["beta_c"]] = row["max_drift_m"]
        elif row["beta_c"] == 0.2:
            tables["k_c"][row["k_c"]] = row["max_drift_m"]
    return tables


@block("pendulum-correction", STUDY_COMMAND)
def pendulum_correction(data: Path) -> str:
    own = read_measurement(data / Path(STUDY).name)  # this machine's own BLAS kernel
    if own is None:
        return not_measured(STUDY_COMMAND)
    avx2 = read_measurement(data / Path(STUDY_AVX2).name)
    runs = [own] if avx2 is None else [own, avx2]
    text = (f"Max ΔL over {own['t_end']:g} s [m]: `{STUDY_COMMAND}` "
            f"({provenance(own, load=False)})")
    if avx2 is not None:
        text += (f"; the same with the AVX2 kernel forced, `{STUDY_AVX2_COMMAND}` "
                 f"({avx2['measured']['date'][:10]})")
    text += ("; seed 003's own script, run once on our machine and kept as data in "
             "`scripts/readme_tables.py`:\n\n")
    measured = [study_tables(run["rows"]) for run in runs]
    for key, title, seed in STUDY_TABLES:
        columns = list(seed or measured[0][key])
        rows = [[f"hooke, OpenBLAS {run['measured']['blas_kernel']}"]
                + [significant(tables[key].get(column)) for column in columns]
                for run, tables in zip(runs, measured)]
        if seed:
            rows.append(["seed 003's code"] + [significant(seed[column]) for column in columns])
        header = [title] + [f"{c:g}" if isinstance(c, float) else c for c in columns]
        text += markdown_table(header, rows, "l" + "r" * len(columns)) + "\n"
    spread = SEED_003_PERTURBED
    text += (f"Seed 003's own script at β_c = 0.4, run {spread['runs']} times with the top mass's "
             f"initial speed changed by 0, 1e-10, …, 1.9e-9 m/s, gave max ΔL from "
             f"{significant(spread['smallest'])} to {significant(spread['largest'])} (median "
             f"{significant(spread['median'])}; below 1e-2 in {spread['below_1e-2']} of "
             f"{spread['runs']} runs, the unchanged one among them).\n")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 when README.md differs from its data")
    args = parser.parse_args(argv)
    current = README.read_text(encoding="utf-8")
    fresh = render(current)
    if args.check:
        if fresh != current:
            changed = [m["name"] for m in BLOCK.finditer(current)
                       if m.group(0) not in fresh]
            print(f"README.md: generated block(s) differ from docs/data: {', '.join(changed)}; "
                  f"run: python scripts/readme_tables.py", file=sys.stderr)
            return 1
        return 0
    if fresh != current:
        README.write_text(fresh, encoding="utf-8")
        print("README.md: blocks rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
