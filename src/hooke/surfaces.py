"""Contact surfaces: the faces of a body's boundary, their validation, and the start check.

A surface is a list of faces over particle indices: segments (index pairs) in 2D, triangles
(index triples) in 3D, whose edges take part too (edge–edge contact). ``Model.surface_faces``
holds every surface's faces, ``Model.surface_of_face`` which surface each came from.

Contract:
- :func:`check_faces` validates one surface's faces (arity, integer indices in range, no face
  repeating a particle), :func:`repeated_faces` lists faces given twice, and
  :func:`check_face_shapes` their shapes at the start (no zero-length
  segment, no zero-area triangle); both raise :class:`HookeInputError` naming
  ``surfaces[s].faces[k]`` and the face;
- a body's boundary comes from its mesh cells by :func:`hooke.mesh_topology.boundary_faces`;
- :func:`start_problems` lists, one line each, the pairs of non-adjacent elements that touch or
  intersect at the start (segments that cross or touch in 2D; an edge through a triangle, or a
  vertex–triangle or edge–edge distance of 0, in 3D), where the barrier between surfaces is
  infinite: a model with self-contact must start with every such distance > 0.
"""

from __future__ import annotations

import numpy as np

from .errors import HookeInputError, is_count

FACE_NAMES = {2: "segments (pairs of particle indices)", 3: "triangles (triples of particle indices)"}


def check_faces(surface: int, faces, n: int, dim: int, table: str = "surfaces",
                what: str = "particle") -> np.ndarray:
    """``table[surface].faces`` as an (m, dim) int64 array of valid indices into n ``what``s
    (particles of a surface; vertices of an obstacle, :mod:`hooke.obstacles`)."""
    where = f"{table}[{surface}].faces"
    kinds = FACE_NAMES if what == "particle" else {
        k: name.replace("particle", what) for k, name in FACE_NAMES.items()}
    if dim not in kinds:
        raise HookeInputError(f"{table}[{surface}]", f"contact {table} need dim 2 or 3", dim)
    try:
        items = np.asarray(faces, dtype=object)
    except (TypeError, ValueError):
        items = None
    if items is None or items.ndim != 2 or items.shape[1] != dim or items.shape[0] == 0:
        raise HookeInputError(where, f"must be a non-empty list of {kinds[dim]} for dim={dim}",
                              faces)
    for k, face in enumerate(items):
        if not all(is_count(i) for i in face):
            raise HookeInputError(f"{where}[{k}]", f"must hold integer {what} indices",
                                  face.tolist())
        bad = [int(i) for i in face if not 0 <= i < n]
        if bad:
            raise HookeInputError(f"{where}[{k}]", f"{what} index out of range [0, {n})",
                                  [int(i) for i in face])
        if len(set(face.tolist())) < dim:
            raise HookeInputError(f"{where}[{k}]", f"is degenerate: it repeats a {what}",
                                  [int(i) for i in face])
    return items.astype(np.int64)


def repeated_faces(surfaces: list[np.ndarray], table: str = "surfaces") -> list[str]:
    """One line per face that repeats an earlier one, within its surface or of another (the
    same particles in any order: [1, 0] is [0, 1]): a face counted twice doubled its barrier, a
    triangle resting on a floor given twice stood 5e-5 m higher, in silence."""
    problems, first = [], {}
    for s, faces in enumerate(surfaces):
        for k, face in enumerate(faces.tolist()):
            key, where = frozenset(face), f"{table}[{s}].faces[{k}]"
            if key in first:
                problems.append(f"{where}: repeats {first[key]} (a face given twice counts twice "
                                f"in the contact barrier), got {face}")
            first.setdefault(key, where)
    return problems


