"""Lagged, smoothed Coulomb friction against the contact planes and spheres (the phys-sim-book's
"square on slope" formulation), a dissipative term of the incremental potential of
``implicit_euler``.

Its value depends on the step start, so it is not a potential of x alone. Contract (a *step term*,
listed in ``hooke.energies.STEP_TERMS``): ``active(model)`` and ``prepare(model, start, h)`` which
returns a :class:`LaggedFriction` for the step start → start.t + h; that object has the potential-
term functions ``value/gradient/hessian_structure/hessian_values`` (taking ``(model, x)``) and is
added, like the potentials, with weight h² to the incremental potential. Nothing is lagged across
more than one step, and the term is never part of ``Result.energy`` (it dissipates).

For each particle i and plane or sphere k with friction μ_k, the step start fixes
- the normal force λ_ik = −b'(d_ik(xⁿ)) of the barrier at the bodies' positions at t
  (:mod:`hooke.energies.barrier`, :mod:`hooke.energies.sphere_barrier`); pairs with λ = 0 (not
  in contact) have no friction;
- the tangent projector T_k = I − n_k n_kᵀ (for a sphere n = (xⁿ_i − c_k)/|xⁿ_i − c_k|: its
  tangent plane at the step start), and the anchor aⁿ_ik = xⁿ_i + Δo_k, where Δo_k is the body's
  displacement over the step (friction acts on the motion relative to the plane or sphere).
With u = T_k (x_i − aⁿ_ik) (the tangential displacement, y = |u|) and ε = ε_v·h,

    D(x) = Σ μ_k λ_ik f0(y),  f0(y) = y for y ≥ ε,  y²(ε − y/3)/ε² + ε/3 below,

whose gradient μλ f1(y) u/y, f1(y) = min(1, 2y/ε − y²/ε²), is a sliding force of magnitude μλ
(velocities above ε_v) that turns viscous as the tangential velocity goes to zero (static
friction, up to creep of order ε_v). Its Hessian μλ [f1/y · T + (f1' y − f1)/y³ · u uᵀ] is
positive semi-definite in closed form (eigenvalues 2(ε − y)/ε², (2ε − y)/ε² below ε; 0, 1/y
above), so ``project_psd`` changes nothing. Loops are Numba-compiled over the contact pairs.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from .. import jit_cache  # noqa: F401  (a full disk under Numba's cache: no error)

from ..obstacles import sphere_centers
from . import barrier, sphere_barrier

NAME = "friction"


def active(model) -> bool:
    return bool(np.any(model.plane_friction > 0) or np.any(model.sphere_friction > 0))


@njit(cache=True)
def _tangential(x, node, normal, anchor, u):
    """u = T (x_node − anchor); returns |u|."""
    dim = x.shape[1]
    along = 0.0
    for a in range(dim):
        u[a] = x[node, a] - anchor[a]
        along += normal[a] * u[a]
    length2 = 0.0
    for a in range(dim):
        u[a] -= along * normal[a]
        length2 += u[a] * u[a]
    return math.sqrt(length2)


@njit(cache=True)
def _value(x, nodes, normals, weights, anchors, eps):
    total = 0.0
    u = np.empty(x.shape[1])
    for q in range(nodes.shape[0]):
        y = _tangential(x, nodes[q], normals[q], anchors[q], u)
        if y >= eps:
            f0 = y
        else:
            f0 = y * y * (eps - y / 3.0) / (eps * eps) + eps / 3.0
        total += weights[q] * f0
    return total


@njit(cache=True)
def _f1_over_y(y, eps):
    if y >= eps:
        return 1.0 / y
    return (2.0 * eps - y) / (eps * eps)


@njit(cache=True)
def _gradient(x, nodes, normals, weights, anchors, eps, out):
    u = np.empty(x.shape[1])
    for q in range(nodes.shape[0]):
        y = _tangential(x, nodes[q], normals[q], anchors[q], u)
        if y == 0.0:
            continue
        scale = weights[q] * _f1_over_y(y, eps)
        for a in range(x.shape[1]):
            out[nodes[q], a] += scale * u[a]


@njit(cache=True)
def _hessian_blocks(x, nodes, normals, weights, anchors, eps, out):
    out[:] = 0.0
    dim = x.shape[1]
    u = np.empty(dim)
    for q in range(nodes.shape[0]):
        i = nodes[q]
        y = _tangential(x, i, normals[q], anchors[q], u)
        isotropic = weights[q] * _f1_over_y(y, eps)
        # (f1' y − f1)/y³ · u uᵀ = c û ûᵀ with û = u/y: c = −1/y when sliding, −y/ε² below ε (0
        # at y = 0). By the unit û, not u uᵀ/(ε² y): with μλ of 1e152 (a particle starting
        # 1e-150 m above a plane) and y of 1e-160, 1/(ε² y) overflowed to inf and inf·u² to NaN.
        if y == 0.0:
            rank_one = 0.0
        elif y >= eps:
            rank_one = -weights[q] / y
        else:
            rank_one = -weights[q] * (y / (eps * eps))
        for a in range(dim):
            u[a] = u[a] / y if y > 0.0 else 0.0
        for a in range(dim):
            for b in range(dim):
                projector = (1.0 if a == b else 0.0) - normals[q, a] * normals[q, b]
                out[i, a, b] += isotropic * projector + rank_one * u[a] * u[b]


class LaggedFriction:
    """Friction for one step: the contact pairs, μλ, projectors and anchors fixed at its start.

    Attributes (c contact pairs): ``nodes`` (c,) particle indices, ``normals`` (c, d) plane
    normals, ``weights`` (c,) μ·λ [N], ``anchors`` (c, d) [m], ``eps`` = ε_v·h [m].
    """

    NAME = NAME
    PARTICLE_BLOCKS = True  # one d×d block per particle (hooke.contact_matrix)

    def __init__(self, nodes, normals, weights, anchors, eps: float):
        self.nodes = np.ascontiguousarray(nodes, dtype=np.int64)
        self.normals = np.ascontiguousarray(normals, dtype=float)
        self.weights = np.ascontiguousarray(weights, dtype=float)
        self.anchors = np.ascontiguousarray(anchors, dtype=float)
        self.eps = float(eps)

    def _args(self):
        return self.nodes, self.normals, self.weights, self.anchors, self.eps

    def value(self, model, x: np.ndarray) -> float:
        return float(_value(np.ascontiguousarray(x, dtype=float), *self._args()))

    def gradient(self, model, x: np.ndarray) -> np.ndarray:
        out = np.zeros((model.n_particles, model.dim))
        _gradient(np.ascontiguousarray(x, dtype=float), *self._args(), out)
        return out

    def hessian_structure(self, model):
        return hessian_structure(model)

    def hessian_values(self, model, x: np.ndarray, project_psd: bool = False) -> np.ndarray:
        out = np.empty((model.n_particles, model.dim, model.dim))
        _hessian_blocks(np.ascontiguousarray(x, dtype=float), *self._args(), out)
        return out.reshape(-1)


def hessian_structure(model):
    """One d×d block per particle, the same pattern as the barrier's."""
    return barrier.hessian_structure(model)


