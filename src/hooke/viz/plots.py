"""Plots of a Result (Matplotlib with the headless Agg backend).

Contract: every ``*_plot`` function takes a Result and an optional path and returns its
Matplotlib ``Figure`` (shown inline by Jupyter), also written as a PNG when a path is given:
``energy_plot``, ``phase_plot``, ``analytic_plot``, ``drift_plot`` (joint length error),
``penetration_plot`` (distance to the nearest plane, sphere or obstacle), ``snapshot_plot``, ``mode_shapes_plot``.
The plotted lines are the Result's own arrays (``fig.axes[0].lines[k].get_xydata()``). Figures
are not registered with pyplot, so they are freed like any object and never pile up. ``PLOTS``
maps the names used by ``hooke plot`` to them, and ``available(result)`` says which apply.
Configurations (snapshots, mode shapes, movie frames) are drawn by :class:`ConfigurationView`:
axes labelled in metres; in 3D at most five ticks an axis with labels that fit the figure, and
a body with cells (``Model.surface_triangles``) as its lit surface.

Arguments are checked before anything is drawn, each bad one a
:class:`~hooke.errors.HookeInputError` naming it: ``result`` a :class:`hooke.Result`; ``path``
None or a path ending in a suffix Matplotlib writes (``FIGURE_FORMATS``) that is not a directory
nor a file this process may not replace (its folder is made when missing); ``particle`` and
``axis`` indices in range; counts (``n_snapshots``, ``n_modes``) integers ≥ 1.

A plot that needs what a run lacks (``NEEDS``: joints for ``drift``, contact planes for
``penetration``, an analytic solution for ``analytic``, a free particle for ``phase`` and
``analytic``) refuses it with one :class:`~hooke.errors.HookeInputError` line,
``kind: 'drift' does not apply to this run, which has no joints (it applies: …)``, the check
:func:`check_kind` that ``hooke plot --kind`` makes too.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.colors import LightSource, to_rgb  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection  # noqa: E402

from ..analysis import energy_reference  # noqa: E402
from ..checks import _count  # noqa: E402
from ..errors import HookeInputError, as_path, is_count  # noqa: E402
from ..io.outputs import (check_replaceable, remove_stale_partials, writable_directory,  # noqa: E402
                          written_aside)
from ..obstacles import sphere_centers  # noqa: E402
from . import PLOT_KINDS  # noqa: E402
from .bodies import draw_2d, draw_3d  # noqa: E402


FIGURE_FORMATS = tuple(sorted(f".{kind}" for kind in FigureCanvasAgg.get_supported_filetypes()))


def output_path(path, field: str = "path", formats: tuple[str, ...] = FIGURE_FORMATS) -> Path | None:
    """``path`` (None: no file) as the Path of a file to write in one of ``formats`` (by its
    suffix): not a directory, not a file this process may not replace; its folder made when
    missing. Checked before any drawing; ``field`` names it in errors. A partial file of it
    that a writer killed midway left is removed (:func:`hooke.io.outputs.remove_stale_partials`)."""
    if path is None:
        return None
    path = as_path(path, field)
    if os.path.isdir(path):  # before the suffix: a folder named movie.gif is no movie either
        # (os.path's: a name too long is not a folder; check_replaceable then names the reason)
        raise HookeInputError(field, "is a directory, not a file", str(path))
    if path.suffix.lower() not in formats:
        raise HookeInputError(field, f"must end in one of {', '.join(formats)}", str(path))
    writable_directory(path.parent, field)  # first: a file where a folder should be is named
    check_replaceable(path, field)
    remove_stale_partials([path])  # of an earlier writer killed in the middle
    return path


def check_result(result) -> None:
    """Refuse anything but a :class:`hooke.Result` as the ``result`` to draw."""
    from ..result import Result

    if not isinstance(result, Result):
        raise HookeInputError("result", "must be a hooke.Result (of hooke.simulate or hooke.open)",
                              type(result).__name__)


def _start(result, path, particle=None, axis: int = 0):
    """The checked ``path`` of a plot of ``result``, after checking ``result``, and ``particle``
    and ``axis`` (for the plots of one particle's coordinate)."""
    check_result(result)
    model = result.scene.model
    for value, count, field, what in ((particle, model.n_particles, "particle", "a particle index"),
                                      (axis, model.dim, "axis", "an axis")):
        if (value is not None or field == "axis") and not (is_count(value) and 0 <= value < count):
            raise HookeInputError(field, f"must be {what} from 0 to {count - 1}", value)
    return output_path(path)


def _title(result) -> str:
    return f"{result.scene.name} — {result.integrator}, dt = {result.dt:g}"


def new_figure(**options) -> Figure:
    """A figure outside pyplot's registry, drawn by Agg (PNG files, pixels for movies)."""
    fig = Figure(**options)
    FigureCanvasAgg(fig)
    return fig


def finish(fig: Figure, path) -> Figure:
    """Lay out ``fig``, write it to ``path`` when one is given, return it."""
    fig.tight_layout()
    if path is not None:
        with written_aside(Path(path)) as partial:  # a link there is replaced, not written through
            fig.savefig(partial, dpi=110)
    return fig


def energy_plot(result, path=None) -> Figure:
    """Kinetic, potential and total energy against time; potential and total above the rest
    state for a scene that reads them so (``Scene.energy_reference``, the axis label says which:
    :func:`hooke.analysis.energy_reference`)."""
    path = _start(result, path)
    zero, label = energy_reference(result.scene)
    fig = new_figure(figsize=(7, 4))
    ax = fig.subplots()
    for key, style, shift in (("kinetic", "-", 0.0), ("potential", "-", zero), ("total", "k-", zero)):
        ax.plot(result.t, result.energy[key] - shift, style, label=key,
                lw=1.4 if key == "total" else 1.0)
    ax.set_xlabel("t [s]")
    ax.set_ylabel(label)
    ax.set_title(_title(result))
    ax.legend(loc="best")
    ax.grid(alpha=0.3)
    return finish(fig, path)


def _first_free(result) -> int:
    return int(np.flatnonzero(~result.scene.model.pinned)[0])


def phase_plot(result, path=None, particle: int | None = None, axis: int = 0) -> Figure:
    """Phase portrait: velocity against position of one particle along one axis."""
    path = _start(result, path, particle, axis)
    check_kind(result, "phase")
    particle = _first_free(result) if particle is None else particle
    fig = new_figure(figsize=(5.5, 5))
    ax = fig.subplots()
    x, v = result.x[:, particle, axis], result.v[:, particle, axis]
    ax.plot(x, v, lw=0.8, label="numerical")
    ax.plot(x[:1], v[:1], "o", color="tab:green", label="start")
    ax.plot(x[-1:], v[-1:], "s", color="tab:red", label="end")
    if result.has_analytic:
        exact = result.analytic()[:, particle, axis]
        ax.plot(exact, np.gradient(exact, result.t), "k--", lw=0.8, label="analytic")
    label = "xyz"[axis] if result.scene.model.dim > 1 else "x"
    ax.set_xlabel(f"{label} [m]")
    ax.set_ylabel(f"v{label} [m/s]")
    ax.set_title(f"{_title(result)}\nparticle {particle}", fontsize=10)
    ax.legend(loc="best")
    ax.grid(alpha=0.3)
    return finish(fig, path)


def drift_plot(result, path=None) -> Figure:
    """Constraint drift: the sum and the largest |L − L0| over the joints (floored at 1e-17 for
    the log scale)."""
    path = _start(result, path)
    check_kind(result, "drift")
    error = result.scene.model.joint_length_error(result.x)  # (frames, joints)
    fig = new_figure(figsize=(7, 4))
    ax = fig.subplots()
    ax.semilogy(result.t, np.maximum(error.sum(axis=1), 1e-17), label="Σ |L − L0|")
    ax.semilogy(result.t, np.maximum(error.max(axis=1), 1e-17), label="max |L − L0|")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("joint length error [m]")
    ax.set_title(_title(result))
    ax.legend(loc="best")
    ax.grid(alpha=0.3, which="both")
    return finish(fig, path)


def penetration_plot(result, path=None) -> Figure:
    """Smallest distance of any contact particle to any plane, sphere or obstacle; below zero
    would be penetration."""
    path = _start(result, path)
    check_kind(result, "penetration")
    fig = new_figure(figsize=(7, 4))
    ax = fig.subplots()
    model = result.scene.model
    bodies = [name for name, count in (("plane", model.n_planes), ("sphere", model.n_spheres),
                                       ("obstacle", model.n_obstacles)) if count]
    ax.plot(result.t, result.contact_distance, label="min distance to a " + " or ".join(bodies))
    dhat = model.contact_dhat
    ax.axhline(dhat, color="0.5", ls=":", label=f"barrier activation d̂ = {dhat:g} m")
    ax.axhline(0.0, color="tab:red", lw=0.8, label="contact")
    ax.set_yscale("symlog", linthresh=dhat / 10)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("distance [m]")
    ax.set_title(f"{_title(result)}\nmax penetration {max(0.0, -float(np.min(result.contact_distance))):.3g} m",
                 fontsize=10)
    ax.legend(loc="best")
    ax.grid(alpha=0.3)
    return finish(fig, path)


def analytic_plot(result, path=None, particle: int | None = None, axis: int = 0) -> Figure:
    """Numerical against analytic position of one particle (seed 000's plot), error below."""
    path = _start(result, path, particle, axis)
    check_kind(result, "analytic")
    particle = _first_free(result) if particle is None else particle
    exact = result.analytic()[:, particle, axis]
    fig = new_figure(figsize=(7, 5))
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    top.plot(result.t, result.x[:, particle, axis], label="numerical solution")
    top.plot(result.t, exact, "--", label="analytic solution")
    top.set_ylabel(f"x{'xyz'[axis] if result.scene.model.dim > 1 else ''} [m]")
    top.set_title(_title(result))
    top.legend(loc="upper right")
    top.grid(alpha=0.3)
    bottom.plot(result.t, result.x[:, particle, axis] - exact, color="tab:red")
    bottom.set_xlabel("t [s]")
    bottom.set_ylabel("error [m]")
    bottom.grid(alpha=0.3)
    return finish(fig, path)


class ConfigurationView:
    """Draws a model's particles (pinned ones marked) and springs at given positions, with the
    axes fixed to the extent of ``positions`` (frames, n, d) so frames can be compared and
    labelled with their units. A 3D body with surface triangles
    (:meth:`hooke.model.Model.surface_triangles`) is drawn as its lit surface instead of its
    springs and free particles."""

    def __init__(self, model, positions: np.ndarray):
        self.model = model
        flat = positions.reshape(-1, model.dim)
        if model.n_spheres:  # the balls in full, where they start
            centres = sphere_centers(model)
            radii = model.sphere_radii[:, None]
            flat = np.concatenate([flat, centres - radii, centres + radii])
        self.low, self.high = flat.min(axis=0), flat.max(axis=0)
        self.pad = 0.05 * max(float(np.max(self.high - self.low)), 1e-9)
        # 3D: draw the axis opposite to gravity as the vertical one (Matplotlib's z).
        gravity = model.gravity
        up = int(np.argmax(np.abs(gravity))) if np.any(gravity) else model.dim - 1
        self.order = [a for a in range(model.dim) if a != up] + [up]
        # Spheres or obstacle meshes in 3D: an image of shaded solids (a z-buffer: Matplotlib's
        # 3D axes cannot order a cloth and a ball that wraps it) on a plain axes, larger.
        self.solid = model.dim == 3 and bool(model.n_spheres or model.n_obstacles)
        self.projection = "3d" if model.dim == 3 and not self.solid else None
        self.faces = model.surface_triangles() if model.dim == 3 else np.empty((0, 3), int)

    def draw(self, ax, x: np.ndarray, t: float = 0.0) -> None:
        """Springs grey, joints black, free particles blue, pinned red, planes (2D) brown,
        spheres and obstacles (2D); in 3D the surface, where there is one, in place of the
        springs and free particles, and with spheres or obstacles all as shaded solids."""
        model, low, high, pad = self.model, self.low, self.high, self.pad
        i, j = model.spring_indices.T
        a, b = model.joint_indices.T if model.n_joints else (np.empty(0, int), np.empty(0, int))
        if model.dim == 3:
            if self.solid:  # an image of shaded solids (hooke.viz.bodies), not springs
                draw_3d(ax, model, x, t, self.order, (low - pad)[self.order],
                        (high + pad)[self.order])
                return
            x = x[:, self.order]
            if len(self.faces):
                ax.add_collection3d(lit_surface(x[self.faces]))
                i = j = np.empty(0, int)
            for p, q, colour, width in ((i, j, "0.55", 0.3), (a, b, "k", 1.2)):
                if p.size:
                    ax.add_collection3d(Line3DCollection(np.stack([x[p], x[q]], axis=1),
                                                         colors=colour, lw=width))
            if not len(self.faces):
                ax.scatter(*x[~model.pinned].T, s=10, color="tab:blue")
            ax.scatter(*x[model.pinned].T, s=12, color="tab:red")
            for set_limits, a in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), self.order):
                set_limits(low[a] - pad, high[a] + pad)
            # zoom < 1 leaves room inside the axes for the labels, which tight_layout ignores
            ax.set_box_aspect(np.maximum(high - low, 1e-9)[self.order], zoom=0.8)
            for axis, a in zip((ax.xaxis, ax.yaxis, ax.zaxis), self.order):
                axis.set_major_locator(MaxNLocator(4))  # fewer ticks: their labels do not touch
                axis.set_tick_params(labelsize=7, pad=0)
                axis.set_label_text(f"{'xyz'[a]} [m]", fontsize=8)
                axis.labelpad = 2
            return
        if model.dim == 1:
            x = np.column_stack([x[:, 0], np.zeros(len(x))])
        ax.add_collection(LineCollection(np.stack([x[i], x[j]], axis=1), colors="0.55", lw=0.5))
        ax.add_collection(LineCollection(np.stack([x[a], x[b]], axis=1), colors="k", lw=1.5))
        if model.dim == 2 and model.n_planes:
            self._draw_planes(ax, t)
        if model.dim == 2:
            draw_2d(ax, model, t)
        ax.scatter(*x[~model.pinned].T, s=6, color="tab:blue", zorder=3)
        ax.scatter(*x[model.pinned].T, s=24, color="tab:red", marker="s", zorder=4)
        ax.set_xlim(low[0] - pad, high[0] + pad)
        ax.set_xlabel("x [m]")
        if model.dim == 2:
            ax.set_ylim(low[1] - pad, high[1] + pad)
            ax.set_aspect("equal")
            ax.set_ylabel("y [m]")
        else:
            ax.set_ylim(-1, 1)
            ax.set_yticks([])


    def _draw_planes(self, ax, t: float) -> None:
        from ..energies.barrier import plane_offsets

        centre = 0.5 * (self.low + self.high)
        reach = 2.0 * float(np.max(self.high - self.low)) + 1.0
        for normal, offset in zip(self.model.plane_normals, plane_offsets(self.model, t)):
            foot = centre - (normal @ centre - offset) * normal
            tangent = np.array([-normal[1], normal[0]])
            ends = np.stack([foot - reach * tangent, foot + reach * tangent])
            ax.plot(*ends.T, color="saddlebrown", lw=1.5, zorder=2)
            ax.fill(*np.concatenate([ends, ends[::-1] - 0.05 * reach * normal]).T,
                    color="saddlebrown", alpha=0.15, zorder=1)


