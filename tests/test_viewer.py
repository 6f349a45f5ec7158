"""The browser viewer in a real browser: Playwright driving Debian's headless chromium against a
`hooke serve` app running in a background thread on a free 127.0.0.1 port (``viewer_url``, in
conftest.py).

The page is driven as a user would (selectors, typed fields, buttons, mouse) and read back from
what it displays: the time readout, the Plotly graph divs' data, the canvas pixels (sampled where
the page's ``canvasPoint`` hook projects the scene's positions). Every wait is a condition on the
page with a generous timeout, never a fixed sleep, so a loaded machine only makes it slower. The
3D screenshots are kept as artefacts in ``out/test-artifacts/`` (the others go to ``tmp_path``).
Without chromium the tests skip, except in CI (``CI=true``) and under ``make test``
(``HOOKE_REQUIRE_BROWSER=1``), where they fail.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import os
from contextlib import contextmanager
from pathlib import Path

import ipctk
import numpy as np
import pytest

import hooke

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

TIMEOUT_MS = 30_000  # generous: the machine running the tests may be loaded
ARTIFACTS = Path(__file__).resolve().parents[1] / "out" / "test-artifacts"
BLUE, RED, ORANGE = (31, 95, 209), (200, 16, 46), (224, 138, 0)  # free, pinned particles; joints
PLANE_FILL, PLANE_ALPHA, PLANE_LINE = (120, 100, 80), 0.18, (107, 79, 42)


def require_browser(executable: str = CHROMIUM, environ=os.environ) -> None:
    """Skip a browser test when chromium or Playwright is missing, but fail it where the browser
    tests are required: in CI (``CI=true``) and under ``make test`` (``HOOKE_REQUIRE_BROWSER=1``)."""
    if not os.path.exists(executable):
        reason = f"{executable} is absent (apt-get install chromium; `make test` does)"
    elif importlib.util.find_spec("playwright") is None:
        reason = "playwright is not installed (pip install -e '.[test]')"
    else:
        return
    if environ.get("HOOKE_REQUIRE_BROWSER") == "1" or environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}; the browser tests are required here", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@contextmanager
def opened(browser, url):
    """A fresh page on the viewer at ``url``; every request it makes must stay on that server."""
    context = browser.new_context(viewport={"width": 1500, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    requests: list[str] = []
    errors: list[str] = []
    tab.on("request", lambda request: requests.append(request.url))
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(url + "/")
    tab.wait_for_function("document.querySelectorAll('#scene option').length > 0")
    yield tab
    context.close()
    assert not errors, errors
    local = (url, url.replace("http://", "ws://"), "data:")
    assert all(address.startswith(local) for address in requests), requests


@pytest.fixture
def page(browser, viewer_url):
    with opened(browser, viewer_url) as tab:
        yield tab


# -- helpers ---------------------------------------------------------------------------------------

def sim_time(page) -> float:
    return float(page.get_attribute("#time", "data-t"))


def steps(page) -> int:
    return int(page.inner_text("#steps"))


def wait_time(page, t: float) -> None:
    page.wait_for_function("t => Number(document.getElementById('time').dataset.t) >= t", arg=t)


def choose_scene(page, scene: str) -> None:
    """Select ``scene`` and wait until its new run has started and stepped."""
    page.wait_for_function("window.hookeViewer.scene !== null")
    starts = page.evaluate("window.hookeViewer.starts")
    page.select_option("#scene", scene)
    page.wait_for_function("n => window.hookeViewer.starts > n && window.hookeViewer.frame.t > 0",
                           arg=starts)
    assert page.evaluate("window.hookeViewer.scene.scene") == scene


def type_into(page, selector: str, text: str) -> None:
    page.fill(selector, text)
    page.press(selector, "Enter")


def pause(page) -> None:
    page.click("#pause")
    page.wait_for_function("window.hookeViewer.frame.paused === true")
    assert page.inner_text("#pause") == "Resume"


def wait_paint(page) -> None:
    """Wait until the canvas has been drawn again (two animation frames) from the current state."""
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")


def pause_and_paint(page) -> None:
    pause(page)
    wait_paint(page)


def plotted(page, plot: str) -> dict[str, np.ndarray]:
    """The traces of a Plotly graph div by name (``t`` is their shared x), once the plot shows the
    frame the page holds now (plots redraw at most every 250 ms while running)."""
    page.wait_for_function(
        "id => { const d = document.getElementById(id).data, x = d && d[0].x;"
        " return x && x.length && x[x.length - 1] === window.hookeViewer.frame.t; }", arg=plot)
    traces = page.evaluate("id => document.getElementById(id).data.map(d => [d.name, d.x, d.y])",
                           plot)
    data = {"t": np.array(traces[0][1], dtype=float)}
    for name, x, y in traces:
        assert x == traces[0][1]
        data[name] = np.array([np.nan if v is None else v for v in y], dtype=float)
    return data


# The colours the canvas holds at canvas points, or where the page projects world points (its
# canvasPoint hook): [sx, sy, r, g, b, a] per point, null behind the camera or off the canvas.
_PIXELS = """([points, world]) => {
    const viewer = window.hookeViewer, canvas = document.getElementById('view');
    const ctx = canvas.getContext('2d');
    return points.map(p => {
        const s = world ? viewer.canvasPoint(p) : p;
        if (!s || !(s[0] >= 0 && s[0] < canvas.width && s[1] >= 0 && s[1] < canvas.height)) return null;
        return [s[0], s[1], ...ctx.getImageData(Math.floor(s[0]), Math.floor(s[1]), 1, 1).data];
    });
}"""


def drawn_at(page, points, world: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(canvas pixel positions, colours) of ``points`` (world points, or canvas points if not
    ``world``) as drawn now; colours are RGB over the canvas's white background, NaN where a
    point is not on the canvas."""
    rows = page.evaluate(_PIXELS, [[list(map(float, point)) for point in points], world])
    table = np.array([row if row is not None else [np.nan] * 6 for row in rows], dtype=float)
    alpha = table[:, 5:6] / 255.0
    return table[:, :2], table[:, 2:5] * alpha + 255.0 * (1.0 - alpha)


def near(colours: np.ndarray, colour, tolerance: float = 3.0) -> np.ndarray:
    """Which colours are within ``tolerance`` (per channel) of ``colour``."""
    return np.all(np.abs(colours - np.asarray(colour, dtype=float)) <= tolerance, axis=1)


def over_white(colour, alpha: float, layers: int = 1) -> tuple[float, ...]:
    """``colour`` painted ``layers`` times with opacity ``alpha`` over white."""
    out = np.full(3, 255.0)
    for _ in range(layers):
        out = alpha * np.asarray(colour) + (1.0 - alpha) * out
    return tuple(out)


