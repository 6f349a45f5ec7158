"""startup: how long hooke takes to start, in fresh processes.

Contract: four commands, each run ``repeats`` times in fresh Python processes, in turn (A B C D
A B C D …) after one unmeasured run of each (Numba's cache and the OS's file cache warm):
``import hooke`` (the import alone, timed inside the process), ``hooke --help``, ``hooke run
spring1d`` and ``hooke plot`` of that run (the whole process, as a user waits for it; the last
is what the run's three plots cost a fresh process, a cost ``hooke run`` leaves to its plot
worker, :mod:`hooke.viz.plot_worker`). For each: the best and the median wall-clock time, the
median CPU time of the process (user + system, its plot worker's included; less sensitive to
other processes than wall-clock time) and, independent of load, how many modules the process
imported and which of the heavy optional ones (:data:`HEAVY`).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .measure import Options, table

# Modules `import hooke` and `hooke --help` must not load (tests/test_startup.py asserts it).
HEAVY = ("pypardiso", "sksparse", "h5py", "matplotlib", "dask", "distributed", "fastapi",
         "uvicorn", "pandas", "pyarrow")
# Loaded by hooke's own imports, for the table (not a requirement).
NOTED = ("numba", "scipy", "pydantic")
GOALS_S = {"import hooke": 0.3, "hooke run spring1d": 0.6}  # issue 16, warm

IMPORT = ("import time\nstarted = time.perf_counter()\nimport hooke\n"
          "print(time.perf_counter() - started)\n")


def report(names) -> str:
    """Code that prints, last on stderr, how many modules the process loaded and which of
    ``names``."""
    return ("import json, sys\n"
            f"loaded = [m for m in {list(names)!r} if m in sys.modules]\n"
            "print(json.dumps(dict(modules=len(sys.modules), loaded=loaded)), file=sys.stderr)\n")


def cli(*args: str) -> str:
    """Code that runs ``hooke ARGS`` as the console script does."""
    return (f"import sys\nsys.argv = ['hooke', *{list(args)!r}]\nfrom hooke.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n")


def commands(folder: str) -> dict[str, str]:
    """The timed commands, in the order they run (``hooke plot`` draws the run's plots again)."""
    names = report(HEAVY + NOTED)
    return {"import hooke": IMPORT + names, "hooke --help": cli("--help") + names,
            "hooke run spring1d": cli("run", "spring1d", "--out", folder) + names,
            "hooke plot": cli("plot", folder) + names}


def run_once(code: str) -> dict:
    """One fresh process: its wall and CPU seconds, its own timing (stdout's last number, where
    it prints one) and its modules (stderr's last line)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "100"})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{code.splitlines()[0]!r} failed: {done.stderr.strip()[-300:]}")
    modules = json.loads(done.stderr.strip().splitlines()[-1])
    lines = done.stdout.strip().splitlines()
    try:
        inner = float(lines[-1])
    except (IndexError, ValueError):
        inner = None
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "inner": inner, **modules}


def startup(options: Options, bandwidth: float = 0.0) -> dict:
    repeats = options.extra.get("startup_repeats") or (2 if options.smoke else 7)
    with tempfile.TemporaryDirectory() as folder:
        codes = commands(str(Path(folder) / "out"))
        runs: dict[str, list[dict]] = {name: [] for name in codes}
        for code in codes.values():
            run_once(code)  # warm: Numba's cache, the OS's file cache
        for _ in range(repeats):
            for name, code in codes.items():
                runs[name].append(run_once(code))
    rows = []
    for name, measured in runs.items():
        seconds = [run["inner"] if run["inner"] is not None else run["wall"] for run in measured]
        rows.append({"command": name, "what": "the import" if name == "import hooke"
                     else "the whole process", "best_s": float(np.min(seconds)),
                     "median_s": float(np.median(seconds)),
                     "median_cpu_s": float(np.median([run["cpu"] for run in measured])),
                     "modules": measured[-1]["modules"], "loaded": measured[-1]["loaded"],
                     "heavy": [m for m in measured[-1]["loaded"] if m in HEAVY],
                     "goal_s": GOALS_S.get(name)})
    table(f"startup: fresh processes, {repeats} runs of each in turn (warm caches)",
          ["command", "timed", "best s", "median s", "median CPU s", "modules", "of the heavy",
           "goal s"],
          [[row["command"], row["what"], f"{row['best_s']:.3f}", f"{row['median_s']:.3f}",
            f"{row['median_cpu_s']:.3f}", row["modules"], ", ".join(row["heavy"]) or "none",
            "" if row["goal_s"] is None else f"≤ {row['goal_s']:g}"] for row in rows])
    return {"rows": rows, "repeats": repeats, "heavy": list(HEAVY)}
