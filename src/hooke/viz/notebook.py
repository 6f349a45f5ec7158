"""A live 3D view with parameter sliders for Jupyter notebooks (ipywidgets and a Plotly
FigureWidget; the ``[notebook]`` extra).

Contract: :func:`live_view` ``(scene)`` returns a :class:`LiveView`, an ipywidgets box that shows

- the body in a Plotly 3D view (1D and 2D scenes in the plane z = 0): its surface triangles lit
  (a cloth's grid, a tet mesh's boundary), its free particles (blue) and pinned ones (red), its
  springs (shown where it has no surface) and joints (orange), contact planes as squares about
  the body and contact spheres; the camera keeps what the user made of it between frames;
- a slider per numeric parameter of the scene's builder (the browser viewer's fields: the same
  names, lower bounds and count limits; a float spans a decade either side of its default) and
  a menu of the integrators; changing either restarts the run from t = 0 (slider values apply
  when released). A change the scene or the integrator refuses shows its one-line error below
  (as text: a name in it is never read as HTML) and the last run goes on; so does an
  integrator the menu does not offer (set from code), which the menu then does not take;
- a Play button stepping the real integrator (``steps_per_frame`` steps per frame), and the
  time, step count and total energy.

The simulation is the browser viewer's :class:`hooke.viz.web.session.Session`: the steps are
``hooke run``'s bit for bit. :meth:`LiveView.advance` steps from code (a notebook cell, a test);
:attr:`LiveView.state` is the current :class:`hooke.State`.
"""

from __future__ import annotations

import html
import math
import sys
from typing import Any, Callable

import numpy as np
import plotly.graph_objects as go
from pydantic import ValidationError

try:
    import ipywidgets as widgets
except ImportError as missing:  # pragma: no cover - the [notebook] extra is in the test install
    raise ImportError("hooke.viz.notebook needs ipywidgets and anywidget: "
                      "pip install 'hooke[notebook]'") from missing

from ..errors import HookeError, HookeInputError, HookeInputErrors, format_value, is_count
from ..integrators import get as get_integrator, names as integrator_names
from ..limits import MAX_STEPS
from ..io.pydantic_errors import validation_errors
from .web.protocol import MAX_STEPS_PER_FRAME, Restart, Set
from .web.session import Session

COLORS = {"surface": "#d9825b", "particle": "#1f5fd1", "pinned": "#c8102e", "spring": "#3c3c46",
          "joint": "#e08a00", "plane": "#dedad2", "sphere": "#bfc6ce"}
# No frame budget: a notebook frame waits for its steps (the browser viewer cuts a frame short
# to keep 60 Hz; here every frame is the same number of steps, so a cell's result repeats).
NO_BUDGET = math.inf
PLANE_EXTENT = 1.2  # a plane square's half side, in radii of the body with its spheres
# The light sits this far out (in the scene's units) above the camera. Plotly's default normal
# epsilons (1e-6, 1e-12) drop the normals of a fine cloth's small triangles, which then render
# unlit (dark): zero keeps every non-degenerate triangle lit.
LIGHT_DISTANCE = 1e4


def largest_decade() -> float:
    """The largest d for which 10.0**d is a float: log10 of the largest float rounds up, and
    ipywidgets' FloatLogSlider computes 10**max (OverflowError for mass=1e308)."""
    decade = math.log10(sys.float_info.max)
    while decade > 0:
        try:
            10.0 ** decade
            return decade
        except OverflowError:
            decade = math.nextafter(decade, 0.0)
    return decade  # pragma: no cover - floats without a decade above 1


LARGEST_DECADE = largest_decade()
MAX_INTERVAL_MS = 60_000  # a minute between frames
MAX_HEIGHT = 10_000  # pixels
LIGHTING = dict(ambient=0.5, diffuse=0.8, specular=0.12, roughness=0.6, facenormalsepsilon=0.0,
                vertexnormalsepsilon=0.0)


