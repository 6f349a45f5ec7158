"""Generate the tetrahedral meshes shipped with hooke (the output is committed; running this again
writes the same file, which tests/test_meshes.py checks).

blob.vtu: a rabbit-like soft body (body, head and two ears as ellipsoids blended smoothly, on a
flat base) about 1 m tall, the stand-in for seed 001's 699-vertex tet bunny, which cannot be
downloaded here. It is meshed by isosurface stuffing (Labelle & Shewchuk, "Isosurface stuffing:
fast tetrahedral meshes with good dihedral angles", SIGGRAPH 2007): a body-centred cubic lattice,
whose tetrahedra are all alike (dihedral angles 60° and 90°), is cut by the surface; lattice
vertices close to the surface are first moved onto it ("warped"), so that no cut makes a sliver,
and the tetrahedra the surface crosses are replaced by the tetrahedra of their inside parts. The
surface is the zero set of a smooth function, so the boundary triangles (what the viewer lights)
follow it without the spikes a Delaunay tetrahedralisation of scattered points leaves there.

    python scripts/make_meshes.py     # writes src/hooke/scenes/meshes/blob.vtu, prints its quality
"""

from pathlib import Path

import meshio
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from hooke.mesh_quality import dihedral_angles, radius_ratios

OUT = Path(__file__).resolve().parents[1] / "src/hooke/scenes/meshes/blob.vtu"

ELLIPSOIDS = [  # centre, semi-axes [m]
    ((0.0, 0.30, 0.0), (0.45, 0.30, 0.32)),    # body
    ((0.38, 0.62, 0.0), (0.22, 0.20, 0.20)),   # head
    ((0.33, 0.90, -0.11), (0.08, 0.22, 0.075)),  # ear
    ((0.45, 0.90, 0.11), (0.08, 0.22, 0.075)),   # ear
]
BASE = 0.05   # [m]: the body stands on the plane y = BASE (cut flat there)
BLEND = 0.05  # [m]: the width over which the parts' surfaces merge (smooth minimum)
# [m]: the lattice's cube side, at most 2/3 of an ear's thickness so that both ears are resolved;
# it gives about the seed bunny's 699 vertices and fewer springs than kernels.PARALLEL_MIN_SPRINGS
# (the viewer's fork server steps soft3d before it forks: see hooke.viz.web.worker)
SPACING = 0.105

# Warp thresholds of Labelle & Shewchuk (the fraction of an edge within which a cut point moves
# the lattice vertex onto the surface), for the lattice's axis-parallel edges (length SPACING)
# and its diagonal ones (√3/2·SPACING): they bound the dihedral angles to [10.7°, 164.8°].
ALPHA_LONG, ALPHA_SHORT = 0.24999, 0.41189


def ellipsoid_distance(points: np.ndarray, centre, axes) -> np.ndarray:
    """An estimate of the signed distance to an ellipsoid (exact on the surface, where it is 0)."""
    q = (points - centre) / axes
    k0 = np.linalg.norm(q, axis=1)
    k1 = np.linalg.norm(q / axes, axis=1)
    return k0 * (k0 - 1.0) / np.maximum(k1, 1e-12)


def shape(points: np.ndarray) -> np.ndarray:
    """Negative inside the body, positive outside, 0 on its surface."""
    d = ellipsoid_distance(points, *ELLIPSOIDS[0])
    for centre, axes in ELLIPSOIDS[1:]:  # polynomial smooth minimum: a fillet of width BLEND
        other = ellipsoid_distance(points, centre, axes)
        mix = np.clip(0.5 + 0.5 * (other - d) / BLEND, 0.0, 1.0)
        d = other + (d - other) * mix - BLEND * mix * (1.0 - mix)
    return np.maximum(d, BASE - points[:, 1])


