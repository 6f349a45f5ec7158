"""A plain NumPy cloth stepper: the reference peer that is always installed. It runs the same
cloth by the same scheme (spring forces scattered with ``np.bincount``, symplectic Euler), in
float64, so that the peer machinery (its own process, the trajectory check, the rounds) can be
exercised anywhere; ``hooke bench --peers`` does not time it (DESIGN §3: NumPy reaches ~9e6
springs·steps/s, far behind every other contender)."""

from __future__ import annotations

MODULE = DISTRIBUTION = "numpy"
NAME = "NumPy"
PRECISION = "float64"


class Stepper:
    def __init__(self, data: dict):
        import numpy as np

        self.np = np
        self.x = data["x"].copy()
        self.v = np.zeros_like(self.x)
        self.i, self.j = data["springs"][:, 0], data["springs"][:, 1]
        self.rest, self.k, self.dt = data["rest"], data["k"], data["dt"]
        self.inverse_mass = ((~data["pinned"]) / data["mass"])[:, None]
        self.free = ~data["pinned"]
        self.gravity = data["gravity"]

    def run(self, count: int) -> None:
        np, n = self.np, self.x.shape[0]
        for _ in range(count):
            d = self.x[self.j] - self.x[self.i]
            length = np.linalg.norm(d, axis=1)
            force = (self.k * (length - self.rest) / length)[:, None] * d
            f = np.stack([np.bincount(self.i, force[:, a], n) - np.bincount(self.j, force[:, a], n)
                          for a in range(3)], axis=1)
            self.v[self.free] += self.dt * (f * self.inverse_mass + self.gravity)[self.free]
            self.x[self.free] += self.dt * self.v[self.free]

    def positions(self):
        return self.x


def make(data: dict) -> Stepper:
    return Stepper(data)