def live_view(scene: str = "cloth_drop", steps_per_frame: int = 8, interval_ms: int = 50,
              height: int = 520) -> "LiveView":
    """A live view of the built-in ``scene`` (see the module docstring)."""
    return LiveView(scene, steps_per_frame, interval_ms, height)


def _check_counts(**counts: tuple[Any, int]) -> None:
    """Refuse each ``name=(value, most)`` that is not an integer from 1 to ``most``: 0 steps a
    frame never moved, 10**9 froze the kernel at its first frame, 2.5 was taken."""
    problems = [f"{name}: must be an integer from 1 to {most}, got {format_value(value)}"
                for name, (value, most) in counts.items()
                if not (is_count(value) and 1 <= value <= most)]
    if len(problems) == 1:
        raise HookeInputError(*problems[0].split(": ", 1), show_value=False)
    if problems:
        raise HookeInputErrors(problems)


def as_3d(x: np.ndarray) -> np.ndarray:
    """Positions (n, d), d ≤ 3, as (n, 3): 1D and 2D scenes lie in the plane z = 0."""
    out = np.zeros((len(x), 3))
    out[:, :x.shape[1]] = x
    return out


def segments(x3: np.ndarray, pairs) -> tuple[list, list, list]:
    """x, y, z of line segments between ``pairs`` of points, separated by None (one trace)."""
    pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
    coordinates = []
    for axis in range(3):  # filled in NumPy's loops: this runs for every frame drawn
        column = np.full((len(pairs), 3), None, dtype=object)
        column[:, 0] = x3[pairs[:, 0], axis]
        column[:, 1] = x3[pairs[:, 1], axis]
        coordinates.append(column.ravel().tolist())
    return tuple(coordinates)


def sphere_mesh(center, radius: float, n: int = 24) -> dict[str, np.ndarray]:
    """A UV sphere as Mesh3d arguments."""
    theta, phi = np.meshgrid(np.linspace(0, np.pi, n), np.linspace(0, 2 * np.pi, 2 * n))
    points = np.stack([np.sin(theta) * np.cos(phi), np.cos(theta), np.sin(theta) * np.sin(phi)],
                      axis=-1).reshape(-1, 3) * radius + as_3d(np.atleast_2d(center))[0]
    rows, columns = theta.shape
    corner = (np.arange(rows - 1)[:, None] * columns + np.arange(columns - 1)[None, :]).ravel()
    faces = np.concatenate([np.stack([corner, corner + columns, corner + 1], axis=1),
                            np.stack([corner + 1, corner + columns, corner + columns + 1], axis=1)])
    return {"x": points[:, 0], "y": points[:, 1], "z": points[:, 2],
            "i": faces[:, 0], "j": faces[:, 1], "k": faces[:, 2]}


def plane_square(plane: dict[str, list], center: np.ndarray, half: float) -> dict[str, np.ndarray]:
    """A square of half side ``half`` on a contact plane, centred at the foot of ``center``."""
    normal = as_3d(np.atleast_2d(plane["normal"]))[0]
    point = as_3d(np.atleast_2d(plane["point"]))[0]
    foot = center - np.dot(center - point, normal) * normal
    helper = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 0.0, 1.0])
    u = np.cross(normal, helper)
    u /= np.linalg.norm(u)
    v = np.cross(normal, u)
    corners = np.array([foot + half * (a * u + b * v) for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1))])
    return {"x": corners[:, 0], "y": corners[:, 1], "z": corners[:, 2],
            "i": [0, 0], "j": [1, 2], "k": [2, 3]}


