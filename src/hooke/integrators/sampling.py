"""Whether a fixed-step run samples its prescribed motions at all.

Contract: :func:`check_motion_sampling` raises :class:`HookeInputError` (one line per motion,
:class:`HookeInputErrors` for several) for every sinusoid of the model — a pinned particle's, a
plane's, a sphere's, an obstacle's or the air's (``particles[3].motion.omega``) — that the
integrator's steps sample fewer than 2 times per period, |ω|·h > π, naming ``dt``, the
integrator's step h (dt, or dt/substeps for xpbd) and the largest dt that resolves it; it
returns None otherwise and changes nothing. An integrator that takes no fixed steps (rk45's
adaptive steps, chosen by its error control, evaluate the motion wherever they need it: its
``dt`` only sets the frames) passes ``samples_per_dt = None`` and is not checked.

Why: a step sees a prescribed motion only at the times it evaluates it. Below 2 samples per
period (Nyquist) those values alias to a slower motion, or to none (ω·h = 2π: the same value at
every step), and the run's result has nothing to do with the motion given, with no sign of it:
a pin shaken at ω = 1000 rad/s (amplitude 0.1 m) with a spring of 1 m to a free particle, at
dt = 0.01 s, left that particle at x = −0.97 m after 2 s with rk4 (the other side of the pin)
and near 1 m with every other integrator, each with a motion of its own. Motions whose period
is not known (``FunctionMotion``: any function of t) cannot be checked; ``ConstantVelocity`` has
none.
"""

from __future__ import annotations

import math

from ..errors import HookeInputError, raise_all
from ..motion import CheckedMotion, Sinusoid


def model_motions(model) -> list:
    """Every prescribed motion of ``model``: its pinned particles', planes', spheres',
    obstacles' and the air's."""
    motions = [motion for group in (model.pinned_motions, model.plane_motions,
                                    model.sphere_motions, model.obstacle_motions)
               for _, motion in group]
    return motions + ([model.wind_motion] if model.wind_motion is not None else [])


def sinusoids(model) -> list[tuple[str, Sinusoid]]:
    """(field of its ω, the Sinusoid) for each sinusoidal motion of ``model``."""
    found = []
    for motion in model_motions(model):
        field, inner = ((motion.field, motion.motion) if isinstance(motion, CheckedMotion)
                        else ("motion", motion))
        if isinstance(inner, Sinusoid):
            found.append((f"{field}.omega", inner))
    return found


def check_motion_sampling(model, dt: float, integrator: str, samples_per_dt: int | None) -> None:
    """Refuse each sinusoid that steps of dt / ``samples_per_dt`` sample fewer than twice per
    period (module docstring); ``samples_per_dt`` None: adaptive steps, nothing to check."""
    if samples_per_dt is None:
        return
    step = dt / samples_per_dt
    problems = []
    for field, motion in sinusoids(model):
        omega = abs(motion.omega)
        if omega == 0 or step <= math.pi / omega:
            continue
        steps = (f"fixed steps of dt = {dt:g} s" if samples_per_dt == 1 else
                 f"substeps of dt/substeps = {dt:g} s/{samples_per_dt} = {step:.3g} s")
        limit = ("dt <= π/|omega|" if samples_per_dt == 1 else
                 f"dt <= substeps·π/|omega| = {samples_per_dt}·π/|omega|")
        problems.append(HookeInputError(
            field, f"sampled fewer than 2 times per period (2π/|omega| = "
            f"{2 * math.pi / omega:.3g} s) by {integrator}'s {steps}, so its values alias to "
            f"another motion: take {limit} = {samples_per_dt * math.pi / omega:.3g} s (or rk45, "
            "whose adaptive steps follow the motion)", motion.omega))
    raise_all(problems)
