"""The verification matrix's outputs: ``verification.csv``, the printed table and the picture.

Contract:
- :func:`write_matrix_csv` writes one row per cell, its fields as columns, cells sorted by
  integrator (registry order) then scene (the configuration's order); fields as
  :func:`hooke.verify.csv_field` writes them: numbers as ``%.6g``, NaN (not measured) as an empty
  field, lists (one entry per ladder level) joined by ';', dicts as JSON.
  :func:`read_matrix_csv` reads such a file back into cells (numbers as their six digits), so
  the picture can be redrawn from the data without running the matrix again, and writing the
  cells read gives the same file.
- :func:`table` is the Rich table ``hooke verify --all`` prints: a row per scene, a column per
  integrator, each cell the measured order, marked ✗ when off, ‡ when a stated limitation,
  "n/a" where the integrator refuses the scene.
- :func:`matrix_plot` draws the grid — rows integrators, columns scenes grouped by kind — coloured
  by status with the measured order written in each cell; returns the Figure (written to
  ``path`` when given).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import asdict, fields
from pathlib import Path

from ..io.csv_numbers import csv_number
from ..integrators.base import names
from ..verify import write_csv
from .matrix import Cell

MARKS = {"off": " ✗", "limited": " ‡"}
STATUS_COLOURS = {"ok": "#5cb85c", "off": "#d9534f", "limited": "#f0ad4e", "failed": "#8e44ad",
                  "n/a": "#eeeeee"}
KINDS = ("springs", "joints", "contact")
PLOT_TITLE = "{command}: measured order of convergence (expected order in brackets)"


def ordered(cells: list[Cell]) -> list[Cell]:
    """Cells by integrator (registry order), then scene (their order in ``cells``)."""
    registry = names()
    scenes = list(dict.fromkeys(cell.scene for cell in cells))
    return sorted(cells, key=lambda cell: (registry.index(cell.integrator), scenes.index(cell.scene)))


def write_matrix_csv(cells: list[Cell], path) -> Path:
    """verification.csv: a row per cell, its fields as columns (``dt0``, the ladder's first step,
    after ``shift``)."""
    rows = []
    for cell in ordered(cells):
        fields = asdict(cell)
        at = list(fields).index("shift") + 1
        items = list(fields.items())
        rows.append(dict(items[:at] + [("dt0", cell.dts[0] if cell.dts else None)] + items[at:]))
    return write_csv(rows, path)


def read_matrix_csv(path) -> list[Cell]:
    """The cells of a ``verification.csv`` (:func:`write_matrix_csv`), in its order."""
    kinds = {item.name: item.type for item in fields(Cell)}

    def value(name: str, text: str):
        kind = kinds[name]
        if kind == "int":
            return csv_number(text, integer=True)
        if kind == "float":
            return csv_number(text) if text else math.nan
        if kind == "dict":
            return json.loads(text)
        if kind.startswith("list"):
            return [csv_number(item) if item else math.nan for item in text.split(";")] if text else []
        return text

    with open(path, newline="", encoding="utf-8") as handle:
        return [Cell(**{name: value(name, text) for name, text in row.items() if name != "dt0"})
                for row in csv.DictReader(handle)]


def cell_text(cell: Cell) -> str:
    """The measured order with its mark, "n/a" or "failed"."""
    if cell.status in ("n/a", "failed"):
        return cell.status
    return f"{cell.measured_order:.2f}{MARKS.get(cell.status, '')}"


def grid(cells: list[Cell]) -> tuple[list[str], list[str], dict[tuple[str, str], Cell]]:
    """(integrators, scenes, {(integrator, scene): cell}) in the matrix's order."""
    integrators = [name for name in names() if any(cell.integrator == name for cell in cells)]
    scenes = list(dict.fromkeys(cell.scene for cell in cells))
    return integrators, scenes, {(cell.integrator, cell.scene): cell for cell in cells}


def table(cells: list[Cell], title: str):
    """The Rich table of the matrix (see the module docstring)."""
    from rich.table import Table

    styles = {"ok": "green", "off": "bold red", "limited": "yellow", "failed": "bold red",
              "n/a": "dim"}
    integrators, scenes, by_key = grid(cells)
    result = Table(title=title, title_justify="left", padding=(0, 0, 0, 1), show_edge=False)
    result.add_column("scene", no_wrap=True)
    for name in integrators:
        # one word per line: the eleven columns fit 120 characters
        words = name.split("_")
        result.add_column("\n".join(words), justify="right", min_width=max(map(len, words)))
    orders = {cell.integrator: cell.expected_order for cell in cells}
    result.add_row("[italic]expected[/]", *(f"[italic]{orders[name]}[/]" for name in integrators),
                   end_section=True)
    for scene in scenes:
        row_cells = [by_key[name, scene] for name in integrators]
        result.add_row(scene, *(f"[{styles[cell.status]}]{cell_text(cell)}[/]" for cell in row_cells))
    return result


def matrix_plot(cells: list[Cell], path=None, title: str = ""):
    """The matrix as a coloured grid (see the module docstring)."""
    import numpy as np
    from matplotlib.colors import to_rgb
    from matplotlib.patches import Patch

    from ..viz.plots import finish, new_figure

    integrators, scenes, by_key = grid(cells)
    kinds = {cell.scene: cell.kind for cell in cells}
    scenes = sorted(scenes, key=lambda scene: KINDS.index(kinds[scene]))  # stable within a kind
    colours = np.array([[to_rgb(STATUS_COLOURS[by_key[name, scene].status]) for scene in scenes]
                        for name in integrators])
    fig = new_figure(figsize=(0.62 * len(scenes) + 4.4, 0.42 * len(integrators) + 1.8))
    ax = fig.subplots()
    ax.imshow(colours, aspect="auto", interpolation="nearest")
    for row_index, name in enumerate(integrators):
        for column, scene in enumerate(scenes):
            cell = by_key[name, scene]
            text = "–" if cell.status == "n/a" else "failed" if cell.status == "failed" else (
                f"{cell.measured_order:.2f}")
            ax.text(column, row_index, text, ha="center", va="center", fontsize=9,
                    color="0.55" if cell.status == "n/a" else "black")
    ax.set_xticks(range(len(scenes)), scenes, rotation=50, ha="right", rotation_mode="anchor",
                  fontsize=10)
    ax.set_yticks(range(len(integrators)),
                  [f"{name} ({by_key[name, scenes[0]].expected_order})" for name in integrators],
                  fontsize=10)
    ax.set_xticks(np.arange(len(scenes) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(integrators) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="both", length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    # the kinds of scene, labelled above their columns and parted by a thicker line
    start = 0
    for kind in KINDS:
        count = sum(kinds[scene] == kind for scene in scenes)
        if not count:
            continue
        ax.text(start + (count - 1) / 2, -0.75, kind, ha="center", va="bottom", fontsize=11,
                fontweight="bold")
        if start:
            ax.axvline(start - 0.5, color="white", linewidth=5)
        start += count
    legend = [Patch(color=STATUS_COLOURS[status], label=label) for status, label in (
        ("ok", "order within ±0.3"), ("off", "off its order"), ("limited", "stated limitation"),
        ("failed", "failed"), ("n/a", "not accepted"))]
    ax.legend(handles=legend, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=10,
              frameon=False)
    if title:
        ax.set_title(title, fontsize=12, pad=26)
    return finish(fig, path)
