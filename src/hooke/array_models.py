"""Models straight from arrays: :func:`model_from_arrays` validates whole arrays at once (no
per-item Python loop), the path for generated bodies of millions of springs, where
:meth:`hooke.builder.ModelBuilder.add_spring` would take minutes; :func:`renumbered` gives the
same system of springs with its particles renumbered (to measure and test the kernels'
locality renumbering).

Contract: each returns a validated, immutable :class:`hooke.model.Model` of springs only (no
joints; contact added with :func:`hooke.builder.add_contact`), or raises
:class:`hooke.errors.HookeInputError` naming the argument.
"""

from __future__ import annotations

import numpy as np

from .builder import ModelBuilder
from .checks import _numbers, _strict_array
from .errors import HookeInputError, is_count
from .mesh_topology import mesh_cells
from .model import Model


def renumbered(model: Model, rank: np.ndarray, spring_order: np.ndarray | None = None) -> Model:
    """The same system of springs with particle p renumbered ``rank[p]`` and its springs taken in
    ``spring_order`` (default: as they are): what an unordered mesh or a script could hand over
    (used to measure and test the kernels' locality renumbering). Springs only, as
    :func:`model_from_arrays`."""
    rank = np.asarray(rank, dtype=np.int64)
    order = np.arange(model.n_springs) if spring_order is None else np.asarray(spring_order)

    def moved(values):
        out = np.empty_like(values)
        out[rank] = values
        return out

    return model_from_arrays(model.dim, moved(model.x0), moved(model.mass),
                             rank[model.spring_indices[order]], model.spring_stiffness[order],
                             rest_length=model.spring_rest_length[order],
                             damping=model.spring_damping[order], pinned=moved(model.pinned),
                             gravity=model.gravity, spring_energy=model.spring_energy)


def model_from_arrays(dim: int, x0, mass, springs, stiffness, rest_length=None, damping=0.0,
                      pinned=None, gravity=None, spring_energy: str = "hookean",
                      cells: dict | None = None) -> Model:
    """A Model straight from arrays, validated with whole-array checks (no per-item Python loop):
    the path for generated bodies of millions of springs, where :meth:`ModelBuilder.add_spring`
    would take minutes. ``mass``, ``stiffness``, ``rest_length`` (None: the current lengths) and
    ``damping`` are one number or one per particle/spring; every spring must be distinct and join
    two distinct particles. No joints, no contact planes (add planes with :func:`add_contact`).
    ``cells`` (cell type → indices: triangle, quad, tetra) become ``Model.triangles`` and
    ``Model.tetrahedra`` (:func:`hooke.mesh_topology.mesh_cells`), for drawing and export."""
    b = ModelBuilder(dim=dim, gravity=gravity, spring_energy=spring_energy)
    positions = _numbers(x0)
    if positions is None or positions.ndim != 2 or positions.shape[1] != dim \
            or not np.all(np.isfinite(positions)):
        raise HookeInputError("x0", f"must be a finite (n, {dim}) array of numbers", np.shape(x0))
    x0 = np.ascontiguousarray(positions)
    n = x0.shape[0]
    indices = _strict_array(springs, "iu", is_count)
    if indices is None:
        raise HookeInputError("springs", "must be pairs of particle indices (integers)", "array")
    springs = np.ascontiguousarray(indices, dtype=np.int64).reshape(-1, 2)
    s = springs.shape[0]

    def per(values, count, field, **bounds):
        numbers = _numbers(values)
        if numbers is None:
            raise HookeInputError(field, "must be numbers", "array")
        array = np.broadcast_to(numbers, (count,)).copy()
        if not np.all(np.isfinite(array)) or (bounds.get("positive") and np.any(array <= 0)) \
                or np.any(array < 0):
            raise HookeInputError(field, "must be finite and " + ("> 0" if bounds.get("positive")
                                                                  else ">= 0"), "array")
        return array

    masses = per(mass, n, "mass", positive=True)
    if s and (springs.min() < 0 or springs.max() >= n):
        raise HookeInputError("springs", f"particle index out of range [0, {n})", "array")
    if np.any(springs[:, 0] == springs[:, 1]):
        raise HookeInputError("springs", "a spring connects a particle to itself",
                              int(np.flatnonzero(springs[:, 0] == springs[:, 1])[0]))
    keys = np.sort(springs, axis=1)
    keys = np.sort(keys[:, 0] * n + keys[:, 1])
    duplicates = int(np.count_nonzero(keys[1:] == keys[:-1]))
    if duplicates:
        raise HookeInputError("springs", "contains duplicate springs between the same particles",
                              f"{duplicates} duplicate(s)")
    with np.errstate(over="ignore", invalid="ignore"):
        lengths = np.linalg.norm(x0[springs[:, 1]] - x0[springs[:, 0]], axis=1)
    if not np.all(np.isfinite(lengths)):
        k = int(np.flatnonzero(~np.isfinite(lengths))[0])
        raise HookeInputError(f"springs[{k}]", "the distance between its particles is too large "
                              "(its square overflows to inf)", tuple(springs[k].tolist()))
    rest = lengths if rest_length is None else per(rest_length, s, "rest_length")
    if np.any(rest == 0) and (rest_length is None or spring_energy == "squared_length"):
        raise HookeInputError("rest_length", "zero-length spring (coincident endpoints or l0 = 0 "
                              "with the squared_length energy)", int(np.flatnonzero(rest == 0)[0]))
    pins = np.zeros(n, dtype=bool) if pinned is None else _strict_array(
        pinned, "b", lambda item: isinstance(item, (bool, np.bool_)))
    if pins is None or pins.shape != (n,):
        raise HookeInputError("pinned", f"must be a boolean array of {n} entries", np.shape(pinned))
    pins = pins.astype(bool)
    mesh = mesh_cells([cells or {}])
    if any(part.size and not 0 <= part.min() <= part.max() < n for part in mesh.values()):
        raise HookeInputError("cells", f"particle index out of range [0, {n})", "array")
    return Model(dim=dim, mass=masses, pinned=pins, gravity=b.gravity.copy(),
                 spring_indices=springs, spring_rest_length=rest,
                 spring_stiffness=per(stiffness, s, "stiffness"),
                 spring_damping=per(damping, s, "damping"), x0=x0, v0=np.zeros_like(x0),
                 spring_energy=spring_energy, particle_names=("",) * n,
                 **b._contact_fields(x0, pins), **mesh)
