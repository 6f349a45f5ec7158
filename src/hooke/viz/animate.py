"""Animations of a Result as .mp4 (imageio with its bundled ffmpeg) or .gif.

Contract: ``animate(result, path, fps=30, duration=None)`` renders frames with the same drawing as
:func:`hooke.viz.plots.snapshot_plot`, picking saved frames evenly so the movie plays in real
time (or lasts ``duration`` seconds), and returns the path. The suffix selects the format.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import HookeInputError
from .plots import ConfigurationView, new_figure

FORMATS = (".mp4", ".gif")


def frame_indices(t: np.ndarray, fps: float, duration: float | None) -> np.ndarray:
    """Saved frames to show: evenly spaced in time, fps·duration of them (real time by default)."""
    span = float(t[-1] - t[0])
    length = span if duration is None else duration
    count = int(max(2, min(len(t), round(fps * max(length, 1.0 / fps)))))
    targets = np.linspace(t[0], t[-1], count)
    return np.unique(np.searchsorted(t, targets).clip(0, len(t) - 1))


def animate(result, path, fps: float = 30.0, duration: float | None = None, dpi: int = 90) -> Path:
    import imageio.v2 as imageio

    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise HookeInputError("out", f"must end in one of {', '.join(FORMATS)}", str(path))
    if not np.isfinite(fps) or fps <= 0:
        raise HookeInputError("fps", "must be a number > 0", fps)
    frames = frame_indices(result.t, fps, duration)
    view = ConfigurationView(result.scene.model, result.x[frames])
    fig = new_figure(figsize=(6, 5), dpi=dpi)
    options = {"fps": fps, "macro_block_size": 1} if path.suffix.lower() == ".mp4" else {"duration": 1 / fps}
    path.parent.mkdir(parents=True, exist_ok=True)
    with imageio.get_writer(path, **options) as writer:
        for frame in frames:
            fig.clear()
            ax = fig.add_subplot(1, 1, 1, projection=view.projection)
            view.draw(ax, result.x[frame], result.t[frame])
            ax.set_title(f"{result.scene.name} — {result.integrator}   t = {result.t[frame]:.3f} s",
                         fontsize=10)
            fig.canvas.draw()
            writer.append_data(np.asarray(fig.canvas.buffer_rgba())[..., :3])
    return path
