"""Damaged trajectory files: a truncated or bit-flipped copy of a real run gets one clear line
naming the file and what is wrong — from ``hooke.open``, ``hooke.resume`` and ``hooke plot``,
``animate``, ``export`` and ``run --resume`` (exit 2) — within seconds, and nothing already written
(the trajectory, its sidecar, plots, exports) changes.

Every command runs in one child process (``DRIVER``) with a timeout, so a hang (HDF5 retrying a
bad checksum for ever) fails the test instead of stalling the suite."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import h5py
import pytest
from typer.testing import CliRunner

import hooke
from hooke.cli import app
from hooke.io.export import write_xdmf

DRIVER = r"""
import json, sys, time
from typer.testing import CliRunner
import hooke
from hooke.cli import app

runner, report = CliRunner(), {}
for run_dir in sys.argv[1:]:
    h5, out = run_dir + "/trajectory.h5", {}
    for name, call in (("open", hooke.open), ("resume", hooke.resume)):
        started = time.perf_counter()
        try:
            call(h5)
            out[name] = {"error": None}
        except hooke.HookeInputError as error:
            out[name] = {"error": str(error)}
        except Exception as error:  # reported, so the test shows what escaped
            out[name] = {"error": f"unexpected {type(error).__name__}: {error}"}
        out[name]["seconds"] = time.perf_counter() - started
    for name, args in (("plot", ["plot", run_dir]),
                       ("animate", ["animate", run_dir, "--out", run_dir + "/movie.gif"]),
                       ("export", ["export", run_dir, "--vtu"]),
                       ("run --resume", ["run", "--resume", run_dir])):
        started = time.perf_counter()
        done = runner.invoke(app, args)
        escaped = None if done.exception is None or isinstance(done.exception, SystemExit) else repr(done.exception)
        out[name] = {"code": done.exit_code, "stderr": done.stderr, "escaped": escaped,
                     "seconds": time.perf_counter() - started}
    report[run_dir] = out
print(json.dumps(report))
"""

COMMANDS = ("plot", "animate", "export", "run --resume")


def flip(path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def snapshot(directory) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file()}


def complete_run(directory) -> None:
    """A finished `hooke run` with its sidecar, plots, summary and a VTU export."""
    runner = CliRunner()
    for args in (["run", "chain", "--t-end", "0.2", "--save-every", "20", "--out", str(directory)],
                 ["export", str(directory), "--vtu"]):
        done = runner.invoke(app, args)
        assert done.exit_code == 0, done.output


def interrupted_run(directory) -> None:
    """A copy of a trajectory taken while its writer runs: on disk it is flagged as open for
    (SWMR) writing, as a killed run leaves it, so readers must take HDF5's SWMR path."""
    directory.mkdir()
    live, copy = directory / "live.h5", directory / "trajectory.h5"
    calls = []

    def grab(done, total):
        calls.append(done)
        if len(calls) == 1:
            time.sleep(0.3)  # the next frame flushes (every 0.25 s) and turns SWMR on
        elif len(calls) == 3:
            shutil.copy(live, copy)
    hooke.simulate(hooke.scene("chain"), t_end=0.05, store=live, progress=grab)
    live.unlink()
    assert hooke.open(copy).n_frames >= 3  # the intact copy reads (SWMR path)
    write_xdmf(copy)


def chunk_offset(path, dataset: str) -> int:
    with h5py.File(path, "r") as handle:
        info = handle[dataset].id.get_chunk_info(0)
    return info.byte_offset + info.size // 2


HEAP_ZEROED = (r"is corrupted: its global heap collection at byte \d+ cannot be read \(an "
               r"object of size 0 at byte \d+, which HDF5 would read for ever\)")


def zero_heap_object(path) -> None:
    """Zero the header of the first object of the file's first global heap collection."""
    data = bytearray(path.read_bytes())
    start = data.index(b"GCOL\x01")
    data[start + 16: start + 32] = bytes(16)  # heap index 0, size 0: the free space, empty
    path.write_bytes(bytes(data))


