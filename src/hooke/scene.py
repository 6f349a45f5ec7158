"""Scene: a Model, its initial State and default run settings.

Contract: a Scene is validated when made (known integrator, dt > 0, t_end > 0, state shapes match
the model, every value finite, no contact particle on or below a plane where the planes are at the
state's time). ``hooke.simulate`` reads it and never changes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .builder import check_clear_of_planes
from .energies.barrier import plane_displacements
from .errors import HookeInputError
from .integrators import get as get_integrator
from .model import Model, State


def check_positive(name: str, value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise HookeInputError(name, "must be a number", value) from None
    if not np.isfinite(number) or number <= 0:
        raise HookeInputError(name, "must be a finite number > 0", value)
    return number


@dataclass
class Scene:
    """What to simulate and how, by default.

    Attributes:
        model: the mass-spring system.
        integrator: default integrator name (see ``hooke.integrators()``).
        dt: default time step [s] (for adaptive integrators: the output interval).
        t_end: default duration [s].
        state: initial state; ``model.initial_state()`` when not given.
        options: default integrator options.
        save_every: default number of steps between saved frames.
        name, description: labels.
        parameters: the values the scene was built from (for builder scenes).
        analytic_solution: optional t (frames,) -> x (frames, n, d).
        source: the scene file's text, when it came from one.
    """

    model: Model
    integrator: str = "symplectic_euler"
    dt: float = 1e-3
    t_end: float = 1.0
    state: State | None = None
    options: dict[str, Any] = field(default_factory=dict)
    save_every: int = 1
    name: str = "custom"
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    analytic_solution: Callable[[np.ndarray], np.ndarray] | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, Model):
            raise HookeInputError("model", "must be a hooke Model (ModelBuilder.finalize())",
                                  type(self.model).__name__)
        get_integrator(self.integrator)
        self.dt = check_positive("dt", self.dt)
        self.t_end = check_positive("t_end", self.t_end)
        if self.state is None:
            self.state = self.model.initial_state()
        shape = (self.model.n_particles, self.model.dim)
        for label, array in (("state.x", self.state.x), ("state.v", self.state.v)):
            if np.shape(array) != shape:
                raise HookeInputError(label, f"must have shape {shape}", np.shape(array))
            if not np.all(np.isfinite(array)):
                bad = int(np.argwhere(~np.isfinite(np.asarray(array)))[0][0])
                raise HookeInputError(f"{label}[{bad}]", "must be finite", np.asarray(array)[bad])
        if self.model.n_planes:
            points = self.model.plane_points + plane_displacements(self.model, self.state.t)
            check_clear_of_planes(self.model.plane_normals, points, self.model.contact_area,
                                  np.asarray(self.state.x), field="state.x")
        if isinstance(self.save_every, bool) or int(self.save_every) != self.save_every or self.save_every < 1:
            raise HookeInputError("save_every", "must be an integer >= 1", self.save_every)

    @property
    def has_analytic(self) -> bool:
        return self.analytic_solution is not None

    def analytic(self, t) -> np.ndarray:
        """Analytic positions at times t: shape (len(t), n, d) (or (n, d) for a scalar t)."""
        if self.analytic_solution is None:
            raise HookeInputError("analytic", f"scene '{self.name}' has no analytic solution", self.name)
        times = np.asarray(t, dtype=float)
        x = self.analytic_solution(np.atleast_1d(times))
        return x[0] if times.ndim == 0 else x
