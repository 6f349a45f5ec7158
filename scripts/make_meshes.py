"""Generate the tetrahedral meshes shipped with hooke (run once; the output is committed).

blob.vtu: a rabbit-like soft body (body, head and two ears as ellipsoids) about 1 m tall, the
stand-in for seed 001's 699-vertex tet bunny, which cannot be downloaded here. Points of a jittered
lattice inside the shape are tetrahedralised by Delaunay (SciPy/Qhull); tetrahedra whose centroid
lies outside the shape or that are nearly flat are dropped.
"""

from pathlib import Path

import meshio
import numpy as np
from scipy.spatial import Delaunay

ELLIPSOIDS = [  # centre, semi-axes
    ((0.0, 0.30, 0.0), (0.45, 0.30, 0.32)),   # body
    ((0.38, 0.62, 0.0), (0.22, 0.20, 0.20)),  # head
    ((0.34, 0.92, -0.08), (0.05, 0.20, 0.05)),  # ear
    ((0.44, 0.92, 0.08), (0.05, 0.20, 0.05)),   # ear
]


def inside(points: np.ndarray, margin: float = 1.0) -> np.ndarray:
    hit = np.zeros(len(points), dtype=bool)
    for centre, axes in ELLIPSOIDS:
        hit |= np.sum(((points - centre) / axes) ** 2, axis=1) <= margin
    return hit


def blob(spacing: float = 0.068, seed: int = 7) -> meshio.Mesh:
    rng = np.random.default_rng(seed)
    axes = [np.arange(-0.6, 1.3, spacing)] * 3
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    grid += rng.uniform(-0.08, 0.08, grid.shape) * spacing
    points = grid[inside(grid)]
    tets = Delaunay(points).simplices
    centroids = points[tets].mean(axis=1)
    keep = inside(centroids, margin=1.0)
    edges = points[tets[:, 1:]] - points[tets[:, :1]]
    volume = np.abs(np.linalg.det(edges)) / 6
    keep &= volume > 0.02 * spacing**3
    tets = tets[keep]
    used, tets = np.unique(tets, return_inverse=True)
    return meshio.Mesh(points[used], [("tetra", tets.reshape(-1, 4))])


if __name__ == "__main__":
    out = Path(__file__).resolve().parents[1] / "src/hooke/scenes/meshes/blob.vtu"
    mesh = blob()
    meshio.write(out, mesh)
    print(f"{out}: {len(mesh.points)} vertices, {len(mesh.cells[0].data)} tetrahedra")
