"""How the command line prints a user's value (a path, a scene's name) on its Rich consoles.

Contract: :func:`shown` gives the value's text on one line (:func:`hooke.errors.one_line`: a
newline or a terminal's escape sequence in it is shown, not obeyed) with its brackets escaped
for Rich markup. Unescaped, a name or path ``[/]`` was Rich's MarkupError, "a bug in hooke",
once a run had finished; ``--out 'o[red]x'`` was shown as ``ox``; a scene name holding an escape
sequence set the terminal's title and colour.
"""

from __future__ import annotations

from rich.markup import escape

from .errors import one_line


def shown(value) -> str:
    """``value`` (a str or a path) as the consoles print it."""
    return escape(one_line(value))
