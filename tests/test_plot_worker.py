"""The plot worker (issue 16 §6, hooke.viz.plot_worker): a run's plots drawn by a forked process
are the files the run would have drawn itself, byte for byte; the run's own process never loads
Matplotlib; a worker that is gone, or a Result of another scene, is drawn in-process; a full
disk in the worker is the run's one-line error; no worker outlives its run. Each case runs in a
fresh process: pytest's own has threads, where the worker is (rightly) not started."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import textwrap
import time

import pytest

from test_store_faults import mount_tmpfs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the worker is forked on Linux only")

SETUP = """
import json, os, signal, sys, threading
from pathlib import Path
import hooke
from hooke.run_report import draw_plots, write_outputs
from hooke.viz import plot_worker

out = Path(sys.argv[1])
scene = hooke.scene("spring1d")
"""


def run_script(body: str, *args) -> dict:
    done = subprocess.run([sys.executable, "-c", SETUP + textwrap.dedent(body), *map(str, args)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def pictures(folder) -> dict:
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*.png"))}


def test_worker_draws_the_same_files_as_the_run_would(tmp_path):
    report = run_script("""
        worker = plot_worker.start(scene)
        result = hooke.simulate(scene, store=out / "run" / "trajectory.h5")
        submitted = worker.submit(result, out / "run")
        drawn = worker.collect()
        pid = worker.pid
        worker.close()
        try:
            os.waitpid(pid, os.WNOHANG)
            reaped = False
        except ChildProcessError:
            reaped = True
        here = draw_plots(result, out / "here")
        print(json.dumps({"submitted": submitted, "drawn": [Path(p).name for p in drawn],
                          "here": [p.name for p in here], "reaped": reaped,
                          "matplotlib": "matplotlib" in sys.modules}))
    """, tmp_path)
    assert report["submitted"] and report["reaped"]
    assert report["drawn"] == report["here"] == ["energy.png", "snapshot.png", "analytic.png"]
    assert pictures(tmp_path / "run") == pictures(tmp_path / "here")
    assert report["matplotlib"]  # loaded here by draw_plots, after the worker had drawn


def test_hooke_run_leaves_matplotlib_to_the_worker(tmp_path):
    report = run_script("""
        from hooke.cli import main
        sys.argv = ["hooke", "run", "spring1d", "--out", str(out), "-q"]
        try:
            main()
        except SystemExit as done:
            assert not done.code, done.code
        print(json.dumps({"matplotlib": "matplotlib" in sys.modules,
                          "pictures": sorted(p.name for p in out.glob("*.png"))}))
    """, tmp_path)
    assert report == {"matplotlib": False,
                      "pictures": ["analytic.png", "energy.png", "snapshot.png"]}


def test_no_worker_beside_other_threads(tmp_path):
    report = run_script("""
        stop = threading.Event()
        other = threading.Thread(target=stop.wait)
        other.start()
        beside = plot_worker.start(scene)
        stop.set()
        other.join()
        alone = plot_worker.start(scene)
        alone.close()
        print(json.dumps({"beside": beside is None, "alone": alone is not None}))
    """, tmp_path)
    assert report == {"beside": True, "alone": True}


def test_a_dead_worker_another_scene_or_a_large_result_is_drawn_in_process(tmp_path):
    report = run_script("""
        result = hooke.simulate(scene, store=out / "trajectory.h5")
        dead = plot_worker.start(scene)
        os.kill(dead.pid, signal.SIGKILL)
        os.waitpid(dead.pid, 0)
        dead.pid = None
        other = plot_worker.start(hooke.scene("spring1d"))
        taken = other.submit(result, out)
        other.close()
        large = plot_worker.start(scene)
        plot_worker.MAX_BYTES = plot_worker.array_bytes(result) - 1
        large_taken = large.submit(result, out)
        large.close()
        written = write_outputs(result, out, dead)
        dead.close()
        print(json.dumps({"other_taken": taken, "large_taken": large_taken, "written": [Path(p).name for p in written]}))
    """, tmp_path)
    assert report["other_taken"] is False and report["large_taken"] is False
    assert report["written"] == ["trajectory.h5", "trajectory.xdmf", "energy.png", "snapshot.png",
                                 "analytic.png", "summary.json"]
    assert sorted(pictures(tmp_path)) == ["analytic.png", "energy.png", "snapshot.png"]


def test_a_full_disk_in_the_worker_is_the_runs_oserror(tmp_path):
    """The worker's OSError comes back as that OSError (the CLI's one line); the plots it wrote
    before are whole, and no partial file is left."""
    pictures_disk = tmp_path / "disk"
    pictures_disk.mkdir()
    mount_tmpfs(pictures_disk, "100k")  # energy.png (87 kB) fits, snapshot.png no more
    try:
        report = run_script("""
            result = hooke.simulate(scene, store=out / "store" / "trajectory.h5")
            worker = plot_worker.start(scene)
            worker.submit(result, out / "disk")
            try:
                worker.collect()
                caught = None
            except OSError as error:
                caught = error.errno
            worker.close()
            print(json.dumps({"caught": caught,
                              "left": sorted(p.name for p in (out / "disk").iterdir())}))
        """, tmp_path)
    finally:
        subprocess.run(["umount", "-l", str(pictures_disk)], check=False)
    assert report == {"caught": errno.ENOSPC, "left": ["energy.png"]}


def worker_alive(pid: int) -> bool:
    """Whether ``pid`` runs still (a zombie, exited but not yet reaped by init, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("submitted", [False, True])
def test_a_worker_whose_run_is_killed_ends_too(tmp_path, submitted):
    """``kill -9`` of the run, with its worker idle or drawing: the worker sees its pipe close
    and ends within seconds; it never outlives the command for long, and never leaves a
    partial file."""
    body = f"""
        worker = plot_worker.start(scene)
        if {submitted}:
            result = hooke.simulate(scene, store=out / "trajectory.h5")
            worker.submit(result, out)
        print(worker.pid, flush=True)
        threading.Event().wait()
    """
    child = subprocess.Popen([sys.executable, "-c", SETUP + textwrap.dedent(body), str(tmp_path)],
                             stdout=subprocess.PIPE, text=True)
    pid = int(child.stdout.readline())
    assert worker_alive(pid)
    child.kill()
    child.wait()
    deadline = time.monotonic() + 30
    while worker_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not worker_alive(pid)
    assert not [path.name for path in tmp_path.iterdir() if ".partial" in path.name]
