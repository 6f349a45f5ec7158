"""Model (static description of a mass-spring system) and State (what changes in time).

Contract: a :class:`Model` is immutable once built (its arrays are read-only) and holds every
static quantity as a struct of arrays; a :class:`State` holds the time, positions and velocities.
Integrators read a Model and map one State to the next; nothing writes back into the Model.
Build models with :class:`hooke.ModelBuilder`, which validates before freezing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

SPRING_ENERGIES = ("hookean", "squared_length")


@dataclass(frozen=True, eq=False)
class Model:
    """A mass-spring system.

    Attributes (n particles, s springs, d = dim):
        dim: spatial dimension, 1, 2 or 3.
        mass: (n,) particle masses [kg], all > 0.
        pinned: (n,) bool, True for particles held fixed (their DOFs are eliminated).
        gravity: (d,) gravitational acceleration [m/s²].
        spring_indices: (s, 2) int64 particle indices of each spring's endpoints.
        spring_rest_length: (s,) rest lengths l0 [m], ≥ 0 (0 only for the Hookean form).
        spring_stiffness: (s,) stiffness k [N/m], ≥ 0.
        spring_damping: (s,) damping c [N·s/m] along the spring direction, ≥ 0.
        spring_energy: "hookean" for ½k(|d| − l0)², "squared_length" for ½k·l0²·(|d|²/l0² − 1)².
        x0: (n, d) initial positions [m]; pinned particles stay here.
        v0: (n, d) initial velocities [m/s]; zero for pinned particles.
        particle_names: optional names, "" where none was given.
        pinned_motions: (particle index, motion) pairs for pinned particles that follow a
            prescribed motion x0 + u(t) (see :mod:`hooke.motion`); other pinned particles stay.
    """

    dim: int
    mass: np.ndarray
    pinned: np.ndarray
    gravity: np.ndarray
    spring_indices: np.ndarray
    spring_rest_length: np.ndarray
    spring_stiffness: np.ndarray
    spring_damping: np.ndarray
    x0: np.ndarray
    v0: np.ndarray
    spring_energy: str = "hookean"
    particle_names: tuple[str, ...] = field(default=())
    pinned_motions: tuple[tuple[int, object], ...] = field(default=())

    def __post_init__(self) -> None:
        for name in ("mass", "pinned", "gravity", "spring_indices", "spring_rest_length",
                     "spring_stiffness", "spring_damping", "x0", "v0"):
            getattr(self, name).setflags(write=False)

    @property
    def n_particles(self) -> int:
        return int(self.mass.shape[0])

    @property
    def n_springs(self) -> int:
        return int(self.spring_indices.shape[0])

    @property
    def n_dofs(self) -> int:
        return self.n_particles * self.dim

    @property
    def free(self) -> np.ndarray:
        """(n,) bool, True for particles that move."""
        return ~self.pinned

    @property
    def free_dofs(self) -> np.ndarray:
        """Indices into the flattened (n·d,) coordinate vector of the DOFs that move."""
        return np.flatnonzero(np.repeat(self.free, self.dim))

    def initial_state(self, t: float = 0.0) -> "State":
        return State(float(t), self.x0.copy(), self.v0.copy())

    @property
    def pinned_index(self) -> np.ndarray:
        return np.flatnonzero(self.pinned)

    @property
    def has_damping(self) -> bool:
        return bool(np.any(self.spring_damping > 0))


@dataclass(frozen=True, eq=False)
class State:
    """Time t [s], positions x (n, d) [m] and velocities v (n, d) [m/s]."""

    t: float
    x: np.ndarray
    v: np.ndarray

    def copy(self) -> "State":
        return State(self.t, self.x.copy(), self.v.copy())

    def replace(self, **changes) -> "State":
        return replace(self, **changes)
