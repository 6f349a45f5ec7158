"""Token buckets: how often a client may do something, measured on the event loop's clock.

Contract: a :class:`TokenBucket` holds up to ``burst`` tokens and gains ``rate`` a second.
:meth:`TokenBucket.take` takes one if there is one (True) or takes nothing (False);
:meth:`TokenBucket.wait` is how long until there is one. :class:`PerAddress` keeps a bucket for
each client address, forgetting those that have filled up again, so that the addresses a server
remembers are only those that used it within the last ``burst / rate`` seconds.
"""

from __future__ import annotations

import time


class TokenBucket:
    def __init__(self, rate: float, burst: float, now: float | None = None):
        self.rate, self.burst, self.tokens = rate, burst, burst
        self.last = time.monotonic() if now is None else now

    def refill(self, now: float) -> float:
        """The tokens at ``now`` (seconds, the clock the bucket was made with)."""
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        return self.tokens

    def take(self, now: float) -> bool:
        if self.refill(now) < 1.0:
            return False
        self.tokens -= 1.0
        return True

    def wait(self, now: float) -> float:
        """Seconds from ``now`` until a token is there."""
        return max(0.0, (1.0 - self.refill(now)) / self.rate)


class PerAddress:
    """A :class:`TokenBucket` for each client address (see the module docstring)."""

    def __init__(self, rate: float, burst: float):
        self.rate, self.burst = rate, burst
        self.buckets: dict[str, TokenBucket] = {}

    def take(self, address: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        for known in [a for a, b in self.buckets.items() if b.refill(now) >= b.burst]:
            del self.buckets[known]  # full again: as if it had never come
        bucket = self.buckets.setdefault(address, TokenBucket(self.rate, self.burst, now))
        return bucket.take(now)