def clear_of(screen: np.ndarray, particles: np.ndarray, pixels: float) -> np.ndarray:
    """Which ``screen`` points are on the canvas and farther than ``pixels`` from every particle
    (and from the 3D axes gizmo in the bottom-left corner)."""
    distance = np.linalg.norm(screen[:, None, :] - particles[None, :, :], axis=2)
    gizmo = (screen[:, 0] < 100) & (screen[:, 1] > 500)
    return np.isfinite(screen[:, 0]) & ~gizmo & np.all(~(distance <= pixels), axis=1)


def is_invalid(page, selector: str) -> bool:
    marked = "invalid" in (page.get_attribute(selector, "class") or "")
    aria = page.get_attribute(selector, "aria-invalid") == "true"
    assert marked == aria
    return marked


# -- tests -----------------------------------------------------------------------------------------

def test_a_missing_browser_skips_here_and_fails_where_required():
    absent = "/nonexistent/chromium"
    for environ in ({"CI": "true"}, {"HOOKE_REQUIRE_BROWSER": "1"}):
        with pytest.raises(pytest.fail.Exception, match="is absent.*required here"):
            require_browser(absent, environ)
    with pytest.raises(pytest.skip.Exception, match="is absent"):
        require_browser(absent, {"CI": "false"})


def test_selectors_list_every_scene_and_integrator(page, tmp_path):
    scenes = page.eval_on_selector_all("#scene option", "options => options.map(o => o.value)")
    integrators = page.eval_on_selector_all("#integrator option", "options => options.map(o => o.value)")
    assert scenes == hooke.scenes() and integrators == hooke.integrators()
    choose_scene(page, "spring1d")
    for name in ("x0", "stiffness", "mass"):
        assert page.is_visible(f"#param-{name}")
    wait_time(page, 1.0)
    page.wait_for_function("Number(document.getElementById('fps').textContent) > 0")
    assert float(page.inner_text("#step-ms")) > 0
    # the readout counts the simulation's frames, not the browser's repaints: paused, it falls to 0
    pause(page)
    page.wait_for_function("document.getElementById('fps').textContent === '0'")
    page.wait_for_function("window.hookeViewer.animationFps > 5")
    page.screenshot(path=str(tmp_path / "spring1d.png"))


# Seed 000's four methods on the 1D spring (ω = √10, h = 0.005): per step explicit Euler gains
# energy by (1 + ω²h²), linearised implicit Euler loses it by the same factor; symplectic Euler
# and the midpoint rule stay on the analytic curve.
@pytest.mark.parametrize("integrator", ["explicit_euler", "symplectic_euler", "rk2",
                                        "implicit_euler_linear"])
def test_spring1d_integrators_against_the_analytic_solution(page, integrator):
    choose_scene(page, "spring1d")
    type_into(page, "#steps-per-frame", "100")
    page.select_option("#integrator", integrator)
    starts = page.evaluate("window.hookeViewer.starts")
    page.click("#restart")
    page.wait_for_function("n => window.hookeViewer.starts > n", arg=starts)
    assert page.evaluate("window.hookeViewer.scene.integrator") == integrator
    wait_time(page, 10.0)
    pause(page)
    shown = sim_time(page)
    assert page.inner_text("#time") == f"{shown:.3f}"
    plot = plotted(page, "plot-position")
    t, numerical, analytic = plot["t"], plot["numerical"], plot["analytic"]
    assert t.size == 1000 and np.all(np.diff(t) > 0) and t[-1] == shown
    assert np.allclose(analytic, 2.0 * np.cos(math.sqrt(10.0) * t), atol=1e-9)
    amplitude = np.max(np.abs(numerical))
    early, late = np.max(np.abs(numerical[:300])), np.max(np.abs(numerical[-300:]))
    # over the last 5 s, with t ≥ 10: explicit amplitude ≥ 2·exp(0.025·t), implicit ≤ 2·exp(−0.025·(t−5))
    if integrator == "explicit_euler":
        assert amplitude > 1.1 * 2.0 and late > early
    elif integrator == "implicit_euler_linear":
        assert amplitude < 0.92 * 2.0 and late < early
    else:
        error = np.max(np.abs(numerical - analytic))
        assert error < (0.05 if integrator == "symplectic_euler" else 0.02)
        assert abs(amplitude - 2.0) < 0.03


def test_edited_x0_and_stiffness_restart_on_their_analytic_curve(page):
    choose_scene(page, "spring1d")
    page.fill("#param-x0", "1.5")
    page.fill("#param-stiffness", "20")
    starts = page.evaluate("window.hookeViewer.starts")
    page.click("#restart")
    page.wait_for_function("n => window.hookeViewer.starts > n", arg=starts)
    parameters = {p["name"]: p["value"] for p in page.evaluate("window.hookeViewer.scene.parameters")}
    assert parameters == {"x0": 1.5, "v0": 0.0, "stiffness": 20.0, "mass": 0.5}
    wait_time(page, 2.0)
    pause(page)
    plot = plotted(page, "plot-position")
    t, numerical, analytic = plot["t"], plot["numerical"], plot["analytic"]
    omega = math.sqrt(20.0 / 0.5)  # x0 cos(√(k/m) t)
    assert t[0] == 0.0 and numerical[0] == 1.5 and t[-1] >= 2.0
    assert np.allclose(analytic, 1.5 * np.cos(omega * t), atol=1e-9)
    # symplectic Euler, ωh = 0.032: the phase lags by ~ω³h²t/24 ≈ 0.02 rad at t = 2 s
    assert np.max(np.abs(numerical - analytic)) < 0.05
    # the old curve (x0 = 2, ω = √10) is far from what is plotted
    assert np.max(np.abs(numerical - 2.0 * np.cos(math.sqrt(10.0) * t))) > 1.0


def test_pause_stops_time_step_advances_one_step_restart_resets(page):
    choose_scene(page, "spring1d")
    wait_time(page, 1.0)
    pause(page)
    t1, n1 = sim_time(page), steps(page)
    # each settings change is answered from a later frame of the server's loop: frames go on,
    # the paused run does not
    for value in (3, 5):
        type_into(page, "#steps-per-frame", str(value))
        page.wait_for_function("n => window.hookeViewer.valid.steps_per_frame === n", arg=value)
    assert sim_time(page) == t1 and steps(page) == n1
    for k in (1, 2):
        page.click("#step")
        page.wait_for_function("n => Number(document.getElementById('steps').textContent) === n",
                               arg=n1 + k)
        assert sim_time(page) == pytest.approx(t1 + k * 0.005, abs=1e-9)
        assert page.inner_text("#pause") == "Resume"
    page.click("#pause")  # resume
    wait_time(page, t1 + 0.5)
    before = steps(page)
    page.click("#restart")
    page.wait_for_function("n => Number(document.getElementById('steps').textContent) < n", arg=before)
    assert sim_time(page) < t1 and page.inner_text("#pause") == "Pause"


