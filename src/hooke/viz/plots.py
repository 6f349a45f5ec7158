"""Plots of a Result, written as PNG files (Matplotlib with the headless Agg backend).

Contract: every function takes a Result and a path, writes one PNG and returns the path.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from mpl_toolkits.mplot3d.art3d import Line3DCollection  # noqa: E402


def _title(result) -> str:
    return f"{result.scene.name} — {result.integrator}, dt = {result.dt:g}"


def save_figure(fig, path) -> Path:
    path = Path(path)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def energy_plot(result, path) -> Path:
    """Kinetic, potential and total energy against time."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, style in (("kinetic", "-"), ("potential", "-"), ("total", "k-")):
        ax.plot(result.t, result.energy[key], style, label=key, lw=1.4 if key == "total" else 1.0)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("energy [J]")
    ax.set_title(_title(result))
    ax.legend(loc="best")
    ax.grid(alpha=0.3)
    return save_figure(fig, path)


def analytic_plot(result, path, particle: int | None = None, axis: int = 0) -> Path:
    """Numerical against analytic position of one particle (seed 000's plot)."""
    if particle is None:
        particle = int(np.flatnonzero(~result.scene.model.pinned)[0])
    exact = result.analytic()[:, particle, axis]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 1]})
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
    return save_figure(fig, path)


def snapshot_plot(result, path, n_snapshots: int = 4) -> Path:
    """The configuration at a few frames: particles (pinned ones marked) and springs."""
    model = result.scene.model
    frames = np.unique(np.linspace(0, result.n_frames - 1, n_snapshots).round().astype(int))
    projection = "3d" if model.dim == 3 else None
    fig = plt.figure(figsize=(3.2 * len(frames), 3.4))
    all_x = result.x[frames].reshape(-1, model.dim)
    low, high = all_x.min(axis=0), all_x.max(axis=0)
    pad = 0.05 * max(float(np.max(high - low)), 1e-9)
    # 3D: draw the axis opposite to gravity as the vertical one (Matplotlib's z).
    up = int(np.argmax(np.abs(model.gravity))) if np.any(model.gravity) else model.dim - 1
    order = [a for a in range(model.dim) if a != up] + [up]
    for k, frame in enumerate(frames):
        ax = fig.add_subplot(1, len(frames), k + 1, projection=projection)
        x = result.x[frame]
        if model.dim == 1:
            x = np.column_stack([x[:, 0], np.zeros(len(x))])
        i, j = model.spring_indices.T
        if model.dim == 3:
            x = x[:, order]
            ax.add_collection3d(Line3DCollection(np.stack([x[i], x[j]], axis=1), colors="0.55", lw=0.3))
            ax.scatter(*x[~model.pinned].T, s=4, color="tab:blue")
            ax.scatter(*x[model.pinned].T, s=12, color="tab:red")
            for set_limits, a in zip((ax.set_xlim, ax.set_ylim, ax.set_zlim), order):
                set_limits(low[a] - pad, high[a] + pad)
            ax.set_box_aspect(np.maximum(high - low, 1e-9)[order])
            ax.set_xlabel("xyz"[order[0]])
            ax.set_ylabel("xyz"[order[1]])
            ax.set_zlabel("xyz"[order[2]])
        else:
            ax.add_collection(LineCollection(np.stack([x[i], x[j]], axis=1), colors="0.55", lw=0.5))
            ax.scatter(*x[~model.pinned].T, s=6, color="tab:blue", zorder=3)
            ax.scatter(*x[model.pinned].T, s=24, color="tab:red", marker="s", zorder=4)
            ax.set_xlim(low[0] - pad, high[0] + pad)
            if model.dim == 2:
                ax.set_ylim(low[1] - pad, high[1] + pad)
                ax.set_aspect("equal")
            else:
                ax.set_ylim(-1, 1)
                ax.set_yticks([])
        ax.set_title(f"t = {result.t[frame]:.3g} s", fontsize=9)
    fig.suptitle(_title(result), fontsize=10)
    return save_figure(fig, path)