def lit_surface(corners: np.ndarray, colour="tab:blue") -> Poly3DCollection:
    """Triangles (f, 3, 3) shaded by a light from above (Matplotlib's LightSource, 55° up):
    brightness 0.35 + 0.65·|n·l| of the unit normal n, both sides lit alike (a cloth has no
    outside), so a fold shows as it turns from the light."""
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    length = np.linalg.norm(normals, axis=1, keepdims=True)
    light = LightSource(azdeg=290, altdeg=55).direction  # off the diagonal: x and y sides differ
    shade = np.abs(normals / np.where(length > 0, length, 1.0) @ light)
    colours = (0.35 + 0.65 * shade)[:, None] * np.asarray(to_rgb(colour))
    return Poly3DCollection(corners, facecolors=colours, edgecolors=0.8 * colours, linewidths=0.2)


# Frames more than this many times smaller than all of them together are drawn at their own scale.
SHARED_SCALE_RATIO = 4.0


def _size(positions: np.ndarray) -> float:
    """The largest extent along an axis of positions (..., n, d) [m]."""
    flat = positions.reshape(-1, positions.shape[-1])
    return float(np.max(np.ptp(flat, axis=0)))


def _with_ground(model, x: np.ndarray, t: float) -> np.ndarray:
    """x (n, d) and, in 2D, the foot of x's centre on every plane at time t: a panel fitted to
    the positions still shows how high above the ground they are."""
    if model.dim != 2 or not model.n_planes:
        return x
    from ..energies.barrier import plane_offsets

    centre = 0.5 * (x.min(axis=0) + x.max(axis=0))
    feet = centre - (model.plane_normals @ centre - plane_offsets(model, t))[:, None] * model.plane_normals
    return np.vstack([x, feet])


