"""Writing a user's output files: checked before the work, an earlier file replaced only whole.

Contract: each function raises one :class:`HookeInputError` naming ``field`` and the path, never
another exception, for a place that cannot be written.

- :func:`writable_directory`: ``path`` as a directory (created, parents too) in which a file can
  really be created: proved by creating and removing a probe file, not by ``os.access``, which
  says yes to root on a read-only mount or an immutable (``chattr +i``) directory.
- :func:`check_replaceable`: an existing file at ``path`` must be one this process may write.
  A read-only (or immutable) file is the user's protection of an earlier result: it is refused,
  not replaced by renaming a new file over it (which a writable directory would allow).
- :func:`written_aside`: a context that yields a temporary path beside ``path`` (same suffix,
  so writers that pick a format by it still do) and renames it to ``path`` once written; if the
  writing fails the temporary file is removed and an earlier file at ``path`` is left as it was.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import HookeInputError


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
    if not os.path.lexists(path):
        return
    if path.is_dir():
        raise HookeInputError(field, "is a directory, not a file", str(path))
    if not path.is_file():
        return  # a dangling link or a special file: the rename replaces the entry, not a file
    try:
        # O_NONBLOCK: never wait; no O_TRUNC: the file is not changed, only its permission tried
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as error:
        raise HookeInputError(field, f"exists and cannot be written ({_why(error)}); it is left "
                              "as it was: make it writable, remove it or choose another path",
                              str(path)) from None


@contextmanager
def written_aside(path: Path) -> Iterator[Path]:
    """The temporary path to write ``path``'s new content to (see the module's contract); an
    OSError of the writing or of the rename propagates, with the temporary file gone."""
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
