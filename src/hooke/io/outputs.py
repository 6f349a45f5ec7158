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
  :func:`check_replaceables` checks several paths (a command's outputs) at once. A name that
  fits but whose partial file (below) would not is refused too, and so is a directory standing
  at the partial file's path.
- :func:`written_aside`: a context that yields a temporary path beside ``path`` (same suffix,
  so writers that pick a format by it still do) and renames it to ``path`` once written; if the
  writing fails the temporary file is removed and an earlier file at ``path`` is left as it was.
  The temporary path is :func:`partial_path`'s, ``.NAME.partial.EXT``. Two writers of one
  output at once take turns (an flock on the partial file): each one's file is whole, and the
  last one's stays.
- :func:`remove_stale_partials`: the partial files of ``paths`` that a killed writer left
  (``kill -9`` cannot be cleaned up after), removed. A writer holds a shared ``flock`` on the
  folder while it writes, and the removal takes it exclusively without waiting: in a folder
  where any writer of this kind is at work nothing is removed, so a partial file being
  written is never taken from its writer. Only regular files of exactly those names go.
  A writer itself removes a link, FIFO, device or socket at its partial path before writing
  (a link would be written through, a FIFO would block it) and refuses a directory there.
- :func:`made_for_the_work`: a context in which ``path``'s missing folders, made there, are
  removed again while empty when the work is refused (:class:`HookeInputError`).
- :func:`remove_files`: files that showed what a file now replaced held (a run's plots and
  summary), removed; one that cannot be (a read-only folder) is left, never an error.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import HookeInputError, as_path
from .files import not_regular


def _why(error: OSError) -> str:
    return error.strerror or str(error)


def writable_directory(path: Path, field: str) -> Path:
    """``path`` created if missing and proved writable (see the module's contract)."""
    path = as_path(path, field)
    try:
        if not stat.S_ISDIR(os.stat(path).st_mode):
            raise HookeInputError(field, "is an existing file, not a directory", str(path))
    except (FileNotFoundError, NotADirectoryError):
        if os.path.islink(path):  # mkdir would say "File exists", pointing nowhere near it
            raise HookeInputError(field, f"is a symbolic link to {os.readlink(path)!r}, which "
                                  "does not exist: create that directory or give another",
                                  str(path)) from None
        # else made below, or mkdir says why not
    except OSError as error:  # a name too long for the file system, say
        raise HookeInputError(field, f"cannot be a directory ({_why(error)})", str(path)) from None
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


def output_file(text: str, field: str) -> Path:
    """``text``, an output file's name as typed, as a Path; one ending in a separator, ``.`` or
    ``..`` names a folder, which pathlib would drop ('sub/.' is Path('sub'): ``hooke fit --out
    sub/.`` wrote a file named sub), and is refused naming ``field``."""
    path = as_path(text, field)
    name = os.fspath(text)
    if name.endswith(os.sep) or os.path.basename(name) in (".", ".."):
        raise HookeInputError(field, "names a folder, not a file: give the name of a file "
                              "(in it)", name)
    return path


def missing_folders(path: Path) -> list[Path]:
    """``path`` and its parents that do not exist yet, deepest first: what making it makes.
    (os.path.exists: Path.exists raises for a name too long for the file system.)"""
    return [folder for folder in (path, *path.parents) if not os.path.exists(folder)]


def remove_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (deepest first) while they are empty: a refused command's output
    directory, made early (to refuse an unwritable one before a long check), leaves no trace."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # something was written there after all
            break


@contextmanager
def made_for_the_work(path: Path):
    """Inside: the making of ``path``, an output directory (:func:`writable_directory`), and
    the work it is for; refused there (HookeInputError), the folders made for it go again
    (:func:`remove_empty`): a command or a sweep refused for bad input leaves no empty
    directory behind."""
    missing = missing_folders(path)
    try:
        yield
    except HookeInputError:
        remove_empty(missing)
        raise


def check_replaceable(path: Path, field: str) -> None:
    """Refuse an existing ``path`` this process may not write (see the module's contract)."""
    path = as_path(path, field)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:  # a component of the path is a file, or the name is too long
        raise HookeInputError(field, f"cannot be written ({_why(error)})", str(path)) from None
    if mode is not None and stat.S_ISDIR(mode):  # first: '.' and '/' have no partial file name
        raise HookeInputError(field, "is a directory, not a file", str(path))
    _check_partial(path, field)
    if mode is None:
        return
    if stat.S_ISLNK(mode):
        return  # the rename replaces the link, not what it points to
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


def _check_partial(path: Path, field: str) -> None:
    """Refuse a ``path`` whose partial file (:func:`partial_path`) cannot be written: a name the
    file system takes for ``path`` but not for the partial, nine bytes longer, or a directory
    standing there; either way the writing would fail after the work."""
    partial = partial_path(path)
    try:
        mode = os.lstat(partial).st_mode
    except OSError as error:
        if error.errno == errno.ENAMETOOLONG:
            raise HookeInputError(field, f"is a name too long to write: it is written first as "
                                  f"{partial.name!r}, {len(os.fsencode(partial.name))} bytes, "
                                  "over the file system's limit", str(path)) from None
        return
    if stat.S_ISDIR(mode):
        raise HookeInputError(field, f"cannot be written: a directory {partial.name} stands where "
                              "the new file is written first; remove it", str(path))


def check_replaceables(paths, field: str) -> None:
    """:func:`check_replaceable` of each of ``paths``."""
    for path in paths:
        check_replaceable(path, field)


def partial_path(path: Path) -> Path:
    """Where :func:`written_aside` writes ``path``'s new content: ``.NAME.partial.EXT`` beside it."""
    path = Path(path)
    return path.with_name(f".{path.stem}.partial{path.suffix}")


def _folder_lock(folder: Path, operation: int, attempts: int = 1) -> int | None:
    """A descriptor of ``folder`` holding the flock ``operation`` (non-blocking, tried
    ``attempts`` times 10 ms apart), or None where the folder cannot be opened or another
    process holds a conflicting lock all that time."""
    try:
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    for attempt in range(attempts):
        try:
            fcntl.flock(descriptor, operation | fcntl.LOCK_NB)
            return descriptor
        except BlockingIOError:
            if attempt + 1 < attempts:
                time.sleep(0.01)
        except OSError:
            break
    os.close(descriptor)
    return None


@contextmanager
def written_aside(path: Path) -> Iterator[Path]:
    """The temporary path to write ``path``'s new content to (see the module's contract); an
    OSError of the writing or of the rename propagates, with the temporary file gone. A link at
    ``path`` is replaced by the new file: what it pointed to is never written."""
    path = Path(path)
    partial = partial_path(path)
    # Shared: writers do not wait for each other. A removal holds it for microseconds; a folder
    # someone else keeps locked (or cannot be opened) is written in unlocked after 2 s, not
    # waited on: only a concurrent removal of stale partials could then take this one.
    folder = _folder_lock(path.parent, fcntl.LOCK_SH, attempts=200)
    held = None
    try:
        _clear(partial)
        held = _partial_held(partial)
        yield partial
        os.replace(partial, path)
    except BaseException:
        if held is not None:  # never another writer's partial file
            try:
                partial.unlink(missing_ok=True)
            except OSError:
                pass  # the directory itself refuses: nothing of ours can be left to remove
        raise
    finally:
        for descriptor in (held, folder):
            if descriptor is not None:
                os.close(descriptor)


def _partial_held(partial: Path) -> int:
    """A descriptor holding an exclusive flock on the file at ``partial`` (created empty if
    missing), once the file there is the locked one: a second writer of the same output waits
    until the first has renamed its file (or removed it) and then writes a file of its own, so
    it never truncates, renames or removes the first's file while that is being written. A
    killed writer's lock goes with its process."""
    while True:
        try:  # made here: removed again if a Ctrl-C lands before it is returned (no one's file)
            descriptor, made = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                                       | os.O_NOFOLLOW, 0o666), True
        except FileExistsError:  # another writer's (or a killed one's): never removed here
            descriptor, made = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW,
                                       0o666), False
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)  # a Ctrl-C while waiting still stops
            locked = os.fstat(descriptor)
            try:
                current = os.lstat(partial)
            except FileNotFoundError:
                current = None
        except BaseException:
            if made:
                _remove_if_same(partial, os.fstat(descriptor))
            os.close(descriptor)
            raise
        if current is not None and (current.st_dev, current.st_ino) == (locked.st_dev,
                                                                         locked.st_ino):
            return descriptor
        os.close(descriptor)  # renamed or removed by its writer while this one waited


