"""Where a measured number comes from: the command, the date, the software and the machine.

The README's measured tables are rendered (``scripts/readme_tables.py``) from data files in
``docs/data/`` that ``hooke study`` and the benchmark scripts write with
:func:`write_measurement`: a JSON object with the ``rows`` measured and, beside them,

- ``command``: the command line that wrote the file (what a reader reruns);
- ``measured``: the date (UTC), hooke's version and git commit, the versions of Python, NumPy,
  SciPy and Numba, the CPU, its core count and Numba's threads, the BLAS kernel, and how busy the
  machine was: ``others_cpu_share``, the share of the CPU other processes used while the rows
  were measured (:class:`LoadMonitor`), and the load average at the end;
- ``smoke``: whether the rows come from a benchmark's smoke mode (a check that it runs, not a
  measurement; the README says so in the table).

The BLAS kernel is recorded because it decides round-off in NumPy's dot products: OpenBLAS picks a
kernel for the CPU it runs on (AVX-512 ``SkylakeX``, AVX2 ``Haswell`` or ``Zen``, …; the
variable ``OPENBLAS_CORETYPE`` forces one), the kernels sum in different orders, and a chaotic
run amplifies that to different results (seed 003's pendulum study does).
"""

from __future__ import annotations

import ctypes
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

from .io.outputs import written_aside
from .version import __version__

# The environment variables that change what a measurement computes or how fast; a command line
# shows those that are set, so that rerunning it measures the same thing.
SETTINGS = ("OPENBLAS_CORETYPE", "NUMBA_NUM_THREADS", "OMP_NUM_THREADS")


class LoadMonitor:
    """Context manager: ``others`` is the share of the machine's CPU time that other processes
    used while it was open (from /proc/stat, minus this process and its children); NaN where
    /proc/stat is missing."""

    def __enter__(self):
        self._start = self._sample()
        self.others = float("nan")
        return self

    def __exit__(self, *exc):
        end = self._sample()
        if self._start is not None and end is not None:
            busy, total, own = (b - a for a, b in zip(self._start, end))
            self.others = max(0.0, busy - own) / max(total, 1e-9)
        return False

    @staticmethod
    def _sample():
        try:
            fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        except OSError:
            return None
        ticks = os.sysconf("SC_CLK_TCK")
        times = os.times()
        own = (times.user + times.system + times.children_user + times.children_system) * ticks
        idle = fields[3] + fields[4]
        return sum(fields) - idle, sum(fields), own


def command_line(program: str, arguments: list[str] | None = None) -> str:
    """``program`` and this process's arguments as a shell command, prefixed by the settings of
    :data:`SETTINGS` that are set (``OPENBLAS_CORETYPE=Haswell hooke study …``)."""
    arguments = sys.argv[1:] if arguments is None else arguments
    settings = [f"{name}={os.environ[name]}" for name in SETTINGS if name in os.environ]
    return " ".join([*settings, program, *map(shlex.quote, arguments)])


def blas_kernel() -> str | None:
    """The kernel OpenBLAS chose for this CPU (NumPy's BLAS), or None for another BLAS."""
    import numpy  # noqa: F401 - loads NumPy's OpenBLAS, whose path /proc/self/maps then shows

    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    paths = {line.split()[-1] for line in maps.splitlines() if "openblas" in line.lower()}
    for path in sorted(paths):
        library = ctypes.CDLL(path)
        for symbol in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                       "openblas_get_corename64_", "openblas_get_corename"):
            function = getattr(library, symbol, None)
            if function is not None:
                function.restype = ctypes.c_char_p
                return function().decode()
    return None


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what the platform module knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit() -> str | None:
    """The short commit of the checkout hooke runs from, ``+`` when its code (src, benchmarks)
    has uncommitted changes; None outside a git checkout."""
    git = ["git", "-C", str(Path(__file__).resolve().parents[2])]
    try:
        commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no", "--",
                                "src", "benchmarks"], capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+" if dirty else "")


def machine_and_software(others_cpu_share: float) -> dict:
    """The ``measured`` record of a data file (module docstring)."""
    import numba
    import numpy
    import scipy

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hooke": __version__, "commit": git_commit(),
        "python": platform.python_version(), "numpy": numpy.__version__,
        "scipy": scipy.__version__, "numba": numba.__version__,
        "cpu": cpu_model(), "cores": os.cpu_count(), "numba_threads": numba.get_num_threads(),
        "blas_kernel": blas_kernel(),
        "others_cpu_share": round(others_cpu_share, 3),
        "load_average": round(os.getloadavg()[0], 2),
    }


def write_measurement(path, rows: list[dict], command: str, others_cpu_share: float,
                      smoke: bool = False, **extra) -> Path:
    """Write ``rows`` with their provenance (module docstring) as JSON to ``path``; ``extra``
    keys (a workload's own figures) go beside ``rows``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"command": command, "measured": machine_and_software(others_cpu_share),
            "smoke": smoke, **extra, "rows": rows}
    text = json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    with written_aside(path) as partial:  # a failed write leaves an earlier table as it was
        partial.write_text(text, encoding="utf-8")
    return path
