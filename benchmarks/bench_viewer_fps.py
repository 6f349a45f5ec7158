"""Frame rate of the browser viewer's 3D view (three.js, WebGL) on live scenes, measured in
Debian's headless chromium driven by Playwright against `hooke serve` in a background thread.

For each scene the page runs for a warm-up, then for ``--seconds`` it counts: the browser's
animation frames (requestAnimationFrame callbacks), the 3D view's draws (it draws once per
animation frame in which something changed) and the simulation frames received over the
WebSocket. It prints one row per scene and the WebGL renderer the browser used (headless chromium
here renders with SwiftShader on the CPU, so a machine with a GPU draws faster; the server's
stepping and the JSON of every frame are included either way).

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
              f"{'3D draws/s':>12}{'sim. frames/s':>15}{'steps/s':>9}")
        for scene in options.scenes.split(","):
            page.goto(f"{url}/?scene={scene}")
            page.wait_for_function("window.hookeViewer.scene && window.hookeViewer.frame.t > 0"
                                   " && window.hookeViewer.view3d.renders > 0", timeout=120_000)
            page.wait_for_timeout(1000 * options.warmup)
            rates = page.evaluate(MEASURE, options.seconds)
            opened = page.evaluate("[window.hookeViewer.scene.n_particles,"
                                   " window.hookeViewer.scene.surface.length]")
            print(f"{scene:<14}{opened[0]:>10}{opened[1]:>10}{rates['animation']:>16.1f}"
                  f"{rates['renders']:>12.1f}{rates['frames']:>15.1f}{rates['steps']:>9.0f}")
        browser.close()
    app.should_exit = True


if __name__ == "__main__":
    main()
