"""Butcher tableaus as validated data.

A tableau is checked when it is made: A strictly lower triangular (explicit), each row of A sums
to its c, b (and the embedded b̂) sums to 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ButcherTableau:
    c: np.ndarray
    a: np.ndarray
    b: np.ndarray
    b_embedded: np.ndarray | None = None
    first_same_as_last: bool = False

    def __post_init__(self):
        c, a, b = (np.asarray(v, dtype=float) for v in (self.c, self.a, self.b))
        object.__setattr__(self, "c", c)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        stages = c.size
        if a.shape != (stages, stages) or b.shape != (stages,):
            raise ValueError("tableau shapes do not match the number of stages")
        if np.any(np.triu(a) != 0):
            raise ValueError("an explicit tableau needs A strictly lower triangular")
        if not np.allclose(a.sum(axis=1), c, atol=1e-14):
            raise ValueError("rows of A must sum to c")
        if not np.isclose(b.sum(), 1.0, atol=1e-14):
            raise ValueError("b must sum to 1")
        if self.b_embedded is not None:
            e = np.asarray(self.b_embedded, dtype=float)
            object.__setattr__(self, "b_embedded", e)
            if not np.isclose(e.sum(), 1.0, atol=1e-14):
                raise ValueError("the embedded b must sum to 1")
        if self.first_same_as_last and not (np.allclose(a[-1], b) and c[-1] == 1.0):
            raise ValueError("FSAL needs the last row of A equal to b and c = 1")

    @property
    def stages(self) -> int:
        return self.c.size


def weighted_sum(weights: np.ndarray, stages: np.ndarray) -> np.ndarray:
    """Σ_s w_s·k_s over the first len(w) stages, summed stage by stage with element-wise NumPy
    operations. ``np.tensordot`` would hand this to the BLAS, whose kernel (and so its rounding)
    depends on the CPU: on a chaotic motion (seed 003's pendulum) AVX-512 and AVX2 machines then
    computed different trajectories from the same code; element-wise operations round the same
    everywhere."""
    total = np.zeros(stages.shape[1:])
    for weight, stage in zip(weights, stages):
        if weight != 0.0:
            total += weight * stage
    return total


EULER = ButcherTableau(c=[0.0], a=[[0.0]], b=[1.0])

# Seed 000's "Runge-Kutta 2": the midpoint rule, s⁺ = s + h f(s + ½ h f(s)).
MIDPOINT = ButcherTableau(c=[0.0, 0.5], a=[[0.0, 0.0], [0.5, 0.0]], b=[0.0, 1.0])

RK4 = ButcherTableau(
    c=[0.0, 0.5, 0.5, 1.0],
    a=[[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1.0, 0]],
    b=[1 / 6, 1 / 3, 1 / 3, 1 / 6],
)

# Dormand & Prince (1980), RK5(4)7M: propagate the 5th-order solution, estimate with the 4th.
DORMAND_PRINCE = ButcherTableau(
    c=[0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1],
    a=[
        [0, 0, 0, 0, 0, 0, 0],
        [1 / 5, 0, 0, 0, 0, 0, 0],
        [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
        [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
        [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
        [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
        [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0],
    ],
    b=[35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0],
    b_embedded=[5179 / 57600, 0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40],
    first_same_as_last=True,
)

# Dormand–Prince's continuous extension (Shampine 1986; Hairer, Nørsett & Wanner, Solving ODEs I,
# II.6): on a step [t, t + h] from y0 to y1 with stages k1 … k7 (k7 = f(t + h, y1)),
#     y(t + θh) = y0 + θ(Δ + (1 − θ)(r3 + θ(r4 + (1 − θ) r5))),   Δ = y1 − y0,
#     r3 = h k1 − Δ,  r4 = Δ − h k7 − r3,  r5 = h Σ_j d_j k_j,
# a fourth-order interpolant that matches y and f at both ends (the dense output of solve_ivp).
DORMAND_PRINCE_DENSE = np.array([
    -12715105075 / 11282082432, 0.0, 87487479700 / 32700410799, -10690763975 / 1880347072,
    701980252875 / 199316789632, -1453857185 / 822651844, 69997945 / 29380423])
