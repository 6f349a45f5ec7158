"""Shape quality of tetrahedra: dihedral angles and radius ratios.

Contract: pure functions of positions ``points`` (n, 3) and tetrahedra ``tets`` (m, 4) (vertex
indices); no validation. A regular tetrahedron has all six dihedral angles arccos(1/3) ≈ 70.53°
and radius ratio 1; a sliver (four nearly coplanar vertices) has angles near 0° and 180° and a
ratio near 0; a flat tetrahedron has ratio 0. Used by ``scripts/make_meshes.py`` to report and
check the shipped meshes, and by the tests that hold them to it.
"""

from __future__ import annotations

import numpy as np

# The two vertices of each of the six edges, and the two it leaves out (whose opposite faces
# meet at that edge).
_EDGES = ((0, 1, 2, 3), (0, 2, 1, 3), (0, 3, 1, 2), (1, 2, 0, 3), (1, 3, 0, 2), (2, 3, 0, 1))


def _face_normals(corners: np.ndarray) -> np.ndarray:
    """(m, 4, 3) outward area vectors (length twice the face's area) of the faces opposite each
    corner of the tetrahedra ``corners`` (m, 4, 3), whatever their orientation."""
    p0, p1, p2, p3 = (corners[:, k] for k in range(4))
    normals = np.stack([np.cross(p2 - p1, p3 - p1), np.cross(p3 - p0, p2 - p0),
                        np.cross(p1 - p0, p3 - p0), np.cross(p2 - p0, p1 - p0)], axis=1)
    # outward: away from the corner the face leaves out, towards the tetrahedron's centroid
    inward = corners - corners.mean(axis=1, keepdims=True)
    return normals * -np.sign(np.einsum("mkj,mkj->mk", normals, inward))[..., None]


def dihedral_angles(points: np.ndarray, tets: np.ndarray) -> np.ndarray:
    """(m, 6) interior dihedral angles [degrees] at the edges 01, 02, 03, 12, 13, 23."""
    normals = _face_normals(np.asarray(points, dtype=float)[np.asarray(tets)])
    unit = normals / np.linalg.norm(normals, axis=2, keepdims=True)
    cosines = [-np.einsum("mj,mj->m", unit[:, k], unit[:, l]) for _, _, k, l in _EDGES]
    return np.degrees(np.arccos(np.clip(np.stack(cosines, axis=1), -1.0, 1.0)))


def radius_ratios(points: np.ndarray, tets: np.ndarray) -> np.ndarray:
    """(m,) 3·inradius / circumradius: 1 for a regular tetrahedron, 0 for a flat one."""
    corners = np.asarray(points, dtype=float)[np.asarray(tets)]
    edges = corners[:, 1:] - corners[:, :1]  # (m, 3, 3)
    volume = np.abs(np.linalg.det(edges)) / 6.0
    area = 0.5 * np.linalg.norm(_face_normals(corners), axis=2).sum(axis=1)
    inradius = 3.0 * volume / area
    # circumcentre c (relative to corner 0): 2 e_i · c = |e_i|²
    rhs = 0.5 * np.einsum("mij,mij->mi", edges, edges)
    with np.errstate(all="ignore"):
        centre = np.linalg.solve(edges, rhs[..., None])[..., 0]
    circumradius = np.linalg.norm(centre, axis=1)
    return np.where(volume > 0, 3.0 * inradius / circumradius, 0.0)
