"""The browser viewer's server without a browser: routes, the WebSocket protocol, bad messages,
several clients, and the simulation session behind a page (hooke.viz.web)."""

from __future__ import annotations

import json
import re
import socket
import time
from contextlib import contextmanager
from importlib import resources

import numpy as np
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import hooke
from hooke.errors import HookeInputError
from hooke.viz.web import server
from hooke.viz.web.protocol import (MAX_MESSAGE_BYTES, Drag, Load, Pause, ProtocolError, Restart,
                                    Set, parse_command)
from hooke.viz.web.session import Session


@pytest.fixture(scope="module")
def client():
    with TestClient(server.create_app("spring1d", allow_hosts=["testserver"])) as test_client:
        yield test_client


def next_of(ws, kind: str, limit: int = 500) -> dict:
    """The next message of type ``kind`` (frames arrive continually in between)."""
    for _ in range(limit):
        message = ws.receive_json()
        if message["type"] == kind:
            return message
    raise AssertionError(f"no {kind!r} message in {limit} messages")


def frame_after(ws, predicate, limit: int = 500) -> dict:
    for _ in range(limit):
        message = ws.receive_json()
        if message["type"] == "frame" and predicate(message):
            return message
    raise AssertionError("no such frame")


@contextmanager
def connected(client, scene: str | None = None):
    """A live page connection: (websocket, hello message, scene message)."""
    with client.websocket_connect("/ws" + (f"?scene={scene}" if scene else "")) as ws:
        hello = ws.receive_json()
        yield ws, hello, ws.receive_json()


# -- routes -------------------------------------------------------------------------------------

