"""A finished run's file compacted, whatever stopped its close from doing it.

Contract: :func:`compacted` tells whether a stored run's file is compacted; :func:`compact`
leaves it as an uninterrupted run's close does: its frame datasets gzip-compressed
(:func:`hooke.io.store.rewrite`), so the same run gives the same bytes. A file compacted already is left untouched; one the close could not compact (a kill
during the copy, which leaves a ``.rewrite`` beside it, or a disk too full for the copy, which
leaves nothing) is rewritten now. A file that cannot be read or rewritten is one
:class:`HookeInputError` naming it, the file left as it was.
"""

from __future__ import annotations

from pathlib import Path

from .store import open_trajectory, rewrite


def compacted(path: Path) -> bool:
    """Whether the stored run at ``path`` is compacted (its frame datasets compressed)."""
    with open_trajectory(path) as file:
        # rewrite compresses every frame dataset of a file, or none: one tells for all
        return file["frames/x"].compression is not None


def compact(path: Path) -> None:
    """Compact the stored run at ``path`` unless it is already (see the module's contract)."""
    if not compacted(path):
        rewrite(path)  # (it removes a kill's leftover copy before it measures the room)
