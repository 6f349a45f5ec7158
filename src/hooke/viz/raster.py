"""A small z-buffer rasterizer for shaded triangles (Numba): what Matplotlib's 3D axes cannot
do — a cloth lying millimetres above a ball or the floor hides exactly what is behind it, pixel
by pixel, where a depth sort of whole polygons (mplot3d's painter's algorithm) shows the ball
through the cloth.

Contract: :func:`render` takes world triangles (t, 3, 3) with z up, a normal per corner
(t, 3, 3), a colour per triangle (t, 3) and whether each is two-sided, and returns an RGB
image (height, width, 3) in [0, 1] of an orthographic camera at elevation ``elev`` and azimuth
``azim`` (degrees, as Matplotlib's ``view_init``) framing the box ``low``–``high``, with
Gouraud-shaded Lambert lighting (a light above, in front and to the right) and shadows from a
shadow map (the scene drawn from the light: a point nearer triangles hide from it gets ambient
light only), 2× supersampled. Nothing here knows hooke's models: :mod:`hooke.viz.bodies` turns
them into triangles.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

BACKGROUND = np.array([1.0, 1.0, 1.0])
AMBIENT, DIFFUSE = 0.38, 0.62


def camera(elev: float, azim: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(right, up, towards the eye) unit vectors of the camera."""
    e, a = math.radians(elev), math.radians(azim)
    eye = np.array([math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)])
    right = np.array([-math.sin(a), math.cos(a), 0.0])
    return right, np.cross(eye, right), eye


@njit(cache=True)
def _rasterize(screen, shade, image, depth):
    """Fill image (H, W, 3) and depth (H, W) with triangles: screen (t, 3, 3) pixel x, pixel y
    and depth (larger: nearer) of each corner; shade (t, 3, 3) the RGB of each corner."""
    height, width = depth.shape
    for t in range(screen.shape[0]):
        x0, y0, z0 = screen[t, 0, 0], screen[t, 0, 1], screen[t, 0, 2]
        x1, y1, z1 = screen[t, 1, 0], screen[t, 1, 1], screen[t, 1, 2]
        x2, y2, z2 = screen[t, 2, 0], screen[t, 2, 1], screen[t, 2, 2]
        area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
        if area == 0.0:
            continue
        left = max(int(math.floor(min(x0, x1, x2))), 0)
        right = min(int(math.ceil(max(x0, x1, x2))), width - 1)
        top = max(int(math.floor(min(y0, y1, y2))), 0)
        bottom = min(int(math.ceil(max(y0, y1, y2))), height - 1)
        for py in range(top, bottom + 1):
            cy = py + 0.5
            for px in range(left, right + 1):
                cx = px + 0.5
                w0 = ((x1 - cx) * (y2 - cy) - (x2 - cx) * (y1 - cy)) / area
                w1 = ((x2 - cx) * (y0 - cy) - (x0 - cx) * (y2 - cy)) / area
                w2 = 1.0 - w0 - w1
                if w0 < 0.0 or w1 < 0.0 or w2 < 0.0:
                    continue
                z = w0 * z0 + w1 * z1 + w2 * z2
                if z > depth[py, px]:
                    depth[py, px] = z
                    for c in range(3):
                        image[py, px, c] = (w0 * shade[t, 0, c] + w1 * shade[t, 1, c]
                                            + w2 * shade[t, 2, c])


def _project(points: np.ndarray, basis, low: np.ndarray, high: np.ndarray, width: int,
             height: int) -> np.ndarray:
    """points (…, 3) → (…, 3): pixel x, pixel y and depth (larger: nearer) of an orthographic
    camera (right, up, towards the eye) framing the box low–high in a width × height image."""
    right, up, eye = basis
    corners = np.array(np.meshgrid(*zip(low, high), indexing="ij")).reshape(3, -1).T
    u, v = corners @ right, corners @ up
    scale = min(width / np.ptp(u), height / np.ptp(v)) * 0.98
    out = np.empty(points.shape)
    out[..., 0] = (points @ right - u.mean()) * scale + width / 2
    out[..., 1] = height / 2 - (points @ up - v.mean()) * scale
    out[..., 2] = points @ eye
    return out


def render(triangles: np.ndarray, normals: np.ndarray, colours: np.ndarray,
           two_sided: np.ndarray, low: np.ndarray, high: np.ndarray, elev: float, azim: float,
           width: int, height: int, shadows: bool = True) -> np.ndarray:
    """The RGB image of the triangles (see the module docstring); with ``shadows``, a shadow
    map from the light: a point another triangle hides from the light gets ambient light only."""
    basis = camera(elev, azim)
    right, up, eye = basis
    light = 0.35 * right + 0.5 * up + eye
    light /= np.linalg.norm(light)
    size = (2 * height, 2 * width)  # 2×: supersampled
    screen = np.ascontiguousarray(_project(triangles, basis, low, high, size[1], size[0]))
    lit = normals.copy()
    facing = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0]) @ eye
    flip = two_sided & (facing < 0)  # the visible side of a cloth: turn its normals to the eye
    lit[flip] *= -1
    diffuse = DIFFUSE * np.clip(lit @ light, 0.0, 1.0)
    image = np.empty(size + (3,))
    image[:] = BACKGROUND
    _rasterize(screen, np.ascontiguousarray(colours[:, None, :] * (AMBIENT + diffuse[..., None])),
               image, np.full(size, -np.inf))
    if shadows:
        # the world point of each pixel, then its depth seen from the light against the nearest
        where = np.full(size + (3,), np.nan)
        _rasterize(screen, np.ascontiguousarray(triangles), where, np.full(size, -np.inf))
        across = np.cross(np.array([0.0, 0.0, 1.0]), light)
        across /= np.linalg.norm(across)
        light_basis = (across, np.cross(light, across), light)
        side = 1024
        from_light = np.ascontiguousarray(_project(triangles, light_basis, low, high, side, side))
        nearest = np.full((side, side), -np.inf)
        _rasterize(from_light, np.zeros(triangles.shape), np.zeros((side, side, 3)), nearest)
        seen = ~np.isnan(where[..., 0])
        spot = _project(where[seen], light_basis, low, high, side, side)
        col = np.clip(spot[:, 0].astype(int), 0, side - 1)
        row = np.clip(spot[:, 1].astype(int), 0, side - 1)
        bias = 3.0 * float(np.ptp(np.stack([low, high]), axis=0).max()) / side
        hidden = spot[:, 2] < nearest[row, col] - bias
        shade = image[seen]
        # ambient only in shadow: scale the lit colour by AMBIENT / (AMBIENT + its diffuse)
        dark = np.where(hidden[:, None], AMBIENT / (AMBIENT + DIFFUSE * 0.8), 1.0)
        image[seen] = shade * dark
    return np.clip(image, 0.0, 1.0).reshape(height, 2, width, 2, 3).mean(axis=(1, 3))
