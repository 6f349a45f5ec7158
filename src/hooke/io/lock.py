"""One writer per trajectory file: an advisory lock on ``<file>.lock`` beside it.

Contract: :class:`OutputLock` takes an exclusive ``fcntl.flock`` on the lock file, writes the
holder's PID into it, and refuses (a one-line :class:`LockHeld`, a HookeInputError, naming the
holder's PID) while another process — or another writer in this one — holds it; a place where
no lock can be made is a plain HookeInputError. The kernel drops a flock when its holder's file
is closed, however the process ends (``kill -9`` included), so a killed run's
lock file never blocks the next run. :meth:`OutputLock.release` removes the file; a lock taken
on a file that a releasing holder removed meanwhile is retaken on the new file (the check of the
inode), so two writers never both hold one path.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from ..errors import HookeInputError


class LockHeld(HookeInputError):
    """Another process (or writer) holds the lock: the one refusal a caller may tell apart from
    a place where no lock can be made."""


class OutputLock:
    """Held from creation to :meth:`release` (or to the end of the process)."""

    def __init__(self, target: Path, field: str = "path"):
        """``field``: what a refusal calls ``target`` (the argument or flag that gave it)."""
        self.target = Path(target)
        self.path = self.target.with_name(self.target.name + ".lock")
        while True:
            try:
                # O_NOFOLLOW: a symbolic link in the lock's place is refused, never followed
                # (the truncation below would empty the file it points to)
                descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            except OSError as error:  # no such folder, a file in its place, read-only, ...
                why = (f"its lock {self.path.name} is a symbolic link" if error.errno == errno.ELOOP
                       else error.strerror)
                raise HookeInputError(field, f"cannot be written ({why})", str(self.target)) from None
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip() or "unknown"
                os.close(descriptor)
                raise LockHeld(field, f"is being written by another run (PID {holder}, "
                                      f"lock {self.path.name}); wait until it ends or write "
                                      "elsewhere", str(self.target)) from None
            if self._still_named(descriptor):
                break
            os.close(descriptor)  # its holder removed it between our open and our lock
        self.descriptor: int | None = descriptor
        try:
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        except OSError:  # a full disk: the lock holds all the same, without the PID to show
            pass

    def _still_named(self, descriptor: int) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(descriptor).st_ino
        except FileNotFoundError:
            return False

    def release(self) -> None:
        if self.descriptor is None:
            return
        try:
            os.unlink(self.path)  # while still held, so no one locks the old file meanwhile
        except OSError:
            pass  # gone already, or a directory that refuses (read-only): the lock is let go
        os.close(self.descriptor)
        self.descriptor = None
