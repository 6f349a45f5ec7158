"""The checks of a :class:`hooke.Model` built directly (``hooke.Model(...)`` or
``dataclasses.replace(model, ...)``), not through :class:`hooke.ModelBuilder`, which checks
each value as it is added.

Contract: :func:`check_model` raises :class:`HookeInputError` naming the Model's field and the
value when an array is not of numbers, has another shape than the model's counts give it, or
holds a particle (or obstacle vertex, surface, obstacle) index out of range, and when a mass is
not finite and > 0 or a position, velocity, stiffness, rest length, damping or joint length is
not finite (stiffness and damping also >= 0, a joint's length > 0), a contact area or friction
not finite and >= 0, a drag, wind, plane point, sphere centre or obstacle vertex not finite,
a sphere radius not finite and > 0, a plane normal not of length 1, a spring energy not one of
``SPRING_ENERGIES``, or a contact setting (d̂, κ, ε_v) not finite and > 0 (d̂² too). The
compiled kernels index x by these arrays unchecked: a spring to particle 50 of 4 was "provided
out is the wrong size for the accumulation" from inside a step, float indices a Numba
TypingError, a spring stiffness array of the wrong length an IndexError, and a negative mass
ran.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import HookeInputError, is_number
SPRING_ENERGIES = ("hookean", "squared_length")  # Model.spring_energy's names
UNIT_LENGTH = 1e-12  # how far from 1 a stored unit normal's length may be (round-off: ~1e-16)


def _array(model, field: str, kinds: str) -> np.ndarray:
    value = getattr(model, field)
    if not isinstance(value, np.ndarray) or value.dtype.kind not in kinds:
        what = "integers" if kinds == "iu" else "booleans" if kinds == "b" else "numbers"
        raise HookeInputError(field, f"must be a NumPy array of {what}",
                              value if not isinstance(value, np.ndarray) else str(value.dtype))
    return value


def _shaped(model, field: str, shape: tuple, kinds: str = "iuf") -> np.ndarray:
    array = _array(model, field, kinds)
    if array.shape != shape:
        raise HookeInputError(field, f"must have shape {shape}", array.shape)
    return array


def _indices(model, field: str, width: int | None, count: int, what: str) -> None:
    """``field``: (rows, width) integer indices into ``count`` items (``width`` None: any)."""
    array = _array(model, field, "iu")
    if array.ndim != 2 or (width is not None and array.shape[1] != width):
        raise HookeInputError(field, f"must have shape (rows, {width or 'k'})", array.shape)
    if array.size and (array.min() < 0 or array.max() >= count):
        bad = array[np.any((array < 0) | (array >= count), axis=1)][0]
        raise HookeInputError(field, f"holds {what} index out of range [0, {count})",
                              bad.tolist())


def _values(array: np.ndarray, field: str, least: float | None = None,
            strict: bool = False) -> None:
    bad = ~np.isfinite(array)
    if least is not None:
        bad |= (array <= least) if strict else (array < least)
    if np.any(bad):
        where = tuple(int(k) for k in np.argwhere(bad)[0])
        bound = "" if least is None else f" and {'>' if strict else '>='} {least:g}"
        raise HookeInputError(f"{field}[{', '.join(map(str, where))}]",
                              f"must be finite{bound}", array[where].item())


def check_model(model) -> None:
    """Raise HookeInputError for the first problem of ``model`` (see the module docstring)."""
    dim = model.dim
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim not in (1, 2, 3):
        raise HookeInputError("dim", "must be the integer 1, 2 or 3", dim)
    mass = _array(model, "mass", "iuf")
    if mass.ndim != 1 or mass.size == 0:
        raise HookeInputError("mass", "must have shape (particles,) with at least one",
                              mass.shape)
    n = mass.size
    _values(mass, "mass", 0.0, strict=True)
    _shaped(model, "pinned", (n,), "b")
    _values(_shaped(model, "gravity", (dim,)), "gravity")
    _values(_shaped(model, "x0", (n, dim)), "x0")
    _values(_shaped(model, "v0", (n, dim)), "v0")
    _indices(model, "spring_indices", 2, n, "a particle")
    springs = model.spring_indices.shape[0]
    # a rest length may be < 0 here: ½k(|d| − L)² is defined, and the gradient tests' finite
    # differences about spring1d's L = 0 step below it (the builder refuses it as a spring's input)
    _values(_shaped(model, "spring_rest_length", (springs,)), "spring_rest_length")
    for field in ("spring_stiffness", "spring_damping"):
        _values(_shaped(model, field, (springs,)), field, 0.0)
    _indices(model, "joint_indices", 2, n, "a particle")
    joint_length = _shaped(model, "joint_length", (model.joint_indices.shape[0],))
    _values(joint_length, "joint_length", 0.0, strict=True)
    with np.errstate(over="ignore"):
        overflows = np.flatnonzero(~np.isfinite(joint_length * joint_length))
    if overflows.size:  # the joints' matrices and energies square it
        raise HookeInputError(f"joint_length[{overflows[0]}]", "is too large (its square "
                              "overflows to inf)", joint_length[overflows[0]].item())
    for field in ("surface_faces", "triangles", "tetrahedra"):
        _indices(model, field, None, n, "a particle")
    _indices(model, "obstacle_faces", None, _array(model, "obstacle_vertices", "iuf").shape[0],
             "an obstacle vertex")
    _bodies(model, dim)
    for field in ("contact_area", "drag"):  # one per particle, or none
        if _array(model, field, "iuf").shape not in ((n,), (0,)):
            raise HookeInputError(field, f"must have shape ({n},) or (0,)",
                                  getattr(model, field).shape)
    if _array(model, "wind", "iuf").shape not in ((dim,), (0,)):
        raise HookeInputError("wind", f"must have shape ({dim},) or (0,)", model.wind.shape)
    if model.spring_energy not in SPRING_ENERGIES:
        raise HookeInputError("spring_energy", f"must be one of {', '.join(SPRING_ENERGIES)}",
                              model.spring_energy)
    _body_values(model)
    _contact_settings(model)


def _body_values(model) -> None:
    """The values the builder's checks hold the contact and bodies to, and the air's finite: a
    NaN drag, wind or contact area, a plane normal not of unit length (every distance scaled by
    it), a sphere of radius −1 ran. A drag may be < 0 here, as a rest length may: the force
    −c (v − w) is defined, and the gradient tests' differences about the crane's c = 0.005 step
    across 0 (the builder and scene files refuse it as an input)."""
    for field in ("contact_area", "plane_friction", "sphere_friction", "surface_friction",
                  "obstacle_friction"):
        _values(getattr(model, field), field, 0.0)
    for field in ("drag", "wind", "plane_points", "sphere_centers", "obstacle_vertices"):
        _values(getattr(model, field), field)
    _values(model.sphere_radii, "sphere_radii", 0.0, strict=True)
    normals = model.plane_normals
    _values(normals, "plane_normals")
    lengths = np.sqrt(np.sum(normals * normals, axis=1))
    if np.any(np.abs(lengths - 1.0) > UNIT_LENGTH):
        row = int(np.flatnonzero(np.abs(lengths - 1.0) > UNIT_LENGTH)[0])
        raise HookeInputError(f"plane_normals[{row}]", "must have length 1 (the builder "
                              "normalises a plane's normal; distances are n·(x − p))",
                              normals[row].tolist())


def _contact_settings(model) -> None:
    """d̂, κ and ε_v finite numbers > 0 (as ModelBuilder.set_contact checks them), d̂² finite."""
    for field in ("contact_dhat", "contact_kappa", "contact_epsv"):
        value = getattr(model, field)
        if not is_number(value) or not math.isfinite(value) or value <= 0:
            raise HookeInputError(field, "must be a finite number > 0", value)
    if not math.isfinite(float(model.contact_dhat) * float(model.contact_dhat)):
        raise HookeInputError("contact_dhat", "is too large (its square overflows to inf)",
                              model.contact_dhat)


def _bodies(model, dim: int) -> None:
    """The planes', spheres' arrays agree on their counts, and each surface face and obstacle
    vertex names a surface or an obstacle that has a friction (read by index, unchecked)."""
    for points, per_body in (("plane_normals", ("plane_points",)),
                             ("sphere_centers", ("sphere_radii", "sphere_friction"))):
        array = _array(model, points, "iuf")
        count = array.shape[0]
        if array.ndim != 2 or (count and array.shape[1] != dim):
            raise HookeInputError(points, f"must have shape (count, {dim})", array.shape)
        for field in per_body:
            other = _array(model, field, "iuf")
            if other.shape[:1] != (count,):
                raise HookeInputError(field, f"must have {count} row(s), as {points}", other.shape)
    _shaped(model, "plane_friction", (model.plane_normals.shape[0],))
    for owner, field, what in (("surface_of_face", "surface_friction", "a surface"),
                               ("obstacle_of_vertex", "obstacle_friction", "an obstacle")):
        index = _array(model, owner, "iu")
        count = _array(model, field, "iuf").shape[0]
        if index.ndim != 1 or (index.size and (index.min() < 0 or index.max() >= count)):
            raise HookeInputError(owner, f"must hold {what}'s index in [0, {count}) per row",
                                  index.tolist() if index.size <= 10 else index.shape)
