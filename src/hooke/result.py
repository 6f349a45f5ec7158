"""Result of a run: saved frames of time, positions, velocities and energies.

Contract: ``t`` (frames,), ``x`` and ``v`` (frames, n, d), ``energy`` a dict of (frames,) arrays
with keys ``kinetic``, ``potential``, ``total`` and one per potential term; ``joint_force``
(frames, joints) the exact tension of every joint at every saved frame [N], positive when the
joint pulls its ends together (compressed joints push: negative; see :mod:`hooke.constraints`),
(frames, 0) for a model without joints; ``contact_distance`` (frames,) the smallest signed
distance of any contact particle to any contact plane or sphere, or of the model to an obstacle
mesh within d̂ [m] (+inf without contact; :func:`hooke.energies.contact.min_distance`);
``contact_force`` (frames, n, d) the barriers' force on each particle summed over the planes,
spheres and obstacles [N] (:func:`hooke.energies.contact.contact_forces`), (frames, 0, d)
without them;
``surface_distance`` (frames,) the smallest distance between two surface elements that share no
particle, among those closer than d̂ [m] (+inf when none is, and without self-contact;
:func:`hooke.energies.surface_barrier.min_distance`); ``stats`` counts
steps (and rejected steps or Newton iterations where they apply); ``wall_time`` in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .model import State


def finite_or_none(value: float) -> float | None:
    """``value`` as a float, or None (JSON null) where it is not finite: JSON has no inf or NaN,
    and a blown-up run's energy overflows."""
    value = float(value)
    return value if np.isfinite(value) else None


def frame_extras(extras: dict[str, np.ndarray], frames: int, dim: int) -> dict[str, np.ndarray]:
    """The per-frame extras of a Result, with the values of a model without joints or contact
    planes filled in where ``extras`` has none."""
    return {"joint_force": extras.get("joint_force", np.empty((frames, 0))),
            "contact_distance": extras.get("contact_distance", np.full(frames, np.inf)),
            "contact_force": extras.get("contact_force", np.empty((frames, 0, dim))),
            "surface_distance": extras.get("surface_distance", np.full(frames, np.inf))}


@dataclass(frozen=True)
class EnergyChange:
    """The change of the total energy over a run [J], and relative to a scale that it names.

    The scale is |E0|, the initial total energy, while the total energy keeps E0's sign over the
    saved frames. Where E0 is zero or the energy changes sign, a percentage of E0 is meaningless:
    the zero of the energy is where the potential energy is zero, a choice of reference (the
    square of ``square_drop`` starts at E0 = 0 and falls below it). Then the scale is the largest
    kinetic energy of the run, which no reference changes. ``scale`` and ``relative_to`` are None
    when that is zero too (nothing moved), when the change divided by it overflows (an E0 of
    5e-324 J, a subnormal) or an energy is not finite (a blown-up run).
    """

    initial: float | None
    final: float | None
    scale: float | None = None
    relative_to: str | None = None  # "initial energy" or "largest kinetic energy"

    @classmethod
    def of(cls, total: np.ndarray, kinetic: np.ndarray) -> EnergyChange:
        initial, final = finite_or_none(total[0]), finite_or_none(total[-1])
        if not (np.all(np.isfinite(total)) and np.all(np.isfinite(kinetic))):
            return cls(initial, final)
        change = cls(initial, final).change
        if change is None:
            return cls(initial, final)
        if (initial != 0 and np.all(np.sign(total) == np.sign(initial))
                and np.isfinite(change / abs(initial))):
            return cls(initial, final, abs(initial), "initial energy")
        largest_kinetic = float(np.max(kinetic))
        if largest_kinetic > 0 and np.isfinite(change / largest_kinetic):
            return cls(initial, final, largest_kinetic, "largest kinetic energy")
        return cls(initial, final)

    @property
    def change(self) -> float | None:
        """E(end) − E(0) [J]; None when either is not finite or their difference overflows."""
        if self.initial is None or self.final is None:
            return None
        return finite_or_none(self.final - self.initial)

    @property
    def relative(self) -> float | None:
        """The change divided by ``scale``; None without a scale."""
        return None if self.scale is None else self.change / self.scale


@dataclass
class Result:
    """A run's saved frames, energies and settings (fields: see the module docstring)."""

    t: np.ndarray
    x: np.ndarray
    v: np.ndarray
    energy: dict[str, np.ndarray]
    scene: Any
    integrator: str
    dt: float
    options: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)
    wall_time: float = 0.0
    complete: bool = True
    # (frames, joints) tensions [N], > 0 when a joint pulls its ends together
    joint_force: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))
    # (frames,) smallest particle–plane signed distance [m], +inf without contact planes
    contact_distance: np.ndarray = field(default_factory=lambda: np.empty(0))
    # (frames, n, d) barrier force on each particle [N], (frames, 0, d) without contact planes
    contact_force: np.ndarray = field(default_factory=lambda: np.empty((0, 0, 0)))
    # (frames,) smallest distance between surface elements closer than d̂ [m], +inf where none is
    surface_distance: np.ndarray = field(default_factory=lambda: np.empty(0))

    @property
    def n_frames(self) -> int:
        return int(self.t.shape[0])

    @property
    def has_analytic(self) -> bool:
        """Whether the scene has an analytic solution of this run (one from its model's x0, v0)."""
        return (self.scene.analytic_solution is not None and self.n_frames > 0
                and self.scene.starts_the_analytic(self.start))

    @property
    def start(self) -> State:
        """The run's first frame as a State."""
        return State(float(self.t[0]), self.x[0], self.v[0])

    def analytic(self) -> np.ndarray:
        """The scene's analytic positions at the saved times, of the run from the first frame."""
        return self.scene.analytic(self.t, start=self.start)

    def energy_change(self) -> EnergyChange:
        """The change of total energy from the first to the last frame, in joules and relative
        to a named scale (:class:`EnergyChange`)."""
        return EnergyChange.of(self.energy["total"], self.energy["kinetic"])

    def energy_drift(self) -> float:
        """Change of total energy from the first to the last frame, relative to the energy scale
        of the run: max(|E_total(0)|, max kinetic energy) (so a system starting at E = 0 works)."""
        total = self.energy["total"]
        scale = max(abs(total[0]), float(np.max(self.energy["kinetic"])), np.finfo(float).tiny)
        return float((total[-1] - total[0]) / scale)
