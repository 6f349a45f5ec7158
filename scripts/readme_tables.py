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
