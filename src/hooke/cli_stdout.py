"""A stdout that cannot take a command's results: closed (``hooke list >&-``) or on a full disk
(``hooke run … > /dev/full``).

Contract: :func:`checked_stdout` replaces ``sys.stdout`` by a stream whose failed writes raise
:class:`StdoutUnwritable` (not an OSError, so that no handler of an output file's OSError takes
it for one of its own: its message names stdout, the CLI prints it in one line and exits 1); a
closed stdout (Python's ``sys.stdout`` is None) fails so at the first write, so a command that
prints nothing (``run --quiet``) still runs. Once a write failed, file descriptor 1 is pointed at
/dev/null, so that Python's own flush at exit does not print a second report. A reader gone
(``| head -1``, a broken pipe) stays Rich's affair: a quiet exit 1, as other tools do.
"""

from __future__ import annotations

import errno
import os
import sys


class StdoutUnwritable(Exception):
    """stdout refused the command's results: the one line the CLI prints."""


class _Closed:
    """What ``sys.stdout`` is when file descriptor 1 was closed: every write fails."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "it is closed")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "it is closed")


class _Checked:
    """``stream`` whose failed writes and flushes raise :class:`StdoutUnwritable`."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise  # Rich's broken-pipe handling (a quiet exit 1)
        except OSError as error:
            raise _unwritable(error) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise _unwritable(error) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _unwritable(error: OSError) -> StdoutUnwritable:
    try:  # the text still buffered would fail again in Python's flush at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
    return StdoutUnwritable(f"stdout: cannot be written ({error.strerror or error}); the "
                            "command's printed results are lost")


def checked_stdout() -> None:
    """Make ``sys.stdout`` report a failed write as :class:`StdoutUnwritable` (see above)."""
    if not isinstance(sys.stdout, _Checked):
        sys.stdout = _Checked(_Closed() if sys.stdout is None else sys.stdout)