def snapshot_plot(result, path=None, n_snapshots: int = 4) -> Figure:
    """The configuration at a few frames: particles (pinned ones marked) and springs. The panels
    share one scale, so that frames compare, unless a frame is more than ``SHARED_SCALE_RATIO``
    times smaller than all of them together (a chain that falls from a height and piles up on
    the ground would be a speck): then each panel is fitted to its frame, and the title says so."""
    path = _start(result, path)
    n_snapshots = _count(n_snapshots, "n_snapshots")
    # more snapshots than frames are every frame (10**400 was NumPy's "Maximum allowed size")
    frames = np.unique(np.linspace(0, result.n_frames - 1, min(n_snapshots, result.n_frames))
                       .round().astype(int))
    model, positions = result.scene.model, result.x[frames]
    shared = min(_size(x) for x in positions) * SHARED_SCALE_RATIO >= _size(positions)
    views = ([ConfigurationView(model, positions)] * len(frames) if shared
             else [ConfigurationView(model, _with_ground(model, x, t)[None])
                   for x, t in zip(positions, result.t[frames])])
    width, height = (4.2, 3.8) if views[0].solid else (3.2, 3.4)
    fig = new_figure(figsize=(width * len(frames), height))
    # Fitted panels get widths by their shapes (a tall chain narrow, the flat pile wide).
    widths = [1.0] * len(frames) if shared or model.dim != 2 else [
        float(np.clip((view.high[0] - view.low[0]) / max(view.high[1] - view.low[1], 1e-12),
                      0.4, 4.0)) for view in views]
    grid = fig.add_gridspec(1, len(frames), width_ratios=widths)
    for k, (frame, view) in enumerate(zip(frames, views)):
        ax = fig.add_subplot(grid[0, k], projection=view.projection)
        view.draw(ax, result.x[frame], result.t[frame])
        ax.set_title(f"t = {result.t[frame]:.3g} s", fontsize=9)
        if widths[k] < 1.0:  # a narrow panel's tick labels would run into each other
            ax.xaxis.set_major_locator(MaxNLocator(nbins=2))
            ax.tick_params(axis="x", labelrotation=90)
    fig.suptitle(_title(result) + ("" if shared else " (each panel at its own scale)"), fontsize=10)
    return finish(fig, path)


