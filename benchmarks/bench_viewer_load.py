"""The browser viewer under load: does one client's work starve another's, is memory given back?

    .venv/bin/python benchmarks/bench_viewer_load.py                    # every scenario
    .venv/bin/python benchmarks/bench_viewer_load.py restarts lattice --seconds 10
    .venv/bin/python benchmarks/bench_viewer_load.py memory --rounds 5

It starts ``hooke serve spring1d`` in a child process on a free 127.0.0.1 port, as a user would,
and drives it with WebSocket clients in threads. A well-behaved client watches ``spring1d``; over
``--seconds`` (after a warm-up) it records the arrival time of every frame and the table gives
its frames/s and its longest gap between two frames, while:

- ``alone``: nothing else runs (the reference);
- ``restarts``: ``--clients`` other clients (default 20), each on a built-in scene in turn, send
  a restart every ``--interval`` seconds (default 0.05) and read what comes back;
- ``lattice``: one other client restarts a 40 x 31 x 40 = 49,600-particle ``lattice`` (symplectic
  Euler) every 0.25 s;
- ``memory``: ``--rounds`` rounds of 10 clients that connect (several scenes, a large lattice
  among them), restart for ``--seconds`` and leave; the server's idle memory (RSS of the server
  and every process under it), once its session processes have ended and ``--settle`` seconds
  more, is printed after one page has opened and left (start) and after each round.

Every row also prints the machine's load average and the share of CPU time the server (and its
session processes) used. Benchmarks print; they assert nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

SCENARIOS = ("alone", "restarts", "lattice", "memory")
BIG_LATTICE = {"nx": 40, "ny": 31, "nz": 40}  # 49,600 particles: just under the viewer's limit
# Its restarts use an explicit integrator: the cost is the build (~1 s), not one implicit step
# of ~10 s on 150,000 DOFs.
EXPLICIT = ("symplectic_euler", 5e-4)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """``hooke serve spring1d`` in a child process (this interpreter, this PYTHONPATH)."""

    def __init__(self):
        self.port = free_port()
        self.url = f"ws://127.0.0.1:{self.port}/ws"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hooke.cli", "serve", "spring1d", "--port", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the server did not start: " + self.process.stderr.read().decode())
                time.sleep(0.1)

    def processes(self) -> list[psutil.Process]:
        root = psutil.Process(self.process.pid)
        return [root, *root.children(recursive=True)]

    def sessions(self) -> int:
        """Session processes alive: the children of the server's children (its fork server's)."""
        try:
            return sum(len(child.children()) for child in psutil.Process(self.process.pid).children())
        except psutil.NoSuchProcess:
            return 0

    def rss_mib(self) -> float:
        """RSS of the server and every process under it (session workers, their helpers) [MiB]."""
        total = 0
        for process in self.processes():
            try:
                total += process.memory_info().rss
            except psutil.NoSuchProcess:
                pass
        return total / 2**20

    def cpu_seconds(self) -> float:
        total = 0.0
        for process in self.processes():
            try:
                times = process.cpu_times()
                total += times.user + times.system
            except psutil.NoSuchProcess:
                pass
        return total

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def connection(url: str, scene: str):
    """A WebSocket to the viewer's page connection on ``scene`` (a context manager)."""
    return connect(f"{url}?scene={scene}", max_size=None, open_timeout=60)


def first_scene(ws) -> dict | None:
    """The first ``scene`` message (None if the connection sent none within a minute)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        message = json.loads(ws.recv(timeout=60))
        if message["type"] == "scene":
            return message
    return None


class Watcher(threading.Thread):
    """The well-behaved client: spring1d, every frame's arrival time."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url, self.arrivals, self.stop = url, [], threading.Event()
        self.ready = threading.Event()

    def run(self) -> None:
        with connection(self.url, "spring1d") as ws:
            first_scene(ws)
            self.ready.set()
            while not self.stop.is_set():
                try:
                    message = json.loads(ws.recv(timeout=1))
                except TimeoutError:
                    continue
                if message["type"] == "frame":
                    self.arrivals.append(time.monotonic())

    def summary(self, start: float, end: float) -> tuple[float, float]:
        """Frames per second and the longest gap [s] within [start, end]."""
        times = [start, *(t for t in self.arrivals if start <= t <= end), end]
        gaps = [b - a for a, b in zip(times, times[1:])]
        return (len(times) - 2) / (end - start), max(gaps)