def camera(gravity, dim: int) -> dict[str, dict[str, float]]:
    """Plotly's scene camera: a plane scene seen face on, a 3D one from above at an angle, with
    up against gravity."""
    if dim < 3:
        return {"up": {"x": 0.0, "y": 1.0, "z": 0.0}, "eye": {"x": 0.0, "y": 0.0, "z": 2.2}}
    up = -as_3d(np.atleast_2d(gravity))[0]
    up = up / np.linalg.norm(up) if np.linalg.norm(up) > 0 else np.array([0.0, 1.0, 0.0])
    side = np.array([1.0, 0.5, 1.0])
    side -= np.dot(side, up) * up
    eye = 2.0 * side / np.linalg.norm(side) + 1.1 * up
    return {"up": dict(zip("xyz", map(float, up))), "eye": dict(zip("xyz", map(float, eye)))}


class IntegratorMenu(widgets.Dropdown):
    """The menu of the integrators registered when it was made. A value or label it does not
    offer (an unknown name, one registered since, a number), or an index out of its range, is
    handed to ``refuse`` as one line and the menu keeps its value: ipywidgets raised traitlets'
    TraitError ("Invalid selection: value not found") out of the cell. None (no selection)
    is ipywidgets' as before."""

    def __init__(self, refuse: Callable[[str], None]):
        self._refuse = refuse
        super().__init__(options=integrator_names(), description="integrator")

    def __setattr__(self, name: str, value) -> None:
        refusal = None if value is None else self._refusal(name, value)
        if refusal is None:
            super().__setattr__(name, value)
        else:
            self._refuse(refusal)

    def _refusal(self, name: str, value) -> str | None:
        """The line refusing ``value`` for the trait ``name``, or None to set it."""
        if name == "index" and not (is_count(value) and 0 <= value < len(self.options)):
            return str(HookeInputError("integrator.index", "must be an integer from 0 to "
                                       f"{len(self.options) - 1} (the menu's entries)", value))
        if name not in ("value", "label") or (isinstance(value, str) and value in self.options):
            return None
        try:
            get_integrator(value)
        except HookeInputError as unknown:
            return str(unknown)
        return str(HookeInputError("integrator", "was registered after this view was made; a new "
                                   "live_view offers it", value))


