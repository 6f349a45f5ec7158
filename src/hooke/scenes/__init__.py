"""Built-in scenes: one TOML file each in this folder (run settings and parameters), built
through :mod:`.builders` where code is needed. ``hooke.scenes()`` lists their names (this module is
callable: :mod:`hooke.callable_module`); ``hooke.scene(name, **parameters)``
(:func:`hooke.io.scene_file.builtin_scene`) loads one and overrides its parameters."""

from __future__ import annotations

from importlib import resources

from ..callable_module import make_callable
from ..errors import HookeInputError


def names() -> list[str]:
    """Names of every built-in scene."""
    folder = resources.files(__name__)
    return sorted(item.name[:-5] for item in folder.iterdir() if item.name.endswith(".toml"))


def source(name: str) -> str:
    """The text of built-in scene ``name``'s file."""
    if name not in names():
        raise HookeInputError("scene", f"unknown scene (built-in: {', '.join(names())})", name)
    return (resources.files(__name__) / f"{name}.toml").read_text(encoding="utf-8")


def seed_crane():
    """Seed 002's crane exactly as the seed has it: the ``crane`` scene's file with its wind as
    gravity tilted to (0, 0.1, −9.81) and no air table (the recipe its description gives); the
    system seed 002's C++ ran (``hooke bench joints`` times it against that)."""
    import re

    from ..io.scene_file import build, parse

    text, edits = re.subn(r"(?m)^gravity = \[0\.0, 0\.0, -9\.81\]$",
                          "gravity = [0.0, 0.1, -9.81]", source("crane"))
    text, cut = re.subn(r"(?ms)^\[air\]\n.*?(?=^\[run\])", "", text)
    if edits != 1 or cut != 1:
        raise RuntimeError("the crane scene's file no longer has the lines seed_crane edits")
    return build(parse(text, source="crane"), text, default_name="crane")


make_callable(__name__, names)
