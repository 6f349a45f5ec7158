"""The scalar factor ψ of one spring, shared by the compiled force kernels.

Contract: with d = x_j − x_i, ∂E_s/∂d = φ_s d for both spring forms of
:mod:`hooke.energies.spring`, and the damping of :mod:`hooke.energies.damping` adds
c_s (Δv·d)/|d|² (Δv = v_j − v_i); the force of spring s on i is ψ_s d and on j is −ψ_s d. The
functions here are ``inline="always"`` Numba functions of scalars, so the gather kernels
(:mod:`hooke.kernels`) and the run kernels (:mod:`hooke.spring_runs`) compute every ψ with the
same operations in the same order: the same bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# The springs' forms: the length form with every rest length positive (the kernels' branch-free
# loops), the length form with some zero rest lengths, the squared form.
POSITIVE_REST, LENGTH, SQUARED = 0, 1, 2


def spring_form(energy: str, rest: np.ndarray) -> int:
    """The form code the kernels take for springs of ``energy`` with rest lengths ``rest``."""
    if energy == "squared_length":
        return SQUARED
    return LENGTH if np.any(rest == 0.0) else POSITIVE_REST


@njit(inline="always")
def positive_rest_factor(length2, k, l0):
    """φ of the length form for a spring of positive rest length l0 and |d|² > 0 (0/0 at |d| = 0:
    the callers note that case and take :func:`general_factor`)."""
    length = np.sqrt(length2)
    return k * (length - l0) / length


@njit(inline="always")
def general_factor(length2, k, l0, form):
    """φ for any form, rest length and |d|² (the undefined direction at |d| = 0 gives 0, as
    ``spring._force_factor`` does)."""
    if form == SQUARED:
        return 2.0 * k * (length2 / (l0 * l0) - 1.0)
    if l0 == 0.0:
        return k
    if length2 == 0.0:
        return 0.0
    return positive_rest_factor(length2, k, l0)


@njit(inline="always")
def damping_term(dv_dot_d, length2, c):
    """c (Δv·d)/|d|²: the damping part of ψ (for |d|² > 0)."""
    return c * dv_dot_d / length2
