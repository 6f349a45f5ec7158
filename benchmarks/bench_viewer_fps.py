"""Frame rate of the browser viewer's 3D view (three.js, WebGL) on live scenes, measured in
Debian's headless chromium driven by Playwright against `hooke serve` in a background thread.

For each scene the page runs for a warm-up, then for ``--seconds`` it counts: the browser's
animation frames (requestAnimationFrame callbacks), the 3D view's draws (it draws once per
animation frame in which something changed) and the simulation frames received over the
WebSocket. Then, with the run paused, the two libraries the issue weighs draw the same body
moving at every animation frame (its positions shifted by a wobble: new vertex positions, normals
and a draw each time): the viewer's three.js view, and a Plotly WebGL ``mesh3d`` trace of the
same triangles updated by ``Plotly.restyle`` in a page of its own (700 × 600, like the view).
It prints one row per scene and the WebGL renderer the browser used (headless chromium here
renders with SwiftShader on the CPU, so a machine with a GPU draws faster; the server's stepping
and the JSON of every frame are included in the live columns).

    python benchmarks/bench_viewer_fps.py                     # soft3d and the 100 x 100 cloth
    python benchmarks/bench_viewer_fps.py --scenes cloth_sphere --seconds 10
"""

from __future__ import annotations

import argparse
import socket
import threading
import time

import uvicorn
from playwright.sync_api import sync_playwright

from hooke.viz.web import server

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# counts animation frames, the view's draws and received frame messages over `seconds`
MEASURE = """async (seconds) => {
    const viewer = window.hookeViewer;
    let animation = 0, run = true;
    const count = () => { animation += 1; if (run) requestAnimationFrame(count); };
    requestAnimationFrame(count);
    const renders = viewer.view3d.renders, frames = viewer.framesReceived;
    const steps = viewer.frame.steps, t0 = performance.now();
    await new Promise((done) => setTimeout(done, 1000 * seconds));
    run = false;
    const elapsed = (performance.now() - t0) / 1000;
    return { animation: animation / elapsed, renders: (viewer.view3d.renders - renders) / elapsed,
             frames: (viewer.framesReceived - frames) / elapsed,
             steps: (viewer.frame.steps - steps) / elapsed };
}"""
# each animation frame: the body's positions, shifted by a wobble, drawn by the viewer's 3D view
THREE_MOVING = """async (seconds) => {
    const viewer = window.hookeViewer, view = viewer.view3d, frame = viewer.frame;
    const size = view.radius * 0.02;
    let run = true, k = 0;
    const move = () => {
        k += 1;
        const shift = size * Math.sin(k / 5);
        view.update({ ...frame, x: frame.x.map((p) => [p[0] + shift, p[1], p[2] - shift]) });
        if (run) requestAnimationFrame(move);
    };
    requestAnimationFrame(move);
    const renders = view.renders, t0 = performance.now();
    await new Promise((done) => setTimeout(done, 1000 * seconds));
    run = false;
    return (view.renders - renders) / ((performance.now() - t0) / 1000);
}"""
# the same with a Plotly mesh3d trace in a page of its own: one restyle (and its redraw) at a time
PLOTLY_MOVING = """async ([x, triangles, seconds]) => {
    const div = document.getElementById("plot");
    const column = (k, shift) => x.map((p) => p[k] + shift);
    await Plotly.newPlot(div, [{ type: "mesh3d", x: column(0, 0), y: column(1, 0), z: column(2, 0),
        i: triangles.map((t) => t[0]), j: triangles.map((t) => t[1]), k: triangles.map((t) => t[2]),
        color: "#d9825b", flatshading: false }],
        { width: 700, height: 600, margin: { l: 0, r: 0, t: 0, b: 0 } }, { staticPlot: false });
    let draws = 0, k = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < 1000 * seconds) {
        k += 1;
        const shift = 0.01 * Math.sin(k / 5);
        await Plotly.restyle(div, { x: [column(0, shift)], y: [column(1, 0)], z: [column(2, -shift)] });
        await new Promise((done) => requestAnimationFrame(done));
        draws += 1;
    }
    return draws / ((performance.now() - t0) / 1000);
}"""
RENDERER = """() => {
    const gl = document.createElement("canvas").getContext("webgl2");
    const info = gl && gl.getExtension("WEBGL_debug_renderer_info");
    return info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : "unknown";
}"""


def serve() -> tuple[str, uvicorn.Server]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    app = uvicorn.Server(uvicorn.Config(server.create_app("spring1d"),
                                        **server.uvicorn_options("127.0.0.1", listener.getsockname()[1])))
    threading.Thread(target=app.run, kwargs={"sockets": [listener]}, daemon=True).start()
    while not app.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{listener.getsockname()[1]}", app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", default="soft3d,cloth", help="comma-separated 3D scenes")
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring time per scene")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring")
    options = parser.parse_args()
    url, app = serve()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 900})
        print(f"WebGL renderer: {page.evaluate(RENDERER)}")
        print(f"{'scene':<14}{'particles':>10}{'triangles':>10}{'anim. frames/s':>16}"
              f"{'3D draws/s':>12}{'sim. frames/s':>15}{'steps/s':>9}"
              f"{'moving, three.js/s':>20}{'moving, Plotly/s':>18}")
        plotly_page = browser.new_page(viewport={"width": 1500, "height": 900})
        plotly_page.goto(f"{url}/static/viewer.css")  # any page of the server: same origin
        plotly_page.set_content('<div id="plot"></div>')
        plotly_page.add_script_tag(url=f"{url}/plotly.min.js")
        for scene in options.scenes.split(","):
            page.goto(f"{url}/?scene={scene}")
            page.wait_for_function("window.hookeViewer.scene && window.hookeViewer.frame.t > 0"
                                   " && window.hookeViewer.view3d.renders > 0", timeout=120_000)
            page.wait_for_timeout(1000 * options.warmup)
            rates = page.evaluate(MEASURE, options.seconds)
            opened = page.evaluate("[window.hookeViewer.scene.n_particles,"
                                   " window.hookeViewer.scene.surface.length]")
            page.click("#pause")
            page.wait_for_function("window.hookeViewer.frame.paused")
            three = page.evaluate(THREE_MOVING, options.seconds)
            x, triangles = page.evaluate("[window.hookeViewer.frame.x, window.hookeViewer.scene.surface]")
            plotly = plotly_page.evaluate(PLOTLY_MOVING, [x, triangles, options.seconds])
            print(f"{scene:<14}{opened[0]:>10}{opened[1]:>10}{rates['animation']:>16.1f}"
                  f"{rates['renders']:>12.1f}{rates['frames']:>15.1f}{rates['steps']:>9.0f}"
                  f"{three:>20.1f}{plotly:>18.1f}")
        browser.close()
    app.should_exit = True


if __name__ == "__main__":
    main()
