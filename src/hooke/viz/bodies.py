"""Contact bodies drawn as solids: a 3D model's surfaces, spheres, obstacle meshes and floor
planes as one shaded image (:mod:`hooke.viz.raster`'s z-buffer: a cloth resting on a ball hides
it pixel by pixel), and spheres and obstacles in 2D as circles and lines.

Contract: :func:`draw_3d` shows on a plain (2D) axes the image of ``model`` at time t with its
particles at x, seen from elevation/azimuth (degrees) with "up" = ``order[-1]`` (the axis
opposite to gravity), framing the box ``low``–``high`` (in the original axes); :func:`draw_2d`
adds the spheres and obstacle polylines to a 2D view. Surfaces are Gouraud-shaded with normals
averaged at their vertices and two-sided (a cloth has no outside), spheres smooth, obstacles
flat, floor planes (not walls) as two-tone tiles filling the box so that their tilt and the
distances on them read.
"""

from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgb
from matplotlib.patches import Circle

from ..energies.barrier import plane_offsets
from ..obstacles import obstacle_vertices, sphere_centers
from .raster import render

SURFACE, SPHERE, OBSTACLE, GROUND = "#3d7cc9", "#e0a458", "#8fae8b", ("#e4e1da", "#cfcbc2")
PIXELS_PER_INCH = 110  # the figures' dpi (hooke.viz.plots.finish)


def _sphere_triangles(center: np.ndarray, radius: float, rings: int = 32):
    """(t, 3, 3) a UV sphere's triangles and their corners' normals."""
    theta = np.linspace(0.0, np.pi, rings + 1)
    phi = np.linspace(0.0, 2 * np.pi, 2 * rings + 1)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    unit = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], axis=-1)
    a, b, c, d = unit[:-1, :-1], unit[1:, :-1], unit[1:, 1:], unit[:-1, 1:]
    normals = np.concatenate([np.stack([a, b, c], axis=-2).reshape(-1, 3, 3),
                              np.stack([a, c, d], axis=-2).reshape(-1, 3, 3)])
    return center + radius * normals, normals


def _plane_tiles(normal: np.ndarray, offset: float, low: np.ndarray, high: np.ndarray,
                 tiles: int = 14):
    """(t, 3, 3) triangles of the plane {n·x = offset} (z up, not vertical) over the box's
    floor, and each one's tile parity (a checkerboard)."""
    gx, gy = np.meshgrid(np.linspace(low[0], high[0], tiles + 1),
                         np.linspace(low[1], high[1], tiles + 1), indexing="ij")
    points = np.stack([gx, gy, (offset - normal[0] * gx - normal[1] * gy) / normal[2]], axis=-1)
    a, b, c, d = points[:-1, :-1], points[1:, :-1], points[1:, 1:], points[:-1, 1:]
    parity = (np.add.outer(np.arange(tiles), np.arange(tiles)) % 2).reshape(-1)
    return (np.concatenate([np.stack([a, b, c], -2).reshape(-1, 3, 3),
                            np.stack([a, c, d], -2).reshape(-1, 3, 3)]),
            np.concatenate([parity, parity]))


def _vertex_normals(points: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """(n, 3) area-weighted mean normals of the faces at each vertex (unit; 0 off the faces)."""
    corners = points[faces]
    face = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    out = np.zeros_like(points)
    for k in range(3):
        np.add.at(out, faces[:, k], face)
    length = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(length > 0, length, 1.0)


def _flat(triangles: np.ndarray) -> np.ndarray:
    """(t, 3, 3) each triangle's unit normal at its three corners."""
    face = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    face /= np.maximum(np.linalg.norm(face, axis=1, keepdims=True), 1e-300)
    return np.repeat(face[:, None, :], 3, axis=1)


def bodies_image(model, x: np.ndarray, t: float, order: list[int], low: np.ndarray,
                 high: np.ndarray, elev: float, azim: float, width: int,
                 height: int) -> np.ndarray:
    """(height, width, 3) RGB image of the model's solids at time t (see the module
    docstring); ``low``, ``high`` in the drawing's axis order (z up)."""
    parts = []  # (triangles, corner normals, colour(s), two-sided)
    x = np.asarray(x)[:, order]
    for normal, offset in zip(model.plane_normals[:, order], plane_offsets(model, t)):
        if abs(normal[2]) > 0.3 * np.linalg.norm(normal):  # floors and slopes, not walls
            tiles, parity = _plane_tiles(normal, offset, low, high)
            parts.append((tiles, _flat(tiles), np.array([to_rgb(GROUND[p]) for p in parity]),
                          True))
    if model.n_surface_faces:
        faces = model.surface_faces
        parts.append((x[faces], _vertex_normals(x, faces)[faces], to_rgb(SURFACE), True))
    for centre, radius in zip(sphere_centers(model, t)[:, order], model.sphere_radii):
        parts.append((*_sphere_triangles(centre, radius), to_rgb(SPHERE), False))
    if model.n_obstacles:
        triangles = obstacle_vertices(model, t)[:, order][model.obstacle_faces]
        parts.append((triangles, _flat(triangles), to_rgb(OBSTACLE), True))
    if not parts:
        return np.ones((height, width, 3))
    colours = [np.broadcast_to(np.asarray(c, dtype=float), (len(tri), 3)) for tri, _, c, _ in parts]
    sided = [np.full(len(tri), two) for tri, _, _, two in parts]
    return render(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                  np.concatenate(colours), np.concatenate(sided), low, high, elev, azim, width,
                  height)


def draw_3d(ax, model, x: np.ndarray, t: float, order: list[int], low: np.ndarray,
            high: np.ndarray, elev: float = 24.0, azim: float = -58.0) -> None:
    """The solids' image on ``ax`` (a plain axes, turned off), at its size in pixels."""
    box = ax.get_position()
    size = ax.figure.get_size_inches() * PIXELS_PER_INCH
    width, height = max(int(box.width * size[0]), 16), max(int(box.height * size[1]), 16)
    ax.imshow(bodies_image(model, x, t, order, low, high, elev, azim, width, height),
              interpolation="lanczos")
    ax.set_axis_off()


def draw_2d(ax, model, t: float) -> None:
    """The model's spheres (circles) and obstacle polylines at time t."""
    for centre, radius in zip(sphere_centers(model, t), model.sphere_radii):
        ax.add_patch(Circle(centre, radius, facecolor=SPHERE, edgecolor="0.3", lw=0.8,
                            alpha=0.8, zorder=1))
    if model.n_obstacles:
        segments = obstacle_vertices(model, t)[model.obstacle_faces]
        ax.add_collection(LineCollection(segments, colors="0.25", lw=2.0, zorder=2))
