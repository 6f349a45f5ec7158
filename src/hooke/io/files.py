"""Reading a user's files: bounded, never blocking, never ending the process.

Contract: each function returns what it read or raises one :class:`HookeInputError` naming the
field (or the file) and the path, never another exception.

- :func:`read_text`: the UTF-8 text of a regular file of at most ``MAX_TEXT_BYTES`` (16 MiB;
  the largest shipped scene is a few kB), without a leading byte-order mark. A FIFO is refused, not waited on (it is opened with
  ``O_NONBLOCK`` and checked with ``fstat`` before any read), and so are devices such as
  ``/dev/zero``, which would be read until memory runs out, and directories.
- :func:`parse_toml`: TOML text as a dict; malformed TOML, and nesting deeper than Python's
  recursion limit (``tomllib`` recurses per ``[``), are one line naming the source.
- :func:`check_regular`: a path that names a regular file, else one line saying what it names;
  :func:`too_large`: the one line for a text file over ``MAX_TEXT_BYTES``.
- :func:`mesh_path`: a scene's mesh path as written, relative to its scene file's folder when
  given (the empty string refused: it would name that folder, shown as a value never written).
- :func:`read_mesh`: ``meshio.read`` of a regular file of at most ``MAX_MESH_BYTES`` (256 MiB). meshio prints its reasons and calls
  ``sys.exit(1)`` on a file it cannot parse, which would end a notebook's kernel: its output is
  captured into the message and its exit caught. A mesh without points is refused, and so is an
  OBJ face index below 1 (meshio would read a 0 as the last vertex).
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tomllib
import warnings
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from ..errors import HookeInputError, as_path

MAX_TEXT_BYTES = 16 * 2**20
# A mesh file's bound: 256 MiB (millions of triangles, far past any model hooke builds in a
# minute) were read by meshio in about 4 s and 0.7 GB; a 4 GiB one was still being read after
# 60 s at 8.5 GB (an .obj), or refused after 33 s at 8.7 GB (an .stl). The shipped mesh is 36 kB.
MAX_MESH_BYTES = 256 * 2**20


def not_regular(mode: int) -> str | None:
    """What a file of this ``st_mode`` is when it is not a regular file, else None."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse_kind(kind: str, field: str, what: str, path: Path) -> HookeInputError:
    return HookeInputError(field, f"is {kind}; a {what} must be a regular file", str(path))


def too_large(field: str, what: str, size: int, path: Path,
              limit: int = MAX_TEXT_BYTES) -> HookeInputError:
    """The refusal of a ``what`` file of ``size`` bytes, more than ``limit``."""
    return HookeInputError(field, f"is larger than the {limit // 2**20} MiB a {what} "
                           f"may have ({size} bytes)", str(path))


def check_regular(path, field: str, what: str) -> Path:
    """``path`` as a Path when it names a regular file; a missing one, a directory, a FIFO or a
    device is one line saying which (a reader given those would fail unclearly or block)."""
    path = as_path(path, field)
    try:
        kind = not_regular(os.stat(path).st_mode)
    except FileNotFoundError:
        raise HookeInputError(field, f"no such {what}", str(path)) from None
    except OSError as error:
        raise HookeInputError(field, f"cannot read the {what} ({error.strerror or error})",
                              str(path)) from None
    if kind is not None:
        raise _refuse_kind(kind, field, what, path)
    return path


def _size(path: Path, field: str) -> int:
    """The size [bytes] of the mesh file at ``path``."""
    try:
        return os.stat(path).st_size
    except OSError as error:  # removed since check_regular
        raise HookeInputError(field, f"cannot read the mesh file ({error.strerror or error})",
                              str(path)) from None


