"""Writing a user's output files: checked before the work, an earlier file replaced only whole.

Contract: each function raises one :class:`HookeInputError` naming ``field`` and the path, never
another exception, for a place that cannot be written.

- :func:`writable_directory`: ``path`` as a directory (created, parents too) in which a file can
  really be created: proved by creating and removing a probe file, not by ``os.access``, which
  says yes to root on a read-only mount or an immutable (``chattr +i``) directory.
- :func:`check_replaceable`: an existing file at ``path`` must be one this process may write.
  A read-only (or immutable) file is the user's protection of an earlier result: it is refused,
  not replaced by renaming a new file over it (which a writable directory would allow). So is
  anything that is not a regular file: a directory, a FIFO (a writer would block until a
  reader came), a device (``/dev/null``, ``/dev/full``: nothing would be kept, or, renamed
  over, the device itself would go) or a socket. A symbolic link is accepted whatever it
  points to: the rename replaces the link itself, never what it points to.
  :func:`check_replaceables` checks several paths (a command's outputs) at once.
- :func:`written_aside`: a context that yields a temporary path beside ``path`` (same suffix,
  so writers that pick a format by it still do) and renames it to ``path`` once written; if the
  writing fails the temporary file is removed and an earlier file at ``path`` is left as it was.
"""

from __future__ import annotations

import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import HookeInputError
from .files import not_regular


def _why(error: OSError) -> str:
    return error.strerror or str(error)


def writable_directory(path: Path, field: str) -> Path:
    """``path`` created if missing and proved writable (see the module's contract)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise HookeInputError(field, "is an existing file, not a directory", str(path))
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise HookeInputError(field, f"cannot create the directory ({_why(error)})",
                              str(path)) from None
    try:
        descriptor, probe = tempfile.mkstemp(prefix=".hooke-probe-", dir=path)
    except OSError as error:
        raise HookeInputError(field, f"is a directory hooke cannot write in ({_why(error)})",
                              str(path)) from None
    os.close(descriptor)
    os.unlink(probe)
    return path


def check_replaceable(path: Path, field: str) -> None:
    """Refuse an existing ``path`` this process may not write (see the module's contract)."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as error:  # a component of the path is a file, say
        raise HookeInputError(field, f"cannot be written ({_why(error)})", str(path)) from None
    if stat.S_ISLNK(mode):
        return  # the rename replaces the link, not what it points to
    if stat.S_ISDIR(mode):
        raise HookeInputError(field, "is a directory, not a file", str(path))
    kind = not_regular(mode)
    if kind is not None:
        raise HookeInputError(field, f"is {kind}, not a regular file: an output is written as a "
                              "regular file in its place; remove it or choose another path",
                              str(path))
    try:
        # O_NONBLOCK: never wait; no O_TRUNC: the file is not changed, only its permission tried
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as error:
        raise HookeInputError(field, f"exists and cannot be written ({_why(error)}); it is left "
                              "as it was: make it writable, remove it or choose another path",
                              str(path)) from None


def check_replaceables(paths, field: str) -> None:
    """:func:`check_replaceable` of each of ``paths``."""
    for path in paths:
        check_replaceable(path, field)


@contextmanager
def written_aside(path: Path) -> Iterator[Path]:
    """The temporary path to write ``path``'s new content to (see the module's contract); an
    OSError of the writing or of the rename propagates, with the temporary file gone. A link at
    ``path`` is replaced by the new file: what it pointed to is never written."""
    path = Path(path)
    partial = path.with_name(f".{path.stem}.partial{path.suffix}")
    try:
        yield partial
        os.replace(partial, path)
    except BaseException:
        try:
            partial.unlink(missing_ok=True)
        except OSError:
            pass  # the directory itself refuses: nothing of ours can be left to remove
        raise
