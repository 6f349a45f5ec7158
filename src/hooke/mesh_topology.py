"""Mesh topology from index arrays: the edges of mesh cells (springs), the Freudenthal
tetrahedra and edges of a lattice, the springs of a grid, the bending springs of a sheet, the
boundary faces of a body (its contact surface) and the masses a density lumps to the vertices.

Contract: pure functions of index arrays (no validation; :func:`lumped_masses` alone reads
positions); vertex indices are local to the arrays passed in, and every index result is an int64
array in a deterministic order.
:func:`boundary_faces` gives the edges of 2D triangles/quads that belong to one cell only, the
triangles of tetrahedra that belong to one tetrahedron only, 3D triangles (a cloth: both sides,
as contact distances are unsigned) and split quads, and 2D lines, as they are.
:func:`mesh_cells` gives a Model's ``triangles`` and ``tetrahedra`` from blocks of cells.
:func:`orient_outward` is the one function that also reads positions: it orders the corners of
the boundary triangles of tetrahedra so that their normals point out of the body (for drawing:
a renderer averages vertex normals, and mixed orientations cancel).
"""

from __future__ import annotations

from itertools import combinations
from typing import Iterable

import numpy as np

# Edges of each element type read from a mesh, as local vertex pairs.
MESH_EDGES = {
    "line": [(0, 1)],
    "triangle": [(0, 1), (1, 2), (2, 0)],
    "quad": [(0, 1), (1, 2), (2, 3), (3, 0)],
    "tetra": list(combinations(range(4), 2)),
}


def mesh_edges(cells: dict[str, Iterable]) -> np.ndarray:
    """Unique undirected edges (sorted pairs, in first-seen order) of the given cells."""
    pairs = []
    for cell_type, data in cells.items():
        data = np.asarray(data, dtype=np.int64)
        for a, b in MESH_EDGES[cell_type]:
            pairs.append(np.stack([data[:, a], data[:, b]], axis=1))
    edges = np.sort(np.concatenate(pairs), axis=1)
    _, first = np.unique(edges, axis=0, return_index=True)
    return edges[np.sort(first)]


def lattice_tetrahedra(nx: int, ny: int, nz: int) -> np.ndarray:
    """Freudenthal split of each cube of an nx × ny × nz point lattice into 6 tetrahedra
    sharing the main diagonal; vertices numbered (i·ny + j)·nz + k."""
    def vid(i, j, k):
        return (i * ny + j) * nz + k

    corners = np.array([[(a >> 2) & 1, (a >> 1) & 1, a & 1] for a in range(8)])
    paths = [(4, 6), (4, 5), (2, 6), (2, 3), (1, 5), (1, 3)]  # the 6 monotone paths 0 → 7
    tets = []
    i, j, k = np.meshgrid(np.arange(nx - 1), np.arange(ny - 1), np.arange(nz - 1), indexing="ij")
    i, j, k = i.ravel(), j.ravel(), k.ravel()
    corner_ids = [vid(i + c[0], j + c[1], k + c[2]) for c in corners]
    for a, b in paths:
        tets.append(np.stack([corner_ids[0], corner_ids[a], corner_ids[b], corner_ids[7]], axis=1))
    return np.concatenate(tets) if tets else np.empty((0, 4), dtype=np.int64)


def grid_springs(nx: int, ny: int, diagonals: bool = True) -> np.ndarray:
    """(s, 2) springs of :meth:`ModelBuilder.grid` (same order) for particles numbered i·ny + j."""
    ids = np.arange(nx * ny, dtype=np.int64).reshape(nx, ny)
    pairs = [(ids[:-1, :], ids[1:, :]), (ids[:, :-1], ids[:, 1:])]
    if diagonals:
        pairs += [(ids[:-1, :-1], ids[1:, 1:]), (ids[1:, :-1], ids[:-1, 1:])]
    return np.concatenate([np.stack([a.ravel(), b.ravel()], axis=1) for a, b in pairs])


def grid_bending(nx: int, ny: int) -> np.ndarray:
    """(s, 2) bending springs of an nx × ny grid numbered i·ny + j: every second neighbour
    along each grid direction, (i, j)–(i + 2, j) then (i, j)–(i, j + 2)."""
    ids = np.arange(nx * ny, dtype=np.int64).reshape(nx, ny)
    pairs = [(ids[:-2, :], ids[2:, :]), (ids[:, :-2], ids[:, 2:])]
    return np.concatenate([np.stack([a.ravel(), b.ravel()], axis=1) for a, b in pairs])


