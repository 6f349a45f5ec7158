"""The browser viewer in a real browser: Playwright driving Debian's headless chromium against a
`hooke serve` app running in a background thread on a free 127.0.0.1 port.

The page is driven as a user would (selectors, typed fields, buttons, mouse) and read back from
what it displays: the time readout, the Plotly graph divs' data, the canvas pixels. The 3D
screenshots are kept as artefacts in ``out/test-artifacts/`` (the others go to ``tmp_path``).
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import hooke
from hooke.viz.web import server

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"{CHROMIUM} is absent (apt-get install chromium; `make test` does)")

TIMEOUT_MS = 15_000
ARTIFACTS = Path(__file__).resolve().parents[1] / "out" / "test-artifacts"


@pytest.fixture(scope="module")
def base_url():
    import uvicorn

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    app_server = uvicorn.Server(uvicorn.Config(server.create_app("spring1d"), log_level="warning",
                                               ws_max_size=server.WS_MAX_SIZE))
    thread = threading.Thread(target=app_server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not app_server.started:
        assert time.monotonic() < deadline, "the viewer server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    app_server.should_exit = True
    thread.join(timeout=10)
    listener.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, base_url):
    """A fresh page on the viewer; every request it makes must stay on the viewer's server."""
    context = browser.new_context(viewport={"width": 1500, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    requests: list[str] = []
    errors: list[str] = []
    tab.on("request", lambda request: requests.append(request.url))
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(base_url + "/")
    tab.wait_for_function("document.querySelectorAll('#scene option').length > 0")
    yield tab
    context.close()
    assert not errors, errors
    local = (base_url, base_url.replace("http://", "ws://"), "data:")
    assert all(url.startswith(local) for url in requests), requests


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


def position_plot(page):
    """(t, numerical, analytic) as plotted in the Plotly graph div."""
    data = page.evaluate("""() => {
        const d = document.getElementById('plot-position').data;
        return [d[0].x, d[0].y, d[1].y, d[0].name, d[1].name];
    }""")
    assert data[3:] == ["numerical", "analytic"]
    return tuple(np.array(values) for values in data[:3])


def is_invalid(page, selector: str) -> bool:
    marked = "invalid" in (page.get_attribute(selector, "class") or "")
    aria = page.get_attribute(selector, "aria-invalid") == "true"
    assert marked == aria
    return marked


# -- tests -----------------------------------------------------------------------------------------

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
    page.wait_for_function(
        "t => { const d = document.getElementById('plot-position').data;"
        " return d && Math.abs(d[0].x[d[0].x.length - 1] - t) < 1e-9; }", arg=shown)
    t, numerical, analytic = position_plot(page)
    assert t.size == 1000 and np.all(np.diff(t) > 0)
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


def test_pause_stops_time_step_advances_one_step_restart_resets(page):
    choose_scene(page, "spring1d")
    wait_time(page, 1.0)
    pause(page)
    t1, n1 = sim_time(page), steps(page)
    time.sleep(0.4)
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
    start = np.array(page.evaluate(f"window.hookeViewer.frame.x[{corner}]"))
    sx, sy = page.evaluate(f"window.hookeViewer.clientPosition({corner})")
    page.mouse.move(sx, sy)
    page.mouse.down()
    page.mouse.move(sx + 120, sy - 60, steps=6)
    page.wait_for_function(f"window.hookeViewer.frame.cursor && window.hookeViewer.frame.cursor.particle === {corner}")
    page.focus("#pause")
    page.keyboard.press("Enter")  # resume without releasing the mouse
    page.wait_for_function("window.hookeViewer.frame.paused === false")
    time.sleep(1.0)
    target = np.array(page.evaluate("window.hookeViewer.frame.cursor.target"))
    now = np.array(page.evaluate(f"window.hookeViewer.frame.x[{corner}]"))
    assert target[0] > start[0] + 0.3 and target[1] > start[1] + 0.15  # 120 px right, 60 px up
    pull = target - start
    assert np.dot(now - start, pull) / np.linalg.norm(pull) > 0.5 * np.linalg.norm(pull)  # toward it
    page.mouse.up()
    page.wait_for_function("window.hookeViewer.frame.cursor === null")
    assert not page.inner_text("#message")


def canvas_pixels(page, path) -> np.ndarray:
    from PIL import Image

    page.locator("#view").screenshot(path=str(path))
    return np.asarray(Image.open(path).convert("L"), dtype=float)


def test_soft3d_renders_in_3d_with_orbit_and_zoom(page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    choose_scene(page, "soft3d")
    assert page.evaluate("window.hookeViewer.scene.dim") == 3
    wait_time(page, 0.05)
    pause(page)
    first = canvas_pixels(page, ARTIFACTS / "soft3d.png")
    page.screenshot(path=str(ARTIFACTS / "soft3d_page.png"))
    drawn = np.mean(first < 200)
    assert first.std() > 10 and drawn > 0.02, (first.std(), drawn)
    # orbit: drag on an empty corner of the canvas turns the camera
    box = page.locator("#view").bounding_box()
    page.mouse.move(box["x"] + 40, box["y"] + 40)
    page.mouse.down()
    page.mouse.move(box["x"] + 240, box["y"] + 90, steps=5)
    page.mouse.up()
    time.sleep(0.2)
    orbited = canvas_pixels(page, ARTIFACTS / "soft3d_orbited.png")
    assert np.mean(np.abs(orbited - first)) > 1.0
    # zoom: the wheel moves the camera closer
    distance = page.evaluate("window.hookeViewer.camera.distance")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -400)
    page.wait_for_function("d => window.hookeViewer.camera.distance < 0.8 * d", arg=distance)


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


def test_malformed_and_oversized_messages_do_not_stop_the_server(page, base_url):
    choose_scene(page, "spring1d")
    errors = page.evaluate("""() => new Promise((resolve) => {
        const ws = new WebSocket(location.origin.replace('http', 'ws') + '/ws');
        const errors = [];
        ws.onmessage = (event) => {
            const message = JSON.parse(event.data);
            if (message.type === 'scene') {
                ws.send('not json');
                ws.send('{"type": "drag", "particle": "x", "target": [0]}');
                ws.send('x'.repeat(70 * 1024));
            }
            if (message.type === 'error') errors.push(message.message);
            if (errors.length === 3) { ws.close(); resolve(errors); }
        };
    })""")
    assert "malformed JSON" in errors[0] and "drag.particle" in errors[1] and "too large" in errors[2]
    t = sim_time(page)
    wait_time(page, t + 0.3)  # the first page's run goes on
    assert "disconnected" not in page.inner_text("#status")
