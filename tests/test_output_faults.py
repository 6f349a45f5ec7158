"""Outputs that are not regular files, and reads that must be checked (issue 15's third red-team
pass): a FIFO or a device where a command's output goes is refused before any work, in one line
naming the path (a FIFO blocked a writer forever; /dev/null kept nothing); a symbolic link there
is replaced by the new file, never written through; a directory named like an output is found
before the work, not after it; the XDMF-only export reads the frames through their checksums."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import h5py
import pytest

import hooke
from hooke.io.export import export_frames, export_vtu

from conftest import run_cli as cli
from test_output_permissions import one_line, stored_run  # noqa: F401 - a fixture
from test_store_faults import interrupted_run


def fifo(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def is_fifo(path) -> bool:
    return stat.S_ISFIFO(os.lstat(path).st_mode)


# (command, the output's path relative to tmp_path); "run" is the stored run's folder
FIFO_OUTPUTS = {
    "run summary.json": (("run", "spring1d", "--t-end", "0.1", "--out", "new"), "new/summary.json"),
    "run plot": (("run", "spring1d", "--t-end", "0.1", "--out", "new"), "new/energy.png"),
    "run trajectory": (("run", "spring1d", "--t-end", "0.1", "--out", "new"), "new/trajectory.h5"),
    "resume summary": (("run", "--resume", "run"), "run/summary.json"),
    "plot": (("plot", "run", "--kind", "energy"), "run/energy.png"),
    "animate": (("animate", "run", "--out", "movie.mp4"), "movie.mp4"),
    "export sidecar": (("export", "run"), "run/trajectory.xdmf"),
    "export frame": (("export", "run", "--format", "vtu"), "run/vtu/frame_00001.vtu"),
    "export pvd": (("export", "run", "--format", "vtu"), "run/vtu/frames.pvd"),
    "modes": (("modes", "chain", "--out", "modes"), "modes/modes.png"),
    "verify": (("verify", "--out", "verify"), "verify/verify_pendulum.csv"),
    "study --data": (("study", "pendulum-correction", "--out", "study", "--data", "data.json"),
                     "data.json"),
    "study plot": (("study", "pendulum-correction", "--out", "study"),
                   "study/pendulum_correction.png"),
    "fit --out": (("fit", "spring1d", "--observed", "run/trajectory.h5", "--param", "stiffness",
                   "--out", "fit.json"), "fit.json"),
}


@pytest.mark.parametrize("case", list(FIFO_OUTPUTS))
def test_a_fifo_where_an_output_goes_is_refused_up_front_in_one_line(stored_run, tmp_path, case):
    """Each blocked for ever on open() (summary.json, export frames, verify's and the study's
    files), or, renamed over, silently dropped the FIFO (a reader would wait on it); now one
    line naming the path, exit 2, the FIFO still there."""
    args, target = FIFO_OUTPUTS[case]
    if case == "resume summary":  # an interrupted run to resume
        interrupted_run(stored_run / "trajectory.h5")
    path = fifo(tmp_path / target)
    done = cli(*args, cwd=tmp_path)
    one_line(done, 2, "is a FIFO (named pipe), not a regular file", repr(target))
    assert is_fifo(path)


@pytest.mark.parametrize("device", [(1, 3), (1, 7)], ids=["null", "full"])
@pytest.mark.parametrize("flag", ["study", "fit"])
def test_a_device_given_as_an_output_is_refused_not_written_into_or_renamed_over(
        stored_run, tmp_path, device, flag):
    """--data /dev/null kept nothing and reported success; as root, the rename of the new file
    replaced /dev/null itself with it (as this test did to the machine's /dev/null once, on
    the code before: so it is given its own nodes of /dev/null and /dev/full, never theirs)."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root; `make test` runs as root")
    node = tmp_path / "dev" / "node"
    node.parent.mkdir()
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(*device))
    args = (("study", "pendulum-correction", "--out", str(tmp_path / "study"), "--data", str(node))
            if flag == "study" else ("fit", "spring1d", "--observed", str(stored_run / "trajectory.h5"),
                                     "--param", "stiffness", "--out", str(node)))
    done = cli(*args)
    one_line(done, 2, "is a device, not a regular file", repr(str(node)))
    assert stat.S_ISCHR(os.lstat(node).st_mode) and os.lstat(node).st_rdev == os.makedev(*device)


