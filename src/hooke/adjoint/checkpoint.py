"""Checkpointing for the reverse sweep: memory O(√steps) states instead of O(steps).

Contract: :class:`Tape` runs the forward steps once, keeping the state at every ``segment``-th
step (and the last one) and handing each state to a callback (the saved frames are taken there).
:meth:`Tape.segments` then yields the segments last to first, each as its full list of states:
the states between two kept ones are computed again from the first of them, with the same
integrator, so they are bit-identical to the forward run's (every step is deterministic). At most
``kept`` + ``segment`` + 1 states are held at once (``peak_states``).

``segment_length(n_steps, checkpoints)``: ``checkpoints=None`` keeps about √n states (segments of
⌈√n⌉ steps: memory and recomputation balanced, one extra forward run in all); an integer keeps at
most that many (segments of ⌈n / checkpoints⌉ steps), so ``checkpoints`` ≥ n keeps every state and
computes nothing twice.
"""

from __future__ import annotations

import math

from ..errors import HookeInputError, is_count


def segment_length(n_steps: int, checkpoints=None) -> int:
    if checkpoints is None:
        return math.isqrt(n_steps - 1) + 1  # ⌈√n⌉ for n ≥ 1
    if not is_count(checkpoints) or checkpoints < 1:
        raise HookeInputError("checkpoints", "must be an integer >= 1 (the most states kept for "
                              "the reverse sweep) or None (about √steps)", checkpoints)
    return max(1, -(-n_steps // int(checkpoints)))


class Tape:
    def __init__(self, stepper, n_steps: int, segment: int):
        self.stepper, self.n_steps, self.segment = stepper, n_steps, segment
        self.kept: dict[int, object] = {}
        self.peak_states = 0

    def forward(self, state, on_state) -> None:
        """Run every step from ``state`` (step 0), keeping the checkpoints; ``on_state(step,
        state)`` sees every state."""
        self.kept = {0: state}
        on_state(0, state)
        for step in range(1, self.n_steps + 1):
            state = self.stepper.checked_step(state)
            if step % self.segment == 0 or step == self.n_steps:
                self.kept[step] = state
            on_state(step, state)

    def segments(self):
        """(first step, [states of steps first … last]) for each segment, the last one first."""
        starts = sorted(self.kept)
        for first, last in reversed(list(zip(starts[:-1], starts[1:]))):
            states = [self.kept[first]]
            for _ in range(first + 1, last):
                states.append(self.stepper.checked_step(states[-1]))
            states.append(self.kept[last])
            self.peak_states = max(self.peak_states, len(self.kept) + len(states) - 2)
            yield first, states
