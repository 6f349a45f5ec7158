"""Numbers in the CSV files hooke reads (observed motion, its own verification table).

Contract: :func:`csv_number` returns the float of a decimal number as CSV files write them —
optional sign, ASCII digits with an optional point, an optional exponent, or inf / nan (as Python's
``repr`` writes them), surrounding spaces allowed — and raises ValueError for anything else.
Python's ``float()`` also takes ``1_000`` (its literal syntax) and would read a mistyped cell as
a thousand; no spreadsheet or CSV writer means that, so it is refused here. ``integer=True``
takes only optional sign and digits.
"""

from __future__ import annotations

import re

# ASCII digits only: float() also reads other scripts' digits ("١٢" is 12.0).
DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                     r"|[+-]?(?:inf|infinity|nan)", re.IGNORECASE)
INTEGER = re.compile(r"[+-]?[0-9]+")


def csv_number(text: str, integer: bool = False) -> float | int:
    """The number in a CSV cell (see the module docstring); ValueError if it is not one."""
    stripped = text.strip()
    if not (INTEGER if integer else DECIMAL).fullmatch(stripped):
        raise ValueError(f"not a {'whole' if integer else 'decimal'} number: {text!r}")
    return int(stripped) if integer else float(stripped)
