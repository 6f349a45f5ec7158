"""The implicit matrix of a model with springs and contact whose pairs change (self-contact,
obstacle meshes): one block pattern that grows with the contact pairs, so that the sparse
solver's analysis is reused while the pairs stay within it.

    A = m·M + w·(∇²U_springs + Σ particle blocks + Σ contact pairs) + c·D   on the free DOFs.

Contract: :meth:`ContactMatrix.matrix` takes the terms of one evaluation split into the
particle-block terms (one d×d block per particle: planes, spheres and their friction,
``PARTICLE_BLOCKS``) and the varying ones (``hessian_triplets``: pairs of
:mod:`hooke.energies.surface_barrier`, obstacles, friction between surfaces) and returns the CSR
matrix the generic assembly (``System.generic_combined_matrix``) gives, to round-off, with explicit
zeros where a block of the pattern is not in use. The springs' and damping blocks are written in
place by :func:`hooke.kernels.spring_matrix_data`, the others are added at their slots
(:meth:`hooke.linalg.BlockPattern.slots`).

Why: the generic assembly sums every term's triplets by one bincount and gives a new pattern
whenever a pair appears or leaves, and every new pattern costs the direct solver a new analysis.
On cloth_sphere n = 80 draped over the ball (process time per step on the loaded 2-core machine,
23 Newton iterations): assembly 1.54 s → 1.20 s, PARDISO analyses 14.5 → 4.5 per step and
0.54 s → 0.17 s. Here the pattern is the springs' blocks plus the particle pairs met so far; a
pair outside it grows it (one new analysis), a pair that leaves keeps its block (zeros). So that
the pattern does not fill up over a long run, a growth that would hold more than
``STALE_FACTOR`` times the pairs in use starts again from those.
"""

from __future__ import annotations

import numpy as np

from .energies import barrier
from .kernels import spring_matrix_data
from .linalg import BlockPattern

STALE_FACTOR = 2.0
MISSING = -2  # BlockPattern.slots: the pattern has no block for the pair


class ContactMatrix:
    """A growing :class:`BlockPattern` over the springs and the contact pairs of ``model``."""

    def __init__(self, model):
        self.model = model
        self.growths = 0  # how often the pattern grew (each one a new analysis for the solver)
        self._build(np.empty((0, 2), dtype=np.int64))

    def _build(self, extra: np.ndarray) -> None:
        model = self.model
        self._extra = extra
        self.pattern = BlockPattern(np.concatenate([model.spring_indices, extra]), model.pinned,
                                    model.dim)
        self._particle_slots = self.pattern.slots(*barrier.hessian_structure(model))

    def _pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The distinct particle pairs (i < j) of off-diagonal entries."""
        d = self.model.dim
        i, j = rows // d, cols // d
        off = i != j
        pairs = np.stack([np.minimum(i, j)[off], np.maximum(i, j)[off]], axis=1)
        return np.unique(pairs, axis=0) if pairs.size else pairs.reshape(0, 2)

    def _slots(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Slots of the varying entries, the pattern grown first if some pair is missing."""
        slots = self.pattern.slots(rows, cols)
        missing = slots == MISSING
        if missing.any():
            in_use = self._pairs(rows, cols)
            grown = np.unique(np.concatenate([self._extra, in_use]), axis=0)
            self._build(grown if len(grown) <= STALE_FACTOR * max(len(in_use), 1) else in_use)
            self.growths += 1
            slots = self.pattern.slots(rows, cols)
        return slots

    def matrix(self, x: np.ndarray, mass_weight: float, hessian_weight: float,
               damping_weight: float, project_psd: bool, particle_terms, varying_terms):
        """The CSR matrix A at x (see the module's docstring)."""
        model = self.model
        triplets = [term.hessian_triplets(model, x, project_psd) for term in varying_terms]
        rows = np.concatenate([np.empty(0, dtype=np.int64)] + [r for r, _, _ in triplets])
        cols = np.concatenate([np.empty(0, dtype=np.int64)] + [c for _, c, _ in triplets])
        values = np.concatenate([np.empty(0)] + [v for _, _, v in triplets])
        slots = self._slots(rows.astype(np.int64), cols.astype(np.int64))
        data = spring_matrix_data(model, self.pattern, x, mass_weight, hessian_weight,
                                  damping_weight, project_psd)
        if particle_terms:
            blocks = sum(term.hessian_values(model, x, project_psd) for term in particle_terms)
            keep = self._particle_slots >= 0
            data[self._particle_slots[keep]] += hessian_weight * blocks[keep]
        keep = slots >= 0
        if keep.any():
            data += hessian_weight * np.bincount(slots[keep], weights=values[keep],
                                                 minlength=data.size)
        return self.pattern.matrix(data)
