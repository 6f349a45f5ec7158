"""An observed motion drawn beside the simulated one in the viewer (``hooke serve --observed``).

Contract: :class:`ObservedOverlay` ``(scene, path)`` ties an observed-motion file (a trajectory
store or a CSV, as :func:`hooke.io.observed.read_observed` reads them for ``hooke fit``) to one
built-in scene. :meth:`ObservedOverlay.check` reads it against that scene's defaults and raises
one :class:`~hooke.errors.HookeInputError` naming ``observed`` when it cannot be shown there (the
server calls it before it serves). :meth:`ObservedOverlay.motion_for` gives, for the scene a page
is running, the :class:`ObservedMotion` to draw, or a one-line reason why there is none (another
scene; parameters that changed its particle count). :meth:`ObservedMotion.at` gives the observed
positions at a time: linear between the two observed times around it, only for the particles
observed at both; none before the first or after the last observed time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import HookeInputError
from ...fitting.problem import as_observation
from ...io.observed import read_observed

# Relative slack on the observed time span: a session's time is a sum of steps, which may pass
# the last observed time by round-off.
TIME_SLACK = 1e-9


@dataclass(frozen=True)
class ObservedMotion:
    """Observed positions t (k,) [s], x (k, n, d) [m] (NaN rows: not observed then)."""

    name: str
    t: np.ndarray
    x: np.ndarray

    def at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(particle indices (m,), their observed positions (m, d)) at time ``t``."""
        times, dim = self.t, self.x.shape[2]
        slack = TIME_SLACK * max(1.0, abs(float(times[-1])))
        if not times[0] - slack <= t <= times[-1] + slack:
            return np.empty(0, dtype=int), np.empty((0, dim))
        if len(times) == 1:
            positions = self.x[0]
        else:  # the times increase strictly (as_observation)
            after = int(np.clip(np.searchsorted(times, t, side="right"), 1, len(times) - 1))
            before = after - 1
            weight = float(np.clip((t - times[before]) / (times[after] - times[before]), 0, 1))
            # at an observed time, that row alone: a particle seen then but not at the next time
            # is still drawn
            positions = self.x[before] if weight == 0.0 else self.x[after] if weight == 1.0 else \
                (1.0 - weight) * self.x[before] + weight * self.x[after]
        seen = np.flatnonzero(np.all(np.isfinite(positions), axis=1))
        return seen, positions[seen]

    def message(self, t: float, simulated: np.ndarray) -> dict[str, Any]:
        """The frame message's ``observed`` entry: particles, their positions, and the rms
        distance [m] from the simulated positions of those particles (None when none is seen)."""
        particles, positions = self.at(t)
        misfit = None
        if len(particles):
            misfit = float(np.sqrt(np.mean(np.sum((simulated[particles] - positions) ** 2, axis=1))))
        return {"particles": particles.tolist(), "x": positions.tolist(), "rms": misfit}


@dataclass(frozen=True)
class ObservedOverlay:
    """An observed-motion file shown while a page runs the built-in scene ``scene``."""

    scene: str
    path: Path

    def check(self) -> None:
        """Read the file against the scene's defaults: a HookeInputError if it does not fit."""
        from ...io.scene_file import builtin_scene

        self._read(builtin_scene(self.scene).model)

    def motion_for(self, scene) -> ObservedMotion | str:
        """What to draw beside ``scene`` (a built scene), or why nothing is drawn."""
        if scene.name != self.scene:
            return f"the observed motion in {self.path.name} belongs to scene '{self.scene}'"
        try:
            return self._read(scene.model)
        except HookeInputError as error:
            return f"the observed motion is not shown: {error}"

    def _read(self, model) -> ObservedMotion:
        observation = read_observed(self.path, model.n_particles, model.dim)
        if observation.t is None or len(observation.t) == 0:
            raise HookeInputError("observed", "has no observation times", str(self.path))
        checked = as_observation(observation, None, model)
        return ObservedMotion(self.path.name, checked.t, checked.x)