class LiveView(widgets.VBox):
    """The widget :func:`live_view` returns (see the module docstring)."""

    def __init__(self, scene: str, steps_per_frame: int = 8, interval_ms: int = 50,
                 height: int = 520):
        _check_counts(steps_per_frame=(steps_per_frame, MAX_STEPS_PER_FRAME),
                      interval_ms=(interval_ms, MAX_INTERVAL_MS), height=(height, MAX_HEIGHT))
        self.session = Session(scene, steps_per_frame=steps_per_frame, frame_budget=NO_BUDGET)
        self.figure = go.FigureWidget(layout=go.Layout(
            height=height, margin=dict(l=0, r=0, t=0, b=0), showlegend=True,
            legend=dict(x=0.01, y=0.99), uirevision="keep the camera",
            scene=dict(aspectmode="data", xaxis_title="x [m]", yaxis_title="y [m]",
                       zaxis_title="z [m]")))
        self.readout = widgets.HTML()
        self.message = widgets.HTML()
        self.play = widgets.Play(value=0, min=0, max=10 ** 9, step=1, interval=interval_ms,
                                 description="Play")
        self.play.observe(lambda change: self.advance(1), names="value")
        self.integrator = IntegratorMenu(self._show_error)
        self.integrator.observe(self._on_integrator, names="value")
        self.sliders = widgets.VBox()
        self._position_traces: list[tuple[int, str, Any]] = []
        self._opens = 0
        self._open_figure()
        controls = widgets.HBox([self.play, self.readout])
        super().__init__([self.figure, controls, self.integrator, self.sliders, self.message])

    # -- what the user does -----------------------------------------------------------------
    @property
    def state(self):
        """The current :class:`hooke.State`."""
        return self.session.state

    def advance(self, frames: int = 1) -> None:
        """Step ``frames`` frames (``steps_per_frame`` steps each) and redraw."""
        if not (is_count(frames) and frames >= 0):  # -1 did nothing, 2.5 raised Python's TypeError
            raise HookeInputError("frames", f"must be an integer >= 0, got {format_value(frames)}",
                                  show_value=False)
        per_frame = self.session.steps_per_frame
        if frames * per_frame > MAX_STEPS:  # 10**400 stepped until the kernel was interrupted
            raise HookeInputError("frames", f"{frames} frames of {per_frame} steps are more than "
                                  f"the {MAX_STEPS:.0e} steps a run has", frames)
        with np.errstate(over="ignore", invalid="ignore"):  # a blow-up is said in one line
            for _ in range(frames):
                for message in self.session.tick():
                    if message["type"] == "error":
                        self._show_error(message["message"])
                        self.play.playing = False
            self._redraw()  # (an energy of inf J too)

    def restart(self, **parameters) -> None:
        """Restart from t = 0 with these builder parameters (the others as the sliders hold)."""
        values = {slider.description: slider.value for slider in self.sliders.children}
        values.update(parameters)
        try:
            command = Restart(type="restart", integrator=self.session.integrator,
                              dt=self.session.dt, parameters=values)
        except ValidationError as error:  # a NaN, a string: said as a refused value is
            self._show_error(str(validation_errors(error, Restart)))
            return
        self._apply(command)

    # -- building ---------------------------------------------------------------------------
    def _apply(self, command) -> None:
        # A run whose energies overflow from its start (mass = 1e300 with v0 = 1e100: kinetic
        # energy inf J) printed NumPy's overflow warnings in the cell, as advance no longer does.
        with np.errstate(over="ignore", invalid="ignore"):
            try:
                reply = self.session.handle(command)
            except HookeError as error:
                self._show_error(str(error))
                return
            self._show_error("")
            if reply is not None and reply.get("type") == "scene":
                self._open_figure()
            self._redraw()

    def _on_integrator(self, change) -> None:
        if change["new"] != self.session.integrator:
            self._apply(Set(type="set", integrator=change["new"]))
            if self.session.integrator != change["new"]:  # refused: the menu shows what runs
                self.integrator.value = self.session.integrator

    def _on_slider(self, change) -> None:
        self.restart(**{change["owner"].description: change["new"]})

    def _show_error(self, text: str) -> None:
        self.message.value = (f"<span style='color:#b00020'>{html.escape(text)}</span>"
                              if text else "")

    def _open_figure(self) -> None:
        """Draw the session's scene anew (after a start or a restart) and its sliders."""
        scene = self.session.scene_message()
        x3 = as_3d(np.asarray(scene["frame"]["x"], dtype=float))
        pinned = np.zeros(len(x3), dtype=bool)
        pinned[scene["pinned"]] = True
        ends = [x3] + [as_3d(np.atleast_2d(s["center"])) + sign * s["radius"]
                       for s in scene["spheres"] for sign in (-1, 1)]
        low, high = np.min([e.min(axis=0) for e in ends], axis=0), np.max([e.max(axis=0) for e in ends], axis=0)
        center, radius = 0.5 * (low + high), max(0.5 * float(np.linalg.norm(high - low)), 1e-3)
        view = camera(scene["gravity"], scene["dim"])
        up, eye = (np.array([view[key][axis] for axis in "xyz"]) for key in ("up", "eye"))
        light = dict(zip("xyz", map(float, LIGHT_DISTANCE * (eye + up) / np.linalg.norm(eye + up))))
        traces, moving = [], []
        if scene["surface"]:
            faces = np.asarray(scene["surface"])
            traces.append(go.Mesh3d(x=x3[:, 0], y=x3[:, 1], z=x3[:, 2], i=faces[:, 0],
                                    j=faces[:, 1], k=faces[:, 2], color=COLORS["surface"],
                                    flatshading=True, name="surface", showlegend=True,
                                    lighting=LIGHTING, lightposition=light))
            moving.append((len(traces) - 1, "mesh", None))
        if scene["springs"]:
            traces.append(go.Scatter3d(mode="lines", name="springs",
                                       line=dict(color=COLORS["spring"], width=2),
                                       visible="legendonly" if scene["surface"] else True))
            moving.append((len(traces) - 1, "segments", scene["springs"]))
        if scene["joints"]:
            traces.append(go.Scatter3d(mode="lines", name="joints",
                                       line=dict(color=COLORS["joint"], width=8)))
            moving.append((len(traces) - 1, "segments", scene["joints"]))
        for mask, name, color in ((~pinned, "particles", COLORS["particle"]),
                                  (pinned, "pinned", COLORS["pinned"])):
            if mask.any():
                traces.append(go.Scatter3d(mode="markers", name=name,
                                           marker=dict(color=color, size=3 if len(x3) > 400 else 5),
                                           visible="legendonly" if scene["surface"] and
                                           name == "particles" else True))
                moving.append((len(traces) - 1, "points", np.flatnonzero(mask)))
        for plane in scene["planes"]:
            traces.append(go.Mesh3d(**plane_square(plane, center, PLANE_EXTENT * radius),
                                    color=COLORS["plane"], opacity=0.6, name="plane",
                                    hoverinfo="skip"))
        for sphere in scene["spheres"]:
            traces.append(go.Mesh3d(**sphere_mesh(sphere["center"], sphere["radius"]),
                                    color=COLORS["sphere"], name="sphere", hoverinfo="skip",
                                    lighting=LIGHTING, lightposition=light))
        self._opens += 1
        with self.figure.batch_update():
            self.figure.data = ()
            self.figure.add_traces(traces)
            self.figure.layout.scene.camera = view
            # a new value resets the camera for the new run; frames keep what the user made of it
            self.figure.layout.uirevision = self._opens
        self._position_traces = moving
        self.integrator.value = scene["integrator"]
        self._build_sliders(scene["parameters"])
        self._redraw()

    def _build_sliders(self, fields: list[dict[str, Any]]) -> None:
        sliders = []
        for field in fields:
            value = field["value"]
            if field["integer"]:
                low = int(field.get("minimum", field.get("exclusive_minimum", 0) + 1))
                slider = widgets.IntSlider(value=value, min=low, max=field["maximum"])
            elif value > 0:  # a decade either side, within what a float holds (10**309: inf)
                slider = widgets.FloatLogSlider(value=value, base=10, min=math.log10(value) - 1,
                                                max=min(math.log10(value) + 1, LARGEST_DECADE))
            else:
                span = max(1.0, 4 * abs(value))
                low = field.get("minimum", field.get("exclusive_minimum", -span))
                slider = widgets.FloatSlider(value=value, min=low, max=span)
            slider.description = field["name"]
            slider.continuous_update = False
            slider.style.description_width = "initial"
            slider.observe(self._on_slider, names="value")
            sliders.append(slider)
        self.sliders.children = sliders

    # -- per frame --------------------------------------------------------------------------
    def _redraw(self) -> None:
        session = self.session
        x3 = as_3d(session.state.x)
        with self.figure.batch_update():
            for index, kind, items in self._position_traces:
                trace = self.figure.data[index]
                if kind == "mesh":
                    trace.x, trace.y, trace.z = x3[:, 0], x3[:, 1], x3[:, 2]
                elif kind == "points":
                    trace.x, trace.y, trace.z = x3[items, 0], x3[items, 1], x3[items, 2]
                else:
                    trace.x, trace.y, trace.z = segments(x3, items)
        system = session.stepper.system
        energy = system.kinetic_energy(session.state.v) + sum(
            system.potential_energies(session.state.x).values())
        self.readout.value = (f"t = {session.state.t:.3f} s · {session.steps} steps · "
                              f"total energy {energy:.6g} J · {html.escape(session.integrator)}, "
                              f"dt = {session.dt:g} s")
