"""The benchmark scripts run end to end in their smoke modes: benchmarks/bench.py (every workload at
small sizes, no peers), bench_ordering.py and bench_contact.py (a few steps, with its same-process
peer). They time nothing against a threshold (benchmarks are not tests)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench.py"


def test_bench_smoke_mode_prints_every_workload():
    done = subprocess.run([sys.executable, str(BENCH), "--smoke"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for title in ("memory bandwidth", "W1: cloth", "W2: cloth", "W3: implicit_euler", "W4: fast_mass_spring",
                  "W5: one step", "bandwidth bound", "fitted exponent", "bytes per spring",
                  "factorisation ms", "solve ms", "(its choice)", "lattice implicit_euler_linear"):
        assert title in out, f"{title!r} missing from:\n{out}"
    assert "failed" not in out


def test_ordering_bench_smoke():
    """benchmarks/bench_ordering.py (natural against shuffled particle order) runs end to end."""
    script = BENCH.parent / "bench_ordering.py"
    done = subprocess.run([sys.executable, str(script), "--sides", "20", "--repeats", "1",
                           "--forced"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for text in ("cloth 20 x 20", "renumbered", "natural (forced)", "shuffled (forced)"):
        assert text in done.stdout, done.stdout


def test_contact_bench_smoke():
    """benchmarks/bench_contact.py times hooke and its same-process peer (the book's algorithm in
    the book's Python style) on a few square-drop steps; every number it prints is finite, > 0."""
    script = BENCH.parent / "bench_contact.py"
    done = subprocess.run([sys.executable, str(script), "--steps", "5", "--repeats", "1",
                           "square_drop"], capture_output=True, text=True, timeout=120)
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
    assert hooke_newton == peer_newton == 1.0  # free fall: one Newton iteration per step
    # one run each: the median ratio is the ratio of the two times (up to their printed digits)
    assert ratio == pytest.approx(peer_ms / hooke_ms, rel=0.01) and agree < 1e-12