def test_dragging_a_cloth2d_particle_moves_it(page):
    choose_scene(page, "cloth2d")
    wait_time(page, 0.3)
    pause(page)  # so the particle stays under the mouse while it is grabbed
    corner = page.evaluate("""() => {
        // the bottom-right-most particle drawn well inside the canvas (only the top corners are pinned)
        const viewer = window.hookeViewer, x = viewer.frame.x;
        const r = document.getElementById('view').getBoundingClientRect();
        let best = null;
        x.forEach((p, i) => {
            const [cx, cy] = viewer.clientPosition(i);
            const inside = cx > r.left + 40 && cx < r.right - 160 && cy > r.top + 100 && cy < r.bottom - 40;
            if (inside && (best === null || p[1] - p[0] < x[best][1] - x[best][0])) best = i;
        });
        return best;
    }""")
    assert corner is not None and not page.evaluate(f"window.hookeViewer.scene.pinned.includes({corner})")
    start = page.evaluate(f"window.hookeViewer.frame.x[{corner}]")
    sx, sy = page.evaluate(f"window.hookeViewer.clientPosition({corner})")
    page.mouse.move(sx, sy)
    page.mouse.down()
    page.mouse.move(sx + 120, sy - 60, steps=6)
    page.wait_for_function(f"window.hookeViewer.frame.cursor && window.hookeViewer.frame.cursor.particle === {corner}"
                           f" && window.hookeViewer.frame.cursor.target[0] > {start[0] + 0.3}")
    page.focus("#pause")
    page.keyboard.press("Enter")  # resume without releasing the mouse
    page.wait_for_function("window.hookeViewer.frame.paused === false")
    target = page.evaluate("window.hookeViewer.frame.cursor.target")
    assert target[0] > start[0] + 0.3 and target[1] > start[1] + 0.15  # 120 px right, 60 px up
    # it moves more than half way toward the cursor
    page.wait_for_function("""([i, start, target]) => {
        const x = window.hookeViewer.frame.x[i], pull = [target[0] - start[0], target[1] - start[1]];
        const length = Math.hypot(pull[0], pull[1]);
        return ((x[0] - start[0]) * pull[0] + (x[1] - start[1]) * pull[1]) / length > 0.5 * length;
    }""", arg=[corner, start, target])
    page.mouse.up()
    page.wait_for_function("window.hookeViewer.frame.cursor === null")
    assert not page.inner_text("#message")


def test_1d_and_2d_canvases_draw_particles_springs_and_pins(page):
    # spring1d: the pinned end at 0 a red square, the mass a blue disc, the spring a grey zigzag
    choose_scene(page, "spring1d")
    for _ in range(10):  # paused apart from the pin: on a loaded machine it may swing back first
        page.wait_for_function("Math.abs(window.hookeViewer.frame.x[1][0]) > 1.5")
        pause_and_paint(page)
        x = np.array(page.evaluate("window.hookeViewer.frame.x"))
        if abs(x[1, 0]) > 0.5:
            break
        page.click("#pause")  # resume
    screen, colours = drawn_at(page, x)
    assert near(colours[0:1], RED).all() and near(colours[1:2], BLUE).all(), colours
    middle = (screen[0] + screen[1]) / 2  # the zigzag crosses this column within ±8 px
    _, column = drawn_at(page, [middle + (0, dy) for dy in range(-9, 10)], world=False)
    assert np.any((np.ptp(column, axis=1) < 12) & (column.max(axis=1) < 200)), column
    # cloth2d: every free particle on the canvas a blue disc, both pins red, every spring's midpoint grey
    choose_scene(page, "cloth2d")
    pause_and_paint(page)
    scene = page.evaluate("window.hookeViewer.scene")
    x = np.array(page.evaluate("window.hookeViewer.frame.x"))
    pinned = np.zeros(len(x), dtype=bool)
    pinned[scene["pinned"]] = True
    screen, colours = drawn_at(page, x)
    shown = np.isfinite(screen[:, 0])
    assert shown.sum() > 500 and shown[pinned].all()
    assert near(colours[shown & ~pinned], BLUE).all()
    assert near(colours[pinned], RED).all()
    springs = np.array(scene["springs"])
    middles, colours = drawn_at(page, (x[springs[:, 0]] + x[springs[:, 1]]) / 2)
    colours = colours[np.isfinite(middles[:, 0])]
    assert len(colours) > 1000
    greyish = (np.ptp(colours, axis=1) < 12) & (colours.max(axis=1) < 235)  # a line, not the white ground
    assert greyish.mean() > 0.97, greyish.mean()


def test_2d_planes_are_drawn_as_their_forbidden_side(page):
    # square_drop (2D): the ground's forbidden side shaded, its edge a brown line, the free side white
    choose_scene(page, "square_drop")
    pause_and_paint(page)
    [plane] = page.evaluate("window.hookeViewer.scene.planes")
    assert plane["normal"] == [0, 1]
    x = np.array(page.evaluate("window.hookeViewer.frame.x"))
    particles, _ = drawn_at(page, x)
    scale = page.evaluate("window.hookeViewer.view2d.scale")
    along = np.linspace(-1.4, 1.4, 15)
    point = np.array(plane["point"])
    beside = (particles[:, 0].min() - 15, particles[:, 0].max() + 15)  # the square's columns
    for offset, expected in ((-20, over_white(PLANE_FILL, PLANE_ALPHA)), (+20, (255, 255, 255))):
        screen, colours = drawn_at(page, [point + (a, offset / scale) for a in along])
        clear = clear_of(screen, particles, 15.0) & ((screen[:, 0] < beside[0]) | (screen[:, 0] > beside[1]))
        assert clear.sum() >= 8 and near(colours[clear], expected).all(), (offset, colours)
    edge, _ = drawn_at(page, [point + (along[0], 0.0)])  # left of the square; the line is 2 px wide
    _, rows = drawn_at(page, [edge[0] + (0, dy) for dy in (-1, 0, 1)], world=False)
    assert near(rows, PLANE_LINE).any(), rows


