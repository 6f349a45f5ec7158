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
    if not isinstance(name, str) or name not in names():  # an array: no raw NumPy error
        raise HookeInputError("scene", f"unknown scene (built-in: {', '.join(names())})", name)
    return (resources.files(__name__) / f"{name}.toml").read_text(encoding="utf-8")


make_callable(__name__, names)
