"""Animations of a Result as .mp4 (imageio with its bundled ffmpeg) or .gif (Pillow).

Contract: ``animate(result, path, fps=30, duration=None, progress=None)`` renders frames with the
same drawing as :func:`hooke.viz.plots.snapshot_plot` (axes in metres; a 3D body's lit surface
where it has one), picking saved frames evenly so the movie plays in real time (or lasts
``duration`` seconds; a saved frame is held where the run saved fewer than the movie shows), and
returns the path; at most ``MAX_MOVIE_FRAMES`` frames (``GIF_MAX_FRAMES`` for a GIF, whose
frames are held in memory), else one error naming ``duration`` or ``fps``; ``fps`` from
``MP4_MIN_FPS`` (``GIF_MIN_FPS`` to ``GIF_MAX_FPS`` for a GIF); ``progress(done, total)`` is
called after each frame. The suffix selects the format. Where the movie cannot be written is refused before any
frame is drawn (:func:`hooke.viz.plots.output_path`: an earlier movie there that may not
be written is kept), as is every other bad argument, by name (``result``, ``path``, ``fps``,
``duration``, ``dpi``, ``progress``); the movie is written beside ``path`` and renamed to
it once complete, so a failed write leaves no partial movie and an earlier one as it was.

Timing: an mp4 stores ``fps`` in its container. A GIF stores each frame's delay in whole
hundredths of a second, so a frame lasts 1/fps rounded to them: frame k ends at
round(100·(k + 1)/fps) cs (:func:`gif_durations`: at 30 fps 30, 40, 30 ms …, at 12 fps 80, 90,
80 ms …), which keeps the movie's length count/fps to within 5 ms. Browsers show delays under
0.02 s as 0.1 s, so a GIF refuses fps > 50. GIFs loop forever (the NETSCAPE loop extension with
count 0).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import HookeInputError, is_count, is_number
from ..io.outputs import written_aside
from .plots import ConfigurationView, check_result, new_figure, output_path

FORMATS = (".mp4", ".gif")
GIF_MAX_FPS = 50.0
GIF_MIN_FPS = 100 / 65_534  # a GIF frame's delay is 16 bits of hundredths: at most 655.35 s
# An mp4 frame lasts at most 10⁴ s (2.8 h): at 1e-9 fps ffmpeg got a rate of 0 and refused it
# in a dozen lines of its own; at 1e-6 its muxer failed and a broken file was kept silently;
# at 1e-5 readers show the rate as 0.
MP4_MIN_FPS = 1e-4
# Frames of one movie, at most: 11 minutes at 30 fps, rendered at about 20 ms each. A GIF's
# frames are all held in memory until it is written (Pillow), so it has a bound of its own.
MAX_MOVIE_FRAMES = 20_000
GIF_MAX_FRAMES = 2_000
MAX_DPI = 1200  # a 6 x 5 inch frame: 7200 x 6000 pixels
# At fewer dots per inch FreeType cannot size the labels' smallest font (below one pixel per
# em): dpi=1 to 5 was "RuntimeError: FT_Set_Char_Size … invalid ppem value" (a 3D body's at 5).
MIN_DPI = 10


def frame_indices(t: np.ndarray, fps: float, duration: float | None) -> np.ndarray:
    """Saved frames to show: evenly spaced in time, fps·duration of them (real time by default);
    where the run saved fewer, a saved frame is held (shown again), so the movie lasts what it
    was asked to. More than MAX_MOVIE_FRAMES is refused, naming duration (or fps)."""
    span = float(t[-1] - t[0])
    length = span if duration is None else duration
    wanted = fps * max(length, 1.0 / fps)
    if wanted > MAX_MOVIE_FRAMES:  # first: fps·duration may be inf, which round() cannot take
        field, value = ("duration", duration) if duration is not None else ("fps", fps)
        raise HookeInputError(field, f"the movie would have {wanted:.3g} frames ({fps:g} fps for "
                              f"{length:g} s), more than the {MAX_MOVIE_FRAMES:,} a movie may "
                              "have: choose a lower fps or a shorter duration", value)
    if duration is not None and round(fps * duration) < 2:  # it was made 2 frames long anyway
        raise HookeInputError("duration", f"must be at least two frames long ({2 / fps:.3g} s at "
                              f"{fps:g} fps): a shorter movie cannot be made", duration)
    count = int(max(2, round(wanted)))
    targets = np.linspace(t[0], t[-1], count)
    return np.searchsorted(t, targets).clip(0, len(t) - 1)


def gif_durations(count: int, fps: float) -> list[int]:
    """The delay of each of ``count`` GIF frames in ms, whole hundredths of a second: frame k
    ends at round(100·(k + 1)/fps) cs, so the total stays count/fps (see the module's notes)."""
    ends = np.round(np.arange(count + 1) * 100.0 / fps)
    return [int(10 * step) for step in np.diff(ends)]


def animate(result, path, fps: float = 30.0, duration: float | None = None, dpi: int = 90,
            progress=None) -> Path:
    """Render ``result`` as a movie at ``path`` (.mp4 or .gif) and return the path (see the
    module docstring)."""
    import imageio.v2 as imageio

    check_result(result)
    if path is None:  # the plots' "no file": a movie has nowhere else to go
        raise HookeInputError("path", f"must be a movie file ({' or '.join(FORMATS)})", None)
    path = output_path(path, "path", FORMATS)
    suffix = path.suffix.lower()
    if not is_count(dpi) or not MIN_DPI <= dpi <= MAX_DPI:
        raise HookeInputError("dpi", f"must be an integer from {MIN_DPI} to {MAX_DPI}", dpi)
    if progress is not None and not callable(progress):
        raise HookeInputError("progress", "must be None or a callable progress(done, total)",
                              progress)
    if not is_number(fps) or not np.isfinite(fps) or fps <= 0:
        raise HookeInputError("fps", "must be a number > 0", fps)
    if duration is not None and (not is_number(duration) or not np.isfinite(duration)
                                 or duration <= 0):  # -1 made a 2-frame movie
        raise HookeInputError("duration", "must be None (real time) or a number > 0 [s]", duration)
    if suffix == ".gif" and fps > GIF_MAX_FPS:
        raise HookeInputError("fps", f"must be <= {GIF_MAX_FPS:g} for a GIF (browsers show frame "
                              "delays under 0.02 s as 0.1 s); use an .mp4", fps)
    if suffix == ".mp4" and fps < MP4_MIN_FPS:
        raise HookeInputError("fps", f"must be >= {MP4_MIN_FPS:g} for an mp4 (a frame lasts at "
                              "most 10⁴ s: ffmpeg fails to store a slower rate)", fps)
    if suffix == ".gif" and fps < GIF_MIN_FPS:  # 1e-5 fps overflowed the delay's 16 bits
        raise HookeInputError("fps", f"must be >= {GIF_MIN_FPS:.3g} for a GIF (a GIF frame "
                              "lasts at most 655.35 s); use an .mp4", fps)
    frames = frame_indices(result.t, fps, duration)
    if suffix == ".gif" and len(frames) > GIF_MAX_FRAMES:
        raise HookeInputError("duration" if duration is not None else "fps", f"a GIF would have "
                              f"{len(frames):,} frames, more than the {GIF_MAX_FRAMES:,} a GIF may "
                              "have (each is held in memory until it is written): use an .mp4, a "
                              "lower fps or a shorter duration", fps if duration is None else duration)
    pictures = _render(result, frames, dpi, progress)
    with written_aside(path) as partial:
        if suffix == ".mp4":
            with imageio.get_writer(partial, fps=fps, macro_block_size=1) as writer:
                for picture in pictures:
                    writer.append_data(picture)
        else:  # Pillow itself: its delays are in ms whatever imageio's version, loop 0 = forever
            from PIL import Image

            images = [Image.fromarray(picture) for picture in pictures]
            images[0].save(partial, save_all=True, append_images=images[1:], loop=0,
                           duration=gif_durations(len(images), fps))
    return path


def _render(result, frames: np.ndarray, dpi: int, progress):
    """The RGB pixels (h, w, 3) of each frame shown, one at a time."""
    view = ConfigurationView(result.scene.model, result.x[frames])
    fig = new_figure(figsize=(6, 5), dpi=dpi)
    picture, shown = None, -1
    for done, frame in enumerate(frames, start=1):
        if frame != shown:  # a held frame (the same saved frame again) is drawn once
            fig.clear()
            ax = fig.add_subplot(1, 1, 1, projection=view.projection)
            if view.projection == "3d":  # a 3D box keeps its labels inside its axes: fill the frame
                fig.subplots_adjust(left=0, right=1, bottom=0, top=0.95)
            view.draw(ax, result.x[frame], result.t[frame])
            ax.set_title(f"{result.scene.name} — {result.integrator}   t = {result.t[frame]:.3f} s",
                         fontsize=10)
            fig.canvas.draw()
            picture, shown = np.array(fig.canvas.buffer_rgba())[..., :3], frame
        yield picture
        if progress is not None:
            progress(done, len(frames))