def mode_shapes_plot(scene, modes, path=None, n_modes: int = 6) -> Figure:
    """The lowest mode shapes drawn over the equilibrium (scaled to 15 % of the system's size)."""
    from ..analysis import Modes
    from ..scene_setup import Scene

    if not isinstance(scene, Scene):
        raise HookeInputError("scene", "must be a hooke.Scene", type(scene).__name__)
    if not isinstance(modes, Modes):
        raise HookeInputError("modes", "must be hooke.Modes (of hooke.modes(scene))",
                              type(modes).__name__)
    n_modes = _count(n_modes, "n_modes")
    path = output_path(path)
    model = scene.model
    if np.shape(modes.equilibrium) != np.shape(model.x0):
        raise HookeInputError("modes", f"are not this scene's (its equilibrium has shape "
                              f"{np.shape(model.x0)}): hooke.modes(scene)",
                              np.shape(modes.equilibrium))
    count = min(n_modes, len(modes.frequencies))
    size = float(np.ptp(modes.equilibrium, axis=0).max()) or 1.0
    scaled = []
    for shape in modes.shapes[:count]:
        amplitude = float(np.abs(shape).max()) or 1.0
        scaled.append(modes.equilibrium + 0.15 * size * shape / amplitude)
    view = ConfigurationView(model, np.stack([modes.equilibrium, *scaled]))
    fig = new_figure(figsize=(3.2 * count, 3.4))
    for k in range(count):
        ax = fig.add_subplot(1, count, k + 1, projection=view.projection)
        view.draw(ax, scaled[k])
        ax.set_title(f"mode {k + 1}: {modes.frequencies[k]:.4g} Hz", fontsize=9)
    fig.suptitle(f"{scene.name}: mode shapes about the static equilibrium", fontsize=10)
    return finish(fig, path)