CASES = {
    # name: (make the run, damage it, expected message after "path: " (a regex))
    "truncated": (complete_run, "truncate", r"is truncated: (\d+) of its (\d+) bytes are there"),
    "flipped data": (complete_run, "data", r"is corrupted: /frames/x cannot be read \(.+\)"),
    "flipped superblock": (complete_run, "superblock",
                           r"is not a readable HDF5 trajectory \(.*checksum.*\)"),
    "interrupted, truncated": (interrupted_run, "truncate",
                               r"is truncated: (\d+) of its (\d+) bytes are there"),
    "interrupted, flipped superblock": (interrupted_run, "superblock",
                                        r"is not a readable HDF5 trajectory \(.*checksum.*\)"),
    # HDF5 walks a global heap collection (where string attributes live) object by object, and
    # loops for ever on an object of size 0: a zeroed block there hung every reader.
    "zeroed heap object": (complete_run, "heap", HEAP_ZEROED),
    "interrupted, zeroed heap object": (interrupted_run, "heap", HEAP_ZEROED),
}


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    """Each case's run directory, its files before the commands ran, and the driver's report."""
    runs, before = {}, {}
    for name, (make, damage, _) in CASES.items():
        directory = tmp_path_factory.mktemp("bad") / name.replace(" ", "_").replace(",", "")
        make(directory)
        h5 = directory / "trajectory.h5"
        if damage == "truncate":
            h5.write_bytes(h5.read_bytes()[: h5.stat().st_size // 2])
        elif damage == "heap":
            zero_heap_object(h5)
        elif damage == "data":
            flip(h5, chunk_offset(h5, "frames/x"))
        else:
            flip(h5, 40)  # the root group's address, inside the superblock's checksum
        runs[name], before[name] = directory, snapshot(directory)
    done = subprocess.run([sys.executable, "-c", DRIVER, *map(str, runs.values())],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    return {name: (runs[name], before[name], report[str(runs[name])]) for name in CASES}


@pytest.mark.parametrize("case", list(CASES))
def test_api_refuses_a_damaged_file_in_one_line(damaged, case):
    import re

    directory, _, report = damaged[case]
    h5 = directory / "trajectory.h5"
    for call in ("open", "resume"):
        message = report[call]["error"]
        match = re.fullmatch(rf"path: {CASES[case][2]}, got '{re.escape(str(h5))}'", message or "")
        assert match, (call, message)
        assert report[call]["seconds"] < 30.0  # a hang took minutes; imports take seconds
    if CASES[case][1] == "truncate":
        kept, full = map(int, re.search(CASES[case][2], report["open"]["error"]).groups())
        assert kept == h5.stat().st_size and full in (2 * kept, 2 * kept + 1)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("command", COMMANDS)
def test_cli_exits_2_with_one_line_and_damages_nothing(damaged, case, command):
    directory, before, report = damaged[case]
    result = report[command]
    assert result["escaped"] is None and result["code"] == 2, result
    lines = result["stderr"].strip().splitlines()
    named = "--resume" if command == "run --resume" else "DIR"  # the argument that gave the file
    assert len(lines) == 1 and lines[0].startswith(f"error: {named}: ") and "Traceback" not in lines[0]
    assert str(directory / "trajectory.h5") in lines[0]
    assert result["seconds"] < 30.0
    assert snapshot(directory) == before  # same files, same bytes: no movie, no partial export


def test_a_file_without_frames_is_refused_and_export_writes_nothing(tmp_path):
    with h5py.File(tmp_path / "trajectory.h5", "w") as handle:
        handle.attrs["integrator"] = "rk4"
    with pytest.raises(hooke.HookeInputError) as error:
        hooke.open(tmp_path / "trajectory.h5")
    assert str(error.value) == (f"path: holds no hooke trajectory (no /frames/t), "
                                f"got '{tmp_path / 'trajectory.h5'}'")
    done = CliRunner().invoke(app, ["export", str(tmp_path), "--vtu"])
    assert done.exit_code == 2 and done.stderr.strip() == f"error: DIR{str(error.value)[4:]}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trajectory.h5"]
