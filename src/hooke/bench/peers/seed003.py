"""A same-process peer for W8: seed 003's double pendulum script, the way it computes — NumPy
vectors of 3 per mass, the tensions from the closed form of the double pendulum, the
tension-weighted length-correction force, SciPy's ``solve_ivp`` (RK45, rtol = atol = 1e-4) over
100 s with output every 0.01 s. Written here for the benchmark after the seed's listing
(``../shared/seeds/003_*.txt``: ``equations`` and ``calculation``), not copied; its masses,
lengths, gravity and initial state are the ``pendulum`` scene's (DESIGN.md §5).

Contract: :func:`run(t_end, k_c, beta_c)` returns the output times (F,) and the positions of the
two masses (F, 2, 3) at them.
"""

from __future__ import annotations

import numpy as np
import scipy.integrate as integrate

G = np.array([0.0, 0.0, -10.0])
M1 = M2 = 1.0
L01 = L12 = 1.0
V0 = 0.01
DT = 0.01


def equations(t, state, k_c, beta_c):
    r1, v1, r2, v2 = state[0:3], state[3:6], state[6:9], state[9:12]
    r0, u0, a0 = np.zeros(3), np.zeros(3), np.zeros(3)  # the support: box(t) at rest
    r01, r12 = r0 - r1, r1 - r2
    l01, l12 = np.sqrt(np.dot(r01, r01)), np.sqrt(np.dot(r12, r12))
    n01, n12 = r01 / l01, r12 / l12
    v01, v12 = u0 - v1, v1 - v2
    a01, a12 = a0 - G, G - G
    c01 = -1.0 / l01 * (np.dot(v01, v01) + np.dot(a01, r01))
    c12 = -1.0 / l12 * (np.dot(v12, v12) + np.dot(a12, r12))
    cos = np.dot(n01, n12)
    denominator = M1 + M2 * (1.0 - cos ** 2)
    f01 = -(M1 * (M1 + M2) / denominator) * c01 - (M1 * M2 * cos / denominator) * c12
    f12 = -(M1 * M2 * cos / denominator) * c01 - (M1 * M2 / denominator) * c12
    fc01 = (k_c * (l01 - L01) + beta_c * np.dot(v01, n01)) * n01
    fc12 = (k_c * (l12 - L12) + beta_c * np.dot(v12, n12)) * n12
    force1 = f01 * n01 - f12 * n12 + M1 * G + (fc01 - fc12) * (np.abs(f01) + np.abs(f12))
    force2 = f12 * n12 + M2 * G + fc12 * np.abs(f12)
    a1, a2 = force1 / M1, force2 / M2
    return [v1[0], v1[1], v1[2], a1[0], a1[1], a1[2], v2[0], v2[1], v2[2], a2[0], a2[1], a2[2]]


def run(t_end: float = 100.0, k_c: float = 0.03, beta_c: float = 0.2):
    times = np.arange(0.0, t_end, DT)
    start = np.concatenate([[0.0, 0.0, L01], [0.0, 0.0, 0.0], [0.0, 0.0, L01 + L12],
                            [V0, 0.0, 0.0]])
    solution = integrate.solve_ivp(equations, method="RK45", args=(k_c, beta_c),
                                   t_span=(times[0], times[-1]), rtol=1e-4, atol=1e-4, y0=start,
                                   t_eval=times)
    positions = np.stack([solution.y[0:3].T, solution.y[6:9].T], axis=1)
    return solution.t, positions
