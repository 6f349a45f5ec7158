"""Which engine for contact between surfaces: the measurement behind hooke's choice of ipctk.

    .venv/bin/python benchmarks/bench_surface_engine.py [--repeats 20]

Cases, each at its own distance below d̂ = 0.01 so that the barrier is active:
- 2D: two squares of side 0.45 (the ``squares_self_contact`` geometry), 5 mm apart, with
  n_seg = 2 (16 boundary segments, the scene) and n_seg = 80 (640 boundary segments);
- 3D: a 40 × 40 cloth over a copy of itself 5 mm below (3,200 vertices, 6,084 triangles).
For each: ms to build the collision set (broad + narrow phase), the barrier's value, gradient and
PSD-projected Hessian (``hooke.energies.surface_barrier``'s calls), and one CCD step bound
(``compute_collision_free_stepsize``) for a motion of 1 cm towards the other body, with three
broad phases and both narrow phases ipctk offers (in 3D the additive one only: tight inclusion
took minutes on this contact, where every face is within d̂ of another). The 2D peer is the least a hand-written Numba point–segment barrier
would cost: a brute-force loop over every (point, segment) pair computing the squared distance,
the barrier and its gradient (no Hessian, no CCD, no broad phase). Medians of ``--repeats``
calls after a warm-up. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import math

import ipctk
import numpy as np
from numba import njit

from bench import median_time

DHAT, KAPPA = 0.01, 1e5


def median_ms(function, repeats: int) -> float:
    return 1e3 * median_time(function, repeats)


def two_squares(n_seg: int, gap: float = 0.005):
    """Boundary vertices (V, 2) and segments (E, 2) of two squares of side 0.45, one above the
    other with ``gap`` between them."""
    side = 0.45
    line = np.linspace(-side / 2, side / 2, n_seg + 1)
    ids = np.arange((n_seg + 1) ** 2).reshape(n_seg + 1, n_seg + 1)
    grid = np.stack(np.meshgrid(line, line, indexing="ij"), -1).reshape(-1, 2)
    loop = np.concatenate([ids[:, 0], ids[-1, 1:], ids[-2::-1, -1], ids[0, -2:0:-1]])
    boundary = grid[loop]
    segments = np.stack([np.arange(len(loop)), np.roll(np.arange(len(loop)), -1)], 1)
    vertices = np.concatenate([boundary, boundary + (0.045, -side - gap)])
    return vertices, np.concatenate([segments, segments + len(loop)])


def folded_cloth(n: int = 40, gap: float = 0.005):
    """Two n × n sheets of side 1 (vertices (2n², 3), triangles), ``gap`` apart along y."""
    line = np.linspace(0.0, 1.0, n)
    i, k = np.meshgrid(line, line, indexing="ij")
    sheet = np.stack([i.ravel(), np.zeros(n * n), k.ravel()], 1)
    ids = np.arange(n * n).reshape(n, n)
    a, b, c, d = ids[:-1, :-1].ravel(), ids[1:, :-1].ravel(), ids[:-1, 1:].ravel(), ids[1:, 1:].ravel()
    triangles = np.concatenate([np.stack([a, b, d], 1), np.stack([a, d, c], 1)])
    vertices = np.concatenate([sheet, sheet + (0.003, -gap, 0.002)])
    return vertices, np.concatenate([triangles, triangles + n * n])


@njit(cache=True)
def _brute_force_point_segment(x, points, segments, dhat, kappa, weight, gradient):
    """Σ over (point, segment) pairs not sharing a vertex of the book's squared-distance barrier
    and its gradient: the least a hand-written 2D point–segment barrier computes per evaluation."""
    total = 0.0
    gradient[:] = 0.0
    dhat2 = dhat * dhat
    for p in points:
        for s in range(segments.shape[0]):
            a, b = segments[s, 0], segments[s, 1]
            if p == a or p == b:
                continue
            ex, ey = x[b, 0] - x[a, 0], x[b, 1] - x[a, 1]
            t = ((x[p, 0] - x[a, 0]) * ex + (x[p, 1] - x[a, 1]) * ey) / (ex * ex + ey * ey)
            t = min(1.0, max(0.0, t))
            rx, ry = x[p, 0] - x[a, 0] - t * ex, x[p, 1] - x[a, 1] - t * ey
            d2 = rx * rx + ry * ry
            if d2 >= dhat2:
                continue
            s2 = d2 / dhat2
            total += weight * kappa * dhat / 8 * (s2 - 1) * math.log(s2)
            db = weight * kappa * dhat / 8 * (math.log(s2) + (s2 - 1) / s2) / dhat2 * 2
            gradient[p, 0] += db * rx
            gradient[p, 1] += db * ry
            gradient[a, 0] -= db * (1 - t) * rx
            gradient[a, 1] -= db * (1 - t) * ry
            gradient[b, 0] -= db * t * rx
            gradient[b, 1] -= db * t * ry
    return total


BROAD_PHASES = {"default": None, "HashGrid": ipctk.HashGrid, "SweepAndPrune": ipctk.SweepAndPrune}
NARROW_PHASES = {"TightInclusion": ipctk.TightInclusionCCD, "Additive": ipctk.AdditiveCCD}


def measure(label: str, vertices: np.ndarray, elements: np.ndarray, repeats: int) -> None:
    vertices = np.asfortranarray(vertices)
    if vertices.shape[1] == 2:
        mesh = ipctk.CollisionMesh(vertices, np.asfortranarray(elements.astype(np.int32)))
    else:
        faces = np.asfortranarray(elements.astype(np.int32))
        mesh = ipctk.CollisionMesh(vertices, ipctk.edges(faces), faces)
    collisions = ipctk.NormalCollisions()
    collisions.use_area_weighting = True
    barrier = ipctk.BarrierPotential(DHAT, KAPPA / 8, use_physical_barrier=True)
    collisions.build(mesh, vertices, DHAT)
    moved = vertices.copy()
    moved[: len(moved) // 2, 1] -= 0.01  # 1 cm towards the other body, 5 mm away
    moved = np.asfortranarray(moved)
    row = {
        "build": median_ms(lambda: collisions.build(mesh, vertices, DHAT), repeats),
        "value": median_ms(lambda: barrier(collisions, mesh, vertices), repeats),
        "gradient": median_ms(lambda: barrier.gradient(collisions, mesh, vertices), repeats),
        "hessian": median_ms(lambda: barrier.hessian(collisions, mesh, vertices,
                                                     ipctk.PSDProjectionMethod.CLAMP), repeats),
    }
    print(f"\n{label}: {mesh.num_vertices} vertices, {mesh.num_edges} edges, {mesh.num_faces} "
          f"faces; {len(collisions)} active collisions")
    print("  ipctk: " + ", ".join(f"{key} {value:.3f} ms" for key, value in row.items())
          + f"; total {sum(row.values()):.3f} ms")
    for (name, broad), (narrow_name, narrow) in itertools.product(BROAD_PHASES.items(),
                                                                  NARROW_PHASES.items()):
        if narrow_name == "TightInclusion" and vertices.shape[1] == 3:
            continue  # minutes on this dense contact (every face within d̂ of another)
        def ccd(broad=broad, narrow=narrow):
            return ipctk.compute_collision_free_stepsize(
                mesh, vertices, moved, broad_phase=None if broad is None else broad(),
                narrow_phase_ccd=narrow())
        print(f"  CCD, {name:13s} + {narrow_name:14s}: {median_ms(ccd, max(3, repeats // 4)):8.3f}"
              f" ms (step bound {ccd():.4f})")
    if vertices.shape[1] == 2:
        x = np.ascontiguousarray(vertices)
        points = np.arange(len(x))
        segments = np.ascontiguousarray(elements, dtype=np.int64)
        out = np.zeros_like(x)
        numba_ms = median_ms(lambda: _brute_force_point_segment(
            x, points, segments, DHAT, KAPPA, 0.5 * 0.225, out), repeats)
        print(f"  hand-written Numba, brute force value + gradient only: {numba_ms:.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(f"ipctk {ipctk.__version__}, {ipctk.get_num_threads()} threads")
    measure("2D squares, n_seg = 2", *two_squares(2), args.repeats)
    measure("2D squares, n_seg = 80", *two_squares(80), args.repeats)
    measure("3D cloth 40 x 40 over itself", *folded_cloth(40), args.repeats)


if __name__ == "__main__":
    main()