def test_the_wheel_zooms_the_2d_view_about_the_cursor(page):
    choose_scene(page, "cloth2d")
    pause_and_paint(page)
    x = page.evaluate("window.hookeViewer.frame.x")
    before = page.evaluate("window.hookeViewer.view2d")
    left, top = page.evaluate("""() => { const c = document.getElementById('view'), r = c.getBoundingClientRect();
        return [r.left + c.clientLeft, r.top + c.clientTop]; }""")
    client = np.array([round(left + 260), round(top + 210)])  # whole pixels, as mouse events have
    mouse = client - (left, top)  # in canvas pixels
    under = (before["cx"] + (mouse[0] - 350) / before["scale"],
             before["cy"] - (mouse[1] - 300) / before["scale"])
    screen_before, _ = drawn_at(page, x)
    page.mouse.move(float(client[0]), float(client[1]))
    page.mouse.wheel(0, -200)
    page.wait_for_function("s => window.hookeViewer.view2d.scale > 1.2 * s", arg=before["scale"])
    wait_paint(page)
    factor = page.evaluate("window.hookeViewer.view2d.scale") / before["scale"]
    assert factor == pytest.approx(math.exp(200 * 0.0015), rel=1e-9)  # one wheel notch of 200
    # the point under the cursor stays put; every particle moves away from it by the factor
    fixed, _ = drawn_at(page, [under])
    assert np.allclose(fixed[0], mouse, atol=1e-6)
    screen_after, _ = drawn_at(page, x)
    shown = np.isfinite(screen_before[:, 0]) & np.isfinite(screen_after[:, 0])
    assert shown.sum() > 100
    assert np.allclose(screen_after[shown] - mouse, factor * (screen_before[shown] - mouse), atol=1e-6)


def test_energy_and_joint_error_plots_carry_the_runs_values(page):
    # spring1d: the plotted energies are those of the same run (symplectic Euler, dt = 0.005)
    # done here with hooke.simulate, and the total stays at ½ k x0² = 10 J within ωh/2
    choose_scene(page, "spring1d")
    wait_time(page, 1.0)
    pause(page)
    energy = plotted(page, "plot-energy")
    assert set(energy) == {"t", "kinetic", "potential", "total"} and energy["t"].size > 10
    run = hooke.simulate(hooke.scene("spring1d"), integrator="symplectic_euler", dt=0.005,
                         t_end=energy["t"][-1])
    index = np.rint(energy["t"] / 0.005).astype(int)
    assert np.allclose(run.t[index], energy["t"], rtol=0, atol=1e-12)
    for key in ("kinetic", "potential", "total"):
        assert np.allclose(energy[key], run.energy[key][index], rtol=1e-9, atol=1e-12), key
    assert np.allclose(energy["total"], 10.0, rtol=0.01)
    assert np.ptp(energy["kinetic"]) > 5.0  # energy moves between the two forms
    assert page.is_hidden("#plot-joints")
    # top (generalized_alpha): the joint length error is plotted at every energy sample, tiny
    choose_scene(page, "top")
    wait_time(page, 0.1)
    pause(page)
    assert page.is_visible("#plot-joints") and page.is_hidden("#plot-position")
    joints = plotted(page, "plot-joints")
    energy = plotted(page, "plot-energy")
    assert list(joints) == ["t", "max |length error|"]
    error = joints["max |length error|"]
    assert np.array_equal(joints["t"], energy["t"]) and error.size > 5
    assert np.all((error >= 0) & (error < 1e-6)), error


# -- the 3D view (WebGL): pixels of screenshots, sampled where the page projects world points ------

def shown_3d(page, points, path) -> tuple[np.ndarray, np.ndarray]:
    """(canvas pixel positions, RGB colours) of world ``points`` in the 3D view as the screen shows
    it now (a screenshot of the view, kept at ``path``); NaN where a point is off the view."""
    from PIL import Image

    page.locator("#view3d").screenshot(path=str(path))
    border = page.evaluate("document.getElementById('view3d').clientLeft")
    image = np.asarray(Image.open(path).convert("RGB"), dtype=float)[border:-border, border:-border]
    rows = page.evaluate("points => points.map(p => window.hookeViewer.canvasPoint(p))",
                         [list(map(float, p)) for p in points])
    screen = np.array([row if row is not None else [np.nan, np.nan] for row in rows], dtype=float)
    colours = np.full((len(points), 3), np.nan)
    height, width = image.shape[:2]
    inside = np.isfinite(screen[:, 0]) & (screen[:, 0] >= 0) & (screen[:, 0] < width) & \
        (screen[:, 1] >= 0) & (screen[:, 1] < height)
    pixels = np.floor(screen[inside]).astype(int)
    colours[inside] = image[pixels[:, 1], pixels[:, 0]]
    return screen, colours


# Colour classes of the lit 3D view (shading changes brightness, not these hue relations):
# the body's surface is terracotta (217, 130, 91), particles blue (31, 95, 209), the ball a bluish
# grey (191, 198, 206), joints orange (224, 138, 0), pinned particles red (200, 16, 46).
def surface_like(c):
    return (c[:, 0] > c[:, 1] + 25) & (c[:, 1] > c[:, 2] + 10) & (c[:, 1] - c[:, 2] < 60)


def particle_like(c):
    return c[:, 2] > c[:, 0] + 60


def sphere_like(c):
    return (c[:, 2] >= c[:, 0]) & (np.ptp(c, axis=1) < 40) & (c.mean(axis=1) > 80)


def joint_like(c):
    return (c[:, 0] > c[:, 2] + 100) & (c[:, 1] > c[:, 2] + 60)


def pin_like(c):
    return (c[:, 0] > c[:, 1] + 80) & (c[:, 0] > c[:, 2] + 60)


def facing(points, normals, eye, cosine: float) -> np.ndarray:
    """Which points' normals make an angle with the direction to the camera of cosine > ``cosine``."""
    to_eye = eye - points
    return np.einsum("ij,ij->i", normals, to_eye) > cosine * np.linalg.norm(normals, axis=1) * \
        np.linalg.norm(to_eye, axis=1)


def triangle_normals(x, triangles):
    a, b, c = (x[triangles[:, k]] for k in range(3))
    return np.cross(b - a, c - a)


def eye(page) -> np.ndarray:
    return np.array(page.evaluate("window.hookeViewer.view3d.camera.position.toArray()"))


def toggle(page, layer: str, on: bool) -> None:
    (page.check if on else page.uncheck)(f"#layer-{layer}")
    assert page.evaluate(f"window.hookeViewer.view3d.layers.{layer}") is on
    wait_paint(page)


