"""The benchmarks run end to end in their smoke modes: `hooke bench` (the workloads issue 16 added,
a peer in its own process and the trajectory check before a ratio) and the documented scripts,
benchmarks/bench.py (W1–W5 at small sizes, no peers), bench_ordering.py, bench_contact.py (a few
steps, with its same-process peer), bench_joints.py (tiny sizes) and bench_viewer_load.py (a page
alone for a second). They time nothing against a threshold (benchmarks are not tests)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hooke
from conftest import load_script, run_cli

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "bench.py"


@pytest.fixture(scope="module")
def readme_tables():
    return load_script(ROOT / "scripts" / "readme_tables.py")


def assert_rendered_as_smoke(readme_tables, names, data) -> None:
    """The README blocks ``names`` render from the smoke run's data files in ``data``, labelled
    as a smoke run, and name their command."""
    for name in names:
        text = readme_tables.RENDERERS[name](data)
        assert "SMOKE RUN" in text and "Not measured yet" not in text, text


def test_hooke_bench_smoke_runs_every_workload_and_writes_its_data(tmp_path, readme_tables):
    """`hooke bench --smoke --data DIR`: every workload's table printed and its data file written
    (a smoke run, its command `hooke bench …`), and every README block renders from them; the
    load-independent facts hold: `import hooke` and `hooke --help` load none of the heavy
    modules, hooke's RK45 and the seed's solve_ivp agree to round-off over the first second."""
    done = subprocess.run([sys.executable, "-m", "hooke.cli", "bench", "--smoke", "--data",
                           str(tmp_path)], capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for title in ("memory bandwidth", "W1: cloth", "W2: cloth", "W3: implicit_euler", "W4: fast_mass_spring",
                  "W5: one step", "bandwidth bound", "fitted exponent", "bytes per spring",
                  "factorisation ms", "solve ms", "(its choice)", "lattice implicit_euler_linear",
                  "one whole implicit_euler step from rest", "from crumpled",
                  "other processes' share of the CPU just now", "W6: a saved frame",
                  "W8: seed 003's double pendulum", "startup: fresh processes", "chain n=4",
                  "book peer", "(other processes used", "soft3d implicit_euler_linear",
                  "gradient / forward run"):
        assert title in out, f"{title!r} missing from:\n{out}"
    assert "failed" not in out and "DIFFERS" not in out
    data = {}
    for name in ("W1", "W2", "W3", "W4", "W5", "W6", "W8", "joints", "contact", "startup",
                 "gradient"):
        data[name] = json.loads((tmp_path / f"bench_{name}.json").read_text())
        assert data[name]["smoke"] is True, name
        assert data[name]["command"] == f"hooke bench --smoke --data {tmp_path}", name
        assert 0 <= data[name]["measured"]["others_cpu_share"] <= 1 and data[name]["rows"], name
    assert [row["case"] for row in data["W6"]["rows"]] == ["spring1d", "pendulum", "square_drop"]
    for row in data["W6"]["rows"]:
        assert row["frames"] == row["steps"] + 1 and 0 < row["us_per_frame_saving_alone"] < 1e4
    assert data["W8"]["agrees"] and data["W8"]["difference_m"] < 1e-9
    startup = {row["command"]: row for row in data["startup"]["rows"]}
    assert startup["import hooke"]["heavy"] == startup["hooke --help"]["heavy"] == []
    assert startup["hooke run spring1d"]["heavy"] == ["h5py"]  # Matplotlib: in its plot worker
    assert {"h5py", "matplotlib"} <= set(startup["hooke plot"]["heavy"])
    assert all(row["agrees"] for row in data["W3"]["rows"]) and data["contact"]["peer"]["agrees"]
    assert_rendered_as_smoke(readme_tables, ["speed", "speed-w5", "joints", "contact", "frames",
                                             "startup", "gradient"], tmp_path)


def test_bench_script_keeps_its_command_line(tmp_path):
    """benchmarks/bench.py runs the same workloads under its documented flags and records its own
    command line."""
    done = subprocess.run([sys.executable, str(BENCH), "W4", "--smoke", "--data", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "W4: fast_mass_spring" in done.stdout and "peak memory of this process" in done.stdout
    data = json.loads((tmp_path / "bench_W4.json").read_text())
    assert data["smoke"] is True and data["command"] == (
        f"python benchmarks/bench.py W4 --smoke --data {tmp_path}")


def test_ordering_bench_smoke():
    """benchmarks/bench_ordering.py (natural against shuffled particle order) runs end to end."""
    script = BENCH.parent / "bench_ordering.py"
    done = subprocess.run([sys.executable, str(script), "--sides", "20", "--repeats", "1",
                           "--forced"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for text in ("cloth 20 x 20", "renumbered", "natural (forced)", "shuffled (forced)"):
        assert text in done.stdout, done.stdout


def test_viewer_load_bench_smoke():
    """benchmarks/bench_viewer_load.py prints a row for a page alone against `hooke serve`: frames
    per second and a longest gap > 0, the load average (its clients and server are the load
    tests' own, tests/test_viewer_robustness.py)."""
    script = BENCH.parent / "bench_viewer_load.py"
    done = subprocess.run([sys.executable, str(script), "alone", "--seconds", "1", "--warmup", "0.5"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    row = re.search(r"^ +alone +(\S+) +(\S+) +(\S+)", done.stdout, re.MULTILINE)
    assert row and "frames/s" in done.stdout and "longest gap s" in done.stdout, done.stdout
    rate, gap, load = map(float, row.groups())
    assert rate > 0 and gap > 0 and load >= 0


def test_contact_bench_smoke(tmp_path, readme_tables):
    """benchmarks/bench_contact.py times hooke and its same-process peer (the book's algorithm in
    the book's Python style) on the square drop's first 45 steps, through its first contact at
    step 32 (barrier, PSD projection, line search at work: 62 Newton iterations in both); every
    number it prints is finite, > 0."""
    script = BENCH.parent / "bench_contact.py"
    done = subprocess.run([sys.executable, str(script), "--steps", "45", "--repeats", "1",
                           "--data", str(tmp_path), "square_drop"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    found = [re.search(pattern, out) for pattern in (
        r"hooke +(\S+) ms/step +(\S+) Newton iterations/step",
        r"book peer +(\S+) ms/step +(\S+) Newton iterations/step",
        r"ratio +(\S+)×  \(positions agree to (\S+) m\)")]
    assert all(found), out
    hooke_ms, hooke_newton, peer_ms, peer_newton, ratio, agree = (
        float(value) for match in found for value in match.groups())
    for value in (hooke_ms, hooke_newton, peer_ms, peer_newton, ratio):
        assert np.isfinite(value) and value > 0, out
    assert hooke_newton == peer_newton == pytest.approx(62 / 45, abs=0.005)
    # one run each: the median ratio is the ratio of the two times, up to their printed digits
    # (three decimals of each time, one of the ratio)
    printed = 0.0005 / hooke_ms + 0.0005 / peer_ms + 0.05 / ratio
    assert ratio == pytest.approx(peer_ms / hooke_ms, rel=printed) and agree < 1e-12
    peer = json.loads((tmp_path / "bench_contact.json").read_text())["peer"]
    assert peer["ratio"] == pytest.approx(ratio, abs=0.05) and peer["steps"] == 45
    assert_rendered_as_smoke(readme_tables, ["contact"], tmp_path)


def test_self_contact_bench_smoke(tmp_path, readme_tables):
    """benchmarks/bench_contact.py's self-contact rows (issue 14 §7) in a smoke run: ms per step,
    Newton iterations per step and the share in collision detection for the squares and the
    40² cloth, the squares against the book's self-contact simulator in its Python style with
    the same Newton iterations and positions agreeing to round-off; every number finite."""
    script = BENCH.parent / "bench_contact.py"
    done = subprocess.run([sys.executable, str(script), "--self-steps", "3", "--repeats", "1",
                           "--data", str(tmp_path), "squares_self_contact", "cloth_sphere:40"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for name, particles in (("squares_self_contact", 18), ("cloth_sphere:40", 1600)):
        row = re.search(rf"^{name} +(\d+) +(\d+) +(\S+) +3 +(\S+) +(\S+) +(\d+)%$", out,
                        re.MULTILINE)
        assert row, out
        assert int(row[1]) == particles
        ms, newton, share = float(row[4]), float(row[5]), int(row[6])
        assert ms > 0 and newton >= 1 and 0 <= share <= 100
    found = [re.search(pattern, out) for pattern in (
        r"hooke +(\S+) ms/step +(\S+) Newton iterations/step",
        r"book peer +(\S+) ms/step +(\S+) Newton iterations/step",
        r"ratio +(\S+)×  \(positions agree to (\S+) m\)")]
    assert all(found), out
    assert found[0][2] == found[1][2] and float(found[2][2]) < 1e-12
    data = json.loads((tmp_path / "bench_contact.json").read_text())
    assert data["smoke"] is True and data["rows"] == []
    assert [row["name"] for row in data["self_contact"]] == ["squares_self_contact",
                                                            "cloth_sphere:40"]
    assert data["self_contact_peer"]["agrees"] and data["self_contact_peer"]["steps"] == 3
    text = readme_tables.RENDERERS["contact"](tmp_path)
    assert "`cloth_sphere:40`" in text and "book_self_contact" in text, text


def test_joints_bench_smoke(tmp_path, readme_tables):
    """benchmarks/bench_joints.py at tiny sizes: one row per case, every number finite and > 0
    (split steps ≥ 0), the ratio equal to steps/s over the C++ reference."""
    script = BENCH.parent / "bench_joints.py"
    done = subprocess.run([sys.executable, str(script), "--chains", "4", "--scale", "0.01",
                           "--repeats", "1", "--data", str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:4] == ["case", "particles", "joints", "steps/s"]
    assert re.fullmatch(r"\(other processes used \d+% of the CPU meanwhile\)", lines[-1])
    rows = {line[:12].strip(): line[12:].split() for line in lines[1:-1]}
    assert list(rows) == ["top", "crane", "crane, wind", "pendulum", "chain n=4"]
    references = {"top": 3491.0, "crane": 3574.0, "pendulum": 22601.0}
    for label, cells in rows.items():
        numbers = [float(cell) for cell in cells]
        assert all(math.isfinite(value) for value in numbers), (label, cells)
        assert all(value > 0 for value in numbers[:-1]) and numbers[-1] >= 0, (label, cells)
        if label in references:
            rate, reference, ratio = numbers[2:5]
            assert reference == references[label]
            assert ratio == pytest.approx(rate / reference, abs=0.006)
    assert rows["chain n=4"][:2] == ["5", "4"]  # particles (with the support), joints
    data = json.loads((tmp_path / "bench_joints.json").read_text())
    assert [row["case"] for row in data["rows"]] == list(rows)
    assert_rendered_as_smoke(readme_tables, ["joints"], tmp_path)


# -- hooke bench ------------------------------------------------------------------------------------

def test_hooke_bench_names_an_unknown_workload():
    done = run_cli("bench", "W7")
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "error: WORKLOAD: unknown workload (known: W1, W2, W3, W4, W5, W6, W8, joints, contact, "
        "startup, gradient), got 'W7'"]


def test_gradient_bench_smoke(tmp_path, readme_tables):
    """`hooke bench gradient --smoke --peers`: a row per case (cloth2d under symplectic Euler
    and implicit_euler_linear, soft3d), each gradient agreeing with its central differences and
    its √steps-checkpointed sweep bit for bit, every time and ratio finite and > 0; Warp's tape
    on the cloth, where it is installed, computes the same trajectory and gradient (float64, to
    round-off) before its ratio is quoted, and is a row saying so where it is not."""
    from hooke.bench import peers

    done = subprocess.run([sys.executable, "-m", "hooke.cli", "bench", "gradient", "--smoke",
                           "--peers", "--data", str(tmp_path)], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "bench_gradient.json").read_text())
    assert data["smoke"] is True
    cases = {row["case"]: row for row in data["rows"]}
    assert list(cases) == ["cloth2d symplectic_euler", "cloth2d implicit_euler_linear",
                           "soft3d implicit_euler_linear"]
    for case in cases.values():
        assert case["fd_agrees"] and case["fd_relative_difference"] < 1e-6, case
        assert case["checkpointed_equal"] and case["steps"] == 5
        assert [row["name"] for row in case["rows"]][:2] == ["forward run", "hooke.gradient"]
        for row in case["rows"]:
            assert row["seconds"] > 0 and (row["over_forward"] is None or row["over_forward"] > 0)
        assert case["rows"][0]["over_forward"] == 1.0
    warp = cases["cloth2d symplectic_euler"]["warp"]
    if peers.status("warp_tape") == "installed":
        assert warp["trajectory_agrees"] and warp["agrees"], warp
        assert warp["gradient_relative_difference"] < 1e-8 and warp["hooke_over_warp"] > 0
        assert "Warp tape gradient" in done.stdout
    else:
        assert warp["status"] == "not installed" and warp["hooke_over_warp"] is None
    assert_rendered_as_smoke(readme_tables, ["gradient"], tmp_path)


def test_a_peer_is_timed_in_its_own_process_after_its_trajectory_agrees(monkeypatch, capsys):
    """The always-installed NumPy peer runs the W1 cloth (6 x 6) in its own process: its
    positions after the check agree with hooke's to round-off, so its ratio is quoted; a peer
    that is not installed is a row that says so, not an error."""
    from hooke.bench import cloth, peers
    from hooke.bench.measure import Options

    monkeypatch.setattr(peers, "CLOTH_PEERS", ("plain", "taichi"))
    monkeypatch.setattr(cloth.peer_modules, "status", lambda name: "installed" if name == "plain"
                        else "not installed")
    data = cloth.workload("W1", 6, 5, Options(smoke=True, peers=True), bandwidth=1e10)
    rows = {row["name"]: row for row in data["rows"]}
    assert rows["plain"]["agrees"] and rows["plain"]["difference_m"] < 1e-15
    assert rows["plain"]["hooke_over_peer"] > 0 and len(rows["plain"]["rounds"]) == 1
    assert rows["taichi"]["status"] == "not installed" and rows["taichi"]["steps_per_s"] is None
    assert "Taichi: not installed" in capsys.readouterr().out


def test_the_numba_gather_peer_steps_the_same_cloth_as_hooke():
    """The plain Numba gather kernel (issue 16's fastest W1 peer) takes the same symplectic
    Euler steps: after 100 steps of the 20 x 20 cloth, which has fallen and stretched by then,
    its positions equal hooke's to round-off (the sums run in another order), not bit for bit
    hooke's start."""
    from hooke.bench.cloth import hooke_positions
    from hooke.bench.peers import common, numba_gather

    stepper = numba_gather.make(common.cloth_arrays(20))
    stepper.run(100)
    mine, start = hooke_positions(20, 100)
    moved = np.max(np.abs(mine - start))
    assert moved > 1e-4
    assert np.max(np.abs(stepper.positions() - mine)) <= 1e-12 * moved


def test_the_agreement_check_tells_round_off_from_another_scheme():
    """Symplectic Euler against itself with the sums in another order agrees; against explicit
    Euler (the same cloth, 100 steps) it does not; float32 positions agree at float32's rounding
    only."""
    from hooke.bench.measure import agreement

    scene = hooke.scene("cloth", n=6)
    runs = {}
    for name in ("symplectic_euler", "explicit_euler"):
        runs[name] = hooke.simulate(scene, integrator=name, t_end=100 * scene.dt,
                                    save_every=100).x[-1]
    start, mine = scene.state.x, runs["symplectic_euler"]
    reordered = mine * (1 + 1e-15)  # round-off of a reordered sum
    assert agreement(mine, reordered, start) == (True, pytest.approx(np.abs(mine).max() * 1e-15))
    assert not agreement(mine, runs["explicit_euler"], start)[0]
    single = mine.astype(np.float32)
    assert agreement(mine, single, start, "float32")[0] and not agreement(mine, single, start)[0]
