"""``hooke bench``: hooke's speed workloads, with their peers measured in the same run.

    hooke bench                       # every workload (no peers)
    hooke bench W1 W3 --peers         # some, with the installed peers (pip install hooke[bench])
    hooke bench --smoke               # a few steps of small sizes: a check that it runs
    hooke bench W6 startup --data docs/data   # also write docs/data/bench_W6.json …
    hooke bench gradient --peers              # a gradient's cost, against Warp's tape

Workloads (:data:`WORKLOADS`; one module per family): W1, W2 (:mod:`.cloth`: the explicit
cloth step against Taichi, Warp and Newton), W3, W4 (:mod:`.implicit`), W5 (:mod:`.sizes`),
W6 (:mod:`.saving`: a saved frame), W8 (:mod:`.pendulum`: seed 003 under RK45 against its
``solve_ivp`` script), ``joints`` and ``contact`` (against seed 002's C++ figures and the
book's Python), ``startup`` (fresh processes), ``gradient`` (:mod:`.gradient`: hooke.gradient
against the forward run, central differences and Warp's tape).

Contract: every workload prints its table and returns its data; :func:`run` prints the machine
and how busy it is, runs the workloads asked for, prints the share of the CPU that other
processes used during each, and with ``data`` writes each one's data with its provenance
(command, date, commit, machine, load: :func:`hooke.provenance.write_measurement`) to
``DATA/bench_<workload>.json``, from which ``scripts/readme_tables.py`` renders the README's
tables. A peer is timed in turn with hooke within every round (A B A B …), never in another run,
and a ratio to it is quoted only after hooke and the peer computed the same trajectory (the same
scheme: agreement to round-off); a peer that is not installed is reported as "not installed".
Times are medians (and ratios medians of per-round ratios). Benchmarks print; they assert
nothing. Importing this package loads nothing heavy; a workload's module is imported when it
runs.
"""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path

from ..errors import OutputWriteError
from ..provenance import LoadMonitor, command_line, write_measurement
from .measure import Options

# name → (module, function, what it measures)
WORKLOADS = {
    "W1": ("cloth", "w1", "cloth 100², symplectic Euler, against the peers"),
    "W2": ("cloth", "w2", "cloth 1000², symplectic Euler, against the peers"),
    "W3": ("implicit", "w3", "one implicit_euler Newton iteration's linear algebra"),
    "W4": ("implicit", "w4", "fast_mass_spring per local/global iteration"),
    "W5": ("sizes", "w5", "one step against the number of springs"),
    "W6": ("saving", "w6", "a saved frame; the pendulum with a frame every step"),
    "W8": ("pendulum", "w8", "seed 003's double pendulum, RK45, 100 s, against solve_ivp"),
    "joints": ("joints", "joints", "generalized_alpha on jointed scenes, against seed 002's C++"),
    "contact": ("contact", "contact", "implicit contact steps, against the book's Python"),
    "startup": ("startup", "startup", "import hooke, hooke --help, hooke run spring1d, hooke plot"),
    "gradient": ("gradient", "gradient", "hooke.gradient against its forward run, central "
                 "differences and Warp's tape"),
}
ALIASES = {"frames": "W6"}
NEEDS_BANDWIDTH = ("W1", "W2")


def resolve(names) -> list[str]:
    """Workload names as asked (case-insensitive, aliases allowed), in :data:`WORKLOADS` order;
    a ValueError naming the first unknown one."""
    known = {name.lower(): name for name in WORKLOADS}
    known.update(ALIASES)
    wanted = set()
    for name in names:
        if name.lower() not in known:
            raise ValueError(name)
        wanted.add(known[name.lower()])
    return [name for name in WORKLOADS if name in wanted] if names else list(WORKLOADS)


def measure_workload(name: str, options: Options, bandwidth: float = 0.0):
    """Run workload ``name`` under a :class:`~hooke.provenance.LoadMonitor`: (its data, the
    share of the CPU other processes used meanwhile)."""
    module, function, _ = WORKLOADS[name]
    workload = getattr(importlib.import_module(f"{__name__}.{module}"), function)
    with LoadMonitor() as load:
        data = workload(options, bandwidth)
    return data, load.others


def write(data_dir: Path, name: str, data: dict, command: str, others: float,
          smoke: bool) -> Path:
    """``DATA/bench_<name>.json``: the workload's rows and figures with their provenance."""
    data = dict(data)
    return write_measurement(Path(data_dir) / f"bench_{name}.json", data.pop("rows"), command,
                             others, smoke=smoke, **data)


def header(smoke: bool) -> float:
    """Print the software, the machine and how busy it is; return the copy bandwidth."""
    import numba
    import numpy as np

    from ..version import __version__
    from .measure import memory_bandwidth

    print(f"hooke {__version__} | numpy {np.__version__} | numba {numba.__version__} "
          f"({numba.get_num_threads()} threads) | {os.cpu_count()} CPUs")
    with LoadMonitor() as load:
        time.sleep(0.5)
    print(f"other processes' share of the CPU just now: {load.others:.0%} "
          f"| load average {os.getloadavg()[0]:.2f}")
    bandwidth = memory_bandwidth(32 if smoke else 256, repeats=3)
    print(f"memory bandwidth (NumPy copy, read + write): {bandwidth / 1e9:.1f} GB/s")
    return bandwidth


def run(names=(), options: Options | None = None, data_dir: Path | None = None,
        command: str | None = None) -> dict[str, dict]:
    """Run the workloads ``names`` (all when empty) as the module docstring says; their data by
    name."""
    options = options or Options()
    names = resolve(names)
    command = command or command_line("hooke bench")
    bandwidth = header(options.smoke)
    results = {}
    for name in names:
        print(f"\n== {name}: {WORKLOADS[name][2]}")
        data, others = measure_workload(name, options, bandwidth)
        print(f"  (other processes used {others:.0%} of the CPU during {name})")
        if data_dir is not None:
            try:
                print(f"  data: {write(data_dir, name, data, command, others, options.smoke)}")
            except OSError as error:  # a full disk: the table above is printed all the same
                why = error.strerror or error
                raise OutputWriteError("data", f"cannot write bench_{name}.json ({why}); its "
                                       "table is printed above", str(data_dir)) from None
        results[name] = data
    return results
