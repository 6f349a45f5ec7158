"""Faults around a stored run (issue 15): a full disk, two runs on one output, a rejected run
over an old one, and a stored run whose attributes were edited. Nothing already written may be
lost, and nothing may come back silently wrong: the frames a file keeps are bit-identical to an
uninterrupted run's, and a resumed run ends bit-identical too.

The full-disk tests mount a small tmpfs (root only, as ``make test`` runs here and in CI)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

import hooke
from hooke.io.store import read_trajectory, rewrite
from hooke.errors import format_value, one_line

from conftest import run_cli as cli, run_main

FRAME_KEYS = ("t", "x", "v")


def snapshot(directory) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def assert_frames_equal(stored: dict, reference, frames: int) -> None:
    """The first ``frames`` frames of a stored run equal the reference Result's, bit for bit."""
    for key in FRAME_KEYS:
        assert stored[key].tobytes() == getattr(reference, key)[:frames].tobytes(), key
    for key, values in reference.energy.items():
        assert stored["energy"][key].tobytes() == values[:frames].tobytes(), key


# -- a full disk ----------------------------------------------------------------------------------

def mount_tmpfs(folder, size: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs (the full disk) needs root; `make test` runs as root")
    folder.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True)


def resize(folder, size: str) -> None:
    """Grow the tmpfs at ``folder``: space is freed."""
    subprocess.run(["mount", "-o", f"remount,size={size}", "tmpfs", str(folder)], check=True)


@pytest.fixture
def small_disk(tmp_path):
    """A 6 MiB tmpfs, unmounted afterwards."""
    folder = tmp_path / "disk"
    mount_tmpfs(folder, "6m")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)


# 3 s of cloth2d, a frame every step (as the reference run, hooke.simulate, saves them): 1201
# frames of 38.5 kB, 46 MB as a run writes them (uncompressed until it closes), far more than the
# 6 MiB disk holds; the model takes 0.35 MB, a block 64 frames (2.5 MB) at most, so the disk fills
# after at least 64 frames whatever the machine's load made of the blocks
CLOTH = ("cloth2d", "--dt", "0.0025", "--t-end", "3", "--save-every", "1")


def disk_full_line(path, kept: int, flag: str = "--out") -> str:
    """The line of a full disk: ``flag`` names the run's file as the command line gave it
    (--out, or --resume DIR); the API's own (hooke.resume) names its argument, path."""
    return (f"error: {flag}: the disk is full (No space left on device) after {kept} frame(s); the "
            f"file keeps them: free space, then continue with `hooke run --resume {path}`, got "
            f"'{path}'")


def test_a_full_disk_stops_the_run_in_one_line_keeps_its_frames_and_resumes_exactly(small_disk):
    """cloth2d fills the 6 MiB disk: one line (exit 1), no traceback, no crash; the file holds
    exactly the frames it says (frames_written), each bit-identical to the uninterrupted run's;
    after space is freed, --resume ends bit-identical to the uninterrupted run. An earlier
    run's plots and summary, which the new file makes stale, are gone (they stayed beside it)."""
    assert cli("run", "spring1d", "--t-end", "0.5", "--out", str(small_disk)).returncode == 0
    assert (small_disk / "summary.json").exists() and (small_disk / "energy.png").exists()
    done = cli("run", *CLOTH, "--out", str(small_disk))
    path = small_disk / "trajectory.h5"
    kept = int(re.search(r"after (\d+) frame", done.stderr).group(1))
    assert done.returncode == 1 and done.stderr.splitlines() == [disk_full_line(path, kept)]
    assert sorted(p.name for p in small_disk.iterdir() if not p.name.endswith(".lock")) == [
        "trajectory.h5"]
    full = hooke.simulate(hooke.scene("cloth2d"), dt=0.0025, t_end=3.0)
    stored = read_trajectory(path)
    assert stored["total_frames"] == stored["attrs"]["frames_written"] == kept
    assert 64 <= kept < full.n_frames and not stored["attrs"]["complete"]
    assert_frames_equal(stored, full, kept)

    # room for the rest and the closing compressed copy, whatever the load (the file holds no
    # dead space, however often it was flushed): 1201 frames of 38.5 kB, 46 MB uncompressed,
    # and their copy, smaller
    resize(small_disk, "128m")
    done = cli("run", "--resume", str(small_disk))
    assert done.returncode == 0, done.stderr
    stored = read_trajectory(path)
    assert stored["attrs"]["complete"] and stored["total_frames"] == full.n_frames
    assert_frames_equal(stored, full, full.n_frames)
    assert sorted(p.name for p in small_disk.iterdir() if p.suffix in (".lock", ".new")) == []


def test_a_disk_full_before_the_first_frame_leaves_the_previous_run(small_disk):
    """An old run sits on the disk; the disk is then filled: the new run cannot write its first
    frame, says so in one line (exit 1), and the old run's files stay byte for byte."""
    assert cli("run", "spring1d", "--t-end", "0.5", "--out", str(small_disk)).returncode == 0
    before = snapshot(small_disk)
    with open(small_disk / "ballast", "wb", buffering=0) as handle:  # takes every byte left
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError:
            pass
    done = cli("run", *CLOTH, "--out", str(small_disk))
    path = small_disk / "trajectory.h5"
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        f"error: --out: the disk is full (No space left on device) before the first frame was "
        f"written; any earlier run in the file is left as it was, got '{path}'"]
    (small_disk / "ballast").unlink()
    assert snapshot(small_disk) == before



@pytest.mark.parametrize("size", ["120k", "300k", "800k"])
def test_a_disk_that_fills_before_the_first_frames_is_one_line_not_a_crash(tmp_path, size):
    """Issue 15 (confirmation pass, stop 28): lattice (frames of 1.2 MB) on a disk with room for
    its file's start but not its first frames crashed: h5py's "Can't decrement id ref count"
    tracebacks, then a segmentation fault (exit -11) as the file was closed, leaving
    trajectory.h5.new and the locks. HDF5 survives no failed write before SWMR starts, so
    the room for that is taken first (posix_fallocate): a full disk is one line, exit 1, and
    nothing is left behind."""
    disk = tmp_path / "disk"
    mount_tmpfs(disk, size)
    try:
        done = cli("run", "lattice", "--t-end", "0.3", "--out", str(disk))
        assert (done.returncode, done.stderr.splitlines()) == (1, [
            f"error: --out: the disk is full (No space left on device) before the first frame "
            f"was written; any earlier run in the file is left as it was, got "
            f"'{disk / 'trajectory.h5'}'"])
        assert list(disk.iterdir()) == []
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)

REWRITE = """
import sys
from pathlib import Path
from hooke.errors import HookeInputError
from hooke.io.store import rewrite
try:
    rewrite(Path(sys.argv[1]))
except HookeInputError as error:
    print(error)
"""


