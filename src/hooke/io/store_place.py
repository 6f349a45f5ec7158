"""A run's trajectory file that left its name while the run wrote it.

The writer keeps its file open by descriptor: a file removed (``rm``), moved away or replaced by
a directory, a link or another file while the run goes on still takes every frame, but the name
the run reports no longer holds them. The run then said nothing and exited 0 (its summary and
plots beside a directory or a link), or blamed the user's input (exit 2) while its frames went
with the removed file.

Contract: :func:`detached` tells, before the writer closes its file, whether ``path`` still
names it; if not it returns a duplicate of the file's descriptor, which keeps a removed file's
frames readable after the close. :func:`put_back` then makes them whole at ``path`` again when
nothing stands there (a removed file, as closed: the run goes on as if nothing happened), and
otherwise raises :class:`StoreWriteError`: the run stopped, saying where its frames are (in the
file it was moved to, or copied beside ``path`` as ``<stem>.recovered<suffix>`` when it was
removed and replaced), never exit 0 with a name that holds something else.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..errors import StoreWriteError, format_value
from .outputs import written_aside


def detached(descriptor: int, path: Path) -> int | None:
    """None while ``path`` names the open file ``descriptor``; else a duplicate of it."""
    mine = os.fstat(descriptor)
    try:
        there = os.lstat(path)
        if (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
            return None
    except OSError:
        pass  # nothing there (or its folder gone): the file left its name
    return os.dup(descriptor)


def put_back(kept: int, path: Path, frames: int) -> None:
    """The closed file ``kept`` (a descriptor) back at ``path``, or :class:`StoreWriteError`
    saying where its ``frames`` are (see the module's contract). Closes ``kept``."""
    try:
        moved = os.fstat(kept).st_nlink > 0  # renamed elsewhere: that name holds the frames
        replaced = os.path.lexists(path)
        if moved:
            where = "its frames stay in the file it was moved to"
        else:
            target = path.with_name(f"{path.stem}.recovered{path.suffix}") if replaced else path
            try:
                _copy(kept, target)
            except OSError as error:
                where = f"its frames are lost with it ({error.strerror or error})"
            else:
                if target == path:
                    return  # removed, and put back whole: nothing is lost
                where = f"its frames are saved in {target}"
    finally:
        os.close(kept)
    what = "moved" if moved else "removed and replaced" if replaced else "removed"
    raise StoreWriteError(f"path: was {what} while the run wrote it; {where}, got "
                          f"{format_value(str(path))}", frames)


def _copy(kept: int, target: Path) -> None:
    """The whole content of the open file ``kept`` written to ``target`` (aside, then renamed)."""
    os.lseek(kept, 0, os.SEEK_SET)  # (a duplicate: it shares the writer's offset)
    with (written_aside(target) as partial, open(partial, "wb") as handle,
          open(kept, "rb", closefd=False) as source):
        shutil.copyfileobj(source, handle)
