"""Sweep files: a study described in TOML, run as ``hooke sweep FILE`` (or ``--file FILE``).

A sweep file holds :class:`~hooke.sweep.settings.SweepSettings`' fields (``random``, ``seed``,
``retries``, ``timeout``, ``summary_only``, ``metric``, ``save_every``), the ``scene`` (a
built-in name, or a scene file path relative to the sweep file) and a ``description``.
``[params]`` holds the axes every grid shares and each ``[[grid]]`` table one grid's own axes;
members with the same settings in two grids are one simulation, run once, with a row each. The
files in ``hooke/scenes/sweeps`` are shipped (``pendulum_correction``: seed 003's study).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, model_validator

from ..errors import HookeInputError, format_value
from ..io.files import parse_toml, read_text
from ..scenes import names as scene_names
from .settings import SweepSettings, validated


class SweepFile(SweepSettings):
    """A sweep file: the settings plus the scene (a built-in name, or a scene file path relative
    to the sweep file) and a description; ``[params]`` and ``[[grid]]`` tables (each with the
    shared ``[params]`` added) become the list of grids."""

    scene: Annotated[str, Field(min_length=1)]  # "": relative to the file, its own folder
    description: str = ""

    @model_validator(mode="before")
    @classmethod
    def _grids(cls, data):
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("params"), dict):
            data["params"] = _dotted(data["params"])
        if "grid" not in data:
            return data
        grids, shared = data.pop("grid"), data.get("params", {})
        if not isinstance(grids, list) or not all(isinstance(grid, dict) for grid in grids):
            raise ValueError(f"grid: must be [[grid]] tables of paths, got {format_value(grids)}")
        if not isinstance(shared, dict):
            return data  # the schema reports [params]
        grids = [_dotted(grid) for grid in grids]
        for index, grid in enumerate(grids):
            both = sorted(set(grid) & set(shared))
            if both:
                raise ValueError(f"grid[{index}].{both[0]}: is also in [params]; a path goes in "
                                 f"[params] (every grid) or in the grids, got {both[0]!r}")
        data["params"] = [{**shared, **grid} for grid in grids]
        return data


def _dotted(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """TOML reads the path ``spring.k = [1.0]`` as a table {spring = {k = [1.0]}}: back to paths
    (a table holding ``range`` is a range)."""
    paths: dict[str, Any] = {}
    for name, value in table.items():
        if isinstance(value, dict) and "range" not in value:
            paths.update(_dotted(value, f"{prefix}{name}."))
        else:
            paths[prefix + name] = value
    return paths


def shipped_sweeps() -> list[str]:
    """Names of the sweep files shipped in ``hooke/scenes/sweeps`` (seed 003's study …)."""
    folder = resources.files("hooke.scenes") / "sweeps"
    return sorted(item.name[:-5] for item in folder.iterdir() if item.name.endswith(".toml"))


def is_sweep_file(name: str) -> bool:
    """Whether SCENE_OR_FILE names a sweep file rather than a scene: a shipped sweep's name, or
    a TOML file with a top-level ``scene`` (a field no scene file has)."""
    if name in scene_names():
        return False
    if name in shipped_sweeps():
        return True
    try:
        return "scene" in parse_toml(read_text(name, "SCENE_OR_FILE", "file"), name)
    except HookeInputError:
        return False  # not readable as TOML: loading it as a scene names the problem


def read_sweep_file(path) -> SweepFile:
    """Read and validate a sweep file (TOML), given by path or as the name of a shipped one; a
    relative scene path in it is relative to the file."""
    if str(path) in shipped_sweeps() and not Path(path).exists():
        path = resources.files("hooke.scenes") / "sweeps" / f"{path}.toml"
    path = Path(path)
    text = read_text(path, "--file", "sweep file", f" (shipped: {', '.join(shipped_sweeps())})")
    spec = validated(SweepFile, parse_toml(text, str(path)))
    if spec.scene not in scene_names() and not Path(spec.scene).is_absolute():
        spec.scene = str(path.parent / spec.scene)
    return spec