class Restarter(threading.Thread):
    """Another client (``spec``: see :func:`restarter`): opens ``scene`` and restarts it every
    ``interval`` seconds with ``parameters`` (and ``integrator``: [name, dt] instead of the
    scene's), reading what comes back."""

    def __init__(self, url: str, spec: dict):
        super().__init__(daemon=True)
        self.url, self.spec = url, spec
        self.stop = threading.Event()
        self.sent = self.started = self.errors = 0
        self.refused: str | None = None

    def run(self) -> None:
        try:
            with connection(self.url, self.spec["scene"]) as ws:
                self.restart(ws)
        except (InvalidStatus, ConnectionClosed, OSError) as error:
            self.refused = f"{type(error).__name__}: {error}"

    def restart(self, ws) -> None:
        scene = first_scene(ws)
        if scene is None:
            self.refused = "no scene message"
            return
        integrator, dt = self.spec["integrator"] or (scene["integrator"], scene["dt"])
        restart = json.dumps({"type": "restart", "integrator": integrator, "dt": dt,
                              "parameters": self.spec["parameters"]})
        while not self.stop.is_set():
            ws.send(restart)
            self.sent += 1
            until = time.monotonic() + self.spec["interval"]
            while (left := until - time.monotonic()) > 0:
                try:
                    head = ws.recv(timeout=left, decode=False)[:40]
                except TimeoutError:
                    break
                self.started += b'"type":"scene"' in head  # not decoded: megabytes, often
                self.errors += b'"type":"error"' in head


def restarter(scene: str, interval: float, parameters=None, integrator=None) -> dict:
    return {"scene": scene, "interval": interval, "parameters": parameters or {},
            "integrator": integrator}


class Others:
    """The other clients, in a process of their own (this script, ``--clients-of``): reading
    their messages in the watcher's process would make its thread wait for the GIL, a delay of
    the measurement, not of the server."""

    def __init__(self, url: str, specs: list[dict]):
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--clients-of", url, "--specs", json.dumps(specs)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def stop(self) -> dict:
        """Stop them; their totals: restarts sent, scenes started, errors, clients refused."""
        totals, _ = self.process.communicate(timeout=120)  # closing stdin stops them
        return json.loads(totals)


def run_clients(url: str, specs: list[dict]) -> None:
    """``--clients-of``: run ``specs`` until stdin closes, then print their totals (JSON)."""
    clients = [Restarter(url, spec) for spec in specs]
    for client in clients:
        client.start()
    sys.stdin.read()
    for client in clients:
        client.stop.set()
    for client in clients:
        client.join(60)
    print(json.dumps({"restarts_sent": sum(c.sent for c in clients),
                      "scenes_started": sum(c.started for c in clients),
                      "errors": sum(c.errors for c in clients),
                      "refused": sum(c.refused is not None for c in clients)}))


def measure(server: Server, specs: list[dict], seconds: float, warmup: float) -> dict:
    """The watcher's frames/s and longest gap over ``seconds`` while clients ``specs`` run."""
    watcher = Watcher(server.url)
    watcher.start()
    watcher.ready.wait(60)
    others = Others(server.url, specs)
    time.sleep(warmup)
    cpu0, start = server.cpu_seconds(), time.monotonic()
    time.sleep(seconds)
    end, cpu1 = time.monotonic(), server.cpu_seconds()
    rate, gap = watcher.summary(start, end)
    load = os.getloadavg()[0]
    watcher.stop.set()
    totals = others.stop()
    watcher.join(30)
    return {"frames_per_s": rate, "longest_gap_s": gap, "load1": load,
            "server_cpu": (cpu1 - cpu0) / (end - start), **totals}