def test_page_and_assets_are_served_locally(client):
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    for element in ('id="scene"', 'id="integrator"', 'id="dt"', 'id="restart"', 'id="pause"',
                    'id="step"', 'id="time"', 'id="step-ms"', 'id="fps"', 'id="view"'):
        assert element in page.text
    bundled = (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()
    plotly = client.get("/plotly.min.js")
    assert plotly.status_code == 200 and plotly.content == bundled
    for asset in ("/static/viewer.js", "/static/view3d.js", "/static/viewer.css",
                  "/static/vendor/three.module.min.js", "/static/vendor/three.LICENSE"):
        assert client.get(asset).status_code == 200
    # three.js is the vendored npm build (scripts/vendor_three.sh), with its licence
    three = client.get("/static/vendor/three.module.min.js").text
    assert three.startswith("// three.js r") and "Copyright 2010-" in three
    assert "MIT License" in client.get("/static/vendor/three.LICENSE").text
    # nothing is loaded from another host: every src/href and import in the page is local
    for text in (page.text, client.get("/static/viewer.js").text, client.get("/static/view3d.js").text,
                 client.get("/static/viewer.css").text):
        assert not re.search(r"(import|from)\s*[\"'](https?:)?//", text)
        assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", text)
        assert "cdn" not in text.lower()


@pytest.mark.parametrize("path", ["/", "/plotly.min.js", "/static/viewer.js"])
def test_head_answers_as_get_does_without_a_body(client, path):
    """Issue 15 red team: HEAD of the page and of Plotly.js was 405, although the static files
    answer it (`curl -I` on the viewer's address failed)."""
    got, head = client.get(path), client.head(path)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == got.headers["content-length"]


def test_unknown_scene_is_refused_by_the_app_factory():
    with pytest.raises(HookeInputError, match="SCENE: unknown scene"):
        server.create_app("no_such_scene")


# -- the live connection -------------------------------------------------------------------------

def test_hello_lists_every_scene_and_integrator_then_the_scene_runs(client):
    with connected(client) as (ws, hello, scene):
        assert hello["scenes"] == hooke.scenes()
        assert [item["name"] for item in hello["integrators"]] == hooke.integrators()
        assert hello["max_message_bytes"] == MAX_MESSAGE_BYTES
        assert scene["type"] == "scene" and scene["scene"] == "spring1d" and scene["dim"] == 1
        assert {p["name"]: p["value"] for p in scene["parameters"]} == {
            "x0": 2.0, "v0": 0.0, "stiffness": 5.0, "mass": 0.5}
        assert scene["has_analytic"] and scene["tracked"] == [1, 0] and scene["pinned"] == [0]
        frame = frame_after(ws, lambda f: f["t"] > 0.1)
        assert frame["steps"] > 0 and frame["step_ms"] > 0
        assert np.allclose(frame["position"]["analytic"],
                           2.0 * np.cos(np.sqrt(10.0) * np.array(frame["position"]["t"])))
        assert set(frame["energy"]) == {"t", "kinetic", "potential", "total"}


def test_scene_in_the_url_is_opened(client):
    with connected(client, "cloth2d") as (ws, _, scene):
        assert scene["scene"] == "cloth2d" and scene["n_particles"] == 1200
        assert len(scene["springs"]) == 4592 and len(scene["pinned"]) == 2


@pytest.mark.parametrize("text, reason", [
    ("this is not json", "malformed JSON"),
    ("[1, 2, 3]", "JSON object with a 'type'"),
    ('{"type": "explode"}', "type: must be one of 'load', 'restart',"),
    ('{"type": "set", "dt": "0.1"}', "set.dt"),
    ('{"type": "set", "dt": -0.1}', "greater than 0"),
    ('{"type": "set", "dt": NaN}', "finite number"),
    ('{"type": "drag", "particle": -1, "target": [0.0]}', "drag.particle"),
    ('{"type": "pause", "paused": "yes"}', "pause.paused"),
    ('{"type": "step", "extra": 1}', "Extra inputs"),
    ("[" * 100_000, "too large"),
    ("[" * 50_000, "nested too deeply"),
    # An integer of more than 4,300 digits: Python's json raises a plain ValueError for it, which
    # ended the connection with no message (code 1000).
    ('{"type": "drag", "particle": ' + "1" * 5000 + ', "target": [0.0]}', "too many digits"),
    ('{"type": "step", "n": ' + "9" * 4301 + '}', "too many digits"),
])
def test_bad_messages_get_an_error_and_the_connection_goes_on(client, text, reason):
    with connected(client) as (ws, _, _):
        ws.send_text(text)
        error = next_of(ws, "error")
        assert reason in error["message"]
        ws.send_text('{"type": "pause", "paused": true}')
        frame_after(ws, lambda f: f["paused"])


@pytest.mark.parametrize("text, field, line", [
    ('{"type": "set", "dt": -1.5}', "dt", "set.dt: Input should be greater than 0, got -1.5"),
    ('{"type": "set", "dt": NaN}', "dt", "set.dt: Input should be a finite number, got nan"),
    ('{"type": "set", "steps_per_frame": 10001}', "steps_per_frame",
     "set.steps_per_frame: Input should be less than or equal to 10000, got 10001"),
    ('{"type": "drag", "particle": 1, "target": [1, "a"]}', "target",
     "drag.target.1: Input should be a valid number, got 'a'"),
    ('{"type": "restart", "integrator": "rk4", "dt": 0.1, "parameters": {"mass": true}}',
     "parameters.mass", "restart.parameters.mass: Input should be a valid number, got True"),
    ('{"type": "pause"}', "paused", "pause.paused: Field required"),
    ('{"type": "' + "x" * 500 + '"}', None, "type: must be one of 'load', 'restart', 'set', 'pause', "
     "'step', 'drag', 'release', got '" + "x" * 79 + "… (502 characters)"),
    # A parameter name of 60,000 characters was echoed whole, in the line and as its field
    # ("restart.parameters.kkk….[key]", 120 KB); an empty one was the field "parameters.".
    ('{"type": "restart", "integrator": "rk4", "dt": 0.1, "parameters": {"' + "k" * 60_000
     + '": 1}}', "parameters", "restart.parameters[name]: String should have at most 100 "
     "characters, got '" + "k" * 79 + "… (60,002 characters)"),
    ('{"type": "restart", "integrator": "rk4", "dt": 0.1, "parameters": {"": 1}}', "parameters",
     "restart.parameters[name]: String should have at least 1 character, got ''"),
])
def test_an_invalid_command_names_its_field_and_the_value_sent(client, text, field, line):
    """pydantic's errors named where (set.dt) but not what the page sent, and the error's field
    was null, so the page could mark no input; an unknown type was echoed whole (64 KiB)."""
    with pytest.raises(ProtocolError) as refused:
        parse_command(text)
    assert (refused.value.field, str(refused.value)) == (field, "invalid message: " + line)
    with connected(client) as (ws, _, _):
        ws.send_text(text)
        assert next_of(ws, "error") == {"type": "error", "message": "invalid message: " + line,
                                        "field": field}


@pytest.mark.parametrize("text, field, key", [
    ('{"type": "load", "scene": "spring1d", "scene": "lattice"}', "scene", "'scene'"),
    ('{"type": "restart", "integrator": "rk2", "dt": 0.1, "parameters": {"mass": 1, "mass": 2}}',
     None, "'mass'"),
    ('{"type": "step", "type": "step"}', "type", "'type'"),
])
def test_a_key_given_twice_is_refused_naming_it(text, field, key):
    """redM: a key given twice was taken with its last value, the first dropped unsaid
    ({"scene": "spring1d", "scene": "lattice"} loaded the lattice)."""
    with pytest.raises(ProtocolError) as refused:
        parse_command(text)
    assert str(refused.value) == f"malformed JSON (the key {key} is given twice)"
    assert refused.value.field == field


def test_binary_messages_are_rejected(client):
    with connected(client) as (ws, _, _):
        ws.send_bytes(b"\x00\x01")
        assert "binary" in next_of(ws, "error")["message"]


def test_oversized_message_limit_is_64_kib():
    assert MAX_MESSAGE_BYTES == 64 * 1024
    padding = " " * (MAX_MESSAGE_BYTES - len('{"type": "step"}'))
    assert parse_command('{"type": "step"}' + padding).type == "step"
    with pytest.raises(ProtocolError, match="too large"):
        parse_command('{"type": "step"}' + padding + " ")


def test_a_bad_client_does_not_disturb_another(client):
    with connected(client) as (good, _, _), connected(client) as (bad, _, _):
        t_before = frame_after(good, lambda f: True)["t"]
        for text in ("{", "x" * (MAX_MESSAGE_BYTES + 10), '{"type": "restart"}'):
            bad.send_text(text)
            next_of(bad, "error")
        assert frame_after(good, lambda f: f["t"] > t_before + 0.2)["paused"] is False
        bad.send_text('{"type": "step"}')
        frame_after(bad, lambda f: f["paused"])


def test_a_frame_above_1_mib_closes_that_connection_only(viewer_url):
    """uvicorn (served as `hooke serve` does) closes a connection sending a frame above 1 MiB with
    code 1009 (message too big); another connection's run goes on."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    address = viewer_url.replace("http://", "ws://") + "/ws"

    def frame(ws) -> dict:
        while (message := json.loads(ws.recv(timeout=30)))["type"] != "frame":
            pass
        return message

    with connect(address) as good, connect(address) as bad:
        t_before = frame(good)["t"]
        frame(bad)
        bad.send("x" * (server.WS_MAX_SIZE + 1))
        deadline = time.monotonic() + 30
        with pytest.raises(ConnectionClosed) as closed:
            while time.monotonic() < deadline:
                message = json.loads(bad.recv(timeout=30))
                assert message["type"] != "error", message  # read and refused, not closed
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
        while (latest := frame(good))["t"] < t_before + 0.2:
            pass
        assert latest["paused"] is False


def test_restarts_queued_while_a_scene_builds_are_dropped_but_the_newest(client):
    """Five restarts sent at once: each is answered with a status at once, one still queued when
    a newer one comes is dropped (the newer one's status says so), and the newest is built last
    (before: each queued one was built in turn, for seconds with a 49,600-particle lattice, whose
    client restarting every 250 ms saw no scene in 8 s)."""
    with connected(client) as (ws, _, _):
        dts = [0.005 + k * 1e-4 for k in range(5)]
        for dt in dts:
            ws.send_json({"type": "restart", "integrator": "rk2", "dt": dt, "parameters": {}})
        statuses, scenes = [], []
        while not scenes or scenes[-1] != dts[-1]:
            message = ws.receive_json()
            assert message["type"] != "error", message
            if message["type"] == "status":
                statuses.append(message["message"])
            elif message["type"] == "scene":
                scenes.append(message["dt"])
        dropped = [text for text in statuses if "the earlier one, not yet started, is dropped" in text]
        assert len(statuses) == 5 and len(dropped) == 5 - len(scenes), (statuses, scenes)
        assert len(scenes) <= 2 and scenes == sorted(scenes), scenes  # the first may have begun


def test_a_restart_replaces_the_queued_one_and_what_was_meant_for_its_scene_but_set():
    """What a restart keeps of the commands queued before it (:func:`server.queued`)."""
    restart = Restart(type="restart", integrator="rk2", dt=0.01)
    load = Load(type="load", scene="cloth2d")
    pause, steps = Pause(type="pause", paused=True), Set(type="set", steps_per_frame=3)
    drag = Drag(type="drag", particle=1, target=[0.5])
    assert server.queued([pause, restart, drag, steps, pause], load) == ([pause, steps, load], 1)
    assert server.queued([pause, drag], restart) == ([pause, drag, restart], 0)
    assert server.queued([restart, drag], drag) == ([restart, drag], 0)


def test_invalid_parameters_are_rejected_and_the_run_keeps_its_values(client):
    with connected(client) as (ws, _, _):
        for mass in (0.0, -1.0):
            ws.send_json({"type": "restart", "integrator": "rk2", "dt": 0.005,
                          "parameters": {"mass": mass}})
            error = next_of(ws, "error")
            assert error["field"] == "parameters.mass" and "must be > 0" in error["message"]
        ws.send_json({"type": "restart", "integrator": "rk2", "dt": 0.005,
                      "parameters": {"no_such": 1.0}})
        assert "not a parameter" in next_of(ws, "error")["message"]
        ws.send_json({"type": "set", "integrator": "nope"})
        assert next_of(ws, "error")["field"] == "integrator"
        # still the original run: symplectic Euler, time going on, no restart happened
        t = frame_after(ws, lambda f: True)["t"]
        assert frame_after(ws, lambda f: f["t"] > t + 0.1)
        ws.send_json({"type": "restart", "integrator": "rk2", "dt": 0.01,
                      "parameters": {"mass": 2.0, "stiffness": 8.0}})
        scene = next_of(ws, "scene")
        assert scene["integrator"] == "rk2" and scene["dt"] == 0.01
        assert {p["name"]: p["value"] for p in scene["parameters"]}["mass"] == 2.0


def test_integer_parameters_restart_with_counts_and_refuse_fractions():
    """The page's numbers arrive as JSON floats; a count (cloth2d's nx) is restarted with it as an
    int, and a fraction is refused naming the field."""
    session = Session("cloth2d")

    def restart(nx):
        return session.tick([parse_command(json.dumps(
            {"type": "restart", "integrator": "symplectic_euler", "dt": 0.005,
             "parameters": {"nx": nx}}))])

    assert restart(20)[0]["n_particles"] == 20 * 30 == session.scene.model.n_particles
    error = restart(20.5)[0]
    assert error["field"] == "parameters.nx" and "must be a whole number" in error["message"]
    assert session.scene.model.n_particles == 600


def test_parameters_that_make_a_scene_that_cannot_be_built_are_named_in_one_line():
    """The builder names the model's fields: chain's length = 1e300 came back as
    'particles[1].x: is too large' and square_compress's side = 1e6 as two lines ('planes[0]: …',
    'planes[1]: …'), naming no input the page could mark; now the parameter, in one line."""
    for scene, name, value in (("chain", "length", 1e300), ("square_compress", "side", 1e6)):
        session = Session(scene)
        before = session.scene.model.n_particles, session.state.t
        [error] = [message for message in session.tick([parse_command(json.dumps(
            {"type": "restart", "integrator": session.integrator, "dt": session.dt,
             "parameters": {name: value}}))]) if message["type"] == "error"]
        assert error["field"] == f"parameters.{name}" and "\n" not in error["message"]
        assert error["message"].startswith(f"parameters.{name}: makes a scene that cannot be built")
        assert session.scene.name == scene and session.scene.model.n_particles == before[0]


def test_model_size_requests_are_bounded():
    session = Session("cloth2d")
    fields = {f["name"]: f for f in session.scene_message()["parameters"]}
    assert fields["nx"]["maximum"] == 160 and fields["ny"]["maximum"] == 120
    messages = session.tick([parse_command(json.dumps(
        {"type": "restart", "integrator": "symplectic_euler", "dt": 0.005,
         "parameters": {"nx": 100_000_000}}))])
    error = next(m for m in messages if m["type"] == "error")
    assert error["field"] == "parameters.nx" and "must be <= 160" in error["message"]
    assert session.scene.model.n_particles == 1200  # still the last valid run
    # issue 15: ±1e300 were named by their 301 digits (the value cast to int before the bounds)
    for nx, message in ((1e300, "parameters.nx: must be <= 160 in the viewer, got 1e+300"),
                        (-1e300, "parameters.nx: must be >= 1, got -1e+300")):
        error = session.tick([parse_command(json.dumps(
            {"type": "restart", "integrator": "symplectic_euler", "dt": 0.005,
             "parameters": {"nx": nx}}))])[0]
        assert error["message"] == message


def test_cross_site_websocket_is_refused(client):
    from starlette.websockets import WebSocketDisconnect

    with pytest.raises(WebSocketDisconnect):
        with client.websocket_connect("/ws", headers={"origin": "http://evil.example"}) as ws:
            ws.receive_json()


# -- the session behind a page -------------------------------------------------------------------

def test_step_advances_exactly_one_step_and_pause_holds():
    session = Session("spring1d")
    session.tick()
    t0, steps0 = session.state.t, session.steps
    messages = session.tick([parse_command('{"type": "step"}')])
    assert session.paused and session.steps == steps0 + 1
    assert session.state.t == pytest.approx(t0 + 0.005, abs=1e-12)
    assert messages[-1]["type"] == "frame" and messages[-1]["paused"]
    assert session.tick() == []  # paused: nothing new to send
    assert session.steps == steps0 + 1


def test_restart_resets_time_and_parameters():
    session = Session("spring1d")
    for _ in range(3):
        session.tick()
    [scene] = session.tick([parse_command(json.dumps(
        {"type": "restart", "integrator": "symplectic_euler", "dt": 0.005,
         "parameters": {"x0": 1.0}}))])[:1]
    assert scene["type"] == "scene" and scene["frame"]["t"] == 0.0
    assert scene["frame"]["x"][1] == [1.0]


def test_a_restart_is_refused_while_the_machine_is_short_of_memory(monkeypatch):
    """Pages are processes of up to 0.64 GiB (the largest lattice, implicit Euler) or 5.9 GiB
    (newmark's sparse LU): 24 of one client could take more than the machine has. A restart or
    load is refused in one line while less than MEMORY_RESERVE is free (MemAvailable); the page
    keeps its scene and runs on, and builds again once memory is back."""
    from hooke import memory
    from hooke.viz.web import session as session_module

    session = Session("spring1d")
    session.tick()
    free = {"bytes": 2**29 + 123}
    monkeypatch.setattr(session_module, "available_memory", lambda: free["bytes"])
    restart = parse_command(json.dumps({"type": "restart", "integrator": "symplectic_euler",
                                        "dt": 0.005, "parameters": {"x0": 1.0}}))
    steps = session.steps
    [error, frame] = session.tick([restart])
    assert error == {"type": "error", "field": "scene", "message": (
        "scene: cannot be built now: the server's machine has 512 MiB of memory free, less than "
        "the 1 GiB a page keeps in reserve; close other pages or try again later, got "
        "'spring1d'")}
    assert frame["type"] == "frame" and session.steps > steps  # the old scene runs on
    load = parse_command(json.dumps({"type": "load", "scene": "lattice"}))
    assert session.tick([load])[0]["field"] == "scene" and session.scene.name == "spring1d"
    free["bytes"] = session_module.MEMORY_RESERVE
    assert session.tick([restart])[0]["type"] == "scene"
    assert 0 < memory.available_memory() <= memory.physical_memory()


@pytest.mark.parametrize("integrator", hooke.integrators())
def test_cursor_spring_pulls_the_particle_with_every_integrator(integrator):
    session = Session("spring1d")
    session.tick([parse_command(json.dumps({"type": "set", "integrator": integrator})),
                  parse_command('{"type": "drag", "particle": 1, "target": [3.0]}')])
    for _ in range(60):
        messages = session.tick()
    assert not [m for m in messages if m["type"] == "error"]
    # the cursor spring (k = m (0.5/dt)² = 5000 N/m) holds the particle near 3 m against k = 5
    assert abs(session.state.x[1, 0] - 3.0) < 0.05
    assert messages[-1]["cursor"] == {"particle": 1, "target": [3.0]}
    session.tick([parse_command('{"type": "release"}')])
    assert session.cursor.particle is None and session.scene.model.n_particles == 2


def test_cursor_spring_moves_a_cloth_particle_and_leaves_the_model_alone():
    session = Session("cloth2d", frame_budget=float("inf"))  # 8 steps a tick, even on a busy machine
    model = session.scene.model
    corner = int(np.argmin(model.x0[:, 1] - model.x0[:, 0]))  # bottom right
    start = model.x0[corner].copy()
    target = start + np.array([0.5, 0.3])
    session.tick([parse_command(json.dumps({"type": "drag", "particle": corner,
                                            "target": target.tolist()}))])
    for _ in range(40):
        session.tick()
    moved = session.state.x[corner] - start
    assert moved[0] > 0.15 and moved[1] > 0.1
    assert [term.NAME for term in hooke.System(model).terms].count("cursor") == 0


def test_dragging_a_pinned_particle_or_a_wrong_target_is_an_error():
    session = Session("cloth2d")
    pinned = int(session.scene.model.pinned_index[0])
    messages = session.tick([parse_command(json.dumps({"type": "drag", "particle": pinned,
                                                       "target": [0.0, 0.0]})),
                             parse_command('{"type": "drag", "particle": 5, "target": [0.0]}'),
                             parse_command('{"type": "drag", "particle": 99999, "target": [0, 0]}')])
    errors = [m for m in messages if m["type"] == "error"]
    assert [e["field"] for e in errors] == ["particle", "target", "particle"]
    assert session.cursor.particle is None


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_a_page_stepping_surfaces_at_a_large_dt_prints_nothing_on_the_servers_terminal(capfd):
    """Issue 15 red team (redI): a step of squares_self_contact at dt = 0.5 from t = 0.01 made
    ipctk print "[ipctk] [warning] Small gap 1.79e-18 ≤ ε in Additive CCD can lead to missed
    collisions" (twice, on stdout): in `hooke serve` on the server's terminal, as often as a page
    sent such steps. The page gets its error; the terminal nothing."""
    session = Session("squares_self_contact")
    capfd.readouterr()
    messages = session.tick([parse_command('{"type": "step"}'),
                             parse_command('{"type": "set", "dt": 0.5}'),
                             parse_command('{"type": "step"}')])
    [error] = [m for m in messages if m["type"] == "error"]
    assert error["message"].startswith("step 2 (t = 0.51) failed: implicit_euler: Newton did not "
                                       "converge in its first iteration at t = 0.01")
    assert capfd.readouterr() == ("", "")


def test_a_drag_whose_cursor_spring_overflows_is_refused_and_the_run_goes_on():
    """Issue 15 red team (redI): dragging a particle of 1e300 kg at dt = 1e-7 s gave the cursor
    spring m·(0.5/dt)² = inf N/m and paused the run with "the state became non-finite at step 2
    … Try a smaller dt", which only made it worse. The drag is refused naming the particle, a dt
    that would overflow a held particle's spring naming dt; the run goes on unchanged."""
    session = Session("spring1d")
    session.tick([parse_command('{"type": "restart", "integrator": "symplectic_euler", "dt": 1e-7, '
                                '"parameters": {"mass": 1e300}}')])
    refused = [m for m in session.tick([parse_command('{"type": "drag", "particle": 1, '
                                                      '"target": [3.0]}')]) if m["type"] == "error"]
    assert refused == [{"type": "error", "field": "particle", "message": (
        "particle: makes the cursor spring on particle 1 (m·(0.5/dt)² with m = 1e+300 kg, dt = "
        "1e-07 s) overflow; it cannot be dragged at this dt, got 1")}]
    assert session.cursor.particle is None and not session.paused
    session.tick([parse_command('{"type": "set", "dt": 0.01}'),
                  parse_command('{"type": "drag", "particle": 1, "target": [3.0]}')])
    assert session.cursor.stiffness == 1e300 * 50.0 ** 2
    messages = session.tick([parse_command('{"type": "set", "dt": 1e-7}')])
    assert [m["field"] for m in messages if m["type"] == "error"] == ["dt"]
    assert session.dt == 0.01 and not session.paused
    assert not [m for m in session.tick() if m["type"] == "error"]


def test_a_blow_up_pauses_with_a_message_and_keeps_the_last_finite_state():
    session = Session("spring1d")
    messages = session.tick([parse_command(json.dumps(
        {"type": "set", "integrator": "explicit_euler", "dt": 2.0, "steps_per_frame": 5000}))])
    for _ in range(50):
        if session.paused:
            break
        messages += session.tick()
    assert session.paused
    assert any("non-finite" in m["message"] for m in messages if m["type"] == "error"), messages
    assert np.isfinite(session.state.x).all()


def test_energies_that_overflow_are_sent_as_null_without_a_numpy_warning():
    """Issue 15 red team (redI): a frame whose kinetic energy overflows (mass 1e300 kg at
    1e100 m/s here; a blow-up's last finite state, v ~ 1e217 m/s, in the test above, which
    failed when a tick's steps ended there) raised NumPy's RuntimeWarning out of tick under
    warnings-as-errors (this project's pytest setting, and a notebook's choice)."""
    import warnings

    session = Session("spring1d")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        [scene] = session.tick([parse_command('{"type": "restart", "integrator": '
                                              '"symplectic_euler", "dt": 0.005, "parameters": '
                                              '{"mass": 1e300, "v0": 1e100}}')])[:1]
    energy = scene["frame"]["energy"]
    assert (energy["kinetic"], energy["total"]) == (None, None) and energy["potential"] == 10.0


@pytest.mark.parametrize("scene", hooke.scenes())
def test_every_built_in_scene_opens_and_steps(scene):
    session = Session(scene)
    opened = session.scene_message()
    assert opened["dim"] in (1, 2, 3) and len(opened["frame"]["x"]) == opened["n_particles"]
    session.tick()
    messages = session.tick()
    assert not [m for m in messages if m["type"] == "error"], messages
    assert session.steps > 0
    model = session.scene.model
    if getattr(model, "n_joints", 0):
        assert len(opened["joints"]) == model.n_joints and "joint_error" in opened["frame"]


def test_the_3d_scene_message_has_the_outward_surface_spheres_and_obstacles():
    # soft3d: the boundary triangles of its tetrahedra, each facing away from its tetrahedron
    session = Session("soft3d")
    message = session.scene_message()
    model, x = session.scene.model, session.state.x
    surface = np.array(message["surface"])
    assert sorted(map(sorted, surface.tolist())) == sorted(map(sorted, model.surface_triangles().tolist()))
    owner = {}
    for tet in model.tetrahedra:
        for k in range(4):
            owner.setdefault(tuple(sorted(np.delete(tet, k))), []).append(tet[k])
    a, b, c = (x[surface[:, k]] for k in range(3))
    opposite = np.array([owner[tuple(sorted(face))][0] for face in surface])
    assert all(len(owner[tuple(sorted(face))]) == 1 for face in surface)
    assert np.all(np.einsum("ij,ij->i", np.cross(b - a, c - a), x[opposite] - a) < 0)
    assert message["spheres"] == [] and message["obstacles"] == []
    # 2D: no surface (the canvas draws springs); cloth_sphere: its ball, where the scene file puts it
    assert Session("cloth2d").scene_message()["surface"] == []
    ball = Session("cloth_sphere").scene_message()
    assert ball["spheres"] == [{"center": [0.0, 0.2, 0.0], "radius": 0.2}]
    assert len(ball["surface"]) == 2 * 39 * 39  # the 40 × 40 cloth's triangles


def test_soft3d_energies_are_sent_above_its_rest_state_and_the_label_says_so():
    from hooke.analysis import rest_energy
    from hooke.system import System

    session = Session("soft3d")
    opened = session.scene_message()
    assert opened["energy_label"] == "energy above rest (static equilibrium) [J]"
    session.tick()
    frame = session.tick()[-1]
    rest = rest_energy(session.scene)
    system = System(session.scene.model)
    energy = frame["energy"]
    assert energy["potential"] == pytest.approx(system.potential_energy(session.state.x) - rest, rel=1e-9)
    assert energy["total"] == pytest.approx(energy["potential"] + energy["kinetic"], rel=1e-12)
    assert 0 < energy["potential"] < energy["total"]  # the push's energy, not gravity's thousands
    # a scene without a rest reference keeps hooke's zero
    assert Session("spring1d").scene_message()["energy_label"] == "energy [J]"


def test_obstacles_are_sent_one_mesh_each_with_their_own_numbering():
    from hooke import ModelBuilder
    from hooke.viz.web.session import _obstacles

    square = (np.array([[0, 0, 0], [1, 0, 0], [1, 0, 1], [0, 0, 1]], float), np.array([[0, 1, 2], [0, 2, 3]]))
    tent = (np.array([[2, 0, 0], [3, 0, 0], [2.5, 1, 0.5]], float), np.array([[0, 1, 2]]))
    builder = ModelBuilder(dim=3)
    builder.add_particle((0.5, 2.0, 0.5))
    builder.add_obstacle(square)
    builder.add_obstacle(tent)
    sent = _obstacles(builder.finalize())
    assert [np.array(o["vertices"]).tolist() for o in sent] == [square[0].tolist(), tent[0].tolist()]
    assert [o["faces"] for o in sent] == [square[1].tolist(), tent[1].tolist()]


# -- the command line ----------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_serve_binds_localhost_by_default_and_prints_the_address(uvicorn_served, monkeypatch):
    from hooke.cli import app

    configs, bound = uvicorn_served.configs, uvicorn_served.bound
    port = free_port()
    result = CliRunner().invoke(app, ["serve", "cloth2d", "--port", str(port)])
    assert result.exit_code == 0, result.output
    assert f"http://127.0.0.1:{port}/" in result.output
    config = configs[-1]
    assert (config.host, config.port) == ("127.0.0.1", port) and bound[-1] == ("127.0.0.1", port)
    assert config.ws_max_size == server.WS_MAX_SIZE == 1024 * 1024  # uvicorn closes larger frames
    listen = server.listen  # the defaults, without binding port 8000 (another program may hold it)
    calls = []
    monkeypatch.setattr(server, "listen", lambda host, port: calls.append((host, port)) or listen(host, 0))
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code == 0 and calls == [("0.0.0.0", 8000)] and configs[-1].host == "0.0.0.0"
    assert f"http://0.0.0.0:{bound[-1][1]}/" in result.output  # port 0: the one given, printed


@pytest.mark.parametrize("args, flag, value", [
    (["--port", "70000"], "--port", "70000"),
    (["--port", "-1"], "--port", "-1"),
    (["--host", "999.1.1.1"], "--host", "'999.1.1.1'"),
    (["--host", "192.0.2.1"], "--host", "'192.0.2.1'"),  # TEST-NET: not an address of this machine
])
def test_serve_bad_port_or_host_is_one_line_before_the_address(args, flag, value):
    from hooke.cli import app

    result = CliRunner().invoke(app, ["serve", *args])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert "http://" not in result.output and result.output.count("error:") == 1
    assert result.output.startswith(f"error: {flag}: ") and f"got {value}" in result.output


def test_serve_port_in_use_is_one_line_naming_it():
    from hooke.cli import app

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = CliRunner().invoke(app, ["serve", "--port", str(port)])
    assert result.exit_code == 2 and "http://" not in result.output, result.output
    assert "--port: is in use by another program" in result.output and f"got {port}" in result.output


def test_serve_unknown_scene_exits_2():
    from hooke.cli import app

    result = CliRunner().invoke(app, ["serve", "no_such_scene"])
    assert result.exit_code == 2 and "unknown scene" in result.output


def test_a_session_steps_as_hooke_run_does_bit_for_bit_while_nothing_is_held():
    """cloth2d at its dt (symplectic Euler at the edge of its stability): the viewer's steps are
    `hooke run`'s bit for bit while no particle is held — the cursor spring joins the system
    only during a drag (with it, the generic path's other round-off blew the cloth up at
    t = 17.7 s, `hooke run` stays finite) — and after a release they are again on that path."""
    session = Session("cloth2d", steps_per_frame=50, frame_budget=1e9)
    while session.steps < 400:
        session.tick()
    run = hooke.simulate(hooke.scene("cloth2d"), t_end=400 * session.dt, save_every=400)
    assert session.state.x.tobytes() == run.x[-1].tobytes()
    assert session.state.v.tobytes() == run.v[-1].tobytes()
    assert session.stepper.system.gather is not None
    corner = 5
    session.tick([parse_command(json.dumps({"type": "drag", "particle": corner,
                                            "target": (session.state.x[corner] + 0.1).tolist()}))])
    assert session.stepper.system.gather is None  # the cursor spring acts
    session.tick([parse_command('{"type": "release"}')])
    assert session.stepper.system.gather is not None and np.isfinite(session.state.x).all()


def test_a_scene_switch_is_announced_at_once(client):
    """Issue 15 (finding F): switching to npendulum left the page silent for 8.4 s (the first
    compilation of rk45's compiled steps with joints). The server answers a load or a restart
    at once with a ``status`` message, which the page shows where it shows errors, before the
    session process builds the scene; the scene message follows."""
    with connected(client) as (ws, _, _):
        for command, text in (({"type": "load", "scene": "npendulum"}, "preparing scene "
                               "npendulum (the first time, compiling its integrator can take "
                               "seconds)…"),
                              ({"type": "restart", "integrator": "rk4", "dt": 0.01,
                                "parameters": {"n": 3}}, "restarting the scene…")):
            ws.send_text(json.dumps(command))
            sent = time.perf_counter()
            status = next_of(ws, "status")
            assert time.perf_counter() - sent < 1.0
            assert status == {"type": "status", "message": text}
            scene = next_of(ws, "scene")
            assert scene["scene"] == "npendulum"
        assert scene["n_particles"] == 4 and scene["integrator"] == "rk4"
    script = client.get("/static/viewer.js").text
    assert 'case "status": return onStatus(message);' in script


WARMED = """
from hooke.integrators import adaptive_compiled
from hooke.viz.web.worker import warm_up

warm_up()
print(bool(adaptive_compiled._run.signatures))  # the whole compiled step, joints inlined
"""


def test_the_fork_server_warms_up_rk45_with_joints():
    """npendulum's first switch spent its seconds compiling rk45's compiled steps with joints
    (Numba, then cached on disk; 7.5 s here with an empty cache). The fork server's warm-up
    (:func:`hooke.viz.web.worker.warm_up`) now steps a scene that uses them, so every session
    process forked from it has them loaded, whatever the disk cache holds."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", WARMED], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]


def test_settings_an_integrator_refuses_name_what_the_page_sent():
    """implicit_euler's setup refuses a mass lost to round-off naming the model's field
    (``particles[1].mass``), which no input on the page is: now the parameter the page restarted
    with, or the integrator or dt it set, with the value it sent, in one line."""
    session = Session("spring1d")
    restart = {"type": "restart", "integrator": "implicit_euler", "dt": 0.005,
               "parameters": {"mass": 1e-18}}
    [error] = [message for message in session.tick([parse_command(json.dumps(restart))])
               if message["type"] == "error"]
    assert error["field"] == "parameters.mass" and "\n" not in error["message"]
    assert error["message"].startswith("parameters.mass: integrator 'implicit_euler' refuses the "
                                       "scene's model at dt = 0.005 s (particles[1].mass: ")
    assert error["message"].endswith(", got 1e-18")
    assert session.integrator == "symplectic_euler" and session.scene.parameters["mass"] == 0.5
    restart.update(integrator="symplectic_euler")  # explicit: a mass of 1e-18 kg is taken
    pause = Pause(type="pause", paused=True)
    assert [m["type"] for m in session.tick([parse_command(json.dumps(restart)), pause])] == [
        "scene", "frame"]
    for command, field, value in ((Set(type="set", integrator="implicit_euler"), "integrator",
                                   "'implicit_euler'"),
                                  (Set(type="set", integrator="fast_mass_spring", dt=0.01), "dt", "0.01")):
        [error] = [message for message in session.tick([command]) if message["type"] == "error"]
        assert error["field"] == field and error["message"].startswith(f"{field}: integrator ")
        assert error["message"].endswith(f", got {value}")
        assert (session.integrator, session.dt) == ("symplectic_euler", 0.005)
