"""Built-in scenes: one TOML file each in this folder (run settings and parameters), built
through :mod:`.builders` where code is needed. ``hooke.scene(name, **parameters)`` loads one and
overrides its parameters."""

from __future__ import annotations

from importlib import resources

from ..errors import HookeInputError


def names() -> list[str]:
    folder = resources.files(__name__)
    return sorted(item.name[:-5] for item in folder.iterdir() if item.name.endswith(".toml"))


def source(name: str) -> str:
    if name not in names():
        raise HookeInputError("scene", f"unknown scene (built-in: {', '.join(names())})", name)
    return (resources.files(__name__) / f"{name}.toml").read_text(encoding="utf-8")


def scene(name: str, **parameters):
    """The built-in scene ``name``, with builder parameters overridden by keywords."""
    from ..io.scene_file import build, parse

    text = source(name)
    return build(parse(text, source=name), text, overrides=parameters, default_name=name)
