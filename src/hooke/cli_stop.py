"""How ``hooke run`` ends when it is stopped: by a Ctrl-C (SIGINT) or by SIGTERM (a scheduler's
time limit, ``kill``, a container's stop). ``hooke serve`` is stopped so too: uvicorn, once it
has ended the pages' sessions, raises the signal it caught again, whose default ended the
process without a word (exit 143); with these handlers it is "stopped by SIGTERM", exit 143.

Contract: :func:`stop_on_signals` makes SIGTERM raise :class:`Terminated`, a KeyboardInterrupt,
so that a run stopped either way writes every frame whose integrator checkpoint it has
(:class:`hooke.simulate.StoreFeed`), as it does for a Ctrl-C (Python's default for SIGTERM ends
the process at once: its last block of frames lost, and not a word). Both signals' stops are
also recorded (:mod:`hooke.pending_stop`), so one whose exception Python swallowed (raised
inside a ``__del__``) still stops the run at its next block, and Python's "Exception ignored"
report of it is not printed. It returns the function that restores the previous handlers.
:func:`stopped` prints the run's one line — stopped how, how many frames its file keeps, the
``--resume`` command — and exits 130 (Ctrl-C) or 143 (128 + 15, SIGTERM).
:func:`unreported_stop` gives the one line of a command stopped where no handler of hooke's
caught it: Typer ends such a command with exit 130 and not a word.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Callable

from . import pending_stop
from .cli_common import ERRORS_PRINTED, fail, print_error
from .errors import one_line
from .run_report import plural, remove_outputs


class Terminated(KeyboardInterrupt):
    """SIGTERM during ``hooke run``: handled as a Ctrl-C is, exit 143."""


_SIGTERMS: list[int] = []  # SIGTERMs received: a silent exit 130 after one was a SIGTERM's


def _stop(signum, frame) -> None:
    kind = Terminated if signum == signal.SIGTERM else KeyboardInterrupt
    if kind is Terminated:
        _SIGTERMS.append(signum)
    pending_stop.record(kind)  # raised again by the run should Python swallow this one
    raise kind


def forget_stops() -> None:
    """Start counting printed errors and SIGTERMs afresh: called as :func:`hooke.cli.main`
    begins, so that what an earlier command in the same process printed (a test's, a
    notebook's) never silences this one's stop line."""
    ERRORS_PRINTED.clear()
    _SIGTERMS.clear()
    pending_stop.forget()


def unreported_stop(code: int) -> int:
    """The exit code for ``code``: an exit 130 after which no error was printed (Typer's for a
    KeyboardInterrupt that left a command: a Ctrl-C in ``modes``, ``verify``, ``study`` … or a
    SIGTERM during ``hooke run``) gets its line here, and a SIGTERM's its 143. Called once, at
    the end of :func:`hooke.cli.main`."""
    if code != 130 or ERRORS_PRINTED:
        return code
    terminated = bool(_SIGTERMS)
    print_error("stopped by SIGTERM" if terminated else "interrupted")
    return 143 if terminated else 130


def stop_on_signals() -> Callable[[], None]:
    """SIGINT and SIGTERM stop the run (see the module's contract) until the returned function
    is called."""
    previous = {number: signal.signal(number, _stop) for number in (signal.SIGINT, signal.SIGTERM)}
    report_unraisable = sys.unraisablehook

    def quiet_about_stops(unraisable) -> None:  # a stop it swallowed is recorded: no traceback
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            report_unraisable(unraisable)

    sys.unraisablehook = quiet_about_stops

    def restore() -> None:
        for number, handler in previous.items():
            signal.signal(number, handler)
        sys.unraisablehook = report_unraisable

    return restore


def stop_kind(interrupt: KeyboardInterrupt) -> tuple[int, str]:
    """(exit code, how it was said) of a stop: 143 for a SIGTERM, 130 for a Ctrl-C."""
    return (143, "stopped by SIGTERM") if isinstance(interrupt, Terminated) else (130, "interrupted")


def stopped(interrupt: KeyboardInterrupt, out: Path, result=None) -> None:
    """The one line of a run in ``out`` stopped by ``interrupt``, whose ``frames_kept`` counts
    the frames its file keeps (none: the file is left as it was), then exit. ``result``: the
    run's, when it had returned before the stop (its file keeps all of its frames)."""
    from .io.export import write_xdmf

    code, what = stop_kind(interrupt)
    kept = result.n_frames if result is not None else getattr(interrupt, "frames_kept", 0)
    if not kept:  # nothing of this run reached the file
        fail(f"{what} before the first frame was written; {one_line(out)} is left as it was",
             code=code)
    remove_outputs(out)  # an earlier run's plots and summary: the file is this run's now
    sidecar = write_xdmf(out / "trajectory.h5", verify=False)  # ParaView shows the frames kept
    fail(f"{what}: {one_line(out / 'trajectory.h5')} keeps {plural(kept, 'frame')} (ParaView: "
         f"{one_line(sidecar)}); continue with `hooke run --resume {one_line(out)}`", code=code)