def bcc_lattice(lo, hi, h: float) -> tuple[np.ndarray, np.ndarray]:
    """The body-centred cubic lattice over the box [lo, hi] with cube side h, its corner plane
    y = lo[1] included: points (cube corners, then cube centres) and its tetrahedra (four around
    each pair of neighbouring centres, spanning the square face the two cubes share)."""
    n = np.ceil((np.asarray(hi) - lo) / h).astype(int) + 1
    corner_index = np.arange(np.prod(n)).reshape(n)
    centre_index = np.prod(n) + np.arange(np.prod(n - 1)).reshape(n - 1)
    corners = np.stack(np.meshgrid(*map(np.arange, n), indexing="ij"), -1).reshape(-1, 3)
    centres = np.stack(np.meshgrid(*map(np.arange, n - 1), indexing="ij"), -1).reshape(-1, 3) + 0.5
    points = lo + h * np.vstack([corners, centres])
    square = [(0, 0), (1, 0), (1, 1), (0, 1)]
    tets = []
    for axis in range(3):
        b, c = [k for k in range(3) if k != axis]
        size = n - 1
        size[axis] -= 1  # the centre pairs along this axis
        cube = np.stack(np.meshgrid(*map(np.arange, size), indexing="ij"), -1).reshape(-1, 3)
        step = np.eye(3, dtype=int)[axis]
        first, second = centre_index[tuple(cube.T)], centre_index[tuple((cube + step).T)]
        ring = []
        for db, dc in square:
            corner = cube + step
            corner[:, b] += db
            corner[:, c] += dc
            ring.append(corner_index[tuple(corner.T)])
        for k in range(4):
            tets.append(np.stack([first, second, ring[k], ring[(k + 1) % 4]], axis=1))
    return points, np.vstack(tets)