def read_text(path, field: str, what: str, missing_hint: str = "") -> str:
    """The text of the ``what`` file at ``path`` (``missing_hint``: added to "no such …")."""
    path = as_path(path, field)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise HookeInputError(field, f"no such {what}{missing_hint}", str(path)) from None
    except OSError as error:
        raise HookeInputError(field, f"cannot read the {what} ({error.strerror or error})",
                              str(path)) from None
    try:
        info = os.fstat(descriptor)
        kind = not_regular(info.st_mode)
        if kind is not None:
            raise _refuse_kind(kind, field, what, path)
        # Read one byte past the limit: a file that grew since fstat is refused all the same.
        data = b"" if info.st_size > MAX_TEXT_BYTES else os.read(descriptor, MAX_TEXT_BYTES + 1)
        if info.st_size > MAX_TEXT_BYTES or len(data) > MAX_TEXT_BYTES:
            raise too_large(field, what, max(info.st_size, len(data)), path)
    except OSError as error:
        raise HookeInputError(field, f"cannot read the {what} ({error.strerror or error})",
                              str(path)) from None
    finally:
        os.close(descriptor)
    try:  # utf-8-sig: the byte-order mark Windows editors write first is not part of the text
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise HookeInputError(field, f"is not UTF-8 text ({error.reason} at byte {error.start})",
                              str(path)) from None


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """``tomllib.loads(text)``; bad TOML is one line naming ``source`` (e.g. the file's path)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise HookeInputError(source, f"malformed TOML ({error})", show_value=False) from None
    except RecursionError:
        raise HookeInputError(source, "malformed TOML (arrays or tables nested too deeply)",
                              show_value=False) from None


def mesh_path(value, field: str, folder=None) -> Path:
    """``value`` (a str or Path naming a mesh file) as a Path, relative to ``folder`` when given."""
    if isinstance(value, str) and value == "":
        raise HookeInputError(field, "must name a mesh file", value)
    return Path(value) if folder is None else Path(folder) / value


def read_mesh(path, field: str):
    """``meshio.read(path)`` as a meshio.Mesh; ``field`` names the path's field in errors."""
    import meshio

    path = check_regular(path, field, "mesh file")
    size = _size(path, field)
    if size > MAX_MESH_BYTES:
        raise too_large(field, "mesh file", size, path, MAX_MESH_BYTES)
    said = io.StringIO()
    # meshio says why through Rich consoles it makes as it prints, 80 columns wide off a terminal:
    # a longer path was folded ("ramp.vt u"). Rich takes its width from COLUMNS.
    wide = mock.patch.dict(os.environ, {"COLUMNS": "100000"})
    try:
        # warnings off: a NumPy warning printed on the way (genfromtxt's "Empty input file")
        # was taken for meshio's reason, a line of NumPy's source and all
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said), wide, \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mesh = meshio.read(path)
    except (Exception, SystemExit) as error:  # meshio raises many types, and exits
        reason = " ".join(said.getvalue().replace("Error:", "").split()) or str(error)
        raise HookeInputError(field, f"cannot be read as a mesh ({reason or type(error).__name__})",
                              str(path)) from None
    if len(mesh.points) == 0:
        raise HookeInputError(field, "has no points (an empty mesh file)", str(path))
    if path.suffix.lower() == ".obj":
        _check_obj_indices(mesh, path, field)
    return mesh


def _check_obj_indices(mesh, path: Path, field: str) -> None:
    """OBJ vertex indices start at 1 and meshio subtracts 1 from each: a 0 in the file became
    -1, which NumPy reads as the last vertex (and a relative -1 became -2). Refuse any index
    below 1, naming its face (counted from 0 in the file's order, which meshio's blocks keep)."""
    first = 0
    for block in mesh.cells:
        low = np.flatnonzero((block.data < 0).any(axis=1))
        if low.size:
            face = block.data[low[0]]
            index = int(face[face < 0][0]) + 1  # as written in the file
            raise HookeInputError(field, f"face {first + int(low[0])} (counting from 0) of {path} "
                                  f"has vertex index {index}; OBJ vertex indices start at 1 "
                                  "(relative negative ones are not read)", index)
        first += len(block.data)