def _pairs(forces, friction, normals, moved, x):
    """(nodes, normals, μλ, anchors) of the particle–body pairs in contact with friction, from
    the normal forces (n, k), the bodies' μ (k,), the normals (n, k, d), the bodies'
    displacements over the step (k, d) and the step start's positions."""
    weights = forces * friction[None, :]
    nodes, bodies = np.nonzero(weights > 0)
    return nodes, normals[nodes, bodies], weights[nodes, bodies], x[nodes] + moved[bodies]


def prepare(model, start, h: float) -> LaggedFriction:
    """The friction term of the implicit step from ``start`` (a State) to start.t + h: the
    pairs of every particle with the planes and the spheres it touches."""
    t, x = start.t, start.x
    n, d = model.n_particles, model.dim
    moved = barrier.plane_displacements(model, t + h) - barrier.plane_displacements(model, t)
    plane_normals = np.broadcast_to(model.plane_normals.reshape(-1, d), (n, model.n_planes, d))
    pairs = [_pairs(barrier.at_time(model, t).normal_forces(model, x), model.plane_friction,
                    plane_normals, moved, x)]
    if model.n_spheres:
        shift = sphere_centers(model, t + h) - sphere_centers(model, t)
        pairs.append(_pairs(sphere_barrier.at_time(model, t).normal_forces(model, x),
                            model.sphere_friction, sphere_barrier.normals(model, x, t), shift, x))
    nodes, normals, weights, anchors = (np.concatenate(parts) for parts in zip(*pairs))
    return LaggedFriction(nodes, normals.reshape(-1, d), weights, anchors.reshape(-1, d),
                          model.contact_epsv * h)