def _remove_if_same(path: Path, mine: os.stat_result) -> None:
    """Remove the file at ``path`` if it is still the one ``mine`` describes."""
    try:
        there = os.lstat(path)
        if (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino):
            path.unlink()
    except OSError:
        pass  # gone already, or the folder refuses: nothing of ours to remove


def _clear(partial: Path) -> None:
    """Make way for a writer at ``partial``: a link there would be written through, a FIFO
    would block it, so either (or a device, a socket) is removed, being no one's file; a
    directory is an OSError naming it (it is never removed). A regular file is left: the
    writer truncates it."""
    try:
        mode = os.lstat(partial).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, f"a directory {partial.name} stands where the new "
                                "file is written first", str(partial))
    if not stat.S_ISREG(mode):
        os.unlink(partial)


def remove_files(paths) -> None:
    """Remove each of ``paths`` that exists (see the module's contract)."""
    for path in paths:
        try:
            Path(path).unlink(missing_ok=True)
        except OSError:  # the caller's own line says what its file keeps
            pass


def remove_stale_partials(paths) -> list[Path]:
    """Remove the partial files (:func:`partial_path`) of ``paths`` that no live writer holds
    (see the module's contract); the removed paths. Never raises: a partial that cannot be
    removed is left, as it would be without this."""
    by_folder: dict[Path, list[Path]] = {}
    for path in paths:
        partial = partial_path(path)
        by_folder.setdefault(partial.parent, []).append(partial)
    removed = []
    for folder, partials in by_folder.items():
        descriptor = _folder_lock(folder, fcntl.LOCK_EX)
        if descriptor is None:  # a writer is at work there, or no such folder
            continue
        try:
            for partial in partials:
                try:
                    if stat.S_ISREG(os.lstat(partial).st_mode):
                        os.unlink(partial)
                        removed.append(partial)
                except OSError:
                    pass  # missing (the usual case), or the folder refuses
        finally:
            os.close(descriptor)
    return removed
