"""Shared helpers of the physics tests, and the live viewer server of the viewer tests.

Generic tests are parametrised over the integrator registry (``hooke.integrators()``), so a newly
registered integrator is enrolled automatically. Special handling keys on class attributes and
options, never on names:

- ``order``: the theoretical global order; an integrator without it is skipped by the
  convergence test (not failed), every other test still runs it;
- ``adaptive`` / an ``adaptive`` option: switched off where fixed steps are needed;
- a ``tol`` option (Newton-type solvers): made tight where solver error would pollute accuracy.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager

import numpy as np
import pytest

import hooke
from hooke.scenes.seeds import seed_crane  # noqa: F401  (the tests import it from here)
from hooke.integrators import get as get_integrator  # the package; hooke.integrators() lists the names

INTEGRATORS = hooke.integrators()

# Measured convergence slopes (test_integrators.py fills it); printed in pytest's terminal summary.
MEASURED_SLOPES: dict[str, tuple[float, float]] = {}


def run_cli(*args, env=None, cwd=None) -> subprocess.CompletedProcess:
    """``hooke ARGS`` in a child process (``env``: variables added to this process's)."""
    return subprocess.run([sys.executable, "-m", "hooke.cli", *args], capture_output=True,
                          text=True, cwd=cwd, env=None if env is None else {**os.environ, **env},
                          timeout=300)


def run_main(monkeypatch, capsys, *args) -> tuple[int, list[str]]:
    """``hooke ARGS`` in this process (faster than :func:`run_cli`): (exit code, stderr lines)."""
    from hooke import cli

    monkeypatch.setattr(sys, "argv", ["hooke", *args])
    with pytest.raises(SystemExit) as done:
        cli.main()
    return done.value.code, capsys.readouterr().err.splitlines()


def load_script(path):
    """A script (not a package module) imported by its path, e.g. scripts/readme_tables.py."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def relative_difference(a, b) -> float:
    """max |a − b| relative to max |b|."""
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def pytest_terminal_summary(terminalreporter):
    if MEASURED_SLOPES:
        terminalreporter.section("measured convergence slopes (log error vs log dt / log tol)")
        for label, (expected, slope) in MEASURED_SLOPES.items():
            terminalreporter.write_line(f"{label:28s} expected {expected:g}   measured {slope:.3f}")


def integrator_class(name: str):
    return get_integrator(name)


def fixed_step_options(name: str, tol: float = 1e-12) -> dict:
    """Options that make ``name`` a plain fixed-step method solved to ``tol`` (where it solves)."""
    cls = integrator_class(name)
    defaults = getattr(cls, "defaults", {})
    options = {}
    if "adaptive" in defaults:
        options["adaptive"] = False
    if "tol" in defaults:
        options["tol"] = tol
    return options


def tight_options(name: str, tol: float = 1e-8) -> dict:
    """A tight ``tol`` for integrators that solve to one (their own stepping otherwise unchanged).

    implicit_euler's ``tol`` is an absolute velocity tolerance checked before the first Newton
    iteration: with its default 1e-2 m/s a step whose velocity change is below it is not taken.
    """
    return {"tol": tol} if "tol" in getattr(integrator_class(name), "defaults", {}) else {}


def padded3(values: np.ndarray) -> np.ndarray:
    """(n, d) values as (n, 3), zeros in the missing components."""
    return np.column_stack([values, np.zeros((len(values), 3 - values.shape[1]))])


def vtk_blocks(dataset) -> list:
    """The leaf datasets of what VTK's reader returns (one grid, or a multiblock of grids)."""
    if dataset.IsA("vtkMultiBlockDataSet"):
        return [leaf for b in range(dataset.GetNumberOfBlocks())
                for leaf in vtk_blocks(dataset.GetBlock(b))]
    return [dataset]


@pytest.fixture
def progress_bars(monkeypatch) -> list:
    """(label, unit, done, total) of every update the CLI's LazyProgress bars get (``hooke run``,
    ``animate``, ``export``), recorded instead of drawn; the CLI runs in this process (CliRunner)."""
    from hooke import cli

    updates: list = []

    class Recording(cli.LazyProgress):
        def __call__(self, done: int, total: int) -> None:
            updates.append((self.label, self.unit, done, total))

    monkeypatch.setattr(cli, "LazyProgress", Recording)
    return updates


@pytest.fixture(params=INTEGRATORS)
def integrator(request) -> str:
    """Every registered integrator, by name."""
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


# -- model factories ----------------------------------------------------------------------------

def random_positions(rng, n: int, dim: int, spread: float = 1.0) -> np.ndarray:
    """n points in a box, no two closer than 0.2·spread (so no spring is near-degenerate)."""
    while True:
        x = rng.uniform(-spread, spread, size=(n, dim)) * (1.0 if dim > 1 else n / 2)
        distance = np.linalg.norm(x[:, None, :] - x[None, :, :], axis=-1)
        if np.min(distance[np.triu_indices(n, 1)]) > 0.2 * spread:
            return x


def random_pairs(rng, n: int, count: int) -> list[tuple[int, int]]:
    """``count`` distinct unordered pairs, a spanning chain first so the network is connected."""
    pairs = [(i, i + 1) for i in range(n - 1)]
    candidates = [(i, j) for i in range(n) for j in range(i + 2, n)]
    extra = rng.choice(len(candidates), size=min(count - len(pairs), len(candidates)), replace=False)
    return pairs + [candidates[k] for k in extra]


def random_network(rng, dim: int, n: int = 7, n_springs: int = 12, *, spring_energy="hookean",
                   rest_scale=(0.5, 1.5), zero_rest: int = 0, damping: float = 0.0,
                   gravity=None, velocities: float = 0.0, pinned=(), mass_range=(0.5, 2.0)):
    """A random spring network; rest lengths are the current lengths times U(rest_scale)
    (< 1 compresses, > 1 stretches), the first ``zero_rest`` springs have rest length 0."""
    x = random_positions(rng, n, dim)
    b = hooke.ModelBuilder(dim=dim, gravity=gravity, spring_energy=spring_energy)
    for p in range(n):
        v = rng.normal(size=dim) * velocities if velocities else None
        # drawn for every particle (the same random network as before); a pinned one moves as
        # its pin, still, and is given no velocity (the builder refuses one)
        b.add_particle(x[p], mass=rng.uniform(*mass_range),
                       velocity=None if p in pinned else v, pinned=p in pinned)
    for s, (i, j) in enumerate(random_pairs(rng, n, n_springs)):
        length = np.linalg.norm(x[j] - x[i])
        rest = 0.0 if s < zero_rest else length * rng.uniform(*rest_scale)
        b.add_spring(i, j, stiffness=rng.uniform(10.0, 100.0), rest_length=rest,
                     damping=rng.uniform(0.5, 2.0) * damping)
    return b.finalize()


# -- finite differences -------------------------------------------------------------------------

def fd_gradient(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of a scalar function of an (n, d) array."""
    grad = np.zeros_like(x)
    flat, out = x.reshape(-1), grad.reshape(-1)
    for k in range(flat.size):
        plus, minus = flat.copy(), flat.copy()
        plus[k] += eps
        minus[k] -= eps
        out[k] = (f(plus.reshape(x.shape)) - f(minus.reshape(x.shape))) / (2 * eps)
    return grad


def fd_jacobian(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of an (n, d) → (n, d) map, as a dense (n·d, n·d) matrix J[out, in]."""
    flat = x.reshape(-1)
    columns = []
    for k in range(flat.size):
        plus, minus = flat.copy(), flat.copy()
        plus[k] += eps
        minus[k] -= eps
        columns.append((f(plus.reshape(x.shape)) - f(minus.reshape(x.shape))).reshape(-1) / (2 * eps))
    return np.stack(columns, axis=1)


def log_slope(xs, ys) -> float:
    """Least-squares slope of log(ys) against log(xs)."""
    return float(np.polyfit(np.log(np.asarray(xs)), np.log(np.asarray(ys)), 1)[0])


# -- the browser viewer ---------------------------------------------------------------------------

@pytest.fixture
def uvicorn_served(monkeypatch):
    """What `hooke serve` would serve, with serving itself replaced by recording it: ``configs``,
    the uvicorn configs, and ``bound``, the address of the socket each was given (in order)."""
    from types import SimpleNamespace

    import uvicorn

    served = SimpleNamespace(configs=[], bound=[])

    def run(self, sockets=None):  # uvicorn.Server.run, without serving
        served.configs.append(self.config)
        served.bound.append(sockets[0].getsockname() if sockets else None)
        self.started = True

    monkeypatch.setattr(uvicorn.Server, "run", run)
    return served


def make_socket(path) -> None:
    """A UNIX socket file at ``path``, bound from its folder: a socket's address holds at most
    107 bytes, which a test's tmp_path under pytest-xdist (``…/popen-gw0/…``) can pass."""
    import contextlib
    import socket

    with contextlib.chdir(path.parent):
        socket.socket(socket.AF_UNIX).bind(path.name)


@contextmanager
def serving(app):
    """``app`` (a viewer app) served in a background thread on a free 127.0.0.1 port, with the
    same uvicorn settings as ``hooke serve`` (1 MiB frame limit); yields its ``http://`` address."""
    import socket
    import threading
    import time

    import uvicorn

    from hooke.viz.web import server

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    app_server = uvicorn.Server(uvicorn.Config(app, **server.uvicorn_options("127.0.0.1", port)))
    thread = threading.Thread(target=app_server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not app_server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the viewer server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    app_server.should_exit = True
    thread.join(timeout=10)
    listener.close()


@pytest.fixture(scope="module")
def viewer_url():
    """A `hooke serve spring1d` app (:func:`serving`); yields its ``http://`` address."""
    from hooke.viz.web import server

    with serving(server.create_app("spring1d")) as url:
        yield url