@pytest.fixture
def outside(tmp_path):
    """A file outside every output folder, which a link at an output points to."""
    path = tmp_path / "elsewhere" / "precious.txt"
    path.parent.mkdir()
    path.write_bytes(b"keep me\n")
    return path


def assert_replaced(link, outside) -> None:
    assert outside.read_bytes() == b"keep me\n"
    assert not os.path.islink(link) and link.stat().st_size > 0


@pytest.mark.parametrize("name", ["trajectory.xdmf", "vtu/frame_00000.vtu", "vtu/frames.pvd",
                                  "obj/frame_00002.obj"])
def test_an_export_replaces_a_link_at_its_output_never_writes_through_it(tmp_path, outside, name):
    """Frames and frames.pvd were written through a link into the file it pointed to."""
    run = tmp_path / "run"
    hooke.simulate(hooke.scene("cloth2d"), t_end=0.02, store=run / "trajectory.h5")
    link = run / name
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(outside)
    done = cli("export", str(run), "--format", "vtu", "--format", "obj")
    assert done.returncode == 0, done.stderr
    assert_replaced(link, outside)


@pytest.mark.parametrize("name", ["summary.json", "energy.png", "trajectory.h5"])
def test_a_run_replaces_a_link_at_its_output_never_writes_through_it(tmp_path, outside, name):
    out = tmp_path / "run"
    out.mkdir()
    (out / name).symlink_to(outside)
    done = cli("run", "spring1d", "--t-end", "0.1", "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert_replaced(out / name, outside)


def test_study_data_and_verify_replace_a_link_never_write_through_it(tmp_path, outside):
    """The study's plot and CSV, and verify's CSVs, were written through a link."""
    study = tmp_path / "study"
    study.mkdir()
    for name in ("pendulum_correction.csv", "pendulum_correction.png"):
        (study / name).symlink_to(outside)
    (tmp_path / "data.json").symlink_to(outside)
    done = cli("study", "pendulum-correction", "--out", str(study), "--t-end", "0.05",
               "--output-interval", "0.01", "--data", str(tmp_path / "data.json"))
    assert done.returncode == 0, done.stderr
    for link in (study / "pendulum_correction.csv", study / "pendulum_correction.png",
                 tmp_path / "data.json"):
        assert_replaced(link, outside)
    verify = tmp_path / "verify"
    verify.mkdir()
    for name in ("verify_spring1d.csv", "convergence.png"):
        (verify / name).symlink_to(outside)
    done = cli("verify", "--out", str(verify), "--energy-steps", "10")
    assert done.returncode in (0, 1), done.stderr  # 1: an order off at 10 steps: not this test's
    for name in ("verify_spring1d.csv", "convergence.png"):
        assert_replaced(verify / name, outside)


@pytest.mark.parametrize("args, name", [
    (("modes", "chain"), "modes.png"),
    (("verify",), "convergence.png"),
    (("verify", "--all", "--quick"), "verification.png"),
    (("run", "spring1d", "--t-end", "0.1"), "summary.json"),
    (("run", "spring1d", "--t-end", "0.1"), "analytic.png"),
    (("run", "spring1d", "--t-end", "0.1"), "drift.png"),  # a kind spring1d does not draw
])
def test_a_directory_named_like_an_output_is_refused_before_any_work(tmp_path, args, name):
    """modes and verify computed first (verify --all: half an hour), then failed with a raw
    IsADirectoryError; run failed after its run (or at the removal of an old plot)."""
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    done = cli(*args, "--out", str(out))
    one_line(done, 2, "is a directory, not a file", repr(str(out / name)))
    assert done.stdout == ""  # no table: nothing was computed
    assert sorted(p.name for p in out.iterdir()) == [name]  # no trajectory either


def frames_x_byte(path) -> int:
    with h5py.File(path, "r") as handle:
        info = handle["frames/x"].id.get_chunk_info(0)
    return info.byte_offset + info.size // 2


def test_the_xdmf_export_reads_the_frames_through_their_checksums(stored_run):
    """`hooke export DIR` (the sidecar alone) read only the times: a flipped byte in /frames/x
    went unnoticed and the sidecar pointed ParaView at it."""
    path = stored_run / "trajectory.h5"
    data = bytearray(path.read_bytes())
    data[frames_x_byte(path)] ^= 0x01
    path.write_bytes(bytes(data))
    done = cli("export", str(stored_run))
    one_line(done, 2, "DIR: is corrupted: /frames/x cannot be read", repr(str(path)))
    assert not (stored_run / "trajectory.xdmf").exists()


def test_export_frames_into_a_file_is_one_line_naming_out_dir(stored_run, tmp_path):
    """A raw NotADirectoryError (FileExistsError from export_vtu) before."""
    plain = tmp_path / "plain.txt"
    plain.write_bytes(b"not a folder\n")
    with pytest.raises(hooke.HookeInputError) as info:
        export_frames(stored_run / "trajectory.h5", plain)
    assert str(info.value) == (f"out_dir: cannot create the directory (Not a directory), got "
                               f"'{plain / 'vtu'}'")
    with pytest.raises(hooke.HookeInputError) as info:
        export_vtu(stored_run / "trajectory.h5", plain)
    assert str(info.value) == f"out_dir: is an existing file, not a directory, got '{plain}'"
    assert plain.read_bytes() == b"not a folder\n"


# -- a hostile pass of its own (issue 15, third pass) -------------------------------------------

@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_open_names_what_a_path_that_is_not_a_file_is(tmp_path, kind):
    """hooke.open said "no such trajectory file" of a FIFO, a device or a directory."""
    path = {"fifo": lambda: fifo(tmp_path / "run.h5"), "device": lambda: "/dev/zero",
            "directory": lambda: tmp_path}[kind]()
    what = {"fifo": "a FIFO (named pipe)", "device": "a device", "directory": "a directory"}[kind]
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.open(path)
    assert str(info.value) == f"path: is {what}; a trajectory file must be a regular file, got '{path}'"


@pytest.mark.parametrize("args", [("run", "spring1d", "--t-end", "0.1", "--out", ""),
                                  ("run", "spring1d", "--t-end", "0.1", "--out="),
                                  ("run", "--resume", ""), ("export", ""), ("plot", "")])
def test_an_empty_path_argument_is_refused_not_read_as_the_current_directory(stored_run, args):
    """typer reads "" as Path("."): `hooke run --out ""` wrote its run into the current
    directory, `--resume ""` resumed (or finished) the run there, `export ""` exported it."""
    shutil.copytree(stored_run, stored_run.parent / "here")
    cwd = stored_run.parent / "here"
    before = {p.name: p.read_bytes() for p in cwd.iterdir()}
    done = cli(*args, cwd=cwd)
    one_line(done, 2, ": must not be empty, got ''")
    assert {p.name: p.read_bytes() for p in cwd.iterdir()} == before


def test_a_directory_where_the_new_file_is_written_first_is_refused_naming_it(stored_run):
    """A directory trajectory.h5.new stopped the run at its first write, exit 1, as if the
    disk had failed; now refused before any step, exit 2, naming it; no lock is left."""
    (stored_run / "trajectory.h5.new").mkdir()
    before = (stored_run / "trajectory.h5").read_bytes()
    done = cli("run", "spring1d", "--t-end", "0.1", "--out", str(stored_run))
    one_line(done, 2, "a directory trajectory.h5.new stands where its new content is written")
    assert (stored_run / "trajectory.h5").read_bytes() == before
    assert not [p for p in stored_run.iterdir() if p.suffix == ".lock"]


def test_a_directory_where_the_compacted_copy_is_written_is_refused_naming_it(stored_run):
    """Issue 15 (red-team pass, stop 28): a directory trajectory.h5.rewrite, where a finished
    run's compacted copy is written, let the run go and then said "note: … is left
    uncompressed (no room for its compacted copy)", a full disk that was not there. Now
    refused before any step, exit 2, naming it, as a directory at trajectory.h5.new is."""
    (stored_run / "trajectory.h5.rewrite").mkdir()
    before = (stored_run / "trajectory.h5").read_bytes()
    done = cli("run", "spring1d", "--t-end", "0.1", "--out", str(stored_run))
    one_line(done, 2, "a directory trajectory.h5.rewrite stands where its new content is written")
    assert (stored_run / "trajectory.h5").read_bytes() == before
    assert not [p for p in stored_run.iterdir() if p.suffix == ".lock"]


def test_a_device_given_as_the_store_is_refused_not_renamed_over(tmp_path):
    """hooke.simulate(store=<a device>) renamed its file over the device node (as root: the
    system's /dev/null, were it given); a node of its own here."""
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root; `make test` runs as root")
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    with pytest.raises(hooke.HookeInputError) as info:
        hooke.simulate(hooke.scene("spring1d"), t_end=0.1, store=node)
    assert str(info.value).startswith("store: is a device, not a regular file")
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_a_resume_never_writes_through_a_link_at_its_copy(tmp_path, outside):
    """The resume's copy (trajectory.h5.new) is made afresh: a link there is removed, the file
    it points to keeps its bytes."""
    path = tmp_path / "run" / "trajectory.h5"
    path.parent.mkdir()
    interrupted_run(path)
    (path.parent / "trajectory.h5.new").symlink_to(outside)
    assert hooke.resume(path).complete
    assert outside.read_bytes() == b"keep me\n"


def test_fit_never_writes_its_summary_over_the_observed_run(stored_run):
    """`hooke fit --observed run/trajectory.h5 --out run/trajectory.h5` replaced the stored run
    with a JSON summary once the fit was done; refused before the fit now."""
    path = stored_run / "trajectory.h5"
    before = path.read_bytes()
    for out in (path, stored_run / ".." / stored_run.name / "trajectory.h5"):
        done = cli("fit", "spring1d", "--observed", str(path), "--param", "stiffness",
                   "--out", str(out))
        one_line(done, 2, "--out: is the --observed file", repr(str(out)))
    assert path.read_bytes() == before


WRITER = """
import sys, time
from pathlib import Path
from hooke.io.outputs import written_aside
with written_aside(Path(sys.argv[1])) as partial:
    partial.write_text("half a sidecar")
    print("writing", flush=True)
    time.sleep(120)
"""


def test_a_partial_left_by_a_killed_export_is_removed_by_the_next_one_never_a_live_ones(
        stored_run, tmp_path):
    """`kill -9` during `hooke export` (or animate, or a run's plots) left a hidden
    .NAME.partial.EXT beside the outputs for ever. The next command writing those outputs removes
    the partial files of exactly its own outputs; a partial a live writer holds is left to it."""
    import subprocess
    import sys

    from hooke.io.outputs import partial_path, remove_stale_partials

    sidecar = stored_run / "trajectory.xdmf"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(sidecar)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert writer.stdout.readline() == "writing\n"
        assert remove_stale_partials([sidecar]) == []  # its writer is alive: not stale
        assert partial_path(sidecar).read_text() == "half a sidecar"
    finally:
        writer.kill()
        writer.wait()
    assert partial_path(sidecar) == stored_run / ".trajectory.partial.xdmf"
    assert partial_path(sidecar).read_text() == "half a sidecar"  # what kill -9 leaves
    vtu = stored_run / "vtu"
    vtu.mkdir()
    stale = [vtu / ".frame_00001.partial.vtu", vtu / ".frames.partial.pvd"]
    foreign = [stored_run / ".frame_00001.partial.vtu", vtu / ".notes.partial.txt",
               vtu / ".frame_99999.partial.vtu"]  # not outputs of this export: left
    for path in stale + foreign:
        path.write_text("left by a killed export")
    done = cli("export", str(stored_run), "--format", "vtu")
    assert done.returncode == 0, done.stderr
    assert not partial_path(sidecar).exists() and not any(path.exists() for path in stale)
    assert all(path.read_text() == "left by a killed export" for path in foreign)
    assert sidecar.read_text().count('<Grid Name="frame ') == hooke.open(stored_run / "trajectory.h5").n_frames
    assert len(list(vtu.glob("frame_*.vtu"))) == hooke.open(stored_run / "trajectory.h5").n_frames


TERMINATED_MID_FILE = """
import os, signal, sys
import meshio
from hooke import cli

written = []
write = meshio.Mesh.write

def half_then_sigterm(self, path, *args, **kwargs):  # the third frame's file half written
    write(self, path, *args, **kwargs)
    written.append(path)
    if len(written) == 3:
        os.truncate(path, os.path.getsize(path) // 2)
        os.kill(os.getpid(), signal.SIGTERM)

meshio.Mesh.write = half_then_sigterm
sys.argv = ["hooke", *sys.argv[1:]]
cli.main()
"""


def test_sigterm_during_an_export_is_said_and_leaves_no_partial_file(stored_run):
    """SIGTERM (a scheduler's time limit, `kill`) ended `hooke export` (and plot, animate, fit,
    study …: every command but run, serve and sweep) at once: exit -15, not a word, and the file
    it was writing left as .frame_00002.partial.vtu beside the outputs. Now as a Ctrl-C is:
    "stopped by SIGTERM", exit 143, the partial file removed, the frames written before whole."""
    done = subprocess.run([sys.executable, "-c", TERMINATED_MID_FILE, "export", str(stored_run),
                           "--format", "vtu"], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (143, "error: stopped by SIGTERM\n")
    vtu = stored_run / "vtu"
    assert sorted(path.name for path in vtu.iterdir()) == ["frame_00000.vtu", "frame_00001.vtu"]
    for path in vtu.iterdir():
        assert path.read_text().rstrip().endswith("</VTKFile>")


@pytest.mark.parametrize("there", [False, True])
def test_a_ctrl_c_as_the_partial_file_is_made_leaves_none_and_never_removes_anothers(
        tmp_path, monkeypatch, there):
    """A Ctrl-C landing after written_aside had made its .partial file but before it held it
    (between the open and the lock) left that empty file beside the outputs: seen once in 12
    Ctrl-Cs of `hooke export DIR -f obj` (.frame_00020.partial.obj after "interrupted", exit
    130). The file it made is removed; a partial file that was there before (another writer's,
    which it was waiting for) is left as it is."""
    from hooke.io import outputs

    path = tmp_path / "frame_00000.obj"
    partial = outputs.partial_path(path)
    if there:
        partial.write_text("another writer's")
    lock = outputs.fcntl.flock

    def interrupted(descriptor, operation):
        if operation == outputs.fcntl.LOCK_EX:
            raise KeyboardInterrupt
        return lock(descriptor, operation)

    monkeypatch.setattr(outputs.fcntl, "flock", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with outputs.written_aside(path) as aside:
            aside.write_text("never reached")
    assert sorted(p.name for p in tmp_path.iterdir()) == ([partial.name] if there else [])
    if there:
        assert partial.read_text() == "another writer's"


def test_two_writers_of_one_output_at_once_leave_one_of_them_whole_and_both_succeed(tmp_path):
    """Issue 15 (red-team pass redA): two commands writing the same output at once (`hooke export
    DIR --vtu` twice, two `fit --out F`) shared its partial file: the second truncated the first's
    while it was being written, renamed it, and the first's rename failed ("DIR: cannot write the
    export (No such file or directory)", exit 1), or the file kept the second's bytes with the
    first's tail after a hole of zeros. Now the second waits for the first: both succeed and the
    file is one writer's whole content."""
    import threading

    from hooke.io.outputs import written_aside

    path = tmp_path / "fit.json"
    second, errors = threading.Event(), []

    def other_writer():
        try:
            with written_aside(path) as partial:
                partial.write_bytes(b"B" * 4)
        except BaseException as error:  # the test's own thread: reported below
            errors.append(error)
        second.set()

    with written_aside(path) as partial:
        with open(partial, "wb") as handle:
            handle.write(b"A" * 10)
            handle.flush()
            writer = threading.Thread(target=other_writer)
            writer.start()
            assert not second.wait(0.5)  # it waits for this one's file
            handle.write(b"A" * 10)
    writer.join(30)
    assert errors == [] and second.is_set()
    assert path.read_bytes() == b"B" * 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.json"]


def test_a_partial_left_by_a_killed_animate_or_run_is_removed_by_the_next_one(stored_run, tmp_path):
    """A writer of the same output reuses its partial name, so it went with the next write;
    the partial of an output the next run does not write (spring1d has no drift or
    penetration plot) stayed for ever."""
    movie = tmp_path / "movie.gif"
    partial_movie, other = tmp_path / ".movie.partial.gif", tmp_path / ".other.partial.gif"
    for path in (partial_movie, other):
        path.write_bytes(b"GIF89a, cut short")
    done = cli("animate", str(stored_run), "--out", str(movie), "--fps", "10")
    assert done.returncode == 0, done.stderr
    assert not partial_movie.exists() and other.read_bytes() == b"GIF89a, cut short"
    assert movie.read_bytes().startswith(b"GIF89a")
    out = tmp_path / "new"
    out.mkdir()
    left = [out / name for name in (".summary.partial.json", ".energy.partial.png",
                                    ".trajectory.partial.xdmf", ".drift.partial.png",
                                    ".penetration.partial.png")]
    for path in left:
        path.write_text("left by a killed run")
    done = cli("run", "spring1d", "--t-end", "0.1", "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert not any(path.exists() for path in left)
    assert sorted(path.name for path in out.iterdir() if path.name.startswith(".")) == []
    assert json.loads((out / "summary.json").read_text())["frames"] == 21


def test_a_link_or_a_fifo_at_a_partial_path_is_removed_a_directory_refused(stored_run, tmp_path,
                                                                          outside):
    """A link at .frame_00003.partial.vtu was written through (the file it pointed to became a
    VTU frame), a FIFO there blocked the export for ever; a directory there was "cannot write
    the export (Is a directory)", naming nothing."""
    vtu = stored_run / "vtu"
    vtu.mkdir()
    (vtu / ".frame_00003.partial.vtu").symlink_to(outside)
    fifo(vtu / ".frame_00004.partial.vtu")
    done = cli("export", str(stored_run), "--format", "vtu")
    assert done.returncode == 0, done.stderr
    assert outside.read_bytes() == b"keep me\n" and (vtu / "frame_00003.vtu").is_file()
    assert not (vtu / "frame_00003.vtu").is_symlink() and (vtu / "frame_00004.vtu").is_file()
    assert sorted(path.name for path in vtu.iterdir() if path.name.startswith(".")) == []
    (vtu / ".frame_00002.partial.vtu").mkdir()  # refused before any file is written
    one_line(cli("export", str(stored_run), "--format", "vtu"), 2, "DIR: cannot be written: a "
             "directory .frame_00002.partial.vtu stands where the new file is written first; "
             f"remove it, got '{vtu / 'frame_00002.vtu'}'")
    assert (vtu / ".frame_00002.partial.vtu").is_dir()


@pytest.mark.parametrize("args, message", [
    (("run", "spring1d", "--out", "y" * 300), "--out: cannot be a directory (File name too long)"),
    (("run", "--resume", "q" * 300),
     "--resume: cannot read the trajectory file (File name too long)"),
    (("plot", "run", "--out", "p" * 300), "--out: cannot be a directory (File name too long)"),
    (("animate", "run", "--out", "m" * 300 + ".gif"), "--out: cannot be written (File name too long)"),
])
def test_a_name_too_long_for_the_file_system_is_bad_input_naming_the_flag(stored_run, tmp_path,
                                                                          args, message):
    """Path.exists and Path.is_file raise an OSError for a name past the file system's 255
    bytes (they swallow only "missing"): `hooke run --out`, `--resume` were "unexpected OSError
    … (a bug in hooke)", animate's "cannot write the movie" (exit 1) after rendering."""
    done = cli(*args, cwd=tmp_path)
    one_line(done, 2, message)


@pytest.mark.parametrize("args", [
    ("animate", "run", "--out", "m" * 250 + ".gif"),
    ("fit", "spring1d", "--observed", "run/trajectory.h5", "--param", "stiffness", "--out",
     "f" * 246 + ".json"),
])
def test_a_name_whose_partial_file_is_too_long_is_refused_before_the_work(stored_run, tmp_path,
                                                                        args):
    """A name of 247-255 bytes fits the file system, but it is first written as
    `.NAME.partial.EXT`, nine bytes longer: animate rendered its frames and then failed with
    "cannot write the movie (File name too long)", exit 1."""
    name = args[args.index("--out") + 1]
    done = cli(*args, cwd=tmp_path)
    one_line(done, 2, f"--out: is a name too long to write: it is written first as "
             f"'.{name.rsplit('.', 1)[0]}.partial.{name.rsplit('.', 1)[1]}', "
             f"{len(name) + 9} bytes, over the file system's limit")


def test_an_output_folder_that_is_a_dangling_link_says_so(tmp_path):
    """`--out LINK` with LINK a symbolic link to a missing directory said "cannot create the
    directory (File exists)", which points nowhere near the cause. Now it names the link's
    target."""
    from hooke.io.outputs import writable_directory

    link = tmp_path / "out"
    link.symlink_to(tmp_path / "gone" / "dir")
    with pytest.raises(hooke.HookeInputError) as refused:
        writable_directory(link, "--out")
    assert str(refused.value) == (
        f"--out: is a symbolic link to {str(tmp_path / 'gone' / 'dir')!r}, which does not "
        f"exist: create that directory or give another, got '{link}'")
    assert not (tmp_path / "gone").exists()


def hooke_with_stdout(args, stdout, cwd) -> subprocess.CompletedProcess:
    """``hooke ARGS`` with stdout a given file object, or closed (``stdout=None``: ``>&-``)."""
    closing = {"stdout": stdout} if stdout is not None else {"pass_fds": (),
                                                             "preexec_fn": lambda: os.close(1)}
    return subprocess.run([sys.executable, "-m", "hooke", *args], stderr=subprocess.PIPE,
                          text=True, cwd=cwd, timeout=300, **closing)


@pytest.mark.parametrize("closed", [False, True], ids=["full", "closed"])
@pytest.mark.parametrize("args", [("list",), ("--version",)], ids=["list", "version"])
def test_a_stdout_on_a_full_disk_or_closed_is_one_line_exit_1(tmp_path, args, closed):
    """`hooke list > /dev/full` was "unexpected OSError … (a bug in hooke)"; `hooke list >&-` an
    AttributeError traceback from an import (sys.stdout is None); `hooke --version > /dev/full`
    exited 0 having printed nothing. Now one line naming stdout, exit 1."""
    with open("/dev/full", "w") as full:
        done = hooke_with_stdout(args, None if closed else full, tmp_path)
    reason = "it is closed" if closed else "No space left on device"
    one_line(done, 1, f"stdout: cannot be written ({reason})")


def test_a_run_whose_stdout_is_full_keeps_its_files_and_a_quiet_one_needs_none(tmp_path):
    """A run's files do not depend on its printed summary: `> /dev/full` is one line, exit 1,
    and `--quiet` with stdout closed prints nothing, so it runs as usual (exit 0)."""
    with open("/dev/full", "w") as full:
        done = hooke_with_stdout(("run", "spring1d", "--t-end", "0.1", "--out", "loud"), full,
                                 tmp_path)
    one_line(done, 1, "stdout: cannot be written (No space left on device)")
    quiet = hooke_with_stdout(("run", "spring1d", "--t-end", "0.1", "--out", "quiet", "-q"), None,
                              tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert hooke.open(tmp_path / "quiet" / "trajectory.h5").complete


@pytest.mark.parametrize("args, line", [
    (["--dt", "-1"], "error: --dt: must be a finite number > 0, got -1.0"),
    (["-O", "nosuch=1"], "error: nosuch: is not an option of integrator 'symplectic_euler'"),
    (["--t-end", "0.0001"], "error: --t-end: must be a whole number of steps of dt = 0.005"),
])
def test_a_refused_run_leaves_no_folder_it_made(tmp_path, args, line):
    """Issue 15 (confirmation pass): a refused `hooke run` left the --out folders it had made,
    empty (its output lock came and went in them); now they go, and a folder that was there
    stays."""
    made = tmp_path / "made" / "here"
    done = cli("run", "spring1d", *args, "--out", str(made))
    assert done.returncode == 2 and done.stderr.startswith(line), done.stderr
    assert list(tmp_path.iterdir()) == []
    assert cli("run", "spring1d", *args, "--out", str(tmp_path)).returncode == 2
    assert tmp_path.is_dir() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, kind", [("energy.png", "directory"), ("energy.png", "fifo"),
                                        ("trajectory.xdmf", "directory"),
                                        (".energy.partial.png", "directory")])
def test_a_plot_path_made_a_folder_or_fifo_while_the_run_ran_is_one_line_frames_kept(
        tmp_path, monkeypatch, capsys, name, kind):
    """Issue 15 (red-team pass G): a directory or a FIFO that appeared at a plot's or the
    sidecar's path after the run's up-front check (mkdir out/energy.png while the run ran) ended
    it in "unexpected HookeInputError: path: is a directory, not a file … (a bug in hooke)";
    now it is the same one line as a full disk there, exit 1, its frames kept."""
    from hooke import cli as hooke_cli

    from conftest import run_main

    out = tmp_path / "run"
    real = hooke_cli.write_outputs

    def made_meanwhile(result, folder, worker=None):
        (folder / name).mkdir() if kind == "directory" else os.mkfifo(folder / name)
        return real(result, folder, worker)

    monkeypatch.setattr(hooke_cli, "write_outputs", made_meanwhile)
    code, lines = run_main(monkeypatch, capsys, "run", "spring1d", "--t-end", "0.2", "--out",
                           str(out), "--quiet")
    assert code == 1, lines
    assert len(lines) == 1 and lines[0].startswith("error: --out: cannot write the plots and "
                                                   "summary ("), lines
    assert f"{out}/{name.lstrip('.').replace('.partial', '')}: " in lines[0], lines
    assert name in lines[0] and "a bug in hooke" not in lines[0]
    assert lines[0].endswith(f"; the trajectory is in {out / 'trajectory.h5'}, got {str(out)!r}")
    assert hooke.open(out / "trajectory.h5").complete