def root_on_edges(f, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Fractions t in (0, 1) with f(a + t(b − a)) = 0 for f(a) < 0 < f(b), by bisection."""
    low, high = np.zeros(len(a)), np.ones(len(a))
    for _ in range(60):
        mid = 0.5 * (low + high)
        inside = f(a + mid[:, None] * (b - a)) < 0
        low, high = np.where(inside, mid, low), np.where(inside, high, mid)
    return 0.5 * (low + high)


def tet_edges(tets: np.ndarray) -> np.ndarray:
    pairs = tets[:, [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]].reshape(-1, 2)
    return np.unique(np.sort(pairs, axis=1), axis=0)


def cut_edges(f, points, sign, edges):
    """The edges with one end inside and one outside, oriented inside → outside, and the
    fraction along each (from the inside end) at which the surface cuts it."""
    crossing = edges[sign[edges[:, 0]] * sign[edges[:, 1]] < 0]
    crossing = np.where((sign[crossing[:, 0]] < 0)[:, None], crossing, crossing[:, ::-1])
    return crossing, root_on_edges(f, points[crossing[:, 0]], points[crossing[:, 1]])


def warp(f, points, sign, edges, h):
    """Move each lattice vertex that a cut point comes too close to (within ALPHA of its edge's
    length) onto the nearest such cut point, which puts the vertex on the surface (sign 0)."""
    crossing, t = cut_edges(f, points, sign, edges)
    length = np.linalg.norm(points[crossing[:, 1]] - points[crossing[:, 0]], axis=1)
    alpha = np.where(length > 0.95 * h, ALPHA_LONG, ALPHA_SHORT)
    cuts = points[crossing[:, 0]] + t[:, None] * (points[crossing[:, 1]] - points[crossing[:, 0]])
    vertex = np.concatenate([crossing[:, 0], crossing[:, 1]])
    distance = np.concatenate([t, 1.0 - t]) * np.tile(length, 2)
    close = np.concatenate([t, 1.0 - t]) < np.tile(alpha, 2)
    target = np.tile(cuts, (2, 1))
    order = np.lexsort((distance[close], vertex[close]))  # nearest cut first for each vertex
    moved, first = np.unique(vertex[close][order], return_index=True)
    points, sign = points.copy(), sign.copy()
    points[moved] = target[close][order][first]
    sign[moved] = 0
    return points, sign


def _fan(cycle: list[int]) -> list[tuple[int, int, int]]:
    """Triangles of a polygon fanned from its lowest-numbered vertex: the choice depends on the
    polygon alone, so two tetrahedra that share a face split it the same way."""
    k = cycle.index(min(cycle))
    cycle = cycle[k:] + cycle[:k]
    return [(cycle[0], cycle[i], cycle[i + 1]) for i in range(1, len(cycle) - 1)]


def _inside_part(tet, sign, cut_id) -> list[tuple[int, int, int, int]]:
    """Tetrahedra filling the part of ``tet`` inside the surface: the convex polytope of its
    inside and on-surface corners and its cut points, coned from its lowest-numbered vertex onto
    the faces that do not contain it (each fanned by :func:`_fan`)."""
    faces = []
    for skip in range(4):
        cycle = [tet[k] for k in range(4) if k != skip]
        clipped = []
        for u, w in zip(cycle, cycle[1:] + cycle[:1]):
            if sign[u] <= 0:
                clipped.append(u)
            if sign[u] * sign[w] < 0:
                clipped.append(cut_id[(min(u, w), max(u, w))])
        if len(clipped) >= 3:
            faces.append(clipped)
    # the cut face: the polygon of on-surface points, its sides the consecutive on-surface pairs
    # of the clipped faces
    surface = {v for face in faces for v in face if v >= len(sign) or sign[v] == 0}
    neighbours: dict[int, set[int]] = {v: set() for v in surface}
    for face in faces:
        for u, w in zip(face, face[1:] + face[:1]):
            if u in surface and w in surface:
                neighbours[u].add(w)
                neighbours[w].add(u)
    if len(surface) >= 3:
        cycle = [min(surface)]
        while len(cycle) < len(surface):
            cycle.append(min(neighbours[cycle[-1]] - set(cycle)))
        faces.append(cycle)
    apex = min(v for face in faces for v in face)
    return [(apex, *triangle) for face in faces if apex not in face for triangle in _fan(face)]


def stuff(f, lo, hi, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Isosurface stuffing of {f < 0} within the box [lo, hi]: points and tetrahedra."""
    points, tets = bcc_lattice(lo, hi, h)
    value = f(points)
    sign = np.where(np.abs(value) < 1e-12 * h, 0, np.sign(value)).astype(int)
    tets = tets[(sign[tets] < 0).any(axis=1)]  # only these can have an inside part
    edges = tet_edges(tets)
    points, sign = warp(f, points, sign, edges, h)
    crossing, t = cut_edges(f, points, sign, edges)
    cuts = points[crossing[:, 0]] + t[:, None] * (points[crossing[:, 1]] - points[crossing[:, 0]])
    cut_id = {(min(u, w), max(u, w)): len(points) + k for k, (u, w) in enumerate(crossing.tolist())}
    points = np.vstack([points, cuts])
    tets = tets[(sign[tets] < 0).any(axis=1)]
    whole = (sign[tets] <= 0).all(axis=1)
    parts = [tuple(t) for t in tets[whole].tolist()]
    for tet in tets[~whole].tolist():
        parts += _inside_part(tet, sign, cut_id)
    tets = np.array(parts)
    used, tets = np.unique(tets, return_inverse=True)
    points, tets = points[used], tets.reshape(-1, 4)
    # orient every tetrahedron positively (corner 3 above the plane of 0, 1, 2)
    edges = points[tets[:, 1:]] - points[tets[:, :1]]
    flip = np.linalg.det(edges) < 0
    tets[flip] = tets[flip][:, [1, 0, 2, 3]]
    return points, tets


def largest_piece(points, tets):
    """The connected piece of the mesh with the most tetrahedra (a feature thinner than the
    lattice can leave stray fragments)."""
    rows = np.repeat(tets, 4, axis=1).ravel()
    graph = coo_matrix((np.ones(rows.size), (rows, np.tile(tets, 4).ravel())), shape=(len(points),) * 2)
    _, label = connected_components(graph, directed=False)
    keep = label[tets[:, 0]] == np.bincount(label[tets[:, 0]]).argmax()
    used, tets = np.unique(tets[keep], return_inverse=True)
    return points[used], tets.reshape(-1, 4)


def blob() -> meshio.Mesh:
    # the base plane y = BASE is a plane of lattice corners: those inside lie on the flat bottom
    # exactly (the lattice reaches one cube below it, so that the plane is not its edge)
    lo = np.array([-0.6, BASE - SPACING, -0.5])
    points, tets = largest_piece(*stuff(shape, lo, (0.8, 1.2, 0.5), SPACING))
    return meshio.Mesh(points, [("tetra", tets)])


def report(mesh: meshio.Mesh) -> str:
    tets = mesh.cells_dict["tetra"]
    angles, ratios = dihedral_angles(mesh.points, tets), radius_ratios(mesh.points, tets)
    return (f"{len(mesh.points)} vertices, {len(tets)} tetrahedra; dihedral angles "
            f"{angles.min():.1f}° – {angles.max():.1f}°, radius ratio min {ratios.min():.3f}, "
            f"mean {ratios.mean():.3f}")


if __name__ == "__main__":
    mesh = blob()
    meshio.write(OUT, mesh)
    print(f"{OUT}: {report(mesh)}")