def bending_pairs(cells: dict[str, Iterable]) -> np.ndarray:
    """(s, 2) bending springs of a sheet meshed by triangles and quads, across every edge that
    two cells of the same type share: for two triangles, their vertices opposite the edge (the
    hinge); for two quads, each end's neighbours off the edge in either quad (on a regular grid,
    the second neighbours (i − 1, j)–(i + 1, j)). Edges of one cell (the border), of a triangle
    and a quad, or of more than two cells bend freely. Sorted pairs, each once, in first-seen
    order; (0, 2) without such edges."""
    found = []
    for cell_type, size in (("triangle", 3), ("quad", 4)):
        data = np.asarray(cells.get(cell_type, np.empty((0, size))), dtype=np.int64)
        if not len(data):
            continue
        k = np.arange(size)
        ends_a, ends_b = data[:, k], data[:, (k + 1) % size]
        if size == 3:  # the opposite vertex, for both ends
            off_a = off_b = data[:, (k + 2) % 3]
        else:  # the neighbour of each end off the edge
            off_a, off_b = data[:, (k - 1) % 4], data[:, (k + 2) % 4]
        flip = ends_a > ends_b  # key each edge by its sorted ends, their neighbours alike
        keys = np.stack([np.where(flip, ends_b, ends_a), np.where(flip, ends_a, ends_b)], -1)
        near = np.stack([np.where(flip, off_b, off_a), np.where(flip, off_a, off_b)], -1)
        keys, near = keys.reshape(-1, 2), near.reshape(-1, 2)
        _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
        inverse = inverse.reshape(-1)
        shared = np.flatnonzero(counts[inverse] == 2)
        shared = shared[np.argsort(inverse[shared], kind="stable")].reshape(-1, 2)
        first, second = near[shared[:, 0]], near[shared[:, 1]]
        found += [np.stack([first[:, 0], second[:, 0]], 1), np.stack([first[:, 1], second[:, 1]], 1)]
    if not found:
        return np.empty((0, 2), dtype=np.int64)
    pairs = np.sort(np.concatenate(found), axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    _, first_seen = np.unique(pairs, axis=0, return_index=True)
    return pairs[np.sort(first_seen)]


def lumped_masses(points: np.ndarray, cells: dict[str, Iterable], density: float) -> np.ndarray:
    """(n,) vertex masses of a body of ``density`` meshed by ``cells`` at ``points`` (n, d): each
    cell's measure × density shared equally by its vertices, over the cells of the highest
    dimension present only (tetrahedra: volume, kg/m³; else triangles and quads: area, kg/m²;
    else lines: length, kg/m), so that a tet mesh's boundary triangles add nothing."""
    points = np.asarray(points, dtype=float)
    measures = {"tetra": 3, "triangle": 2, "quad": 2, "line": 1}
    top = max((measures[kind] for kind in cells if kind in measures), default=0)
    out = np.zeros(len(points))
    for kind, data in cells.items():
        if measures.get(kind) != top:
            continue
        data = np.asarray(data, dtype=np.int64)
        corner = points[data]
        if kind == "tetra":
            edges = corner[:, 1:] - corner[:, :1]
            measure = np.abs(np.linalg.det(edges)) / 6.0
        elif kind == "line":
            measure = np.linalg.norm(corner[:, 1] - corner[:, 0], axis=1)
        else:  # triangles, and quads as the triangles (0, 1, 2) and (0, 2, 3)
            measure = sum(_triangle_area(corner[:, 0], corner[:, a], corner[:, b])
                          for a, b in ((1, 2), (2, 3))[: data.shape[1] - 2])
        for vertex in range(data.shape[1]):
            np.add.at(out, data[:, vertex], density * measure / data.shape[1])
    return out


def _triangle_area(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    u, v = b - a, c - a
    if u.shape[1] == 2:
        return 0.5 * np.abs(u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0])
    return 0.5 * np.linalg.norm(np.cross(u, v), axis=1)


def grid_quads(nx: int, ny: int) -> np.ndarray:
    """((nx − 1)(ny − 1), 4) cells of an nx × ny grid numbered i·ny + j, each counter-clockwise
    from its lowest corner: (i, j), (i + 1, j), (i + 1, j + 1), (i, j + 1)."""
    ids = np.arange(nx * ny, dtype=np.int64).reshape(nx, ny)
    return np.stack([ids[:-1, :-1], ids[1:, :-1], ids[1:, 1:], ids[:-1, 1:]], -1).reshape(-1, 4)


def lattice_edges(nx: int, ny: int, nz: int) -> np.ndarray:
    """(s, 2) unique edges of :func:`lattice_tetrahedra` generated directly, with no sort over
    the tetrahedra: in the Freudenthal split every edge joins lattice point p to p + e for e one
    of the 7 non-zero 0/1 vectors {100, 010, 001, 110, 101, 011, 111}."""
    counts = (nx, ny, nz)
    ids = np.arange(nx * ny * nz, dtype=np.int64).reshape(counts)
    edges = []
    for e in ((1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (1, 0, 1), (0, 1, 1), (1, 1, 1)):
        start = ids[tuple(slice(0, n - o) for n, o in zip(counts, e))]
        end = ids[tuple(slice(o, n) for n, o in zip(counts, e))]
        edges.append(np.stack([start.ravel(), end.ravel()], axis=1))
    return np.concatenate(edges)


_CELL_FACES = {  # local faces whose unpaired copies form the boundary, per cell type and dim
    ("triangle", 2): [(0, 1), (1, 2), (2, 0)],
    ("quad", 2): [(0, 1), (1, 2), (2, 3), (3, 0)],
    ("tetra", 3): [(0, 2, 1), (0, 1, 3), (1, 2, 3), (0, 3, 2)],
}
_CELL_AS_FACES = {  # cells that are faces themselves (a rope, a cloth)
    ("line", 2): [(0, 1)],
    ("triangle", 3): [(0, 1, 2)],
    ("quad", 3): [(0, 1, 2), (0, 2, 3)],
}


def boundary_faces(cells: dict[str, np.ndarray], dim: int) -> np.ndarray:
    """The contact surface of a body meshed by ``cells`` (cell type → (c, k) vertex indices):
    boundary edges of 2D triangles/quads, boundary triangles of tetrahedra, and lines (2D),
    triangles and split quads (3D) as they are. (f, dim) int64, in first-seen order."""
    unpaired, kept = [], []
    for cell_type, data in cells.items():
        if not len(data):  # (a lattice one particle thick has no tetrahedra)
            continue
        data = np.asarray(data, dtype=np.int64).reshape(len(data), -1)
        for table, out in ((_CELL_FACES, unpaired), (_CELL_AS_FACES, kept)):
            for local in table.get((cell_type, dim), []):
                out.append(data[:, list(local)])
    faces = [np.concatenate(kept)] if kept else []
    if unpaired:
        candidates = np.concatenate(unpaired)
        _, first, counts = np.unique(np.sort(candidates, axis=1), axis=0, return_index=True,
                                     return_counts=True)
        faces.append(candidates[np.sort(first[counts == 1])])
    return np.concatenate(faces) if faces else np.empty((0, dim), dtype=np.int64)


def mesh_cells(blocks: Iterable[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``triangles`` (c, 3) and ``tetrahedra`` (c, 4) of blocks of cells (cell type → (c, k)
    vertex indices): triangles as they are, quads split along their 0–2 diagonal as
    :func:`boundary_faces` splits them, tetrahedra as they are; lines and other types dropped."""
    found: dict[str, list] = {"triangles": [], "tetrahedra": []}
    for cells in blocks:
        for cell_type, data in cells.items():
            data = np.asarray(data, dtype=np.int64)
            if cell_type == "triangle":
                found["triangles"].append(data.reshape(-1, 3))
            elif cell_type == "quad":
                found["triangles"] += [data.reshape(-1, 4)[:, list(local)]
                                       for local in _CELL_AS_FACES[("quad", 3)]]
            elif cell_type == "tetra":
                found["tetrahedra"].append(data.reshape(-1, 4))
    return {name: np.concatenate(parts) if parts else np.empty((0, 3 + (name == "tetrahedra")),
                                                                 dtype=np.int64)
            for name, parts in found.items()}


# Each local face of a tetrahedron (3 corners) and its opposite corner.
_TET_FACE_OPPOSITE = [((0, 1, 2), 3), ((0, 1, 3), 2), ((0, 2, 3), 1), ((1, 2, 3), 0)]


def orient_outward(faces: np.ndarray, tetrahedra: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(f, 3) ``faces`` with every triangle that is a face of one of ``tetrahedra`` ordered so
    that its normal (b − a) × (c − a) points away from that tetrahedron's fourth corner (out of
    the body, at positions ``x``); other triangles (a cloth's) as they are."""
    faces = np.asarray(faces, dtype=np.int64).reshape(-1, 3)
    tetrahedra = np.asarray(tetrahedra, dtype=np.int64).reshape(-1, 4)
    if not len(faces) or not len(tetrahedra):
        return faces
    corners = np.concatenate([tetrahedra[:, list(local)] for local, _ in _TET_FACE_OPPOSITE])
    opposite = np.concatenate([tetrahedra[:, k] for _, k in _TET_FACE_OPPOSITE])
    n = int(max(faces.max(), tetrahedra.max())) + 1

    def key(triangles):  # one int64 per unordered triangle (n³ < 2⁶³ for n < 2·10⁶)
        t = np.sort(triangles, axis=1)
        return (t[:, 0] * n + t[:, 1]) * n + t[:, 2]

    tet_keys = key(corners)
    order = np.argsort(tet_keys, kind="stable")
    at = np.minimum(np.searchsorted(tet_keys[order], key(faces)), len(order) - 1)
    found = tet_keys[order][at] == key(faces)
    a, b, c = (x[faces[:, k]] for k in range(3))
    towards = np.einsum("ij,ij->i", np.cross(b - a, c - a), x[opposite[order[at]]] - a)
    out = faces.copy()
    flip = found & (towards > 0)
    out[flip] = out[flip][:, [0, 2, 1]]
    return out
