"""Outputs that cannot be written (issue 15's second red-team pass): every command's output into
a place it may not write is one line naming the path, exit 1 or 2, and nothing already written is
lost.

Permission bits do not stop root, who runs these tests here and in CI, so the places are ones
that stop root too: a read-only file system (a tmpfs remounted read-only), an immutable file
(``chattr +i``: the user's protection of an earlier result, as a read-only file is for another
user), a path whose parent is a file, and a full disk."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess

import pytest

import hooke

from conftest import run_cli as cli
from test_store_faults import interrupted, mount_tmpfs  # noqa: F401 - a fixture


def one_line(done: subprocess.CompletedProcess, code: int, *parts: str) -> None:
    assert done.returncode == code, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr, (
        done.stderr)
    for part in parts:
        assert part in lines[0], (part, lines[0])


@contextlib.contextmanager
def immutable(path):
    """``path`` made immutable (root cannot write, rename over or remove it either)."""
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", str(path)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.fixture
def stored_run(tmp_path):
    """A finished spring1d run in tmp_path/run (as `hooke run` leaves it, plots aside)."""
    run = tmp_path / "run"
    run.mkdir()
    hooke.simulate(hooke.scene("spring1d"), t_end=0.2, store=run / "trajectory.h5")
    return run


@pytest.fixture
def read_only(tmp_path, stored_run):
    """A read-only file system holding a copy of ``stored_run`` in run/ (unmounted after)."""
    folder = tmp_path / "ro"
    mount_tmpfs(folder, "4m")
    shutil.copytree(stored_run, folder / "run")
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_run_over_an_earlier_run_it_may_not_write_keeps_it_and_leaves_nothing(stored_run):
    """An immutable (for another user: read-only) trajectory.h5 in a writable folder: the run
    went through its steps, failed to rename its file over the old one with "unexpected
    PermissionError … a bug in hooke" and left trajectory.h5.new and .lock behind. Now refused
    before the run, naming the file; the old run is untouched and nothing is left beside it."""
    before = {p.name: p.read_bytes() for p in stored_run.iterdir()}
    with immutable(stored_run / "trajectory.h5"):
        done = cli("run", "spring1d", "--out", str(stored_run), "--quiet")
    one_line(done, 2, "--out: exists and cannot be written (Operation not permitted)",
             str(stored_run / "trajectory.h5"))
    assert {p.name: p.read_bytes() for p in stored_run.iterdir()} == before


def test_every_command_into_a_read_only_file_system_is_one_line(read_only, tmp_path):
    """`hooke sweep --out` on a read-only file system ran every member and then failed with
    "unexpected PermissionError … summary.parquet … a bug in hooke", and `hooke study --data`
    after its runs with "unexpected OSError"; `hooke fit --out` fitted first and failed after,
    `hooke modes` printed its analysis first. Now each is refused up front in one line naming the path, and the
    stored run in it stays as it was."""
    run = read_only / "run"
    stored = (run / "trajectory.h5").read_bytes()
    observed = tmp_path / "observed.h5"
    shutil.copy(run / "trajectory.h5", observed)
    commands = [
        (("run", "spring1d", "--out", str(read_only / "new")), 2, "--out: cannot create"),
        (("run", "spring1d", "--out", str(run)), 2, "--out: is a directory hooke cannot write in"),
        (("plot", str(run)), 2, "--out: is a directory hooke cannot write in"),
        (("animate", str(run), "--out", str(run / "movie.gif")), 2,
         "out: is a directory hooke cannot write in"),
        (("export", str(run), "--format", "vtu"), 2, "DIR: cannot create the directory"),
        (("sweep", "spring1d", "--param", "stiffness=1,2", "--out", str(run)), 2,
         "--out: is a directory hooke cannot write in"),
        (("fit", "spring1d", "--observed", str(observed), "--param", "stiffness", "--out",
          str(run / "fit.json")), 2, "--out: is a directory hooke cannot write in"),
        (("modes", "spring1d", "--out", str(run)), 2, "--out: is a directory hooke cannot write in"),
        (("study", "pendulum-correction", "--t-end", "0.05", "--out", str(tmp_path / "study"),
          "--data", str(run / "study.json")), 2, "--data: is a directory hooke cannot write in"),
    ]
    for args, code, message in commands:
        one_line(cli(*args), code, message, "Read-only file system")
    assert sorted(p.name for p in run.iterdir()) == ["trajectory.h5"]
    assert (run / "trajectory.h5").read_bytes() == stored


def test_a_sweep_refuses_a_dir_it_cannot_write_in_before_any_member_runs(tmp_path):
    """The API: hooke.sweep into an immutable DIR ran its members (their rows could not be
    written) and ended in a raw PermissionError; now a HookeInputError naming ``out`` first."""
    out = tmp_path / "sweep"
    out.mkdir()
    with immutable(out), pytest.raises(hooke.HookeInputError) as refused:
        hooke.sweep("spring1d", {"stiffness": [1.0, 2.0]}, out=out)
    assert str(refused.value).startswith("out: is a directory hooke cannot write in (Operation not "
                                         f"permitted), got '{out}'")
    assert list(out.iterdir()) == []
    members = out / "members"  # an earlier start's members, where this one's go too
    members.mkdir()
    with immutable(members), pytest.raises(hooke.HookeInputError) as refused:
        hooke.sweep("spring1d", {"stiffness": [1.0, 2.0]}, out=out)
    assert str(refused.value).startswith("out: is a directory hooke cannot write in (Operation "
                                         f"not permitted), got '{members}'")
    assert [p.name for p in out.iterdir()] == ["members"] and list(members.iterdir()) == []


def test_animate_and_fit_into_a_path_under_a_file_are_one_line(stored_run, tmp_path):
    """`hooke animate --out FILE/movie.gif` was "unexpected NotADirectoryError … a bug in hooke";
    `hooke fit --out FILE/fit.json` printed its iterations before failing."""
    blocker = tmp_path / "afile"
    blocker.write_text("keep me")
    one_line(cli("animate", str(stored_run), "--out", str(blocker / "movie.gif")), 2,
             f"out: is an existing file, not a directory, got '{blocker}'")
    observed = tmp_path / "observed.h5"
    shutil.copy(stored_run / "trajectory.h5", observed)
    one_line(cli("fit", "spring1d", "--observed", str(observed), "--param", "stiffness", "--out",
                 str(blocker / "fit.json")), 2, "--out: is an existing file, not a directory")
    assert blocker.read_text() == "keep me"


def test_a_movie_or_fit_summary_that_may_not_be_replaced_is_kept(stored_run, tmp_path):
    """An earlier movie.gif that could not be opened for writing was deleted by `hooke animate`'s
    clean-up (as root: an immutable one, "unexpected PermissionError"). Now refused before
    rendering, kept; so is an earlier fit summary."""
    movie = tmp_path / "movie.gif"
    movie.write_bytes(b"an earlier movie")
    summary = tmp_path / "fit.json"
    summary.write_text(json.dumps({"earlier": True}))
    observed = tmp_path / "observed.h5"
    shutil.copy(stored_run / "trajectory.h5", observed)
    with immutable(movie), immutable(summary):
        one_line(cli("animate", str(stored_run), "--out", str(movie)), 2,
                 f"out: exists and cannot be written (Operation not permitted); it is left as it "
                 f"was: make it writable, remove it or choose another path, got '{movie}'")
        one_line(cli("fit", "spring1d", "--observed", str(observed), "--param", "stiffness",
                     "--out", str(summary)), 2, "--out: exists and cannot be written")
    assert movie.read_bytes() == b"an earlier movie"
    assert json.loads(summary.read_text()) == {"earlier": True}


def fill(folder) -> None:
    """Fill the disk at ``folder`` to its last few kB."""
    try:
        with open(folder / "filler", "wb") as handle:
            while True:
                handle.write(b"\0" * 4096)
                handle.flush()
    except OSError:
        pass


@pytest.mark.parametrize("name, args, message", [
    ("movie.gif", ["animate", "RUN", "--out", "RUN/movie.gif"], "the movie"),
    ("energy.png", ["plot", "RUN", "--kind", "energy"], "energy.png")])
def test_an_output_that_fills_the_disk_leaves_the_earlier_one(tmp_path, name, args, message):
    """On a full disk `hooke animate` removed the movie it could not write, which was the user's
    earlier movie of the same name, and `hooke plot` the earlier energy.png (an unlink left from
    before plots were written aside). Now each is written aside: on a full disk the earlier
    file stays, byte for byte, and no partial file is left."""
    folder = tmp_path / "disk"
    mount_tmpfs(folder, "2m")
    try:
        run = folder / "run"
        hooke.simulate(hooke.scene("spring1d"), t_end=0.5, store=run / "trajectory.h5")
        earlier = run / name
        earlier.write_bytes(b"an earlier " + name.encode())
        fill(folder)
        one_line(cli(*(arg.replace("RUN", str(run)) for arg in args)), 1,
                 f"--out: cannot write {message} (No space left on device)")
        assert earlier.read_bytes() == b"an earlier " + name.encode()
        assert sorted(p.name for p in run.iterdir()) == sorted([name, "trajectory.h5"])
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def full_disk(tmp_path):
    """A spring1d run in run/ on a 2 MiB tmpfs filled to its last few kB (unmounted after)."""
    folder = tmp_path / "disk"
    mount_tmpfs(folder, "2m")
    try:
        run = folder / "run"
        hooke.simulate(hooke.scene("spring1d"), t_end=0.5, store=run / "trajectory.h5")
        fill(folder)
        yield run
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_an_mp4_or_the_mode_shapes_on_a_full_disk_are_one_line_naming_out(full_disk):
    """`hooke modes` on a full disk printed its table and then "unexpected OSError … (a bug in
    hooke)"; `hooke animate` to an mp4 ended in imageio's ffmpeg command and log as ten
    "error:" lines. Now one "error:" line each naming --out, exit 1 (ffmpeg's own lines, on
    stderr before it, say why), and no partial file."""
    run = full_disk
    done = cli("animate", str(run), "--out", str(run / "movie.mp4"))
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert errors == [f"error: --out: cannot write the movie ([Errno 32] Broken pipe), got "
                      f"'{run / 'movie.mp4'}'"]
    done = cli("modes", "chain", "--out", str(run))
    assert done.returncode == 1 and done.stderr.splitlines() == [
        f"error: --out: cannot write modes.png (No space left on device), got '{run}'"]
    assert "omega [rad/s]" in done.stdout  # the table came first
    assert sorted(p.name for p in run.iterdir()) == ["trajectory.h5"]


def test_sweep_export_study_and_verify_on_a_full_disk_exit_1_in_one_line(full_disk):
    """A full disk is the machine's failure, not bad input: `hooke sweep` and `hooke export`
    said so in one line but exited 2 (bad input), and `hooke study`, `hooke verify` and `hooke
    bench --data` ended in "unexpected OSError … (a bug in hooke)", the study's computed table
    lost. Now exit 1, one line naming the flag; study, verify and bench print their tables
    first."""
    run, folder = full_disk, full_disk.parent
    one_line(cli("sweep", "spring1d", "--param", "stiffness=1,2", "--out", str(folder / "sweep")),
             1, "--out: cannot write ", "No space left on device")
    one_line(cli("export", str(run), "--format", "vtu"), 1,
             "DIR: cannot write the export (No space left on device)")
    done = cli("study", "pendulum-correction", "--t-end", "0.2", "--output-interval", "0.05",
               "--out", str(folder / "study"))
    assert done.returncode == 1 and done.stderr.splitlines()[-1] == (
        f"error: --out: cannot write the study's plot and table (No space left on device), "
        f"got '{folder / 'study'}'"), done.stderr
    assert "projection" in done.stdout and "max ΔL" in done.stdout  # the table came first
    assert not list((folder / "study").iterdir())
    done = cli("verify", "--energy-steps", "100", "--out", str(folder / "verify"))
    assert done.returncode == 1 and done.stderr.splitlines() == [
        f"error: --out: cannot write the plot and tables (No space left on device), got "
        f"'{folder / 'verify'}'"]
    assert "symplectic_euler" in done.stdout  # the table came first
    assert not list((folder / "verify").iterdir())
    # `hooke bench --data` was "unexpected OSError … (a bug in hooke)"
    done = cli("bench", "joints", "--smoke", "--data", str(folder / "bench"))
    assert done.returncode == 1 and done.stderr.splitlines() == [
        "error: --data: cannot write bench_joints.json (No space left on device); its table is "
        f"printed above, got '{folder / 'bench'}'"]
    assert "chain n=4" in done.stdout  # the table came first
    assert not list((folder / "bench").iterdir())


def test_resume_of_a_stored_run_it_may_not_write_is_one_line_and_keeps_it(interrupted, tmp_path):
    """`hooke run --resume` of an immutable (for another user: read-only) interrupted run said
    "it cannot be written … after 201 frame(s); … free space, then continue", which cannot
    help, and left a full copy trajectory.h5.rewrite behind. Now refused before anything is
    written, the file as it was and nothing beside it."""
    path = tmp_path / "trajectory.h5"
    before = interrupted[1]
    path.write_bytes(before)
    with immutable(path):
        done = cli("run", "--resume", str(tmp_path))
    one_line(done, 2, f"error: --resume: exists and cannot be written (Operation not permitted); it "
             f"is left as it was: make it writable, remove it or choose another path, got '{path}'")
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["trajectory.h5"]


def test_a_rewrite_that_cannot_replace_its_file_leaves_no_copy(stored_run):
    """The compacting copy a run's close (and a resume) makes of its file could not take the
    file's place (an immutable file): a raw PermissionError, and the full copy
    trajectory.h5.rewrite was left behind. Now one line; the file as it was, no copy."""
    from hooke.io.store import rewrite

    path = stored_run / "trajectory.h5"
    before = path.read_bytes()
    with immutable(path), pytest.raises(hooke.HookeInputError) as refused:
        rewrite(path)
    assert str(refused.value) == (f"path: could not be replaced by its copy trajectory.h5.rewrite "
                                  f"(Operation not permitted); it is left as it was, got '{path}'")
    assert path.read_bytes() == before and [p.name for p in stored_run.iterdir()] == ["trajectory.h5"]


def test_a_full_disk_under_numbas_cache_is_no_error(tmp_path):
    """Numba saves each compiled kernel to its cache (beside the package, or NUMBA_CACHE_DIR):
    with that disk full, `hooke run` failed at its first kernel with "unexpected OSError … (a
    bug in hooke)", although its --out had room. Now the kernel runs uncached: the run and its
    animation end as usual, their results those of a cached run."""
    cache = tmp_path / "cache"
    mount_tmpfs(cache, "1m")
    try:
        fill(cache)
        env = {"NUMBA_CACHE_DIR": str(cache)}
        done = cli("run", "spring1d", "--t-end", "0.5", "--out", str(tmp_path / "run"), "-q",
                   env=env)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        done = cli("animate", str(tmp_path / "run"), "--out", str(tmp_path / "m.gif"), env=env)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        stored = hooke.open(tmp_path / "run" / "trajectory.h5")
        again = hooke.simulate(hooke.scene("spring1d"), t_end=0.5)
        assert (stored.x == again.x).all() and (stored.v == again.v).all()
    finally:
        subprocess.run(["umount", "-l", str(cache)], check=False)
