"""Sphinx configuration of hooke's API reference: ``make docs`` builds it into docs/_build/html.

The pages document the source tree this file sits in (``src`` first on the path), not whatever
hooke happens to be installed. The build runs with warnings as errors (``-W --keep-going``, in
``make docs`` and tests/test_docs.py). Every public member is listed (``undoc-members``), and a
listed module, class or function without a docstring is a warning too (:func:`note_docstring`,
:func:`warn_undocumented`), so the reference cannot silently lose a name.

hooke's docstrings are plain text first, read with ``help()``: ``|x − c|`` there is an absolute
value, never a reST substitution (hooke uses none), so :func:`escape_bars` escapes the bars.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import hooke  # noqa: E402  (after the path: the tree's own hooke)
from sphinx.ext.napoleon import Config, GoogleDocstring  # noqa: E402

project = "hooke"
release = version = hooke.__version__
author = "the hooke developers"
copyright = "the hooke developers"  # noqa: A001  (Sphinx's name)

extensions = ["sphinx.ext.autodoc", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
# The notebooks run under nbmake, not here; data/ and images/ are not pages.
exclude_patterns = ["_build", "notebooks", "data", "images"]

# Members in source order, with their type hints in the signature; ``hooke`` imports lazily, so
# nothing needs mocking.
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": True}
# Google-style sections (``Args:``, ``Attributes:``) of modules, classes and functions are read
# by napoleon's parser (:func:`note_docstring`), "Attributes:" as fields rather than entries that
# would repeat the dataclass fields. Not through its extension: that also reads a property's
# docstring, a plain sentence here, as "type: description" at its first colon.
NAPOLEON = Config(napoleon_use_ivar=True)
# The README's own links between its sections (``#scene-files``) are heading anchors.
myst_heading_anchors = 4

html_theme = "alabaster"
html_title = f"hooke {release}"


# Names of documented modules, classes and functions whose docstring is empty. Autodoc also loads
# the members it then filters out (names a module imports), so only those that reach a page count.
UNDOCUMENTED: set[str] = set()
DOCUMENTED_KINDS = ("module", "class", "exception", "function", "method")


def note_docstring(app, what, name, obj, options, lines) -> None:
    """Note an empty docstring; read Google-style sections; escape ``|``."""
    if what in DOCUMENTED_KINDS:
        if not any(line.strip() for line in lines):
            UNDOCUMENTED.add(name)
        lines[:] = GoogleDocstring(lines, NAPOLEON, app, what, name, obj, options).lines()
    escape_bars(lines)


def warn_undocumented(app, env) -> None:
    """A warning for every object on a page whose docstring is empty."""
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    for name, entry in sorted(env.domains["py"].objects.items()):
        if name in UNDOCUMENTED and not entry.aliased:
            logger.warning(f"{entry.objtype} {name} has no docstring", location=entry.docname,
                           type="hooke", subtype="docstring")


def escape_bars(lines: list[str]) -> None:
    """``|`` → ``\\|`` in place, except in inline literals and literal blocks (after ``::``)."""
    literal_indent = None
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None and line.strip() and indent <= literal_indent:
            literal_indent = None
        if literal_indent is None:
            lines[i] = re.sub(r"(``.*?``)|\|", lambda match: match.group(1) or "\\|", line)
            if line.rstrip().endswith("::"):
                literal_indent = indent


def setup(app) -> None:
    app.connect("autodoc-process-docstring", note_docstring)
    app.connect("env-check-consistency", warn_undocumented)