def others_for(scenario: str, clients: int, interval: float) -> list[dict]:
    """The other clients of a scenario."""
    if scenario == "alone":
        return []
    if scenario == "lattice":
        return [restarter("lattice", 0.25, BIG_LATTICE, EXPLICIT)]
    scenes = [name for name in scene_names() if name != "spring1d"]
    return [restarter(scenes[k % len(scenes)], interval) for k in range(clients)]


def scene_names() -> list[str]:
    import hooke

    return hooke.scenes()


def memory_round(server: Server, seconds: float) -> dict:
    """One round of 10 clients (a 27,000-particle lattice with an implicit solver among them)
    restarting scenes for ``seconds``, then leaving; their totals."""
    scenes = ["cloth2d", "soft3d", "cloth", "top", "square_drop", "chain", "crane", "cloth_drop",
              "pendulum"]
    others = Others(server.url, [restarter("lattice", 1.0, {"nx": 30, "ny": 30, "nz": 30}),
                                 *(restarter(name, 0.5) for name in scenes)])
    time.sleep(seconds)
    return others.stop()


def idle_rss(server: Server, settle: float, timeout: float = 60.0) -> float:
    """The server's RSS with its session processes [MiB] once none is left (at most ``timeout``
    seconds) and ``settle`` seconds more."""
    deadline = time.monotonic() + timeout
    while server.sessions() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(settle)
    return server.rss_mib()


def first_page(server: Server) -> None:
    """Open a page and leave: the server is then started through (its fork server warm)."""
    with connection(server.url, "spring1d") as ws:
        if first_scene(ws) is None:
            raise SystemExit("the server opened no page")


def memory_rounds(server: Server, rounds: int, seconds: float, settle: float) -> None:
    first_page(server)
    print(f"{'round':>5s} {'idle RSS MiB':>13s} {'sessions left':>14s}")
    print(f"{'start':>5s} {idle_rss(server, settle):13.0f} {server.sessions():14d}")
    for round_ in range(1, rounds + 1):
        memory_round(server, seconds)
        print(f"{round_:5d} {idle_rss(server, settle):13.0f} {server.sessions():14d}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                        help=f"any of {', '.join(SCENARIOS)} (default: all)")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured time per scenario")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before measuring")
    parser.add_argument("--clients", type=int, default=20, help="other clients in 'restarts'")
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between their restarts")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of clients in 'memory'")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds after a round's "
                        "sessions ended (at most 60 s) before its RSS is read ('memory')")
    parser.add_argument("--clients-of", help=argparse.SUPPRESS)  # see Others
    parser.add_argument("--specs", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.clients_of:
        run_clients(args.clients_of, json.loads(args.specs))
        return
    args.scenarios = args.scenarios or list(SCENARIOS)
    if unknown := set(args.scenarios) - set(SCENARIOS):
        parser.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")

    print(f"# {Path(__file__).name} on {os.cpu_count()} cores; load average before: "
          f"{os.getloadavg()[0]:.2f}")
    rows = [s for s in args.scenarios if s != "memory"]
    if rows:
        print(f"{'scenario':>9s} {'frames/s':>9s} {'longest gap s':>14s} {'load1':>6s} "
              f"{'server CPU':>11s} {'restarts sent':>14s} {'scenes started':>15s} {'errors':>7s} "
              f"{'refused':>8s}")
    for scenario in rows:
        server = Server()
        try:
            row = measure(server, others_for(scenario, args.clients, args.interval),
                          args.seconds, args.warmup)
        finally:
            server.stop()
        print(f"{scenario:>9s} {row['frames_per_s']:9.1f} {row['longest_gap_s']:14.3f} "
              f"{row['load1']:6.2f} {row['server_cpu']:11.2f} {row['restarts_sent']:14d} "
              f"{row['scenes_started']:15d} {row['errors']:7d} {row['refused']:8d}", flush=True)
    if "memory" in args.scenarios:
        server = Server()
        try:
            memory_rounds(server, args.rounds, args.seconds, args.settle)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
