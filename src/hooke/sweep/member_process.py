"""The child process that runs one member with a time limit (``python -m
hooke.sweep.member_process``, started by :func:`hooke.sweep.worker.run_member`).

Protocol: it reads one pickled ``(member, store, timeout)`` from standard input, writes
``worker.STARTED`` to standard output as the member starts, then the pickled row
(:func:`hooke.sweep.worker.run_here`), and exits. Anything the run prints goes to standard
error. It exits at once when its parent (the Dask worker) is gone, so a worker that dies never
leaves a member running on; one that finds the parent's pipe closed exits quietly (status 1).
"""

from __future__ import annotations

import os
import pickle
import sys
import threading
import time

PARENT_CHECK = 0.5  # s between checks that the parent is alive


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:  # an orphan is adopted by another process
        time.sleep(PARENT_CHECK)
    os._exit(1)


def main() -> None:
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    reply = sys.stdout.buffer
    sys.stdout = sys.stderr  # only the protocol's bytes reach the parent's pipe
    from .worker import STARTED, run_here

    member, store, timeout = pickle.load(sys.stdin.buffer)
    try:
        reply.write(STARTED)
        reply.flush()
        reply.write(pickle.dumps(run_here(member, store, timeout)))
        reply.flush()
    except BrokenPipeError:  # the worker died first (killed): no one waits for the row
        os._exit(1)


if __name__ == "__main__":
    main()
