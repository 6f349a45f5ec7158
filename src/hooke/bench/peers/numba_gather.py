"""A plain Numba gather kernel as a W1/W2 peer: what a user who knows Numba writes for the cloth in
an afternoon, float64, on all of Numba's threads.

Each step is one ``@njit(parallel=True)`` call of two passes: over the springs (``prange``), the
force vector ψ d of each spring into an (S, 3) array; over the particles (``prange``), the sum of
its springs' forces with their signs through a CSR adjacency built once, then the symplectic
Euler update of v and x. Nothing of hooke's is used (no ψ shared between ends, no chunking by
spring count, no choice of the thread count): it is the issue's "plain Numba gather kernel"
(issue 16 §2), the peer hooke's own two-pass kernel has to beat.
"""

from __future__ import annotations

MODULE = DISTRIBUTION = "numba"
NAME = "Numba gather"
PRECISION = "float64"


def _kernels():
    from numba import njit, prange

    @njit(parallel=True, fastmath=False, cache=False)
    def step(x, v, first, second, rest, k, indptr, spring_of, sign, inverse_mass, gravity, dt,
             force):
        for s in prange(first.size):
            i, j = first[s], second[s]
            d0 = x[j, 0] - x[i, 0]
            d1 = x[j, 1] - x[i, 1]
            d2 = x[j, 2] - x[i, 2]
            length = (d0 * d0 + d1 * d1 + d2 * d2) ** 0.5
            psi = k * (length - rest[s]) / length
            force[s, 0] = psi * d0
            force[s, 1] = psi * d1
            force[s, 2] = psi * d2
        for p in prange(x.shape[0]):
            w = inverse_mass[p]
            if w == 0.0:
                continue
            f0 = 0.0
            f1 = 0.0
            f2 = 0.0
            for e in range(indptr[p], indptr[p + 1]):
                s, sg = spring_of[e], sign[e]
                f0 += sg * force[s, 0]
                f1 += sg * force[s, 1]
                f2 += sg * force[s, 2]
            v[p, 0] += dt * (f0 * w + gravity[0])
            v[p, 1] += dt * (f1 * w + gravity[1])
            v[p, 2] += dt * (f2 * w + gravity[2])
            x[p, 0] += dt * v[p, 0]
            x[p, 1] += dt * v[p, 1]
            x[p, 2] += dt * v[p, 2]

    return step


class Stepper:
    def __init__(self, data: dict):
        import numpy as np

        self.x = np.ascontiguousarray(data["x"], dtype=np.float64).copy()
        self.v = np.zeros_like(self.x)
        springs = np.asarray(data["springs"], dtype=np.int64)
        first, second = springs[:, 0].copy(), springs[:, 1].copy()
        n, count = self.x.shape[0], first.size
        # the incident springs of each particle: +f on the first end, −f on the second
        ends = np.concatenate([first, second])
        order = np.argsort(ends, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(ends, minlength=n), out=indptr[1:])
        spring_of = np.concatenate([np.arange(count), np.arange(count)])[order]
        sign = np.concatenate([np.ones(count), -np.ones(count)])[order]
        inverse_mass = np.where(data["pinned"], 0.0, 1.0 / np.asarray(data["mass"], dtype=float))
        gravity = np.asarray(data["gravity"], dtype=np.float64)
        rest = np.asarray(data["rest"], dtype=np.float64)
        force = np.empty((count, 3))
        step = _kernels()
        k, dt = float(data["k"]), float(data["dt"])
        x, v = self.x, self.v

        def run(steps: int) -> None:
            for _ in range(steps):
                step(x, v, first, second, rest, k, indptr, spring_of, sign, inverse_mass, gravity,
                     dt, force)

        self.run = run

    def positions(self):
        return self.x


def make(data: dict) -> Stepper:
    return Stepper(data)
