"""Whether a parallel kernel should run on all Numba threads or on the calling thread alone, chosen
from its measured call times while it runs.

Contract: a :class:`ThreadChoice` is asked :meth:`~ThreadChoice.parallel` before each call of a
kernel that has both forms, and told the call's wall time by :meth:`~ThreadChoice.record`. It
answers with its current choice (parallel at first) and, after its first ``PROBE_CALLS`` calls
and then once per ``PROBE_INTERVAL`` seconds, for ``PROBE_CALLS`` calls with the other one; it switches when the other form's median call
time is below ``SWITCH_GAIN`` × the current form's median over its last ``PROBE_CALLS`` calls.
Only the kernels whose results do not depend on the thread count may use it (their chunks
write disjoint outputs, each summed in one fixed order: :mod:`hooke.kernels`), so a switch
changes the time and never a bit of the result.

Why: two threads on two cores are ~1.7× one thread on an idle machine, but when another process
holds a core each parallel pass waits for the thread the OS has descheduled: measured on the
100 × 100 cloth with the other core busy, 413–658 steps/s on two threads against 1,141–1,185 on
one. A probe of the slower form costs ``PROBE_CALLS`` calls per interval: under 1% of an
explicit cloth's steps.
"""

from __future__ import annotations

import time
from collections import deque
from statistics import median

PROBE_INTERVAL = 0.5  # [s] of wall time between probes of the other form
PROBE_CALLS = 5
SWITCH_GAIN = 0.9  # the other form must be 10% faster: noise alone does not flip the choice


class ThreadChoice:
    """The running choice between a kernel's parallel and single-thread forms."""

    def __init__(self, clock=time.perf_counter):
        self.clock = clock
        self.current_parallel = True
        self.recent: deque[float] = deque(maxlen=PROBE_CALLS)  # the current form's last calls
        self.probe: list[float] = []
        self.probing = False
        self.switches = 0
        self.next_probe = clock()  # the first probe right after the first PROBE_CALLS calls:
        # a short run (a small model's few hundred steps) is over before one interval

    def parallel(self) -> bool:
        """Whether the next call runs on all threads."""
        if (not self.probing and len(self.recent) == PROBE_CALLS
                and self.clock() >= self.next_probe):
            self.probing, self.probe = True, []
        return self.current_parallel != self.probing

    def record(self, seconds: float) -> None:
        """The wall time of the call :meth:`parallel` was last asked about."""
        if not self.probing:
            self.recent.append(seconds)
            return
        self.probe.append(seconds)
        if len(self.probe) < PROBE_CALLS:
            return
        if median(self.probe) < SWITCH_GAIN * median(self.recent):
            self.current_parallel = not self.current_parallel
            self.recent = deque(self.probe, maxlen=PROBE_CALLS)
            self.switches += 1
        self.probing = False
        self.next_probe = self.clock() + PROBE_INTERVAL