def test_a_disk_too_full_for_the_closing_compaction_is_one_line_not_a_crash(small_disk, tmp_path):
    """A run's file fits, its closing compacted copy (``rewrite``) does not: HDF5 failed half-way
    through the copy and the process died of a segmentation fault at exit (139, no message; the
    confirmation pass of issue 15, with cloth2d on a 39 MiB disk). Now one line, the file as it
    was, no copy left; ``hooke run --resume`` finishes the outputs once there is room."""
    out = tmp_path / "run"
    assert cli("run", "cloth2d", "--t-end", "0.5", "--quiet", "--out", str(out)).returncode == 0
    whole = read_trajectory(out / "trajectory.h5")
    rewrite(out / "trajectory.h5", compress=False)  # as a run leaves it before its compaction
    path = small_disk / "trajectory.h5"
    shutil.copyfile(out / "trajectory.h5", path)  # 4.3 MB of the 6 MiB: no room for its copy
    before = path.read_bytes()
    done = subprocess.run([sys.executable, "-c", REWRITE, str(path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("path: could not be rewritten through trajectory.h5.rewrite "
                                  "(the disk is full: its copy may take "), done.stdout
    assert done.stdout.rstrip().endswith(f"it is left as it was, got '{path}'")
    assert len(done.stdout.splitlines()) == 1 and done.stderr == ""
    assert path.read_bytes() == before and [p.name for p in small_disk.iterdir()] == [path.name]
    kept = read_trajectory(path)
    for key in FRAME_KEYS:
        np.testing.assert_array_equal(kept[key], whole[key])


def test_a_killed_compactions_leftover_does_not_count_against_the_next(small_disk, tmp_path):
    """The partial copy a kill left in the final compaction takes the disk's room; the next
    compaction (``hooke run --resume``'s finish) removes it before it measures the free space,
    so it is not refused for the room its own leftover held."""
    out = tmp_path / "run"
    assert cli("run", "spring1d", "--t-end", "2", "--quiet", "--out", str(out)).returncode == 0
    path = small_disk / "trajectory.h5"
    shutil.copyfile(out / "trajectory.h5", path)
    leftover = small_disk / "trajectory.h5.rewrite"
    room = shutil.disk_usage(small_disk).free
    leftover.write_bytes(b"\0" * (room - 2**19))  # half a MiB free: less than the copy may take
    rewrite(path)
    assert sorted(p.name for p in small_disk.iterdir()) == ["trajectory.h5"]
    kept, whole = read_trajectory(path), read_trajectory(out / "trajectory.h5")
    for key in FRAME_KEYS:
        np.testing.assert_array_equal(kept[key], whole[key])


# -- two runs on one output -------------------------------------------------------------------------

def wait_for_frames(path, count: int, child) -> int:
    seen, deadline = 0, time.monotonic() + 120
    while seen < count and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.2)
        try:
            seen = read_trajectory(path, frames=0)["total_frames"]
        except hooke.HookeInputError:
            pass  # not yet past its first flush
    return seen


def test_a_second_run_on_the_same_output_is_refused_naming_the_first(tmp_path):
    """While one run writes DIR, a second `hooke run` (or hooke.simulate, hooke.resume) on it is
    refused in one line naming the first's PID, and the first's frames stay intact. A killed
    holder blocks nobody: the next run takes the output."""
    first = subprocess.Popen([sys.executable, "-m", "hooke.cli", "run", "chain", "--t-end", "100",
                              "--save-every", "1", "--out", str(tmp_path)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path = tmp_path / "trajectory.h5"
    try:
        assert wait_for_frames(path, 30, first) >= 30
        refusal = (f"is being written by another run (PID {first.pid}, lock "
                   f"trajectory.h5.lock); wait until it ends or write elsewhere, got '{path}'")
        done = cli("run", "spring1d", "--out", str(tmp_path))  # refused by the run's hold
        assert done.returncode == 2 and done.stderr.splitlines() == [
            f"error: --out: is being written by another run (PID {first.pid}, lock "
            f"summary.json.lock); wait until it ends or write elsewhere, got "
            f"'{tmp_path / 'summary.json'}'"]
        for field, call in (("store", lambda: hooke.simulate(hooke.scene("spring1d"), store=path)),
                            ("path", lambda: hooke.resume(path))):
            with pytest.raises(hooke.HookeInputError) as info:
                call()
            assert str(info.value) == f"{field}: {refusal}"
        assert wait_for_frames(path, 60, first) >= 60  # the first run goes on writing
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    stored = read_trajectory(path)
    reference = hooke.simulate(hooke.scene("chain"), t_end=0.001 * (stored["total_frames"] - 1))
    assert stored["total_frames"] >= 60
    assert_frames_equal(stored, reference, stored["total_frames"])
    done = cli("run", "spring1d", "--t-end", "0.1", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert read_trajectory(path)["attrs"]["scene_name"] == "spring1d"


def test_a_run_holds_its_output_until_its_plots_and_summary_are_written(tmp_path):
    """A run lets go of its trajectory's lock when the file is closed, then writes its plots and
    summary: a second run started in between ran, and the first then wrote its snapshot over
    the second's (cloth's snapshot.png beside oscillator's trajectory and summary: the
    confirmation pass of issue 15). The run's hold on DIR (here taken as the first run would
    hold it while it writes its plots) refuses the second in one line; DIR stays as it was."""
    from hooke.io.lock import OutputLock

    assert cli("run", "spring1d", "--t-end", "0.5", "--quiet", "--out", str(tmp_path)).returncode == 0
    before = snapshot(tmp_path)
    hold = OutputLock(tmp_path / "summary.json")
    try:
        for field, args in (("--out", ["oscillator", "--t-end", "0.2", "--out", str(tmp_path)]),
                            ("--resume", ["--resume", str(tmp_path)])):
            done = cli("run", *args, "--quiet")
            assert (done.returncode, done.stderr.splitlines()) == (2, [
                f"error: {field}: is being written by another run (PID {os.getpid()}, lock "
                f"summary.json.lock); wait until it ends or write elsewhere, got "
                f"'{tmp_path / 'summary.json'}'"])
    finally:
        hold.release()
    assert snapshot(tmp_path) == before
    assert cli("run", "oscillator", "--t-end", "0.2", "--quiet", "--out", str(tmp_path)).returncode == 0
    assert json.loads((tmp_path / "summary.json").read_text())["scene"] == "oscillator"
    assert not (tmp_path / "summary.json.lock").exists()


# -- a rejected run ---------------------------------------------------------------------------------

REJECTED = {
    "huge --save-every": (["--save-every", "99999999999999999999999"], {},
                          "error: --save-every: must be at most 1e+08 steps (the most a run has), "
                          "got 99999999999999999999999"),
    "bad SOURCE_DATE_EPOCH": ([], {"SOURCE_DATE_EPOCH": "abc"},
                              "error: SOURCE_DATE_EPOCH: must be an integer number of seconds "
                              "since 1970-01-01 UTC, got 'abc'"),
    "huge SOURCE_DATE_EPOCH": ([], {"SOURCE_DATE_EPOCH": "99999999999999999999"},
                               "error: SOURCE_DATE_EPOCH: must be within a signed 64-bit number "
                               "of seconds (|value| < 2**63), got '99999999999999999999'"),
    "an option the integrator lacks": (["-O", "rtol=1e-3"], {}, None),
}


@pytest.mark.parametrize("case", list(REJECTED))
def test_a_rejected_run_leaves_the_previous_run_as_it_was(tmp_path, case):
    assert cli("run", "spring1d", "--t-end", "0.5", "--out", str(tmp_path)).returncode == 0
    before = snapshot(tmp_path)
    args, env, line = REJECTED[case]
    done = cli("run", "spring1d", *args, "--out", str(tmp_path), env=env)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert line is None or done.stderr.splitlines() == [line]
    assert snapshot(tmp_path) == before


def test_the_new_run_replaces_the_old_one_once_it_has_frames(tmp_path):
    """The new run is written aside (trajectory.h5.new) and takes the old one's name at its
    first flush: a reader sees the old run or the new one, never an empty file."""
    path = tmp_path / "trajectory.h5"
    hooke.simulate(hooke.scene("spring1d"), t_end=0.5, store=path)
    names = []

    def look(done, total):
        if done == 1:
            names.append(sorted(p.name for p in tmp_path.iterdir()))
            assert read_trajectory(path, frames=0)["attrs"]["scene_name"] == "spring1d"
    result = hooke.simulate(hooke.scene("chain"), t_end=0.5, store=path, progress=look)
    assert names == [["trajectory.h5", "trajectory.h5.lock", "trajectory.h5.new"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trajectory.h5"]
    assert hooke.open(path).x.tobytes() == result.x.tobytes()


# -- a stored run with edited attributes -------------------------------------------------------------

def interrupted_run(path) -> None:
    """A spring1d run (rk4, 2 s) stored at ``path``, interrupted at 1 s."""
    def stop(done, total):
        if done >= total // 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        hooke.simulate(hooke.scene("spring1d"), integrator="rk4", t_end=2.0, store=path,
                       progress=stop)


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """An interrupted spring1d run (:func:`interrupted_run`) and its bytes."""
    path = tmp_path_factory.mktemp("interrupted") / "trajectory.h5"
    interrupted_run(path)
    return path, path.read_bytes()


EDITED = {  # attribute: (edited value, the one line's problem, or None: not a format problem)
    "options": ("{not json", "attribute options = '{not json' is not a JSON object"),
    "parameters": ("[1, 2]", "attribute parameters = '[1, 2]' is not a JSON object"),
    "dt": ("fast", "attribute dt = 'fast' is not a finite number > 0"),
    "t_end": (-1.0, "attribute t_end = -1.0 is not a finite number > 0"),
    "save_every": (0, "attribute save_every = 0 is not an integer from 1 to 1e+08"),
    "frames_written": (-5, "attribute frames_written = -5 is not a frame count from 1 to the "
                           "201 frames stored"),
    "complete": ("no", "attribute complete = 'no' is not true or false"),
    "integrator": ("leapfrog", "attribute integrator = 'leapfrog' is not a known integrator"),
}
CHANGED = {  # well-formed but not what the run was: caught by the input hash or the version
    "dt": 0.004, "t_end": 1.0, "save_every": 2, "options": "{}",
    "scene_source": hooke.scene("oscillator").source, "frames_written": 10**6,
    "hooke_version": "0.0.1",
}


def edited_copy(interrupted, tmp_path, key, value):
    source, _ = interrupted
    path = tmp_path / "trajectory.h5"
    path.write_bytes(source.read_bytes())
    with h5py.File(path, "r+") as handle:
        handle.attrs[key] = value
    return path


def assert_refused(path, expected: str) -> None:
    """hooke.open and hooke.resume both refuse ``path`` with the one line ``expected``."""
    for call in (hooke.open, hooke.resume):
        with pytest.raises(hooke.HookeInputError) as info:
            call(path)
        assert str(info.value) == expected


@pytest.mark.parametrize("key", list(EDITED))
def test_a_malformed_stored_attribute_is_one_line_from_open_resume_and_the_cli(interrupted,
                                                                              tmp_path, key):
    value, problem = EDITED[key]
    path = edited_copy(interrupted, tmp_path, key, value)
    before = path.read_bytes()
    expected = f"path: {problem} (the file was edited or damaged), got '{path}'"
    assert_refused(path, expected)
    done = cli("run", "--resume", str(tmp_path))  # the file as the command line gave it
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"error: --resume: {expected.removeprefix('path: ')}"]
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "trajectory.h5"]


@pytest.mark.parametrize("key,value,problem", [
    ("scene_source", "dim = 1\n[[particles]]\nx = [0.0]\n",
     "x0: is not a parameter: this scene has no builder, got 2.0"),
    ("parameters", '{"n": 3}', "parameters.n: unknown field, got 3")])
def test_a_stored_scene_that_no_longer_builds_names_the_file(interrupted, tmp_path, key, value,
                                                             problem):
    """Issue 15: a scene_source or parameters attribute edited so that the scene no longer
    builds was refused naming a field of the text alone ("parameters.n: unknown field, got 3"),
    not the file nor that it was edited."""
    path = edited_copy(interrupted, tmp_path, key, value)
    before = path.read_bytes()
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.resume(path)
    assert str(info.value) == ("path: its stored scene (attributes scene_source, parameters, "
                               f"scene_folder) no longer builds: {problem}; it cannot be "
                               f"continued, got '{path}'")
    assert path.read_bytes() == before


@pytest.mark.parametrize("key", list(CHANGED))
def test_a_changed_stored_run_is_not_resumed(interrupted, tmp_path, key):
    """A well-formed but changed attribute (a dt, the scene file's text, an inflated frame count,
    another hooke's version) is refused by --resume, never continued from the wrong state, and
    never taken for a complete run."""
    path = edited_copy(interrupted, tmp_path, key, CHANGED[key])
    before = path.read_bytes()
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.resume(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith("path: ") and "complete" not in message
    if key == "hooke_version":
        assert message == (f"path: was written by hooke 0.0.1, this is hooke {hooke.__version__}: "
                           "it would not continue the run exactly; resume it with hooke 0.0.1, "
                           f"got '{path}'")
    elif key == "frames_written":
        assert "attribute frames_written = 1000000 is not a frame count" in message
    else:
        assert message == ("path: its settings or scene text differ from those its input_hash "
                           "was made of (the file was edited): it cannot be continued exactly, "
                           f"got '{path}'")
    assert path.read_bytes() == before


@pytest.mark.parametrize("name", ["spring1d\x1b]0;pwned\x07", "spring1d\nerror: forged", "other"])
def test_an_edited_scene_name_is_not_resumed(interrupted, tmp_path, name):
    """redL: scene_name is not in the input hash, so a name edited to hold a terminal's escape
    sequence or a newline (or any other name) resumed as if whole. A scene text that names
    itself (spring1d's `name = "spring1d"`) says what the attribute must be."""
    path = edited_copy(interrupted, tmp_path, "scene_name", name)
    before = path.read_bytes()
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.resume(path)
    problem = (f"attribute scene_name = {format_value(name)} is not the name its scene_source "
               "gives, 'spring1d' (the file was edited or damaged)")
    assert str(info.value) == f"path: {problem}, got '{path}'"
    done = cli("run", "--resume", str(tmp_path))
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"error: --resume: {one_line(problem)}, got '{path}'"]
    assert path.read_bytes() == before


def test_a_checkpoint_that_is_not_the_last_frames_is_not_resumed(interrupted, tmp_path):
    """The checkpoint carries the frame count it was written with; a file whose checkpoint
    belongs to another frame (a write cut short between the two) is refused, never continued
    from the wrong integrator state."""
    path = edited_copy(interrupted, tmp_path, "scene_name", "spring1d")
    with h5py.File(path, "r+") as handle:
        frames = int(handle.attrs["frames_written"])
        assert handle["checkpoint"].attrs["frames_written"] == frames
        handle["checkpoint"].attrs["frames_written"] = frames - 1
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.resume(path)
    assert str(info.value) == (f"path: its checkpoint follows frame {frames - 1}, not its last "
                               f"frame {frames} (a write was cut short): it cannot be continued "
                               f"exactly, got '{path}'")


def test_an_unedited_interrupted_run_still_resumes(interrupted, tmp_path):
    path = edited_copy(interrupted, tmp_path, "scene_name", "spring1d")  # the same value
    resumed = hooke.resume(path)
    full = hooke.simulate(hooke.scene("spring1d"), integrator="rk4", t_end=2.0)
    assert resumed.x.tobytes() == full.x.tobytes() and resumed.v.tobytes() == full.v.tobytes()


def test_resume_takes_the_file_or_its_directory(interrupted, tmp_path):
    source, _ = interrupted
    for target in ("file", "directory"):
        folder = tmp_path / target
        folder.mkdir()
        (folder / "trajectory.h5").write_bytes(source.read_bytes())
        argument = folder / "trajectory.h5" if target == "file" else folder
        done = cli("run", "--resume", str(argument))
        assert done.returncode == 0, done.stderr
        assert json.loads((folder / "summary.json").read_text())["frames"] == 401


def test_a_frame_range_of_floats_is_the_callers_error_not_the_files(interrupted):
    path, _ = interrupted
    for frames in (slice(0.5, 3), slice(0, 3, 1.0), slice("a", None), slice(True, 3)):
        with pytest.raises(hooke.HookeInputError) as info:
            hooke.open(path, frames=frames)
        assert str(info.value).startswith("frames: must be a slice of integers"), frames


# -- a fresh red-team pass (issue 15's "Done when") ----------------------------------------------

@pytest.mark.parametrize("key, value, problem", [
    ("frames_written", 0, "attribute frames_written = 0 is not a frame count from 1 to the 201 "
                          "frames stored (the file was edited or damaged)"),
    ("parameters", '{"a": ' + "[" * 5000 + "]" * 5000 + "}", None),  # past the recursion limit
])
def test_an_empty_frame_count_or_deeply_nested_json_is_one_line(interrupted, tmp_path, key, value,
                                                                 problem):
    """frames_written = 0 (plot and animate failed on frame -1) and JSON nested past Python's
    recursion limit (a RecursionError "bug in hooke") are refused like any edited attribute."""
    path = edited_copy(interrupted, tmp_path, key, value)
    for call in (hooke.open, hooke.resume):
        with pytest.raises(hooke.HookeInputError) as info:
            call(path)
        message = str(info.value)
        assert "\n" not in message and message.startswith("path: ")
        assert problem in message if problem else "is not a JSON object" in message
    done = cli("plot", str(tmp_path))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1


def damaged_copy(interrupted, tmp_path, edit):
    """A copy of the interrupted run with ``edit(h5py file)`` applied to it."""
    source, _ = interrupted
    path = tmp_path / "trajectory.h5"
    path.write_bytes(source.read_bytes())
    with h5py.File(path, "r+") as handle:
        edit(handle)
    return path


@pytest.mark.parametrize("edit, problem", [
    (lambda h: h["frames/x"].__setitem__(200, np.nan),
     "is corrupted: frames/x holds a non-finite value at frame 200 (hooke stores finite frames "
     "only)"),
    (lambda h: h["frames/v"].__setitem__(0, np.inf),
     "is corrupted: frames/v holds a non-finite value at frame 0 (hooke stores finite frames only)"),
    (lambda h: h["model"].attrs.__setitem__("dim", "two"),
     "is corrupted: model/dim = 'two' is not 1, 2 or 3"),
    (lambda h: h["model"].attrs.__setitem__("dim", 7), "is corrupted: model/dim = 7 is not 1, 2 or 3"),
    (lambda h: h["model/mass"].__setitem__(1, -1.0), "is corrupted: model/mass holds a mass <= 0"),
    (lambda h: h["model/spring_indices"].__setitem__((0, 0), 9),
     "is corrupted: model/spring_indices holds a particle index outside [0, 2)"),
    # stop 30: a stored model is checked in the store's words before Model's own checks (which
    # named 'mass[1]' or raised "'_MISSING_TYPE' object has no attribute 'ndim'")
    (lambda h: h.__delitem__("model/mass"), "is corrupted: model/mass is missing"),
    (lambda h: h["model/spring_stiffness"].__setitem__(0, -5.0),
     "is corrupted: model/spring_stiffness[0]: must be finite and >= 0, got -5.0"),
])
def test_an_edited_frame_or_model_is_refused_never_resumed_from(interrupted, tmp_path, edit,
                                                                problem):
    """hooke never stores a non-finite frame, so NaN or inf in one is damage: --resume continued
    from a NaN last frame and exited 0, plot failed on NaN axis limits. A stored model of another
    dim, a negative mass or a spring index out of range is refused too, in one line."""
    path = damaged_copy(interrupted, tmp_path, edit)
    before = path.read_bytes()
    expected = f"path: {problem}, got '{path}'"
    assert_refused(path, expected)
    # hooke plot names its argument as the command line calls it, DIR (cfbd7ae)
    for command, name in ((("run", "--resume", str(tmp_path)), "--resume"),
                          (("plot", str(tmp_path)), "DIR")):
        done = cli(*command)
        assert done.returncode == 2 and done.stderr.splitlines() == [
            f"error: {name}: {problem}, got '{path}'"]
    assert path.read_bytes() == before


@pytest.mark.parametrize("edit, problem, opens", [
    (lambda h: _replace_dataset(h, "frames/x", h["frames/x"][...].astype(np.int64)),
     "is corrupted: frames/x holds int64 values, not the float64 hooke writes", False),
    (lambda h: h["frames/t"].__setitem__(100, 99.0),
     "is corrupted: frames/t goes from 99 s to 0.505 s (hooke saves frames forward in time)", False),
    (lambda h: h["frames/energy/total"].__setitem__(200, np.nan),
     "is corrupted: frames/energy/total holds a non-finite value at frame 200 (hooke stores "
     "finite frames only)", True),
    (lambda h: h["model/pinned"].__setitem__(1, True),
     "is corrupted: model/pinned differs from the model its scene text builds (the file was "
     "edited or damaged)", True),
    (lambda h: h["model/x0"].__setitem__(1, 3.0),
     "is corrupted: model/x0 differs from the model its scene text builds (the file was edited "
     "or damaged)", True),
    # a spring energy hooke does not have: refused by the Model's own check (3ab7062), also on open
    (lambda h: h["model"].attrs.__setitem__("spring_energy", "cubic"),
     "is corrupted: model/spring_energy: must be one of hookean, squared_length, got 'cubic'",
     False),
])
def test_an_edit_the_attributes_hash_does_not_cover_is_not_resumed(interrupted, tmp_path, edit,
                                                                  problem, opens):
    """Frames rounded to integers (x as int64) were resumed from the rounded last state; a time
    going backwards was taken as it was; a NaN stored energy ran the whole continuation, then
    ended in "the total energy overflowed … try a smaller dt" (exit 1); an edited stored model
    (all pinned, another x0, another energy) was resumed with the scene text's model, the
    edit kept in the file. The stored model must be the one the scene text builds."""
    path = damaged_copy(interrupted, tmp_path, edit)
    before = path.read_bytes()
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.resume(path)
    assert str(info.value) == f"path: {problem}, got '{path}'"
    if opens:  # what the resume alone checks: the file is still read, as it is
        assert hooke.open(path).n_frames == 201
    else:
        with pytest.raises(hooke.HookeInputError, match=f"^path: {re.escape(problem)}"):
            hooke.open(path)
    done = cli("run", "--resume", str(tmp_path))
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"error: --resume: {str(info.value).removeprefix('path: ')}"]
    assert path.read_bytes() == before


@pytest.mark.parametrize("name", ["trajectory.h5.lock", "trajectory.h5.new"])
def test_a_symbolic_link_beside_the_output_is_never_written_through(tmp_path, name):
    """A link planted where hooke puts its lock or writes a new run aside (a shared folder):
    the lock was opened through it and truncated to the PID, the aside file created through it
    as HDF5 — either way the file it points to was lost. Now the link is refused (the lock) or
    replaced (the aside file), and the file it points to keeps its bytes."""
    precious = tmp_path / "precious.txt"
    precious.write_text("a user's data\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(precious)
    done = cli("run", "spring1d", "--t-end", "0.1", "--out", str(out), "--quiet")
    assert precious.read_text() == "a user's data\n"
    if name.endswith(".lock"):
        assert done.returncode == 2 and done.stderr.splitlines() == [
            f"error: --out: cannot be written (its lock {name} is a symbolic link), got "
            f"'{out / 'trajectory.h5'}'"]
    else:
        assert done.returncode == 0, done.stderr
        assert hooke.open(out / "trajectory.h5").x.shape == (21, 2, 1)


def _replace_dataset(handle, name, data):
    del handle[name]
    handle[name] = data


@pytest.mark.parametrize("edit, problem", [
    (lambda h: _replace_dataset(h, "frames/x", 5.0), "is corrupted (tuple index out of range)"),
    (lambda h: h.__delitem__("frames/energy/total"),
     "holds no hooke trajectory (no /frames/energy/total)"),
    (lambda h: h["checkpoint"].attrs.__setitem__("stats", "not json"),
     "its checkpoint cannot be restored (JSONDecodeError: Expecting value: line 1 column 1 "
     "(char 0)): the file was edited or damaged"),
    # red-team pass G: RecursionError and TypeError "a bug in hooke"; a count of 1e400 (inf) or
    # -5 restored silently into the run's stats
    (lambda h: h["checkpoint"].attrs.__setitem__("stats", "[" * 100000),
     "its checkpoint cannot be restored (ValueError: stats: nested past Python's recursion "
     "limit): the file was edited or damaged"),
    (lambda h: h["checkpoint"].attrs.__setitem__("stats", '{"steps": "many"}'),
     "its checkpoint cannot be restored (ValueError: stats: must be counts (whole numbers >= 0), "
     "got '{\"steps\": \"many\"}'): the file was edited or damaged"),
    (lambda h: h["checkpoint"].attrs.__setitem__("stats", '{"steps": 1e400}'),
     "its checkpoint cannot be restored (ValueError: stats: must be counts (whole numbers >= 0), "
     "got '{\"steps\": 1e400}'): the file was edited or damaged"),
    (lambda h: h["checkpoint"].attrs.__setitem__("stats", '{"steps": -5}'),
     "its checkpoint cannot be restored (ValueError: stats: must be counts (whole numbers >= 0), "
     "got '{\"steps\": -5}'): the file was edited or damaged"),
])
def test_a_scalar_frame_set_a_missing_energy_or_a_bad_checkpoint_is_one_line(interrupted, tmp_path,
                                                                             edit, problem):
    """A frame dataset replaced by a scalar (IndexError from every command), the total energy
    deleted (KeyError from plot) and checkpoint stats that are not JSON (JSONDecodeError from
    --resume) were "a bug in hooke"."""
    path = damaged_copy(interrupted, tmp_path, edit)
    before = path.read_bytes()
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.resume(path)
    assert str(info.value) == f"path: {problem}, got '{path}'"
    done = cli("run", "--resume", str(tmp_path))
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"error: --resume: {str(info.value).removeprefix('path: ')}"]
    assert path.read_bytes() == before


def test_plot_and_animate_on_a_full_disk_are_one_line_and_leave_no_partial_file(tmp_path):
    """`hooke plot` and `hooke animate` into a full disk were "unexpected OSError … a bug in
    hooke", and animate left a truncated movie behind. Now one line naming --out (exit 1), no
    partial picture or movie, and the stored run untouched."""
    folder = tmp_path / "disk"
    mount_tmpfs(folder, "2m")
    try:
        run = folder / "run"
        run.mkdir()
        hooke.simulate(hooke.scene("spring1d"), t_end=0.5, store=run / "trajectory.h5")
        before = (run / "trajectory.h5").read_bytes()
        filler = folder / "filler"
        try:  # the disk full to the last few kB
            with open(filler, "wb") as handle:
                while True:
                    handle.write(b"\0" * 4096)
                    handle.flush()
        except OSError:
            pass
        done = cli("plot", str(run))
        assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
        assert re.fullmatch(r"error: --out: cannot write \w+\.png \(No space left on device\), "
                            rf"got '{re.escape(str(run))}'\n", done.stderr), done.stderr
        done = cli("animate", str(run), "--out", str(run / "movie.gif"))
        assert done.returncode == 1 and done.stderr == (
            f"error: --out: cannot write the movie (No space left on device), got "
            f"'{run / 'movie.gif'}'\n"), done.stderr
        assert sorted(p.name for p in run.iterdir()) == ["trajectory.h5"]
        assert (run / "trajectory.h5").read_bytes() == before
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_resume_never_continues_another_file_than_the_one_named(interrupted, tmp_path):
    """Issue 15 (second red-team pass): `hooke run --resume DIR/other.h5` continued
    DIR/trajectory.h5 instead, a different run, and left the named one as it was; a missing
    directory read "cannot be written (No such file or directory)". Now the named file that is
    not a run directory's trajectory.h5 is refused in one line, nothing changes; a missing one
    is "no such trajectory file"."""
    source, data = interrupted
    (tmp_path / "trajectory.h5").write_bytes(data)
    (tmp_path / "other.h5").write_bytes(data)
    done = cli("run", "--resume", str(tmp_path / "other.h5"))
    assert done.returncode == 2 and done.stderr == (
        "error: --resume: must be a run's directory or the trajectory.h5 in it (rename the file "
        f"to trajectory.h5 in a folder of its own), got '{tmp_path / 'other.h5'}'\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.h5", "trajectory.h5"]
    assert all((tmp_path / name).read_bytes() == data for name in ("other.h5", "trajectory.h5"))
    missing = tmp_path / "missing"
    done = cli("run", "--resume", str(missing))
    assert done.returncode == 2 and done.stderr == (
        f"error: --resume: no such trajectory file, got '{missing / 'trajectory.h5'}'\n")
    assert not missing.exists()


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_resume_of_a_device_or_a_fifo_says_what_resume_takes(tmp_path, monkeypatch, capsys, kind):
    """`--resume /dev/null` (or a FIFO) was taken for a directory: "path: cannot read the
    trajectory file (Not a directory), got '/dev/null/trajectory.h5'", a file no one named.
    Now anything that is not a directory is judged as a file: one line naming --resume."""
    from conftest import run_main

    target = Path(os.devnull) if kind == "device" else tmp_path / "pipe"
    if kind == "fifo":
        os.mkfifo(target)
    code, lines = run_main(monkeypatch, capsys, "run", "--resume", str(target), "-q")
    assert (code, lines) == (2, [
        "error: --resume: must be a run's directory or the trajectory.h5 in it (rename the file "
        f"to trajectory.h5 in a folder of its own), got '{target}'"])


KILLED_IN_COMPACTION = """
import os, signal, sys
from pathlib import Path
import hooke.io.store as store
from hooke import cli

original = store.rewrite

def killed(path, frames=None, compress=True):
    if not compress:  # a resumed run's own copy: left alone
        return original(path, frames, compress)
    # the final compaction got this far: a partial copy, then the process is gone
    Path(str(path) + ".rewrite").write_bytes(b"partial" * 1000)
    os.kill(os.getpid(), signal.SIGKILL)

store.rewrite = killed
sys.argv = ["hooke", "run", "spring1d", "--t-end", "1", "--quiet", "--out", sys.argv[1]]
cli.main()
"""


def test_a_run_killed_in_its_final_compaction_is_finished_by_resume(tmp_path):
    """A kill at the last moment of a run (its file complete, the final compaction cut short:
    a partial .rewrite copy, no plots, no summary) is finished by ``hooke run --resume``: the
    copy is taken, the file compacted, the plots and summary written, the frames those of an
    uninterrupted run; exit 0 with one note."""
    out = tmp_path / "killed"
    killed = subprocess.run([sys.executable, "-c", KILLED_IN_COMPACTION, str(out)],
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL
    assert sorted(p.name for p in out.iterdir()) == [  # the locks: not held
        "summary.json.lock", "trajectory.h5", "trajectory.h5.lock", "trajectory.h5.rewrite"]
    done = cli("run", "--resume", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [f"note: {out / 'trajectory.h5'} holds a complete run, "
                                        "nothing to continue; its plots and summary are written "
                                        "again"]
    assert sorted(p.name for p in out.iterdir()) == [
        "analytic.png", "energy.png", "snapshot.png", "summary.json", "trajectory.h5",
        "trajectory.xdmf"]
    whole = hooke.simulate(hooke.scene("spring1d"), t_end=1.0)
    finished = hooke.open(out / "trajectory.h5")
    np.testing.assert_array_equal(finished.x, whole.x)
    np.testing.assert_array_equal(finished.v, whole.v)
    assert json.loads((out / "summary.json").read_text())["complete"]


def frame_layout(path) -> dict:
    """Each frame dataset's storage: chunks, filters, compression."""
    with h5py.File(path, "r") as file:
        return {name: (item.chunks, item.compression, item.compression_opts, item.shuffle,
                       item.fletcher32)
                for name, item in file["frames"].items() if isinstance(item, h5py.Dataset)}


def test_resume_compacts_a_complete_run_whose_compaction_was_refused(small_disk, tmp_path):
    """Issue 15 (finding E): the disk held a run's frames but not the compacted copy its close
    makes, so the run ended with its file uncompressed (complete and readable, only larger);
    ``hooke run --resume DIR`` then wrote the outputs and left the file so, for it compacted only
    after a kill's ``.rewrite`` leftover. The run says so in a note, and --resume compacts any
    complete file that is not (and says so again while there is still no room): once there is room, the file is an uninterrupted run's, byte for
    byte (SOURCE_DATE_EPOCH set)."""
    epoch = {"SOURCE_DATE_EPOCH": "1700000000"}
    run = ("run", "cloth2d", "--t-end", "0.5", "--quiet", "--out")
    whole = tmp_path / "whole"
    assert cli(*run, str(whole), env=epoch).returncode == 0
    done = cli(*run, str(small_disk), env=epoch)  # 4.3 MB of frames on the 6 MiB disk: no copy
    path = small_disk / "trajectory.h5"
    assert done.returncode == 0 and done.stderr.splitlines() == [  # said, not silent
        f"note: {path} is left uncompressed (no room for its compacted copy); once there is, "
        f"`hooke run --resume {small_disk}` compacts it"], done.stderr
    assert {layout[1] for layout in frame_layout(path).values()} == {None}  # left uncompressed
    # a resume while there is still no room: said again, the outputs written; it was "error:
    # path: could not be rewritten … (the disk is full …)", exit 2 (an input error, and the
    # API's name for the flag), the plots and summary not written again
    (small_disk / "summary.json").unlink()
    done = cli("run", "--resume", str(small_disk), "--quiet", env=epoch)
    assert done.returncode == 0 and done.stderr.splitlines() == [
        f"note: {path} is left uncompressed (no room for its compacted copy); once there is, "
        f"`hooke run --resume {small_disk}` compacts it",
        f"note: {path} holds a complete run, nothing to continue; its plots and summary are "
        "written again"], done.stderr
    assert json.loads((small_disk / "summary.json").read_text())["complete"]
    assert {layout[1] for layout in frame_layout(path).values()} == {None}
    resize(small_disk, "128m")
    done = cli("run", "--resume", str(small_disk), "--quiet", env=epoch)
    assert done.returncode == 0 and done.stderr.splitlines() == [
        f"note: {path} holds a complete run, nothing to continue; its plots and summary are "
        "written again"], done.stderr
    layout = frame_layout(path)
    assert layout == frame_layout(whole / "trajectory.h5")
    assert {entry[1:] for entry in layout.values()} == {("gzip", 4, True, True)}
    assert path.read_bytes() == (whole / "trajectory.h5").read_bytes()
    assert sorted(p.name for p in small_disk.iterdir()) == sorted(p.name for p in whole.iterdir())


# -- a resume that fails or is stopped (issue 15, third pass) ---------------------------------------

KILL_AT_FIRST_FLUSH = """
import os, signal, sys
import hooke
from hooke.io.store import TrajectoryWriter
TrajectoryWriter.write_frames = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
hooke.resume(sys.argv[1])
"""


def test_a_resume_killed_before_its_first_flush_leaves_the_file_byte_for_byte(interrupted,
                                                                             tmp_path):
    """A resume rewrote the stored file (uncompressed) before its first step, so a kill -9 then
    left other bytes, and a file HDF5 saw as still open for writing, which no command could read
    or resume. It now continues in a copy beside it (trajectory.h5.new)."""
    source, before = interrupted
    path = tmp_path / "trajectory.h5"
    path.write_bytes(before)
    done = subprocess.run([sys.executable, "-c", KILL_AT_FIRST_FLUSH, str(path)], timeout=120)
    assert done.returncode == -signal.SIGKILL
    assert path.read_bytes() == before
    result = hooke.resume(path)  # the copy a kill left beside it is no obstacle
    full = hooke.simulate(hooke.scene("spring1d"), integrator="rk4", t_end=2.0)
    assert result.complete and hooke.open(path).x.tobytes() == full.x.tobytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trajectory.h5"]


def test_a_resume_whose_first_flush_fails_leaves_the_file_byte_for_byte(interrupted, tmp_path,
                                                                        monkeypatch):
    """A full disk at the resume's first write: one StoreWriteError naming the frames the file
    keeps; the file keeps exactly its bytes (before: rewritten uncompressed)."""
    from hooke.io.store import TrajectoryWriter

    _, before = interrupted
    path = tmp_path / "trajectory.h5"
    path.write_bytes(before)
    kept = read_trajectory(path)["total_frames"]

    def full(self, *args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(TrajectoryWriter, "_write_block", full)
    with pytest.raises(hooke.SimulationError) as info:
        hooke.resume(path)
    assert str(info.value) == disk_full_line(path, kept, "path").removeprefix("error: ")
    computed = info.value.result  # every frame computed, the stored ones first
    assert computed.x[:kept].tobytes() == read_trajectory(path)["x"].tobytes()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trajectory.h5"]


def test_resume_on_a_full_disk_is_the_same_line_and_code_as_a_runs(interrupted, small_disk):
    """No room for the resume's copy of the file: it said `path: could not be rewritten … (the
    disk is full …)`, exit 2, as if the input were bad; now a run's full-disk line, exit 1."""
    _, before = interrupted
    path = small_disk / "trajectory.h5"
    path.write_bytes(before)
    kept = read_trajectory(path)["total_frames"]
    with open(small_disk / "ballast", "wb", buffering=0) as handle:  # takes every byte left
        with contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * 4096)
    done = cli("run", "--resume", str(small_disk))
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [disk_full_line(path, kept, "--resume")]
    assert path.read_bytes() == before


def test_a_resume_whose_plots_do_not_fit_names_resume_not_out(interrupted, tmp_path,
                                                              monkeypatch, capsys):
    """Issue 15 (red-team pass, stop 28): a resume that finished its frames but found no room
    for its plots said "--out: cannot write the plots and summary …", a flag the command was
    not given; now it names --resume, as its other refusals do."""
    from hooke import cli as hooke_cli

    def full(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    _, before = interrupted
    (tmp_path / "trajectory.h5").write_bytes(before)
    monkeypatch.setattr(hooke_cli, "write_outputs", full)
    code, lines = run_main(monkeypatch, capsys, "run", "--resume", str(tmp_path), "--quiet")
    assert (code, lines) == (1, [
        f"error: --resume: cannot write the plots and summary (No space left on device); the "
        f"trajectory is in {tmp_path / 'trajectory.h5'}, got {str(tmp_path)!r}"])
    assert hooke.open(tmp_path / "trajectory.h5").complete


RAMP_SCENE = """
name = "drop"
dim = 3
gravity = [0.0, -9.81, 0.0]
[[particles]]
x = [0.0, 0.0, 0.0]
mass = 1.0
[[obstacles]]
mesh = "ramp.obj"
friction = 0.5
[run]
integrator = "implicit_euler"
dt = 0.01
t_end = 1.0
"""


def test_a_run_whose_obstacle_mesh_is_beside_its_scene_file_resumes_from_anywhere(tmp_path,
                                                                                  monkeypatch):
    """Issue 15 (red-team pass, stop 28): an obstacle's mesh path is relative to the scene
    file's folder, but a resume rebuilt the scene from its stored text relative to the current
    directory: `hooke run --resume OUT`, the command the stop's own line gives, said
    "obstacles[0].mesh: no such mesh file, got 'ramp.obj'" unless run from the scene's folder.
    Now the stored run keeps that folder, and resumes to the uninterrupted run from anywhere."""
    folder = tmp_path / "scenes"
    folder.mkdir()
    (folder / "ramp.obj").write_text("v -2 -1 -2\nv 2 -1 -2\nv 0 -1 2\nf 1 3 2\n")
    (folder / "drop.toml").write_text(RAMP_SCENE)
    monkeypatch.chdir(tmp_path)
    scene = hooke.load("scenes/drop.toml")
    path = tmp_path / "out" / "trajectory.h5"

    def stop(done, total):
        if done >= total // 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        hooke.simulate(scene, store=path, save_every=1, progress=stop)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    resumed = hooke.resume(path)
    full = hooke.simulate(scene, save_every=1)
    assert resumed.x.tobytes() == full.x.tobytes()


def test_a_run_stopped_by_sigterm_says_so_keeps_its_frames_and_resumes_exactly(tmp_path):
    """SIGTERM ended `hooke run` at once, silently (exit -15), its last block of frames lost;
    now as a Ctrl-C: one line naming the frames kept and the --resume command, exit 143. The
    plots and summary of the run the stopped one replaced in the folder are gone with it."""
    out = tmp_path / "run"
    assert cli("run", "spring1d", "--t-end", "0.5", "--out", str(out)).returncode == 0
    child = subprocess.Popen([sys.executable, "-m", "hooke.cli", "run", "chain", "--t-end", "30",
                              "--out", str(out)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    path, seen, deadline = out / "trajectory.h5", 0, time.monotonic() + 120
    while not seen and time.monotonic() < deadline:
        time.sleep(0.1)
        with contextlib.suppress(hooke.HookeInputError):  # not yet past its first flush
            stored = read_trajectory(path, frames=0)  # (the earlier run's, until then)
            seen = stored["total_frames"] if stored["attrs"]["scene_name"] == "chain" else 0
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=60)
    kept = read_trajectory(path)["total_frames"]
    assert child.returncode == 143, stderr
    assert stderr.splitlines() == [
        f"error: stopped by SIGTERM: {path} keeps {kept} frames (ParaView: "
        f"{out / 'trajectory.xdmf'}); continue with `hooke run --resume {out}`"]
    assert kept >= seen >= 1
    assert sorted(p.name for p in out.iterdir()) == ["trajectory.h5", "trajectory.xdmf"]
    assert cli("run", "--resume", str(out), "--quiet").returncode == 0
    full = hooke.simulate(hooke.scene("chain"), t_end=30.0, save_every=30)
    assert_frames_equal(read_trajectory(path), full, full.n_frames)


SWALLOWED = """
import os, signal, sys
import hooke.cli
import hooke.simulate

class Bomb:  # a signal whose handler runs inside __del__: Python prints and drops its exception
    def __del__(self):
        os.kill(os.getpid(), signal.{signal})
        sum(range(10000))  # the handler runs here, at the next bytecode check

advance, report, calls = hooke.simulate.Run._advance, hooke.cli.report, []

def advance_with_a_bomb(self, *args):
    calls.append(1)
    if len(calls) == 3:
        Bomb()  # refcount 0 at once: __del__ runs inside this call
    return advance(self, *args)

def report_with_a_bomb(*args):
    Bomb()
    return report(*args)

if sys.argv[2] == "run":
    hooke.simulate.Run._advance = advance_with_a_bomb
else:
    hooke.cli.report = report_with_a_bomb
sys.argv = ["hooke", "run", "chain", "--t-end", "3", "--save-every", "1", "--out", sys.argv[1]]
hooke.cli.main()
"""


@pytest.mark.parametrize("name, code, what, where", [
    ("SIGINT", 130, "interrupted", "run"), ("SIGTERM", 143, "stopped by SIGTERM", "run"),
    ("SIGINT", 130, "interrupted", "outputs")])
def test_a_stop_whose_exception_python_swallows_still_stops_the_run(tmp_path, name, code, what,
                                                                     where):
    """A Ctrl-C (or SIGTERM) whose handler ran inside a __del__ or a garbage-collector callback
    raised there, and Python drops such an exception ("Exception ignored in …" and a
    traceback): the run went on to its end and exited 0. Now the stop is also recorded and the
    run honours it at its next block, or once its outputs are written: the usual one line,
    exit 130 (143), nothing else on stderr, and the frames kept resume to the uninterrupted
    run's."""
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-c", SWALLOWED.replace("{signal}", name), str(out),
                           where], capture_output=True, text=True, timeout=300)
    path = out / "trajectory.h5"
    kept = read_trajectory(path)["total_frames"]
    assert (done.returncode, done.stderr.splitlines()) == (code, [
        f"error: {what}: {path} keeps {kept} frames (ParaView: {out / 'trajectory.xdmf'}); "
        f"continue with `hooke run --resume {out}`"])
    assert 1 <= kept < 3001 if where == "run" else kept == 3001
    assert cli("run", "--resume", str(out), "--quiet").returncode == 0
    full = hooke.simulate(hooke.scene("chain"), t_end=3.0, save_every=1)
    assert_frames_equal(read_trajectory(path), full, full.n_frames)


STOPPED_WHILE_REPORTING = """
import os, signal, sys, time
from hooke import cli

out, name = sys.argv[1:]

def stopped(*args, **kwargs):  # the signal lands while the plots are drawn
    os.kill(os.getpid(), getattr(signal, name))
    time.sleep(5)

cli.write_outputs = stopped
sys.argv = ["hooke", "run", "--resume", out, "--quiet"]
cli.main()
"""


@pytest.mark.parametrize("name, code, what", [("SIGTERM", 143, "stopped by SIGTERM"),
                                              ("SIGINT", 130, "interrupted")])
def test_a_resume_of_a_complete_run_stopped_while_reporting_says_so(tmp_path, name, code, what):
    """`--resume` of a complete run writes its plots again; a Ctrl-C or SIGTERM there went
    through Typer, which ends a command a KeyboardInterrupt left with exit 130 and not a word
    (SIGTERM's 143 lost too: the red-team pass after issue 15). Now the run's own line."""
    assert cli("run", "spring1d", "--t-end", "0.1", "--quiet", "--out", str(tmp_path)).returncode == 0
    done = subprocess.run([sys.executable, "-c", STOPPED_WHILE_REPORTING, str(tmp_path), name],
                          capture_output=True, text=True, timeout=120)
    path = tmp_path / "trajectory.h5"
    assert done.returncode == code, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"error: {what}: {path} keeps 21 frames (ParaView: {tmp_path / 'trajectory.xdmf'}); "
        f"continue with `hooke run --resume {tmp_path}`")
    assert hooke.open(path).n_frames == 21


STOPPED_AS_THE_RUN_RETURNS = """
import os, signal, sys
from hooke import cli, simulate

out, where = sys.argv[1:]
result = simulate.Run.result

def close(self):  # the Ctrl-C lands as the finished run's progress bar is taken down
    os.kill(os.getpid(), signal.SIGINT)

def closed_result(self, frames, complete, wall_time):  # or as its Result is made, the file closed
    if complete:
        os.kill(os.getpid(), signal.SIGINT)
    return result(self, frames, complete, wall_time)

if where == "progress":
    cli.LazyProgress.close = close
else:
    simulate.Run.result = closed_result
sys.argv = ["hooke", "run", "chain", "--t-end", "2", "--out", out]
cli.main()
"""


@pytest.mark.parametrize("where", ["progress", "result"])
def test_a_ctrl_c_as_the_run_returns_says_the_file_keeps_its_frames(tmp_path, where):
    """Issue 15 (red-team pass, stop 28): a Ctrl-C after the run's file was closed (as its
    Result was made, or its progress bar taken down) said "interrupted before the first frame
    was written; OUT is left as it was", although the new run had replaced the earlier one,
    whose plots and summary stayed to pass for the new run's. Now the run's line, as for a stop
    while its outputs are written: the file keeps every frame, the earlier outputs are gone."""
    assert cli("run", "chain", "--t-end", "1", "--quiet", "--out", str(tmp_path)).returncode == 0
    done = subprocess.run([sys.executable, "-c", STOPPED_AS_THE_RUN_RETURNS, str(tmp_path), where],
                          capture_output=True, text=True, timeout=120)
    path = tmp_path / "trajectory.h5"
    assert done.returncode == 130, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"error: interrupted: {path} keeps 1001 frames (ParaView: {tmp_path / 'trajectory.xdmf'}); "
        f"continue with `hooke run --resume {tmp_path}`")
    assert hooke.open(path).t[-1] == 2.0
    assert not (tmp_path / "summary.json").exists() and not (tmp_path / "energy.png").exists()


def test_a_ctrl_c_while_the_file_closes_leaves_it_unlocked_and_whole(tmp_path, monkeypatch):
    """Issue 15 (red-team pass, stop 28): a Ctrl-C while the writer closed the file (marking it
    complete, before its compaction) left it open and locked by this very process: in a notebook
    every later run on the same store was refused as "being written by another run (PID …)",
    its own, until the kernel restarted. Now the file is let go as on any other Ctrl-C: it
    keeps every frame, the store is free, and a run on it goes through."""
    from hooke.io import store

    stats = []

    def interrupted(value, *args, **kwargs):  # the run's statistics: written as it closes
        if isinstance(value, dict) and "steps" in value and not stats:
            stats.append(value)
            raise KeyboardInterrupt
        return json.dumps(value, *args, **kwargs)

    monkeypatch.setattr(store, "json", type("Json", (), {"dumps": staticmethod(interrupted),
                                                          "loads": staticmethod(json.loads)}))
    path = tmp_path / "trajectory.h5"
    with pytest.raises(KeyboardInterrupt):
        hooke.simulate(hooke.scene("spring1d"), t_end=0.5, store=path)
    assert stats and hooke.open(path).n_frames == 101
    assert not (tmp_path / "trajectory.h5.lock").exists()
    assert hooke.simulate(hooke.scene("spring1d"), t_end=0.5, store=path).n_frames == 101


def test_a_ctrl_c_that_cuts_a_lazy_import_short_still_stops_the_run_as_one(tmp_path,
                                                                          monkeypatch):
    """Issue 15 (red-team pass, stop 28): a Ctrl-C that landed while Numba loaded its
    registries for the run's first frame left them half made; writing the last frames on the
    way out compiled again and failed with Numba's KeyError "duplicate registration for …"
    (h5py's TypeError "Operation not defined for data type class" likewise): `hooke run` said
    "unexpected KeyError … a bug in hooke", exit 1, and left trajectory.h5.new and its lock.
    Now the stop ends the run: the file is let go as its last flush left it, the lock too."""
    from hooke.frames import FrameSeries

    derive, calls = FrameSeries.derive, []

    def interrupted_then_broken(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        raise KeyError("duplicate registration for <class 'UnicodeType'>")

    monkeypatch.setattr(FrameSeries, "derive", interrupted_then_broken)
    path = tmp_path / "trajectory.h5"
    with pytest.raises(KeyboardInterrupt):
        hooke.simulate(hooke.scene("spring1d"), t_end=0.5, store=path)
    assert len(calls) == 2 and sorted(p.name for p in tmp_path.iterdir()) == []
    monkeypatch.setattr(FrameSeries, "derive", derive)
    assert hooke.simulate(hooke.scene("spring1d"), t_end=0.5, store=path).n_frames == 101


def test_a_ctrl_c_in_any_command_says_so(monkeypatch, capsys):
    """Typer turned a Ctrl-C in a command (`hooke modes`, `verify`, `study` …) into exit 130
    with nothing on stderr; now one line."""
    from hooke import cli as hooke_cli

    def interrupted():
        raise KeyboardInterrupt
    monkeypatch.setattr(hooke_cli, "scene_names", interrupted)
    monkeypatch.setattr(sys, "argv", ["hooke", "list"])
    with pytest.raises(SystemExit) as done:
        hooke_cli.main()
    assert done.value.code == 130
    assert capsys.readouterr().err.splitlines() == ["error: interrupted"]


# -- lock files -------------------------------------------------------------------------------------

def test_lock_files_go_with_their_run_and_removing_them_races_with_no_one(tmp_path, monkeypatch):
    """A lock file is removed by its holder while it still holds it. The race that removal
    opens: B opens the lock file, its holder A removes it and lets go, C makes a new one and
    locks it, B locks the old one: B and C would both write. B sees that the name now names
    another file (the inode check) and tries that one, held by C: refused. Played here in that
    very order."""
    from hooke.io import lock as lock_module
    from hooke.io.lock import LockHeld, OutputLock

    target = tmp_path / "trajectory.h5"
    first = OutputLock(target)
    real_open, played = os.open, []

    def open_then_swap(*args, **kwargs):
        descriptor = real_open(*args, **kwargs)
        if not played:  # B has opened A's file: A ends, C starts
            played.append(True)
            first.release()
            played.append(OutputLock(target))
        return descriptor
    monkeypatch.setattr(lock_module.os, "open", open_then_swap)
    with pytest.raises(LockHeld):
        OutputLock(target)
    monkeypatch.undo()
    played[1].release()
    assert list(tmp_path.iterdir()) == []  # the last one out removed it


def test_a_killed_runs_lock_file_blocks_nobody_and_the_next_run_removes_it(tmp_path):
    """Only a run killed with kill -9 leaves its lock file behind; the kernel dropped its lock,
    so the next run takes it over and removes it when done (README: reliability)."""
    child = subprocess.Popen([sys.executable, "-m", "hooke.cli", "run", "chain", "--t-end", "30",
                              "--out", str(tmp_path)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (tmp_path / "trajectory.h5").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    child.kill()
    child.wait(timeout=60)
    assert (tmp_path / "trajectory.h5.lock").exists()
    done = cli("run", "--resume", str(tmp_path), "--quiet")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if ".lock" in p.name or ".new" in p.name) == []


def test_an_exception_from_the_progress_callback_releases_the_file_and_keeps_its_frames(tmp_path):
    """A progress callback that raised (a RuntimeError, not a Ctrl-C) left the store open and
    its lock held by the process itself: hooke.resume then said "is being written by another
    run (PID <its own>)" until the interpreter ended, and the frames since the last timed flush
    were not written. Now it is closed as for a Ctrl-C: every frame computed is kept and the
    resumed run is bit-identical."""
    scene = hooke.scene("chain")
    reference = hooke.simulate(scene, t_end=2.0)
    path = tmp_path / "run.h5"

    def fail_half_way(done, total):
        if done >= total // 2:
            raise RuntimeError("the caller's own bug")
    with pytest.raises(RuntimeError, match="the caller's own bug"):
        hooke.simulate(scene, t_end=2.0, store=path, progress=fail_half_way)
    assert reference.t.size // 2 < len(hooke.open(path).t) < reference.t.size
    hooke.resume(path)
    resumed = hooke.open(path)
    assert np.array_equal(resumed.x, reference.x) and np.array_equal(resumed.v, reference.v)


def test_a_ctrl_c_while_the_interpreter_shuts_down_changes_nothing():
    """A Ctrl-C after a command had done and said everything, while Python shut down (a
    library's atexit callback), printed a KeyboardInterrupt traceback or ended the process
    with -2 (the red-team passes of issue 15); now the command's exit code stands, silently."""
    late = ("import atexit, os, signal, sys, time\n"
            "atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(0.2)))\n"
            "from hooke.cli import main\n"
            "sys.argv = ['hooke', 'list']\n"
            "main()\n")
    done = subprocess.run([sys.executable, "-c", late], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "" and "spring1d" in done.stdout


KILL_AFTER_FIRST_FLUSH = """
import os, signal, sys
from hooke import cli
from hooke.io.store import TrajectoryWriter

original = TrajectoryWriter.write_frames

def killed(self, *args):  # the new run's first frames on disk, under the old run's name
    original(self, *args)
    os.kill(os.getpid(), signal.SIGKILL)

TrajectoryWriter.write_frames = killed
sys.argv = ["hooke", "run", "spring1d", "--t-end", "2", "--quiet", "--out", sys.argv[1]]
cli.main()
"""


def test_a_run_killed_once_its_file_replaced_the_old_one_leaves_none_of_the_old_outputs(tmp_path):
    """Issue 15 (confirmation pass, stop 28): a ``kill -9`` of a run after its file had replaced
    an earlier run's left that run's summary.json, plots and XDMF sidecar beside the new frames,
    where they passed for the new run's (a summary of 1 s of spring1d beside a killed 2 s run's
    file; ParaView read the old frame count). They are removed as the new file takes the old
    one's name; ``--resume`` writes the new run's."""
    out = tmp_path / "out"
    assert cli("run", "spring1d", "--t-end", "1", "--quiet", "--out", str(out)).returncode == 0
    killed = subprocess.run([sys.executable, "-c", KILL_AFTER_FIRST_FLUSH, str(out)],
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert hooke.open(out / "trajectory.h5").n_frames > 0  # the new run's, up to its first flush
    assert sorted(p.name for p in out.iterdir()) == [
        "summary.json.lock", "trajectory.h5", "trajectory.h5.lock"]
    assert cli("run", "--resume", str(out), "--quiet").returncode == 0
    assert json.loads((out / "summary.json").read_text())["t_end"] == 2.0


# -- a trajectory file that leaves its name while the run writes it -----------------------------

@pytest.mark.parametrize("how", ["removed", "moved", "replaced by a directory",
                                 "removed and replaced"])
def test_a_file_taken_from_its_name_mid_run_is_put_back_or_the_run_says_where_its_frames_are(
        tmp_path, how):
    """Issue 15 (red-team pass redA): `rm out/trajectory.h5` while `hooke run` wrote it ended the
    run with "error: path: no such trajectory file" (exit 2) and every frame lost with the
    removed file; a file moved away or replaced by a directory or a link ended it with exit 0,
    its summary and plots beside whatever stood there. Now a removed file is put back whole, and
    otherwise the run stops with a StoreWriteError saying where its frames are."""
    scene = hooke.scene("cloth2d")  # frames of 38 kB: flushed every 27 frames
    reference = hooke.simulate(scene, dt=0.0025, t_end=0.5, save_every=1)
    path, moved = tmp_path / "trajectory.h5", tmp_path / "elsewhere.h5"

    def take(step, total):
        if step > total // 2 and path.exists() and not moved.exists() and not take.done:
            take.done = True
            if how == "moved":
                path.rename(moved)
                return
            path.unlink()
            if how == "replaced by a directory":
                path.mkdir()
            elif how == "removed and replaced":
                path.write_text("someone else's")
    take.done = False
    run = dict(dt=0.0025, t_end=0.5, save_every=1, store=path, progress=take)
    if how == "removed":
        hooke.simulate(scene, **run)
        kept = path
    else:
        with pytest.raises(hooke.errors.StoreWriteError) as stopped:
            hooke.simulate(scene, **run)
        kept = {"moved": moved, "replaced by a directory": tmp_path / "trajectory.recovered.h5",
                "removed and replaced": tmp_path / "trajectory.recovered.h5"}[how]
        where = ("its frames stay in the file it was moved to" if how == "moved"
                 else f"its frames are saved in {kept}")
        what = "moved" if how == "moved" else "removed and replaced"
        assert str(stopped.value) == (f"path: was {what} while the run wrote it; {where}, got "
                                      f"{str(path)!r}")
        assert stopped.value.frames_kept == reference.n_frames
    assert take.done
    stored = hooke.open(kept)
    assert stored.complete and stored.n_frames == reference.n_frames
    assert np.array_equal(stored.x, reference.x) and np.array_equal(stored.v, reference.v)
    assert not (tmp_path / "trajectory.h5.lock").exists()


def test_a_second_ctrl_c_while_the_stopped_run_closes_its_file_says_the_frames_it_keeps(
        tmp_path, monkeypatch, capsys):
    """Issue 15 (red-team pass redA): Ctrl-C pressed again while the stopped run closed its file
    (three SIGINTs 50 ms apart, at several moments of `hooke run cloth2d`) said "interrupted
    before the first frame was written; OUT is left as it was" although the file kept 452–642
    frames, which `--resume` continued. Now the line says how many frames it keeps."""
    from hooke import simulate as simulate_module
    from hooke.io import store

    advance, calls = simulate_module.Run._advance, []

    def first_ctrl_c(self, *args):
        calls.append(1)
        if len(calls) == 60:
            raise KeyboardInterrupt
        return advance(self, *args)

    def second_ctrl_c(value, *args, **kwargs):  # the run's statistics: written as it closes
        if isinstance(value, dict) and "steps" in value:
            raise KeyboardInterrupt
        return json.dumps(value, *args, **kwargs)

    monkeypatch.setattr(simulate_module.Run, "_advance", first_ctrl_c)
    monkeypatch.setattr(store, "flush_frames", lambda frame_bytes: 5)  # flushed before the stop
    monkeypatch.setattr(store, "json", type("Json", (), {"dumps": staticmethod(second_ctrl_c),
                                                          "loads": staticmethod(json.loads)}))
    code, lines = run_main(monkeypatch, capsys, "run", "spring1d", "--t-end", "5",
                           "--save-every", "1", "--integrator", "rk4", "--quiet",
                           "--out", str(tmp_path))
    monkeypatch.undo()
    path = tmp_path / "trajectory.h5"
    kept = hooke.open(path).n_frames
    assert code == 130 and kept > 1
    assert lines == [f"error: interrupted: {path} keeps {kept} frames (ParaView: "
                     f"{tmp_path / 'trajectory.xdmf'}); continue with `hooke run --resume {tmp_path}`"]
