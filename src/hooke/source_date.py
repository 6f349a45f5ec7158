"""SOURCE_DATE_EPOCH, the reproducible-builds convention: when it is set, a trajectory's
``created`` attribute is that moment (seconds since 1970-01-01 UTC) instead of now, so that the
same run writes the same bytes.

Contract: :func:`created` gives an ISO 8601 date (UTC, to the second) for any integer a signed
64-bit time holds, years past 9999 included (NumPy's datetime64 writes them; Python's datetime
stops at 9999), and refuses anything else with a one-line :class:`HookeInputError` naming the
variable. NumPy's f2py, which SciPy imports, reads the variable when it is imported and raises a
raw ValueError or OverflowError on a value it cannot use: :func:`import_numpy_f2py` imports it
with the variable hidden, before anything else does, so a bad value never stops hooke's imports
and is reported where hooke uses it.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from typing import Iterator

from .errors import HookeInputError

VARIABLE = "SOURCE_DATE_EPOCH"
INTEGER = re.compile(r"-?[0-9]+")


@contextmanager
def hidden() -> Iterator[None]:
    value = os.environ.pop(VARIABLE, None)
    try:
        yield
    finally:
        if value is not None:
            os.environ[VARIABLE] = value


def import_numpy_f2py() -> None:
    with hidden():
        import numpy.f2py  # noqa: F401 - imported for its import-time read of the variable


def epoch() -> int | None:
    """SOURCE_DATE_EPOCH as an integer, None when it is not set."""
    text = os.environ.get(VARIABLE)
    if text is None:
        return None
    if not INTEGER.fullmatch(text):
        raise HookeInputError(VARIABLE, "must be an integer number of seconds since 1970-01-01 UTC",
                              text)
    seconds = int(text)
    if abs(seconds) >= 2**63:  # -2**63 is NumPy's "not a time"
        raise HookeInputError(VARIABLE, "must be within a signed 64-bit number of seconds "
                              "(|value| < 2**63)", text)
    return seconds


def created() -> str:
    """The ``created`` attribute: now, or SOURCE_DATE_EPOCH when set."""
    import numpy as np

    seconds = epoch()
    moment = np.datetime64("now", "s") if seconds is None else np.datetime64(seconds, "s")
    return f"{np.datetime_as_string(moment, unit='s')}+00:00"
