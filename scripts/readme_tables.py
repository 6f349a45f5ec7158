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


# ---------------------------------------------------------------------------------------------
# Verification: `hooke verify` (spring1d, the double pendulum) and `hooke verify --all` (the
# matrix of every integrator × every built-in scene, and its stated limitations).
# ---------------------------------------------------------------------------------------------
VERIFY = "hooke verify --out docs/data"
VERIFY_ALL = "hooke verify --all --out docs/data"
MISSING = "—"  # a field the command left empty: not measured


def scientific(value: float, digits: int = 1, sign: bool = False) -> str:
    """``value`` in scientific notation, with a real minus sign."""
    return f"{value:{'+' if sign else ''}.{digits}e}".replace("-", "−")


def exponent(text: str) -> str:
    """A CSV field's number in scientific notation (two digits), or — when it is empty."""
    return scientific(float(text)) if text else MISSING


def decimals(text: str, digits: int = 2) -> str:
    return f"{float(text):.{digits}f}".replace("-", "−") if text else MISSING


def verify_rows(rows: list[dict[str, str]], drift: bool) -> list[list[str]]:
    """The rows of a `hooke verify` table: order, measured, energy, factor (and drift)."""
    table = []
    for row in rows:
        behaviour = row["behaviour"] if not row.get("failed_at") else (
            f"fails at t = {float(row['failed_at']):.2f} s")
        cells = [row["name"], row["expected_order"], decimals(row["measured_order"]), behaviour,
                 scientific(float(row["energy_change"]), 3, sign=True)]
        if drift:
            cells.append(exponent(row["drift"]))
        table.append(cells)
    return table


@block("verify-spring1d", VERIFY)
def verify_spring1d(data: Path) -> str:
    rows = read_csv(data / "verify_spring1d.csv")
    return (f"From `{VERIFY}` (`verify_spring1d.csv`):\n\n"
            + markdown_table(["integrator", "order", "measured", "energy", "E⁺/E − 1 per step"],
                             verify_rows(rows, drift=False), "lrrlr"))


@block("verify-pendulum", VERIFY)
def verify_pendulum(data: Path) -> str:
    rows = read_csv(data / "verify_pendulum.csv")
    return (f"From `{VERIFY}` (`verify_pendulum.csv`):\n\n"
            + markdown_table(["integrator", "order", "measured", "energy", "E⁺/E − 1 per step",
                              "max\\|L − L0\\| [m]"], verify_rows(rows, drift=True), "lrrlrr"))


MATRIX_MARKS = {"ok": "", "off": " ✗", "limited": " ‡", "failed": ""}


def matrix_cell(row: dict[str, str]) -> str:
    if row["status"] == "n/a":
        return "·"
    if row["status"] == "failed":
        return "failed"
    text = decimals(row["measured_order"]) + MATRIX_MARKS[row["status"]]
    return f"**{text}**" if row["status"] == "off" else text


@block("verification-matrix", VERIFY_ALL)
def verification_matrix(data: Path) -> str:
    rows = read_csv(data / "verification.csv")
    integrators = list(dict.fromkeys(row["integrator"] for row in rows))
    scenes = list(dict.fromkeys(row["scene"] for row in rows))
    by_key = {(row["integrator"], row["scene"]): row for row in rows}
    expected = {row["integrator"]: row["expected_order"] for row in rows}
    header = ["scene", "kind", *(f"`{name}` ({expected[name]})" for name in integrators)]
    body = []
    for scene in scenes:
        first = by_key[integrators[0], scene]
        size = f"{first['dim']}D, {first['particles']} particles"
        body.append([f"`{scene}`", f"{first['kind']}, {size}",
                     *(matrix_cell(by_key[name, scene]) for name in integrators)])
    minutes = sum(float(row["wall_time"]) for row in rows) / 60
    return (f"From `{VERIFY_ALL}` (`verification.csv`, {len(rows)} cells, {minutes:.0f} min of "
            "runs): the measured order of convergence of every integrator (expected order in "
            "brackets) on every built-in scene; · where the integrator refuses the scene, "
            "✗ off its order by more than 0.3, ‡ a stated limitation (below).\n\n"
            + markdown_table(header, body, "ll" + "r" * len(integrators)))


@block("verification-limitations", VERIFY_ALL)
def verification_limitations(data: Path) -> str:
    rows = [row for row in read_csv(data / "verification.csv")
            if row["status"] in ("off", "limited", "failed")]
    if not rows:
        return f"`{VERIFY_ALL}`: every cell shows its integrator's order.\n"
    body = []
    for row in rows:
        errors = ", ".join(exponent(error) for error in row["errors"].split(";") if error)
        cause = row["limitation"] or f"**not yet explained** ({row['note']})"
        body.append([f"`{row['integrator']}`", f"`{row['scene']}`", row["expected_order"],
                     decimals(row["measured_order"]), f"{float(row['dt0']):g} s", errors, cause])
    return (f"Cells of `{VERIFY_ALL}` off their integrator's order, with their cause:\n\n"
            + markdown_table(["integrator", "scene", "order", "measured", "dt₀", "errors [m], dt "
                              "halving", "cause"], body, "llrrrll"))


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
