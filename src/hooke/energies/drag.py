"""Linear air drag towards a wind: f_i = −c_i (v_i − w(t)) on every particle.

c_i ≥ 0 is ``Model.drag`` [N·s/m] (empty: no drag) and w(t) the wind, the air's velocity, the
same at every point: the steady ``Model.wind`` plus the velocity du(t) of ``Model.wind_motion``
(the air moving as a prescribed motion of :mod:`hooke.motion`: ``ConstantVelocity(v, T)`` a
wind v that blows for T seconds, ``Sinusoid(a, e, ω)`` air sloshing at a·ω·cos(ωt + φ)·e).

Drag is no energy but a dissipative force, like spring damping (:mod:`.damping`): it is
−∂Ψ/∂v of Ψ(v, t) = ½ Σ c_i |v_i − w(t)|², linear in v with the constant Jacobian
∂f/∂v = −C, C = diag(c_i) per DOF. Integrators take it in two parts:

- −C v with the velocity Jacobian: :class:`hooke.system.System` adds C to the damping matrix D
  of every ``combined_matrix`` (damping_weight·(D + C)) and the force to every ``force``;
- the wind's push C w(t), a force that does not depend on the state. In the incremental
  potential of implicit Euler the drag's share is ½ h (Δy − h w)ᵀ C (Δy − h w) with Δy = y − x
  and w at the step's end: ½ h Δyᵀ C Δy is the damping term (D + C), and what is left,
  −h² (C w)·Δy, is this module's step term (see :mod:`hooke.energies`: ``prepare`` gives it for
  one step, weighted by h² like the potentials, its Hessian zero).

The fused and compiled fast paths (:mod:`hooke.kernels`' passes, the compiled rk45 and implicit
Euler steps) take no time-dependent force: a model with drag runs the generic paths. The
compiled α-method step (:mod:`hooke.integrators.newmark_compiled`) takes drag towards a steady
wind; a wind with a ``motion`` sends it down the generic path too. The
static equilibrium of :mod:`hooke.analysis` takes the steady wind's push on particles at rest.
"""

from __future__ import annotations

import numpy as np

NAME = "wind"


def wind(model, t: float) -> np.ndarray:
    """(d,) wind velocity w(t) [m/s]: the steady wind plus the air motion's velocity."""
    w = model.wind.copy() if model.wind.size else np.zeros(model.dim)
    if model.wind_motion is not None:
        w += np.asarray(model.wind_motion(t)[1], dtype=float)
    return w


def active(model) -> bool:
    """Whether the wind pushes (the step term exists): drag and a wind that is not always 0."""
    return model.has_drag and (bool(np.any(model.wind != 0)) or model.wind_motion is not None)


def coefficients(model) -> np.ndarray:
    """(n,) drag coefficients c_i [N·s/m], zeros without drag."""
    return model.drag if model.drag.size else np.zeros(model.n_particles)


def dof_coefficients(model) -> np.ndarray:
    """(n·d,) diagonal of C = −∂f/∂v in the flattened DOF numbering."""
    return np.repeat(coefficients(model), model.dim)


def force(model, v: np.ndarray, t: float) -> np.ndarray:
    """(n, d) drag forces −c_i (v_i − w(t)) [N]."""
    return -coefficients(model)[:, None] * (v - wind(model, t))


def dissipation(model, v: np.ndarray, t: float) -> float:
    """Ψ = ½ Σ c_i |v_i − w(t)|² [W]; with no wind the drag takes energy out at the rate 2Ψ."""
    relative = v - wind(model, t)
    return 0.5 * float(np.sum(coefficients(model)[:, None] * relative * relative))


def hessian_structure(model):
    """The wind term's Hessian is zero: an empty pattern."""
    empty = np.empty(0, dtype=np.int64)
    return empty, empty


class WindWork:
    """The wind's step term: −Σ c_i w·(y_i − x_i), w = w(t + h), x the step's start."""

    NAME = NAME

    def __init__(self, model, x_start: np.ndarray, w: np.ndarray):
        self.x_start = x_start
        self.push = coefficients(model)[:, None] * w  # (n, d) C w

    def value(self, model, y: np.ndarray) -> float:
        """−Σ c_i w·(y_i − x_i) [J] (the incremental potential weights it by h², as a potential)."""
        return -float(np.sum(self.push * (y - self.x_start)))

    def gradient(self, model, y: np.ndarray) -> np.ndarray:
        """(n, d) −c_i w, the same at every y."""
        return -self.push

    hessian_structure = staticmethod(hessian_structure)

    def hessian_values(self, model, y: np.ndarray, project_psd: bool = False) -> np.ndarray:
        """No entries: the term is linear in y."""
        return np.empty(0)


def prepare(model, start, h: float) -> WindWork:
    """The wind's step term of the implicit step from the State ``start`` to start.t + h."""
    return WindWork(model, start.x, wind(model, start.t + h))