def test_a_3d_body_is_a_lit_surface_with_orbit_and_zoom(page, tmp_path):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    choose_scene(page, "soft3d")
    wait_time(page, 0.05)
    pause_and_paint(page)
    assert page.is_hidden("#view") and page.is_visible("#view3d")
    assert page.is_checked("#layer-surface") and not page.is_checked("#layer-particles")
    scene = page.evaluate("window.hookeViewer.scene")
    x = np.array(page.evaluate("window.hookeViewer.frame.x"))
    surface = np.array(scene["surface"])
    assert len(surface) == len(hooke.scene("soft3d").model.surface_triangles())
    page.screenshot(path=str(ARTIFACTS / "soft3d_page.png"))
    # its energies are plotted above its rest state (the push's, not gravity's thousands of J)
    energy = plotted(page, "plot-energy")
    assert page.evaluate("document.getElementById('plot-energy').layout.yaxis.title.text") == \
        "energy above rest (static equilibrium) [J]"
    assert 0 < energy["potential"][-1] < energy["total"][-1] < 1000
    # the centres of the triangles that face the camera show the surface's colour, lit: its
    # brightness varies with the angle to the lights (a flat colour would have one level)
    centres = x[surface].mean(axis=1)
    front = facing(centres, triangle_normals(x, surface), eye(page), 0.3)
    screen, colours = shown_3d(page, centres[front], ARTIFACTS / "soft3d.png")
    shown = np.isfinite(colours[:, 0])
    assert shown.sum() > 200
    assert surface_like(colours[shown]).mean() > 0.9
    brightness = colours[shown].mean(axis=1)
    assert np.percentile(brightness, 90) - np.percentile(brightness, 10) > 30, brightness
    # orbit: a drag on an empty corner turns the camera about its target
    box = page.locator("#view3d").bounding_box()
    target = np.array(page.evaluate("window.hookeViewer.view3d.controls.target.toArray()"))
    before = eye(page) - target
    page.mouse.move(box["x"] + 40, box["y"] + 40)
    page.mouse.down()
    page.mouse.move(box["x"] + 240, box["y"] + 90, steps=5)
    page.mouse.up()
    wait_paint(page)
    after = eye(page) - target
    turned = np.arccos(np.dot(before, after) / np.linalg.norm(before) / np.linalg.norm(after))
    assert turned > 0.5 and np.linalg.norm(after) == pytest.approx(np.linalg.norm(before), rel=1e-6)
    _, orbited = shown_3d(page, centres[front], ARTIFACTS / "soft3d_orbited.png")
    assert np.mean(np.abs(orbited - colours) > 40) > 0.1
    # zoom: the wheel moves the camera toward its target
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -800)  # OrbitControls: 0.95 per 100 of delta
    page.wait_for_function("d => window.hookeViewer.view3d.camera.position.distanceTo("
                           "window.hookeViewer.view3d.controls.target) < 0.8 * d",
                           arg=float(np.linalg.norm(after)))


def test_a_nearer_surface_hides_the_particles_behind_it(page, tmp_path):
    choose_scene(page, "soft3d")
    pause_and_paint(page)
    toggle(page, "particles", True)
    scene = page.evaluate("window.hookeViewer.scene")
    x = np.array(page.evaluate("window.hookeViewer.frame.x"))
    surface = np.array(scene["surface"])
    inner = np.setdiff1d(np.arange(len(x)), np.concatenate([surface.ravel(), scene["pinned"]]))
    # whose balls are inside (a ball beyond a surface is in front of it): 3 radii from every triangle
    radius = page.evaluate("window.hookeViewer.view3d.particleSize")
    inner = [i for i in inner if min(ipctk.point_triangle_distance(x[i], *x[t]) for t in surface)
             > (3 * radius) ** 2]
    assert len(inner) > 20
    normals = np.zeros_like(x)  # at the surface's particles: the sums of their triangles' normals
    for k in range(3):
        np.add.at(normals, surface[:, k], triangle_normals(x, surface))
    on_surface = np.unique(surface)
    near_side = on_surface[facing(x[on_surface], normals[on_surface], eye(page), -0.2)]
    # particles inside the body are behind its surface wherever they are drawn (away from the
    # balls of the particles on its near side, which are in front of them)
    blockers, _ = shown_3d(page, x[near_side], tmp_path / "inner.png")
    screen, colours = shown_3d(page, x[inner], tmp_path / "inner.png")
    shown = clear_of(screen, blockers, 5.0)  # a ball is drawn about 4 px wide here
    assert shown.sum() >= 8
    assert surface_like(colours[shown]).mean() > 0.9 and not particle_like(colours[shown]).any()
    # without the surface the same inner particles are seen: blue
    toggle(page, "surface", False)
    _, colours = shown_3d(page, x[inner], tmp_path / "bare.png")
    assert particle_like(colours[shown]).mean() > 0.9


def test_joints_and_pins_are_drawn_in_3d(page, tmp_path):
    # crane: pinned particles red, joints orange (sampled at their midpoints, clear of particles)
    choose_scene(page, "crane")
    pause_and_paint(page)
    scene = page.evaluate("window.hookeViewer.scene")
    x = np.array(page.evaluate("window.hookeViewer.frame.x"))
    screen, colours = shown_3d(page, x, tmp_path / "crane.png")
    assert pin_like(colours[scene["pinned"]]).all(), colours
    joints = np.array(scene["joints"])
    middles, colours = shown_3d(page, (x[joints[:, 0]] + x[joints[:, 1]]) / 2, tmp_path / "crane.png")
    clear = clear_of(middles, screen, 15.0)
    assert clear.sum() >= 6 and joint_like(colours[clear]).all(), (clear, colours)


