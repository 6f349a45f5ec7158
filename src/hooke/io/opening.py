"""Opening a stored run (``trajectory.h5``, :mod:`hooke.io.store`) for reading.

:func:`open_trajectory` never hangs and never raises anything but
:class:`HookeInputError` naming the file: a missing, truncated, corrupted or foreign file is one
line. A file whose writer is still running or was killed (its superblock says so) is read in SWMR
mode with HDF5's metadata read retries bounded to ``READ_ATTEMPTS`` (≈ 0.3 s of back-off per
unreadable item; HDF5's default of 100 back-offs doubling from 1 ns would wait for days on a
corrupted byte). h5py does not wrap that setting: it is called through ctypes from the HDF5
library h5py's extension module links (checked on Linux wheels); where that symbol cannot be
found, HDF5's default applies to such files. Other files are opened plainly, without retries.
Before HDF5 opens a file, its global heap collections (where string attributes live) are walked
as HDF5 walks them (:func:`_check_global_heaps`): HDF5 loops for ever on an object of size 0 in
one (a zeroed block), so such a file is refused instead.

:func:`check_checksums` reads every dataset of an opened file through its checksums, for readers
that do not read the frames themselves (the XDMF sidecar only points into them).
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
import struct
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import h5py
import numpy as np

from ..errors import HookeInputError
from .files import check_regular

READ_ATTEMPTS = 28  # SWMR metadata reads: back-offs of 1, 2, 4 … ns, ≈ 0.27 s in all
REQUIRED_ATTRIBUTES = ("scene_name", "scene_source", "parameters", "integrator", "dt", "t_end",
                       "save_every", "options", "complete")
# Datasets are checked this many bytes at a time (whole chunks): frames need not fit in memory.
CHECK_BYTES = 2**24
HEAP_SIGNATURE = b"GCOL\x01\x00\x00\x00"  # a global heap collection's, version 1


@functools.cache
def _metadata_read_attempts():
    """HDF5's H5Pset_metadata_read_attempts, which h5py does not wrap, from the library h5py is
    linked to (found through h5py's own extension module); None where it cannot be found."""
    for module in (h5py.h5p, h5py.h5f):
        try:
            function = ctypes.CDLL(module.__file__).H5Pset_metadata_read_attempts
        except (OSError, AttributeError):
            continue
        function.argtypes = [ctypes.c_int64, ctypes.c_uint]
        function.restype = ctypes.c_int
        return function
    return None


def _superblock(path: Path) -> tuple[int, int] | None:
    """(status flags, end-of-file address) from a version 2/3 superblock at offset 0 (what
    h5py writes with ``LIBVER``), else None."""
    with path.open("rb") as handle:
        head = handle.read(48)
    if len(head) < 48 or head[:8] != b"\x89HDF\r\n\x1a\n" or head[8] not in (2, 3) or head[9] != 8:
        return None
    return head[11], struct.unpack_from("<Q", head, 28)[0]


def _check_global_heaps(path: Path) -> None:
    """Refuse a file with a global heap collection whose walk would never end. HDF5 (2.0 too)
    reads a collection object by object, each a 16-byte header (heap index, references,
    reserved, size) and its data padded to 8 bytes, except index 0, the free space, which is
    its size alone; a step of 0 bytes (index 0, size 0: a zeroed block) loops for ever, so every
    reader of a string attribute in it hung. Only a collection's exact header (``GCOL``, version
    1, three zero bytes, a size of at least 4096 that fits in the file) is walked, so frame data
    that happens to contain the letters is never taken for one. The file is read, not mapped:
    a mapping of a file that a writer shortens meanwhile ends the process (SIGBUS)."""
    with path.open("rb") as handle:
        size, offset, tail = os.fstat(handle.fileno()).st_size, 0, b""
        while offset < size:
            block = tail + handle.read(CHECK_BYTES)
            if len(block) == len(tail):
                break
            found = block.find(HEAP_SIGNATURE)
            while found >= 0:
                _walk_heap(handle, path, offset - len(tail) + found, size)
                found = block.find(HEAP_SIGNATURE, found + 4)
            offset += len(block) - len(tail)
            tail = block[-(len(HEAP_SIGNATURE) - 1):]  # (pread leaves the read position)


def _walk_heap(handle, path: Path, start: int, file_size: int) -> None:
    """Walk the global heap collection at byte ``start`` (see :func:`_check_global_heaps`)."""
    head = os.pread(handle.fileno(), 16, start)
    length = struct.unpack_from("<Q", head, 8)[0] if len(head) == 16 else 0
    if not 4096 <= length <= file_size - start:
        return
    data = os.pread(handle.fileno(), length, start)
    at = 16
    while at + 16 <= len(data):
        index, size = struct.unpack_from("<H", data, at)[0], struct.unpack_from("<Q", data, at + 8)[0]
        step = (16 + (size + 7) // 8 * 8 if index else size) % 2**64
        if step == 0 or step >= 2**62:  # (a step that wraps round is one backwards)
            raise HookeInputError("path", f"is corrupted: its global heap collection at byte "
                                  f"{start} cannot be read (an object of size {size} at byte "
                                  f"{start + at}, which HDF5 would read for ever)", str(path))
        at += step


def _reason(error: BaseException) -> str:
    """HDF5's own words, without h5py's "Unable to synchronously …" wrapper."""
    text = str(error.args[0] if isinstance(error, KeyError) and error.args else error)
    inner = text[text.find("(") + 1: text.rfind(")")] if "(" in text else text
    return inner.strip() or error.__class__.__name__


def _open_file(path: Path) -> h5py.File:
    superblock = _superblock(path)
    size = path.stat().st_size
    if superblock is not None and superblock[1] > size:
        raise HookeInputError("path", f"is truncated: {size} of its {superblock[1]} bytes are "
                              "there", str(path))
    _check_global_heaps(path)
    try:
        if superblock is None or not superblock[0] & 0x4:
            return h5py.File(path, "r")
        # A SWMR writer is at work or was killed: only a SWMR reader may open it.
        access = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
        bound = _metadata_read_attempts()
        if bound is not None:
            bound(access.id, READ_ATTEMPTS)
        return h5py.File(h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDONLY | h5py.h5f.ACC_SWMR_READ,
                                       fapl=access))
    except OSError as error:
        raise HookeInputError("path", f"is not a readable HDF5 trajectory ({_reason(error)})",
                              str(path)) from None


def _check_layout(handle: h5py.File, path: Path) -> None:
    for name in ("frames/t", "frames/x", "frames/v", "frames/energy/kinetic",
                 "frames/energy/total", "model", "checkpoint"):
        if name not in handle:
            raise HookeInputError("path", f"holds no hooke trajectory (no /{name})", str(path))
    missing = [key for key in REQUIRED_ATTRIBUTES if key not in handle.attrs]
    if missing:
        raise HookeInputError("path", "holds no hooke trajectory (no attribute "
                              f"{', '.join(missing)})", str(path))


@contextmanager
def open_trajectory(path) -> Iterator[h5py.File]:
    """A stored run opened for reading. A missing, truncated, corrupted or foreign file — found
    on opening or while reading inside the ``with`` block — is a one-line
    :class:`HookeInputError` naming the file, raised within a second; so is a directory, FIFO
    or device, saying which (:func:`~hooke.io.files.check_regular`)."""
    path = check_regular(path, "path", "trajectory file")
    handle = _open_file(path)
    try:
        with handle:
            _check_layout(handle, path)
            yield handle
    except HookeInputError:
        raise
    except (OSError, KeyError, IndexError, RuntimeError, ValueError, TypeError) as error:
        raise HookeInputError("path", f"is corrupted ({_reason(error)})", str(path)) from None


def check_checksums(handle: h5py.File) -> None:
    """Read every dataset of an opened stored run through its checksums (Fletcher-32), whole
    chunks of about CHECK_BYTES at a time: a flipped byte anywhere is one line naming the file
    and the dataset (:func:`_read`). For readers that do not read the frames themselves, as the
    XDMF sidecar, which only points into them."""
    def check(name: str, item) -> None:
        if not isinstance(item, h5py.Dataset) or not item.shape or not item.size:
            return  # (a scalar, or a block without rows: nothing checksummed to read)
        rows = (item.chunks or item.shape)[0]
        row_bytes = item.dtype.itemsize * math.prod(item.shape[1:])
        step = rows * max(1, CHECK_BYTES // max(rows * row_bytes, 1))
        for start in range(0, item.shape[0], step):
            _read(item, slice(start, start + step))

    handle.visititems(check)


def _read(dataset: h5py.Dataset, pick=()) -> np.ndarray:
    """``dataset[pick]``; a checksum or decompression failure names the dataset."""
    try:
        return dataset[pick]
    except (OSError, RuntimeError, ValueError) as error:
        raise HookeInputError("path", f"is corrupted: {dataset.name} cannot be read "
                              f"({_reason(error)})", dataset.file.filename) from None
