"""The benchmark harness (benchmarks/bench.py) runs end to end in its smoke mode: every workload
at small sizes, no peers. It times nothing against a threshold (benchmarks are not tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
