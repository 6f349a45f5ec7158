"""Room on disk taken ahead of a write, so that a full disk is met as a plain ENOSPC before a
library that cannot survive a failed write (HDF5 before SWMR starts, :mod:`.store`) writes.

Contract: :func:`reserve` allocates a file's first bytes (``posix_fallocate``) or raises
``OSError`` with an errno of ``DISK_FULL``; a file system that cannot allocate ahead is left to
be written as before.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)

# Room held for HDF5's own metadata (object headers, B-trees, heaps) besides the data.
RESERVE_SLACK = 2**20


def reserve(path: Path, size: int) -> None:
    """The first ``size`` bytes of ``path`` allocated on disk now (``posix_fallocate``; HDF5
    writes at its own end of allocation, within them). A write HDF5 fails before SWMR starts
    (a disk that fills before the run's first frames) leaves it in a state in which closing
    the file crashes the process (a segmentation fault after h5py's "Can't decrement id ref
    count"), which pointing the file at /dev/null does not prevent: so, until SWMR has
    started, a full disk is met here, as a plain ENOSPC, before HDF5 writes. A file system
    that cannot allocate ahead (EOPNOTSUPP …) is written as before."""
    if not hasattr(os, "posix_fallocate"):  # (macOS): written as before
        return
    descriptor = os.open(path, os.O_WRONLY)
    try:
        os.posix_fallocate(descriptor, 0, size)
    except OSError as error:
        if error.errno in DISK_FULL:
            raise
    finally:
        os.close(descriptor)
