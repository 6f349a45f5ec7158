"""Checkpointing for the reverse sweep: memory O(√steps) states instead of O(steps).

Contract: :class:`Tape` runs the forward steps once, keeping the state at every ``segment``-th
step (and the last one) with the integrator's checkpoint there (what its next step depends on
besides the state: the α-methods' accelerations, see :mod:`hooke.integrators.base`), and handing
each state to a callback (the saved frames are taken there). :meth:`Tape.segments` then yields
the segments last to first, each as its full list of states and checkpoints: the states between
two kept ones are computed again from the first of them by a fresh integrator restored from its
checkpoint, so they are bit-identical to the forward run's (the resume contract of
:mod:`hooke.integrators.base`, which tests/test_store.py checks for every integrator). At most
``kept`` + ``segment`` + 1 states are held at once (``peak_states``).

``segment_length(n_steps, checkpoints, state_bytes, memory)``: ``checkpoints=None`` keeps every
state when all n + 1 of them (``state_bytes`` each) fit in ``memory`` bytes (default
:data:`TAPE_MEMORY`: then nothing is computed twice, and the gradient costs one forward run less),
else about √n states (segments of ⌈√n⌉ steps: memory and recomputation balanced, one extra
forward run in all); an integer keeps at most that many (segments of ⌈n / checkpoints⌉ steps), so
``checkpoints`` ≥ n keeps every state and computes nothing twice.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import HookeInputError, is_count, is_number

# [bytes] the states hooke.gradient keeps whole by default before it checkpoints: 256 MiB holds
# 1,000 steps of a 10,000-particle 3D model (x and v: 480 kB a state).
TAPE_MEMORY = 256 * 2**20


def segment_length(n_steps: int, checkpoints=None, state_bytes: int | None = None,
                   memory=TAPE_MEMORY) -> int:
    if not is_number(memory) or not memory >= 0:
        raise HookeInputError("tape_memory", "must be a number of bytes >= 0 (the states kept "
                              "whole before checkpointing)", memory)
    if checkpoints is None:
        if state_bytes is not None and (n_steps + 1) * state_bytes <= memory:
            return 1
        return math.isqrt(n_steps - 1) + 1  # ⌈√n⌉ for n ≥ 1
    if not is_count(checkpoints) or checkpoints < 1:
        raise HookeInputError("checkpoints", "must be an integer >= 1 (the most states kept for "
                              "the reverse sweep) or None (about √steps)", checkpoints)
    return max(1, -(-n_steps // int(checkpoints)))


def snapshot(stepper) -> dict:
    """A copy of the integrator's checkpoint (it may reuse its arrays)."""
    return {key: np.array(value) if isinstance(value, np.ndarray) else value
            for key, value in stepper.checkpoint().items()}


class Tape:
    def __init__(self, stepper, n_steps: int, segment: int, fresh):
        """``fresh()``: a new integrator of the forward one's class, system and options."""
        self.stepper, self.n_steps, self.segment, self.fresh = stepper, n_steps, segment, fresh
        self.kept: dict[int, tuple] = {}
        self.peak_states = 0

    def forward(self, state, on_state) -> None:
        """Run every step from ``state`` (step 0), keeping the checkpoints; ``on_state(step,
        state)`` sees every state, step 0 as given; the kept step 0 is the state the first step
        starts from (the integrator's ``consistent_start``: the start put on the joints)."""
        on_state(0, state)
        state = self.stepper.consistent_start(state)
        self.kept = {0: (state, snapshot(self.stepper))}
        for step in range(1, self.n_steps + 1):
            state = self.stepper.checked_step(state)
            if step % self.segment == 0 or step == self.n_steps:
                self.kept[step] = (state, snapshot(self.stepper))
            on_state(step, state)

    def segments(self):
        """(first step, [states of steps first … last], [their checkpoints]) for each segment,
        the last one first."""
        starts = sorted(self.kept)
        for first, last in reversed(list(zip(starts[:-1], starts[1:]))):
            state, checkpoint = self.kept[first]
            states, checkpoints = [state], [checkpoint]
            if last - first > 1:
                stepper = self.fresh()
                stepper.restore(checkpoint)
                for _ in range(first + 1, last):
                    states.append(stepper.checked_step(states[-1]))
                    checkpoints.append(snapshot(stepper))
            states.append(self.kept[last][0])
            checkpoints.append(self.kept[last][1])
            self.peak_states = max(self.peak_states, len(self.kept) + len(states) - 2)
            yield first, states, checkpoints
