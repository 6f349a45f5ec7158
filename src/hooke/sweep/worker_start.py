"""A Dask preload for the local cluster's workers: each ignores SIGINT once it has started.

The first workers already start with SIGINT ignored (:mod:`.execution` spawns them so), but a
worker the nanny starts again after one died is spawned later, with this process's own handler
reset to the default, so a terminal's Ctrl-C (sent to the whole process group) printed a
KeyboardInterrupt traceback from it. ``dask_setup`` runs in the worker's main thread, where a
signal's handler may be set.
"""

from __future__ import annotations

import signal


def dask_setup(worker) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