def face_sizes(faces: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(f,) length of each segment or area of each triangle at positions x (n, d); inf where
    it overflows (a body of 1e150 m: NumPy's overflow warning came before the scene's own
    error, or alone for a scene that builds)."""
    corners = x[faces]
    with np.errstate(over="ignore", invalid="ignore"):
        if faces.shape[1] == 2:
            return np.linalg.norm(corners[:, 1] - corners[:, 0], axis=1)
        return 0.5 * np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0],
                                             corners[:, 2] - corners[:, 0]), axis=1)


def check_face_shapes(surface: int, faces: np.ndarray, x: np.ndarray,
                      table: str = "surfaces") -> None:
    """No face of ``table[surface]`` has zero length (2D) or zero area (3D) at x."""
    sizes = face_sizes(faces, x)
    flat = np.flatnonzero(~(sizes > 0))
    if flat.size:
        k = int(flat[0])
        shape = "its corners coincide" if faces.shape[1] == 2 else "its corners are collinear"
        if table == "surfaces":
            shape = shape.replace("corners", "particles")
        raise HookeInputError(f"{table}[{surface}].faces[{k}]", f"is degenerate: {shape} at the "
                              "start", faces[k].tolist())


def load_ipctk():
    """ipctk, set to run on one thread. Its parallel loops (TBB) add per-thread parts in an order
    that depends on scheduling, so on two threads the same state gives gradients that differ in
    the last bit from run to run under load, and neither runs nor their resumes would repeat bit
    for bit; on this project's 2-core machines one thread is also faster for hooke's scenes.
    Its own log says errors only: its warnings ("Small gap … in Additive CCD can lead to missed
    collisions", on stdout) came between hooke's lines, and a viewer page stepping its scene at
    a large dt printed them on the server's terminal, as often as it liked; hooke checks the
    gaps between surfaces itself."""
    import ipctk

    if ipctk.get_num_threads() != 1:
        ipctk.set_num_threads(1)
    ipctk.set_logger_level(ipctk.LoggerLevel.error)
    return ipctk


# -- the start check ---------------------------------------------------------------------------
def collision_mesh(faces: np.ndarray, x: np.ndarray):
    """(ipctk.CollisionMesh over the surface vertices at x, the particle index of each of its
    vertices). Only particles on a surface are vertices: a particle on no face takes no part."""
    ipctk = load_ipctk()

    vertices, local = np.unique(faces, return_inverse=True)
    local = np.asfortranarray(local.reshape(faces.shape).astype(np.int32))
    rest = np.asfortranarray(x[vertices], dtype=float)
    if faces.shape[1] == 2:
        return ipctk.CollisionMesh(rest, local), vertices
    return ipctk.CollisionMesh(rest, ipctk.edges(local), local), vertices


def _named(face_kind: str, particles) -> str:
    return f"{face_kind} ({', '.join(str(int(p)) for p in particles)})"


def start_problems(faces: np.ndarray, x: np.ndarray, limit: int = 10) -> list[str]:
    """One line per pair of non-adjacent surface elements that touch or intersect at x (at most
    ``limit``), naming their particles; [] when every distance is > 0."""
    ipctk = load_ipctk()

    mesh, vertices = collision_mesh(faces, x)
    V = np.asfortranarray(x[vertices], dtype=float)
    edges, tris = mesh.edges, mesh.faces
    broad = ipctk.HashGrid()
    broad.build(V, edges, tris if tris.size else np.zeros((0, 3), dtype=np.int32), 0.0)
    problems: list[str] = []

    def report(text: str) -> None:
        if len(problems) < limit:
            problems.append(f"surfaces: {text} at the start (distance 0: the barrier between "
                            "surfaces is infinite there)")

    if faces.shape[1] == 2:
        for pair in broad.detect_edge_edge_candidates():
            a, b = edges[pair.edge0_id], edges[pair.edge1_id]
            if set(a) & set(b):
                continue  # adjacent segments share a particle: not a contact pair
            if ipctk.segment_segment_intersect(V[a[0]], V[a[1]], V[b[0]], V[b[1]]):
                report(f"{_named('segment', vertices[a])} and {_named('segment', vertices[b])} "
                       "cross or touch")
        return problems
    for pair in broad.detect_edge_face_candidates():
        e, f = edges[pair.edge_id], tris[pair.face_id]
        if set(e) & set(f):
            continue
        if ipctk.is_edge_intersecting_triangle(V[e[0]], V[e[1]], V[f[0]], V[f[1]], V[f[2]]):
            report(f"{_named('edge', vertices[e])} goes through {_named('triangle', vertices[f])}")
    candidates = ipctk.Candidates()
    candidates.build(mesh, V, 0.0)
    for pair in candidates.fv_candidates:
        if pair.compute_distance(V, edges, tris) <= 0.0:
            report(f"particle {vertices[pair.vertex_id]} touches "
                   f"{_named('triangle', vertices[tris[pair.face_id]])}")
    for pair in candidates.ee_candidates:
        if pair.compute_distance(V, edges, tris) <= 0.0:
            report(f"{_named('edge', vertices[edges[pair.edge0_id]])} touches "
                   f"{_named('edge', vertices[edges[pair.edge1_id]])}")
    return problems

