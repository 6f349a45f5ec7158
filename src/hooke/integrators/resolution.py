"""Whether an implicit step can see the masses at all.

Contract: :func:`check_mass_resolution` raises :class:`HookeInputError` naming the first free
particle whose mass is lost to round-off in the step's matrix M + h²K, with its mass, the bound
and the dt that would resolve it (or, where the contact barrier's A·κ/d̂ or the particle's Σk
is past the largest float and no dt could, the contact settings or the springs); it returns
None otherwise and changes nothing.

Why: the implicit steps (``implicit_euler_linear``, ``implicit_euler``, ``fast_mass_spring``,
``newmark``, ``generalized_alpha``) solve with M + c·h²·K. A diagonal entry of K is a sum of
the stiffnesses k of the particle's springs, computed to an absolute error of about ε·Σk (the
geometric part k·(1 − l₀/l) has that error near rest length), so a mass m below ε·h²·Σk adds
nothing the matrix keeps: in the directions where K is soft (a flat cloth moving out of its
plane) the step then solves with round-off for a mass and the body silently stops falling
(a cloth of 1e-202 kg per particle at dt = 2e-4 dropped 4e-9 m instead of 5e-4 m in 0.01 s).
``MASS_DIGITS``: the mass must carry about three significant digits of the diagonal entry.

What counts besides springs:
- the contact barrier of planes and spheres (``implicit_euler``, the one integrator with
  contact), for every particle that can touch (contact area A > 0): its b''(d) = A·κ·(d + d̂)/(2d²)
  is at least A·κ/d̂ while active (at d = d̂) and grows nearer the body, along a normal whose
  round-off leaks ε of it into the tangent (a 1e-13 kg bead resting on an incline jumped 2 cm off
  it; lighter ones failed Newton). The barrier of obstacles and self-contact (IPC's, C² at d̂)
  has no stiffness at d̂ and none it must reach: what it has at rest is set by the load, so no
  bound is known before the run and it is not counted.
- joints do not count: every integrator here that takes them (``implicit_euler``, ``newmark``,
  ``generalized_alpha``) holds them as exact constraints with multipliers (a KKT or saddle-point
  matrix), adding no stiffness of their own to M + h²K; the one joint term in that block, the
  curvature h²·T/L·(I − n nᵀ), scales with the tension T, set during the run by the masses and
  loads the joint carries (it is their pendulum stiffness), so it is not known up front either.
  Explicit integrators with joints (their stabilisation k_c, β_c) solve no matrix.
"""

from __future__ import annotations

import numpy as np

from ..errors import HookeInputError

MASS_DIGITS = 1e3  # the mass must exceed the noise ε·h²·Σk of its diagonal entry this many times
EPS = float(np.finfo(float).eps)


def spring_stiffness_sums(model) -> np.ndarray:
    """(n,) Σ k [N/m] over the springs at each particle."""
    ends = np.asarray(model.spring_indices, dtype=np.int64).reshape(-1)
    weights = np.repeat(np.asarray(model.spring_stiffness, dtype=float), 2)
    return np.bincount(ends, weights=weights, minlength=model.n_particles)


def barrier_stiffness(model) -> np.ndarray:
    """(n,) A·κ/d̂ [N/m]: the least stiffness the barrier of planes and spheres has on each
    particle while active (module docstring); zeros without them."""
    if not (model.n_planes or model.n_spheres) or not model.contact_area.size:
        return np.zeros(model.n_particles)
    with np.errstate(over="ignore"):  # inf: refused by check_mass_resolution, naming the settings
        return model.contact_area * model.contact_kappa / model.contact_dhat


def check_mass_resolution(model, dt: float, integrator: str) -> None:
    """Refuse a free particle whose mass an implicit step of ``dt`` cannot resolve (module
    docstring): m < MASS_DIGITS·ε·dt²·Σk, Σk over its springs and its contact barrier."""
    barrier = barrier_stiffness(model)
    if not model.n_springs and not barrier.any():
        return
    stiffness = spring_stiffness_sums(model) + barrier
    with np.errstate(over="ignore"):
        bound = MASS_DIGITS * EPS * dt * dt * stiffness
    short = np.flatnonzero(~model.pinned & (model.mass < bound))
    if not short.size:
        return
    with np.errstate(invalid="ignore"):  # inf / m: inf, the first of them
        i = int(short[np.argmax(bound[short] / model.mass[short])])
    if np.isinf(barrier[i]):  # no dt or mass could resolve it (d̂ = 1e-320): the settings' fault
        area = float(model.contact_area[i])
        raise HookeInputError("contact", f"the barrier's least stiffness A·κ/d̂ on particle {i} is "
                              "past the largest float: give a larger dhat, or a smaller kappa or "
                              "area", {"dhat": float(model.contact_dhat),
                                       "kappa": float(model.contact_kappa), "area": area})
    if np.isinf(stiffness[i]):  # two springs of 1e308 N/m: no dt or mass could either
        ends = np.asarray(model.spring_indices).reshape(-1, 2)
        at = np.flatnonzero(np.any(ends == i, axis=1))
        raise HookeInputError("springs", f"the stiffnesses of the springs at particle {i} sum past "
                              "the largest float (Σk = inf N/m): give smaller stiffnesses",
                              [float(k) for k in np.asarray(model.spring_stiffness)[at]])
    with np.errstate(over="ignore", divide="ignore"):
        dt_max = float(np.sqrt(model.mass[i] / (MASS_DIGITS * EPS * stiffness[i])))
    if barrier[i]:  # no other integrator has contact
        over, others = f"over its springs and the contact barrier's A·κ/d̂ = {barrier[i]:.3g} N/m", ""
    else:
        over, others = "over its springs", ", or xpbd or an explicit integrator"
    raise HookeInputError(
        f"particles[{i}].mass",
        f"is lost to round-off in {integrator}'s step matrix M + dt²·K: it must be at least "
        f"{MASS_DIGITS:g}·ε·dt²·Σk = {bound[i]:.3g} kg at dt = {dt:g} s (Σk = {stiffness[i]:.3g} "
        f"N/m {over}); take dt <= {dt_max:.3g} s{' or' if barrier[i] else ','} larger "
        f"masses{others}", float(model.mass[i]))