PLOTS = dict(zip(PLOT_KINDS, (energy_plot, phase_plot, snapshot_plot, analytic_plot, drift_plot,
                              penetration_plot), strict=True))
# What a run may lack: (the plots that need it, what it is, whether a Result has it).
NEEDS = ((("phase", "analytic"), "free particle", lambda result: not result.scene.model.pinned.all()),
         (("analytic",), "analytic solution", lambda result: result.has_analytic),
         (("drift",), "joints", lambda result: result.scene.model.n_joints > 0),
         (("penetration",), "contact planes, spheres or obstacles",
          lambda result: contact_bodies(result.scene.model)))


def contact_bodies(model) -> bool:
    """Whether the model has contact planes, spheres or obstacles."""
    return bool(model.n_planes or model.n_spheres or model.n_obstacles)


def _lacking(result, kind: str) -> str | None:
    """What ``result`` lacks for the plot ``kind``; None when the plot applies."""
    return next((what for kinds, what, has in NEEDS if kind in kinds and not has(result)), None)


def available(result) -> list[str]:
    """The plot names that apply to ``result``."""
    return [kind for kind in PLOTS if _lacking(result, kind) is None]


def check_kind(result, kind: str, field: str = "kind") -> None:
    """Refuse a plot ``kind`` that is unknown or does not apply to ``result``, as an input error
    on ``field`` (the plot functions' "kind", the CLI's "--kind")."""
    if not isinstance(kind, str) or kind not in PLOTS:  # an array: unhashable
        raise HookeInputError(field, f"unknown plot (known: {', '.join(PLOTS)})", kind)
    lacking = _lacking(result, kind)
    if lacking is not None:
        raise HookeInputError(field, f"'{kind}' does not apply to this run, which has no {lacking} "
                              f"(it applies: {', '.join(available(result))})", kind)
