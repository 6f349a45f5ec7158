"""The running choice between a kernel's parallel and single-thread forms (hooke.thread_choice):
it follows the measured call times, probes the other form once per interval, and never changes a
bit of the result (hooke.kernels)."""

from __future__ import annotations

import itertools

import numba
import numpy as np
import pytest

import hooke
from hooke.integrators import get as get_integrator
from hooke.system import System
from hooke.thread_choice import PROBE_CALLS, PROBE_INTERVAL, ThreadChoice


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def drive(choice: ThreadChoice, clock: Clock, parallel_s: float, serial_s: float, calls: int):
    """``calls`` calls, each taking the time of the form the choice picks; the forms used."""
    used = []
    for _ in range(calls):
        parallel = choice.parallel()
        used.append(parallel)
        seconds = parallel_s if parallel else serial_s
        clock.now += seconds
        choice.record(seconds)
    return used


def test_it_switches_to_the_faster_form_and_probes_once_per_interval():
    clock = Clock()
    choice = ThreadChoice(clock)
    # parallel faster (an idle machine): it stays parallel, probing serial PROBE_CALLS calls a time
    used = drive(choice, clock, 1e-3, 2e-3, calls=3000)
    probes = used.count(False)
    assert choice.current_parallel and choice.switches == 0
    # the first probe right after the first calls (a short run adapts too), then one per interval
    assert used[:PROBE_CALLS] == [True] * PROBE_CALLS
    assert used[PROBE_CALLS:2 * PROBE_CALLS] == [False] * PROBE_CALLS
    expected = 1 + int(clock.now / (PROBE_INTERVAL + PROBE_CALLS * 2e-3))
    assert abs(probes / PROBE_CALLS - expected) <= 1
    assert (probes - PROBE_CALLS) / len(used) < 0.01  # under 1% of the calls after the first
    # the other core gets busy: parallel calls take 2.5 ms, serial ones still 2 ms
    drive(choice, clock, 2.5e-3, 2e-3, calls=int(PROBE_INTERVAL / 2e-3) + 2 * PROBE_CALLS)
    assert not choice.current_parallel and choice.switches == 1
    # idle again: back to parallel at the next probe
    drive(choice, clock, 1e-3, 2e-3, calls=int(PROBE_INTERVAL / 2e-3) + 2 * PROBE_CALLS)
    assert choice.current_parallel and choice.switches == 2


def test_a_small_difference_does_not_flip_the_choice():
    clock = Clock()
    choice = ThreadChoice(clock)
    drive(choice, clock, 1.0e-3, 0.95e-3, calls=5000)  # serial only 5% faster: within noise
    assert choice.current_parallel and choice.switches == 0


@pytest.mark.skipif(numba.get_num_threads() < 2, reason="needs two Numba threads")
@pytest.mark.parametrize("integrator", ["symplectic_euler", "rk4"])
def test_either_form_gives_the_same_bits(integrator):
    scene = hooke.scene("cloth", n=60)  # above PARALLEL_MIN_SPRINGS
    runs = []
    for pattern in ([True], [False], [True, False, False, True, False]):
        stepper = get_integrator(integrator)(System(scene.model), 1e-4)
        gather = stepper.system.gather
        assert gather.threads is not None
        calls, asked = itertools.cycle(pattern), []
        gather.threads.parallel = lambda: asked.append(1) or next(calls)  # a fixed sequence
        runs.append(stepper.advance(scene.state, 40e-4, 40))
        assert len(asked) >= 40  # every step went through the chosen kernel
    for run in runs[1:]:
        assert np.array_equal(run.x, runs[0].x) and np.array_equal(run.v, runs[0].v)