def test_cloth_sphere_shows_the_ball_and_the_cloth(page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    choose_scene(page, "cloth_sphere")
    starts = page.evaluate("window.hookeViewer.starts")
    type_into(page, "#param-n", "12")
    # until the cloth hangs over the ball: its lowest particle below the ball's centre (y = 0.2)
    page.wait_for_function("n => window.hookeViewer.starts > n && "
                           "Math.min(...window.hookeViewer.frame.x.map(p => p[1])) < 0.2",
                           arg=starts)
    assert page.evaluate("window.hookeViewer.scene.n_particles") == 144
    pause_and_paint(page)
    [ball] = page.evaluate("window.hookeViewer.scene.spheres")
    assert ball == {"center": [0.0, 0.2, 0.0], "radius": 0.2}
    # points of the ball's near side (just inside its surface, so that they hit its facets)
    k = np.arange(400) + 0.5
    polar, azimuth = np.arccos(1 - 2 * k / 400), np.pi * (1 + 5 ** 0.5) * k
    directions = np.stack([np.cos(azimuth) * np.sin(polar), np.cos(polar),
                           np.sin(azimuth) * np.sin(polar)], axis=1)
    centre = np.array(ball["center"])
    front = facing(centre + ball["radius"] * directions, directions, eye(page), 0.5)
    on_ball = centre + 0.98 * ball["radius"] * directions[front]
    # the cloth above it: the centre of every triangle shows the cloth's colour; the ball's near
    # side shows the ball below the cloth's edge and the cloth above it
    x = np.array(page.evaluate("window.hookeViewer.frame.x"))
    triangles = np.array(page.evaluate("window.hookeViewer.scene.surface"))
    # the contact keeps the cloth's particles off the ball, not its flat triangles: a coarse
    # triangle over the ball's top dips into it, and the ball hides that triangle's centre
    centres = x[triangles].mean(axis=1)
    centres = centres[np.linalg.norm(centres - centre, axis=1) > ball["radius"]]
    _, colours = shown_3d(page, centres, ARTIFACTS / "cloth_sphere.png")
    assert surface_like(colours[np.isfinite(colours[:, 0])]).mean() > 0.9
    _, colours = shown_3d(page, on_ball, ARTIFACTS / "cloth_sphere.png")
    shown = np.isfinite(colours[:, 0])
    ball_seen, cloth_seen = sphere_like(colours[shown]), surface_like(colours[shown])
    assert shown.sum() > 50 and (ball_seen | cloth_seen).mean() > 0.95
    assert ball_seen.sum() >= 2 and cloth_seen.mean() > 0.5, (ball_seen, cloth_seen)
    # without the cloth the ball is there, lit
    toggle(page, "surface", False)
    _, colours = shown_3d(page, on_ball, ARTIFACTS / "cloth_sphere_ball.png")
    assert sphere_like(colours[shown]).mean() > 0.9, colours
    brightness = colours[shown].mean(axis=1)
    assert np.ptp(brightness) > 20


def test_the_page_renders_with_no_network(browser, viewer_url, tmp_path):
    """Every request that leaves the viewer's server is aborted: the page, its script, three.js
    and Plotly still load and draw a 3D scene (cloth_drop: the cloth and its ground)."""
    context = browser.new_context(viewport={"width": 1500, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    aborted: list[str] = []
    errors: list[str] = []

    def only_local(route):
        if route.request.url.startswith(viewer_url + "/"):
            route.continue_()
        else:
            aborted.append(route.request.url)
            route.abort("internetdisconnected")

    context.route("**/*", only_local)
    tab = context.new_page()
    tab.on("pageerror", lambda error: errors.append(str(error)))
    try:
        tab.goto(viewer_url + "/?scene=cloth_drop")
        tab.wait_for_function("window.hookeViewer.scene && window.hookeViewer.frame.t > 0"
                              " && window.hookeViewer.view3d.renders > 0")
        # the route is in force: a request elsewhere fails
        refused = tab.evaluate("() => fetch('http://example.com/').then(() => false, () => true)")
        assert refused and aborted == ["http://example.com/"]
        pause_and_paint(tab)
        x = np.array(tab.evaluate("window.hookeViewer.frame.x"))
        _, colours = shown_3d(tab, x, tmp_path / "offline.png")
        assert surface_like(colours[np.isfinite(colours[:, 0])]).mean() > 0.9
        # the ground around the cloth: its colour (warm grey, or its grid lines), not the background
        [plane] = tab.evaluate("window.hookeViewer.scene.planes")
        centre = x.mean(axis=0) * (1, 0, 1) + np.array(plane["point"]) * (0, 1, 0)
        ring = [centre + 0.8 * np.array((np.cos(a), 0.0, np.sin(a))) for a in np.linspace(0, 6, 12)]
        _, colours = shown_3d(tab, ring, tmp_path / "offline.png")
        shown = np.isfinite(colours[:, 0])
        assert shown.sum() >= 8 and np.all(colours[shown, 0] >= colours[shown, 2]), colours
        assert not errors, errors
    finally:
        context.close()


def test_bad_input_marks_the_field_and_the_run_keeps_its_values(page):
    choose_scene(page, "spring1d")
    for selector in ("#dt", "#param-mass", "#param-stiffness"):
        for text in ("abc", "0", "-1", ""):
            n = steps(page)
            type_into(page, selector, text)
            assert is_invalid(page, selector), (selector, text)
            # the run goes on, not restarted
            page.wait_for_function("n => Number(document.getElementById('steps').textContent) > n + 8",
                                   arg=n)
    active = page.evaluate("window.hookeViewer.scene")
    assert active["dt"] == 0.005
    assert {p["name"]: p["value"] for p in active["parameters"]}["mass"] == 0.5
    assert "dt = 0.005" in page.inner_text("#status")
    pause(page)
    t1 = sim_time(page)
    page.click("#step")
    page.wait_for_function("t => Number(document.getElementById('time').dataset.t) > t", arg=t1)
    assert sim_time(page) == pytest.approx(t1 + 0.005, abs=1e-9)  # still the last valid dt
    # a valid value clears the mark and restarts with it
    type_into(page, "#param-mass", "1.0")
    page.wait_for_function("window.hookeViewer.scene.parameters.find(p => p.name === 'mass').value === 1")
    assert not is_invalid(page, "#param-mass")


def test_a_blow_up_shows_hooke_runs_message_and_the_page_stays_connected(page):
    """Explicit Euler at dt = 0.5 overflows (|x| = 2.3e307 at the last finite state): the page
    shows the message `hooke run` prints, draws that state, and restarts on the same connection."""
    choose_scene(page, "spring1d")
    type_into(page, "#steps-per-frame", "10000")
    page.select_option("#integrator", "explicit_euler")
    page.fill("#dt", "0.5")
    page.click("#restart")
    page.wait_for_function("document.getElementById('message').textContent.includes('non-finite')")
    message = page.inner_text("#message")
    assert message.startswith("the state became non-finite at step 1130 (t = 565); worst particle 1")
    assert message.endswith("paused at the last finite state (t = 564.5). Try a smaller dt or an "
                            "implicit integrator (implicit_euler, implicit_euler_linear).")
    page.wait_for_function("window.hookeViewer.frame.paused && window.hookeViewer.frame.t === 564.5")
    assert page.evaluate("window.hookeViewer.socket.readyState") == 1  # open
    page.select_option("#integrator", "symplectic_euler")
    page.fill("#dt", "0.005")
    starts = page.evaluate("window.hookeViewer.starts")
    page.click("#restart")
    page.wait_for_function("n => window.hookeViewer.starts > n && window.hookeViewer.frame.t > 0",
                           arg=starts)
    assert "disconnected" not in page.inner_text("#status") and page.inner_text("#message") == ""


def test_a_blow_up_message_is_in_sight_however_long_the_controls(page):
    """Issue 15 red team: cloth2d's seven parameter fields push the message line below a 900 px
    high window, so its blow-up (k = 1e30) was told where nobody saw it. A message stays in
    sight at the window's bottom edge while its place is below it."""
    choose_scene(page, "cloth2d")
    type_into(page, "#param-stiffness", "1e30")
    page.wait_for_function("document.getElementById('message').textContent.includes('non-finite')")
    top, bottom, height = page.evaluate("() => { const box = document.getElementById('message')"
                                        ".getBoundingClientRect(); return [box.top, box.bottom, innerHeight]; }")
    assert 0 <= top and bottom <= height, (top, bottom, height)
    assert page.evaluate("() => { const box = document.getElementById('message').getBoundingClientRect(); "
                         "return document.elementFromPoint(box.left + 5, (box.top + box.bottom) / 2).id; }"
                         ) == "message"  # drawn over what scrolls beneath it, not under


def test_malformed_and_oversized_messages_do_not_stop_the_server(page):
    choose_scene(page, "spring1d")
    # a second connection sends three bad messages; it fails after 10 s rather than hang
    errors = page.evaluate("""() => new Promise((resolve, reject) => {
        const ws = new WebSocket(location.origin.replace('http', 'ws') + '/ws');
        const errors = [];
        const timer = setTimeout(() => {
            ws.close();
            reject(new Error('3 error replies expected within 10 s, got ' + JSON.stringify(errors)));
        }, 10000);
        ws.onmessage = (event) => {
            const message = JSON.parse(event.data);
            if (message.type === 'scene') {
                ws.send('not json');
                ws.send('{"type": "drag", "particle": "x", "target": [0]}');
                ws.send('x'.repeat(70 * 1024));
            }
            if (message.type === 'error') errors.push(message.message);
            if (errors.length === 3) { clearTimeout(timer); ws.close(); resolve(errors); }
        };
    })""")
    assert "malformed JSON" in errors[0] and "drag.particle" in errors[1] and "too large" in errors[2]
    t = sim_time(page)
    wait_time(page, t + 0.3)  # the first page's run goes on
    assert "disconnected" not in page.inner_text("#status")


def test_the_3d_view_follows_the_body_and_a_surface_particle_can_be_dragged(page):
    # the double pendulum swings about: the camera's target keeps its offset from the body's
    # centre (the middle of its bounding box) while "Follow the body" is on
    choose_scene(page, "pendulum")
    offset = """() => { const v = window.hookeViewer.view3d, x = window.hookeViewer.frame.x;
        const mid = [0, 1, 2].map(k => (Math.min(...x.map(p => p[k])) + Math.max(...x.map(p => p[k]))) / 2);
        return [v.controls.target.toArray().map((c, k) => c - mid[k]), mid]; }"""
    pause(page)
    before, start = page.evaluate(offset)
    page.click("#pause")
    wait_time(page, sim_time(page) + 0.5)
    pause(page)
    after, end = page.evaluate(offset)
    assert np.linalg.norm(np.subtract(end, start)) > 0.05, (start, end)
    assert np.allclose(after, before, atol=1e-6), (before, after)
    # off: the target stays where it is
    page.uncheck("#follow")
    target = page.evaluate("window.hookeViewer.view3d.controls.target.toArray()")
    page.click("#pause")
    wait_time(page, sim_time(page) + 0.5)
    assert page.evaluate("window.hookeViewer.view3d.controls.target.toArray()") == target
    choose_scene(page, "cloth_drop")
    pause(page)
    # a press on the cloth grabs a free corner of the triangle under the mouse
    page.evaluate("window.scrollTo(0, 0)")  # reaching the checkbox may have scrolled the page
    wait_paint(page)
    x = np.array(page.evaluate("window.hookeViewer.frame.x"))
    triangle = np.array(page.evaluate("window.hookeViewer.scene.surface"))[100]
    centre = x[triangle].mean(axis=0)
    sx, sy = page.evaluate("p => { const s = window.hookeViewer.canvasPoint(p),"
                           " c = document.getElementById('view3d'), r = c.getBoundingClientRect();"
                           " return [r.left + c.clientLeft + s[0], r.top + c.clientTop + s[1]]; }",
                           centre.tolist())
    camera = np.array(page.evaluate("window.hookeViewer.view3d.camera.position.toArray()"))
    page.mouse.move(sx, sy)
    page.mouse.down()
    page.mouse.move(sx + 30, sy - 40, steps=3)
    page.wait_for_function("window.hookeViewer.frame.cursor !== null")
    cursor = page.evaluate("window.hookeViewer.frame.cursor")
    assert cursor["particle"] in triangle.tolist()
    # the press grabbed instead of orbiting: the camera has not moved
    assert np.allclose(page.evaluate("window.hookeViewer.view3d.camera.position.toArray()"), camera)
    page.mouse.up()
    page.wait_for_function("window.hookeViewer.frame.cursor === null")


@pytest.mark.parametrize("scene", ["cloth_drop", "soft3d_pile", "cloth2d"])
def test_the_page_fits_1280_by_720_and_names_every_parameter_in_words(page, scene):
    """At 1280 × 720 nothing scrolls sideways (the view shrinks, the plots keep their width), and
    no scene parameter is labelled by its bare name (nx, n_seg, tilt …)."""
    page.set_viewport_size({"width": 1280, "height": 720})
    choose_scene(page, scene)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    plots = page.evaluate("document.getElementById('plots').getBoundingClientRect().right")
    assert plots <= 1280
    labels = page.eval_on_selector_all("#parameters label",
                                       "nodes => nodes.map(n => n.firstChild.textContent.trim())")
    names = set(hooke.scene(scene).parameters)
    assert labels and not set(labels) & names, labels


def test_an_unknown_scene_in_the_address_keeps_its_error_shown(page, viewer_url):
    """?scene=nosuch: the server answers with the error, then the default scene; the error stays
    on the page while that scene runs (the scene used to clear it at once)."""
    page.goto(viewer_url + "/?scene=nosuch")
    page.wait_for_function("window.hookeViewer.scene !== null && window.hookeViewer.frame.t > 0.2")
    assert page.inner_text("#message").startswith("scene: unknown scene (built-in: ")
    assert "got 'nosuch'" in page.inner_text("#message")
    choose_scene(page, "cloth2d")  # a scene chosen afterwards clears it
    assert page.inner_text("#message") == ""


def test_a_page_waiting_for_its_simulation_says_so_until_its_scene_comes(browser, monkeypatch):
    """redM: the first page after an install waited 116 s (the fork server compiling hooke's
    kernels) with "connecting…" in its status line; once connected it says what it waits for."""
    from conftest import serving
    from hooke.viz.web import server, worker

    started = worker.SessionProcess.start.__func__

    async def slow_start(cls, *args, **kwargs):
        await asyncio.sleep(3.0)
        return await started(cls, *args, **kwargs)

    monkeypatch.setattr(worker.SessionProcess, "start", classmethod(slow_start))
    with serving(server.create_app("spring1d")) as url, opened(browser, url) as tab:
        assert tab.inner_text("#status").startswith("connected; starting this page's simulation")
        tab.wait_for_function("window.hookeViewer.scene !== null")
        assert tab.inner_text("#status").startswith("spring1d · ")


def test_the_2d_view_follows_a_sagging_cloth_until_the_user_moves_it(page):
    """cloth2d at dt = 0.0025 sags far below where it starts (it used to leave the canvas): every
    particle stays drawn inside the canvas; after a wheel zoom the view is the user's and stays."""
    choose_scene(page, "cloth2d")
    type_into(page, "#dt", "0.0025")
    page.wait_for_function("window.hookeViewer.active.dt === 0.0025")
    start = sim_time(page)
    wait_time(page, start + 2.0)
    inside = page.evaluate("""() => {
        const viewer = window.hookeViewer, r = document.getElementById('view').getBoundingClientRect();
        return viewer.frame.x.every((p, i) => {
            const [cx, cy] = viewer.clientPosition(i);
            return cx >= r.left && cx <= r.right && cy >= r.top && cy <= r.bottom;
        });
    }""")
    assert inside
    box = page.eval_on_selector("#view", "c => { const r = c.getBoundingClientRect(); "
                                         "return [r.left + r.width / 2, r.top + r.height / 2]; }")
    page.mouse.move(*box)
    page.mouse.wheel(0, -300)
    page.wait_for_function("window.hookeViewer.view2dMoved === true")
    scale = page.evaluate("window.hookeViewer.view2d.scale")
    wait_time(page, sim_time(page) + 0.5)
    assert page.evaluate("window.hookeViewer.view2d.scale") == scale


def test_a_moving_particle_is_grabbed_where_it_was_a_moment_ago(page):
    """spring1d's mass moves metres a second: a click lands where the particle was drawn a few
    frames before, more than the pick radius from where it is now, and still grabs it."""
    choose_scene(page, "spring1d")
    page.wait_for_function("""() => {
        const trail = window.hookeViewer.trail;
        return trail.length >= 8 && Math.abs(trail[0][1][0] - trail[trail.length - 1][1][0]) > 0.5;
    }""")
    pause(page)
    old, now = page.evaluate("""() => {
        const viewer = window.hookeViewer, r = document.getElementById('view').getBoundingClientRect();
        const scale = r.width / document.getElementById('view').width;
        const x = viewer.trail[0][1][0], current = viewer.frame.x[1][0];
        const px = (v) => r.left + (700 / 2 + (v - viewer.view2d.cx) * viewer.view2d.scale) * scale;
        return [px(x), px(current)];
    }""")
    assert abs(old - now) > 30  # canvas pixels apart: beyond the pick radius of the drawn mass
    y = page.evaluate("window.hookeViewer.clientPosition(1)[1]")
    page.mouse.move(old, y)
    page.mouse.down()
    page.wait_for_function("window.hookeViewer.pointer && window.hookeViewer.pointer.mode === 'drag'"
                           " && window.hookeViewer.pointer.particle === 1")
    page.mouse.up()


# -- an observed motion beside the simulated one (issue 18 §3) ------------------------------------

OBSERVED = (142, 43, 209)  # the observed motion's purple, in 2D and (lit) in 3D


def observed_like(c):
    return (c[:, 2] > c[:, 1] + 60) & (c[:, 0] > c[:, 1] + 40)


@contextmanager
def observed_page(browser, scene: str, path: Path):
    """A page on a viewer of ``scene`` served with ``--observed path``."""
    from conftest import serving
    from hooke.viz.web import server

    with serving(server.create_app(scene, observed=path)) as url, opened(browser, url) as tab:
        tab.wait_for_function("window.hookeViewer.frame !== null && window.hookeViewer.frame.t > 0")
        yield tab


def test_an_observed_motion_is_drawn_beside_the_simulated_one_in_2d(browser, tmp_path):
    from test_viewer_observed import write_csv

    # spring1d's free particle as observed: its closed form shifted by 0.3 m, every 0.01 s to 5 s
    scene = hooke.scene("spring1d")
    times = np.round(np.arange(0.0, 5.0 + 1e-9, 0.01), 10)
    path = write_csv(tmp_path / "observed.csv", times, [1], scene.analytic(times)[:, [1], :] + 0.3)
    with observed_page(browser, "spring1d", path) as page:
        pause_and_paint(page)
        frame = page.evaluate("window.hookeViewer.frame")
        [[observed]] = frame["observed"]["x"]
        assert frame["observed"]["particles"] == [1]
        # linear between rows 0.01 s apart: within h²/8·ω²·amplitude of the closed form (the
        # particle starts 1 m from its rest length, at rest)
        omega2 = scene.model.spring_stiffness[0] / scene.model.mass[1]
        bound = 0.01 ** 2 / 8 * omega2 * 1.0 * 1.001
        assert abs(observed - (scene.analytic(np.array([frame["t"]]))[0, 1, 0] + 0.3)) < bound
        # three significant digits (JavaScript's toPrecision(3))
        assert float(page.inner_text("#observed-rms")) == pytest.approx(frame["observed"]["rms"],
                                                                        rel=5e-3)
        assert "observed.csv" in page.inner_text("#observed-note")
        # a purple ring about the observed position
        centre, _ = drawn_at(page, [[observed]])
        radius = page.evaluate("Math.max(2, Math.min(10, window.hookeViewer.particleRadius * "
                               "window.hookeViewer.view2d.scale)) + 3")
        angles = np.linspace(0, 2 * np.pi, 24, endpoint=False)
        ring = centre[0] + radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)
        _, colours = drawn_at(page, ring, world=False)
        assert observed_like(colours).mean() > 0.5, colours
        # another scene has none, and says why
        choose_scene(page, "pendulum")
        assert page.evaluate("window.hookeViewer.frame.observed") is None
        assert "belongs to scene 'spring1d'" in page.inner_text("#observed-note")
        assert page.is_hidden("#observed-row")


def test_an_observed_motion_is_drawn_over_the_3d_body_and_can_be_hidden(browser, tmp_path):
    from test_viewer_observed import write_csv

    # the top as observed: hooke's own run at the scene's step, every step, moved 5 cm along x;
    # the viewer steps the same run, so observed minus simulated is that shift exactly
    scene = hooke.scene("top")
    result = hooke.simulate(scene, t_end=3.0)
    shifted = result.x + np.array([0.05, 0.0, 0.0])
    path = write_csv(tmp_path / "top.csv", result.t, range(scene.model.n_particles), shifted)
    with observed_page(browser, "top", path) as page:
        pause_and_paint(page)
        frame = page.evaluate("window.hookeViewer.frame")
        assert frame["t"] <= 3.0, "the page ran past the observed record before it paused"
        assert frame["observed"]["particles"] == list(range(scene.model.n_particles))
        assert frame["observed"]["rms"] == pytest.approx(0.05, rel=1e-9)
        assert page.is_checked("#layer-observed")
        _, colours = shown_3d(page, frame["observed"]["x"], ARTIFACTS / "top_observed.png")
        assert observed_like(colours).all(), colours
        toggle(page, "observed", False)
        _, colours = shown_3d(page, frame["observed"]["x"], tmp_path / "hidden.png")
        assert not observed_like(colours).any(), colours
