"""Reference trajectories for the verification matrix, independent of hooke's integrators.

Contract: :func:`dae_reference` integrates a scene without contact planes from its initial state
with SciPy's DOP853 and returns the positions (frames, n, d) at the times ``t`` asked for (dense
output). It uses hooke only for the forces (``System.unconstrained_acceleration``: springs,
damping, gravity, pinned particles' prescribed accelerations); the joints are solved here, in the
index-1 form of the equations of motion

    M a + Gᵀ λ = F,    G a = −Ġ v,

with the constraints gₖ = ½(|x_j − x_i|² − Lₖ²) (so Gₖ = dₖᵀ(e_j − e_i) and Ġₖ v = |w_k|²,
w_k = v_j − v_i): eliminating a gives (G M⁻¹ Gᵀ) λ = G a_u + |w|², a = a_u − M⁻¹ Gᵀ λ, with a_u
the unconstrained accelerations. Nothing holds the lengths but the accuracy of the integration:
at rtol 3e-14 they drift by far less than any integrator's error in the matrix. Without joints
it is the plain ODE M a = F.

:class:`Reference` carries the positions and velocities and an estimate of the positions'
error: the largest distance between the run at ``rtol`` (3e-14 by default, near SciPy's smallest
2.2e-14; atol = rtol) and one at ``LOOSER``·``rtol``, divided by ``LOOSER`` (DOP853's error is
close to proportional to its tolerance). Measured on the double pendulum over 1.5 s against
fixed-step rk45 at h = 1/1280 s (itself within 7e-14 m): DOP853 is off by 2.8e-11 m at rtol
3e-13 and 2.8e-12 m at 3e-14, and the estimate says 2.6e-12 m.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from ..errors import HookeInputError, SimulationError
from ..system import System

LOOSER = 10.0  # the error estimate's second run is at LOOSER × rtol


@dataclass(frozen=True)
class Reference:
    """Positions and velocities (frames, n, d) at the compared frames (no velocities from an
    analytic solution), what made them, and an estimate of the positions' error [m] (0 when
    analytic)."""

    x: np.ndarray
    v: np.ndarray | None
    kind: str
    error: float


class JointDAE:
    """The right-hand side ẏ = (v, a) of a model's index-1 equations (see the module docstring)."""

    def __init__(self, model):
        if model.n_planes:
            raise HookeInputError("scene", "has contact planes: a smooth reference does not exist "
                                  "(the matrix measures contact scenes by self-convergence)",
                                  model.n_planes)
        self.system = System(model)
        self.shape = model.x0.shape
        self.i, self.j = model.joint_indices.T
        self.inverse_mass = self.system.inverse_mass  # (n, 1), 0 on pinned particles

    def acceleration(self, t: float, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        a = self.system.unconstrained_acceleration(x, v, t)
        if self.i.size == 0:
            return a
        d = x[self.j] - x[self.i]           # (k, dim): the rows of G, per joint
        w = v[self.j] - v[self.i]
        inv_i, inv_j = self.inverse_mass[self.i, 0], self.inverse_mass[self.j, 0]
        # G M⁻¹ Gᵀ: joints k, l sharing a particle p couple by ±dₖ·d_l / m_p
        same_j = (self.j[:, None] == self.j[None, :]) * inv_j[:, None]
        same_i = (self.i[:, None] == self.i[None, :]) * inv_i[:, None]
        j_is_i = (self.j[:, None] == self.i[None, :]) * inv_j[:, None]
        i_is_j = (self.i[:, None] == self.j[None, :]) * inv_i[:, None]
        normal = (same_j + same_i - j_is_i - i_is_j) * (d @ d.T)
        rhs = np.einsum("ka,ka->k", d, a[self.j] - a[self.i]) + np.einsum("ka,ka->k", w, w)
        multiplier = np.linalg.solve(normal, rhs)
        force = np.zeros_like(a)            # Gᵀ λ
        np.add.at(force, self.j, multiplier[:, None] * d)
        np.add.at(force, self.i, -multiplier[:, None] * d)
        return a - self.inverse_mass * force

    def __call__(self, t: float, y: np.ndarray) -> np.ndarray:
        half = y.size // 2
        x, v = y[:half].reshape(self.shape), y[half:].reshape(self.shape)
        return np.concatenate([y[half:], self.acceleration(t, x, v).reshape(-1)])


def dae_solution(scene, t: np.ndarray, rtol: float) -> tuple[np.ndarray, np.ndarray]:
    """DOP853 positions and velocities (len(t), n, d) of ``scene`` at times ``t`` (ascending,
    from the start)."""
    rhs = JointDAE(scene.model)
    y0 = np.concatenate([scene.state.x.reshape(-1), scene.state.v.reshape(-1)])
    solution = solve_ivp(rhs, (float(t[0]), float(t[-1])), y0, method="DOP853", t_eval=t,
                         rtol=rtol, atol=rtol)
    if not solution.success:
        raise SimulationError(f"reference (DOP853, rtol {rtol:g}) failed on scene "
                              f"'{scene.name}': {solution.message}")
    x, v = np.split(solution.y.T, 2, axis=1)
    return x.reshape((len(t),) + rhs.shape), v.reshape((len(t),) + rhs.shape)


def dae_reference(scene, t: np.ndarray, rtol: float = 3e-14) -> Reference:
    """The scene's positions at ``t`` by DOP853 at ``rtol``, with the error estimate of the
    module docstring."""
    x, v = dae_solution(scene, t, rtol)
    error = float(np.max(np.abs(dae_solution(scene, t, LOOSER * rtol)[0] - x))) / LOOSER
    return Reference(x, v, "DOP853 index-1 DAE" if scene.model.n_joints else "DOP853 ODE", error)


def analytic_reference(scene, t: np.ndarray) -> Reference:
    return Reference(scene.analytic(t), None, "analytic", 0.0)
