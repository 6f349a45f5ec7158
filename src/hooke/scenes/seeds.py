"""Seed systems that differ from hooke's built-in scenes of the same name, built from those
scenes' files: :func:`seed_crane` (seed 002's crane, whose wind was a tilted gravity)."""

from __future__ import annotations

import re

from ..io.scene_file import build, parse
from . import source


def seed_crane():
    """Seed 002's crane exactly as the seed has it: the ``crane`` scene's file with its wind as
    gravity tilted to (0, 0.1, −9.81) and no air table (the recipe its description gives); the
    system seed 002's C++ ran (``hooke bench joints`` times it against that)."""
    text, edits = re.subn(r"(?m)^gravity = \[0\.0, 0\.0, -9\.81\]$",
                          "gravity = [0.0, 0.1, -9.81]", source("crane"))
    text, cut = re.subn(r"(?ms)^\[air\]\n.*?(?=^\[run\])", "", text)
    if edits != 1 or cut != 1:
        raise RuntimeError("the crane scene's file no longer has the lines seed_crane edits")
    return build(parse(text, source="crane"), text, default_name="crane")
