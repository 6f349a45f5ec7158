"""Regenerate the measured tables of README.md from the data files their commands write.

Every measured table of the README sits in a generated block:

    <!-- begin NAME -->
    ...the text a renderer below makes from docs/data/...
    <!-- end NAME -->

A renderer (``@block("NAME")``) reads the data files a command wrote into ``docs/data/`` and
returns the block's Markdown, whose visible text names that command (the reader sees where every
number comes from; :func:`render` refuses a block that does not). So a number in a table is never
typed by hand: change the code, rerun the command, rerun this script.

    .venv/bin/python scripts/readme_tables.py            # rewrite README.md's blocks
    .venv/bin/python scripts/readme_tables.py --check    # exit 1 when a block differs (a test runs it)

The test suite runs ``--check``: a hand edit inside a block, or a data file changed without
rerunning this script, fails it.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DATA = ROOT / "docs" / "data"

BLOCK = re.compile(r"<!-- begin (?P<name>[\w-]+) -->\n(?P<body>.*?)<!-- end (?P=name) -->\n",
                   re.DOTALL)


class Renderer:
    """One block: its command (shown to the reader) and the function that renders its data."""

    def __init__(self, name: str, command: str, function: Callable[[Path], str]):
        self.name, self.command, self.function = name, command, function

    def __call__(self, data: Path) -> str:
        text = self.function(data).rstrip("\n") + "\n"
        if f"`{self.command}`" not in text:
            raise ValueError(f"block {self.name!r} does not name its command `{self.command}`")
        return text


RENDERERS: dict[str, Renderer] = {}


def block(name: str, command: str):
    """Register the renderer of the README block ``name``, whose data ``command`` writes."""
    def register(function: Callable[[Path], str]) -> Callable[[Path], str]:
        if name in RENDERERS:
            raise ValueError(f"block {name!r} registered twice")
        RENDERERS[name] = Renderer(name, command, function)
        return function
    return register


def read_csv(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV file as dicts of strings (a renderer formats them)."""
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def markdown_table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    """A Markdown table; ``align`` one character per column: l (default) or r."""
    align = align or "l" * len(header)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = [header, rule, *rows]
    return "".join("| " + " | ".join(cells) + " |\n" for cells in lines)


def render(text: str, data: Path = DATA) -> str:
    """``text`` (the README) with every generated block re-rendered from ``data``. A block with
    no renderer, or a renderer with no block, is an error: both name what is missing."""
    seen = set()

    def replace(match: re.Match) -> str:
        name = match["name"]
        if name not in RENDERERS:
            raise ValueError(f"README block {name!r} has no renderer in {Path(__file__).name}")
        seen.add(name)
        return f"<!-- begin {name} -->\n{RENDERERS[name](data)}<!-- end {name} -->\n"

    result = BLOCK.sub(replace, text)
    missing = sorted(set(RENDERERS) - seen)
    if missing:
        raise ValueError(f"renderers without a README block: {', '.join(missing)}")
    return result


# == Figures: hooke study and the benchmarks ===============================================

# Data files written with hooke.provenance.write_measurement: {"command", "measured", "smoke",
# …, "rows"}. A missing file renders as a line naming the command that writes it.

def read_measurement(path: Path) -> dict | None:
    """A data file of :func:`hooke.provenance.write_measurement`, or None where it is missing."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def not_measured(command: str) -> str:
    return f"Not measured yet: run `{command}`.\n"


def measured_block(name: str, command: str, filename: str):
    """Register the renderer of a block drawn from one data file of ``command``:
    ``function(measurement)``; without the file, the block names the command that writes it."""
    def register(function: Callable[[dict], str]) -> Callable[[dict], str]:
        def render(data: Path) -> str:
            measurement = read_measurement(data / filename)
            return not_measured(command) if measurement is None else function(measurement)
        block(name, command)(render)
        return function
    return register


def provenance(data: dict, load: bool = True) -> str:
    """Where and when: date, commit, CPU, threads, BLAS kernel and, for timings (``load``), how
    busy the machine was; SMOKE in bold when the rows come from a smoke run."""
    m = data["measured"]
    commit = f", commit {m['commit']}" if m.get("commit") else ""
    text = (f"{m['date'][:10]}{commit}, {m['cpu']}, {m['cores']} cores, {m['numba_threads']} "
            f"Numba threads, OpenBLAS kernel {m['blas_kernel']}")
    if load:
        text += f"; other processes used {m['others_cpu_share']:.0%} of the CPU meanwhile"
    return ("**SMOKE RUN (a few steps of small sizes): these are not measurements** — " + text
            if data.get("smoke") else text)


def significant(value: float | None) -> str:
    """A table cell: 3 significant digits from 1 up (13.9, 4,840), 2 from 0.1 (0.14), and
    e-notation below 0.1 (2.8e-2, 2 digits) and from 1e6 up (1.98e8, 3 digits)."""
    if value is None:
        return "–"
    magnitude = abs(value)
    if value == 0 or 0.1 <= magnitude < 1e6:
        return f"{value:,.0f}" if magnitude >= 1000 else f"{value:.{3 if magnitude >= 1 else 2}g}"
    mantissa, exponent = f"{value:.{1 if magnitude < 1 else 2}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


STUDY = "docs/data/pendulum_correction.json"
STUDY_COMMAND = f"hooke study pendulum-correction --data {STUDY}"
# Seed 003's own script (../shared/seeds/003_*.txt: SciPy's solve_ivp, RK45, rtol = atol = 1e-4),
# run unchanged on our 2-core machine in 2026-11 for the README (commit 396d2ac): max ΔL over
# 100 s [m]. Not regenerated here: the seed's code is not part of hooke.
SEED_003_BETA_C = {0.0: 13.9, 0.1: 0.079, 0.2: 5.1e-2, 0.3: 1.2e-2, 0.4: 9.5e-3}  # at k_c = 0
SEED_003_K_C = {0.01: 1.2e-2, 0.02: 9.3e-3, 0.03: 9.5e-3, 0.04: 5.4e-3}          # at β_c = 0.2
# The same script at β_c = 0.4, k_c = 0, 20 runs with the initial speed of the top mass changed by
# 0, 1e-10, …, 1.9e-9 m/s: the spread of max ΔL that chaos makes of a change at round-off level.
SEED_003_PERTURBED = {"runs": 20, "smallest": 8.9e-3, "largest": 1.7e-2, "median": 1.2e-2,
                      "below_1e-2": 6}
# The study's three tables: (key, title, the seed's numbers where it measured them).
STUDY_TABLES = (("beta_c", "β_c (k_c = 0)", SEED_003_BETA_C),
                ("k_c", "k_c (β_c = 0.2)", SEED_003_K_C),
                ("other", "other stabilisations", None))


def study_tables(rows: list[dict]) -> dict[str, dict]:
    """One run's max ΔL by table and column: the β_c sweep at k_c = 0, the k_c sweep at β_c = 0.2
    (k_c > 0; k_c = 0 is in the β_c table), the other stabilisations by name."""
    tables: dict[str, dict] = {"beta_c": {}, "k_c": {}, "other": {}}
    for row in rows:
        if row["stabilization"] != "correction":
            tables["other"][row["curve"]] = row["max_drift_m"]
        elif row["k_c"] == 0:
            tables["beta_c"][row["beta_c"]] = row["max_drift_m"]
        elif row["beta_c"] == 0.2:
            tables["k_c"][row["k_c"]] = row["max_drift_m"]
    return tables


@block("pendulum-correction", STUDY_COMMAND)
def pendulum_correction(data: Path) -> str:
    run = read_measurement(data / Path(STUDY).name)
    if run is None:
        return not_measured(STUDY_COMMAND)
    text = (f"Max ΔL over {run['t_end']:g} s [m]: `{STUDY_COMMAND}` "
            f"({provenance(run, load=False)}; the same bits with any other OpenBLAS kernel: "
            "`tests/test_reliability.py` runs the pendulum with three); seed 003's own script, "
            "run once on a machine like ours and kept as data in `scripts/readme_tables.py` "
            "(its stage sums go through the BLAS: another CPU gives other values):\n\n")
    measured = study_tables(run["rows"])
    for key, title, seed in STUDY_TABLES:
        columns = list(seed or measured[key])
        rows = [["hooke"] + [significant(measured[key].get(column)) for column in columns]]
        if seed:
            rows.append(["seed 003's code"] + [significant(seed[column]) for column in columns])
        header = [title] + [f"{c:g}" if isinstance(c, float) else c for c in columns]
        text += markdown_table(header, rows, "l" + "r" * len(columns)) + "\n"
    spread = SEED_003_PERTURBED
    text += (f"Seed 003's own script at β_c = 0.4, run {spread['runs']} times with the top mass's "
             f"initial speed changed by 0, 1e-10, …, 1.9e-9 m/s, gave max ΔL from "
             f"{significant(spread['smallest'])} to {significant(spread['largest'])} (median "
             f"{significant(spread['median'])}; below 1e-2 in {spread['below_1e-2']} of "
             f"{spread['runs']} runs, the unchanged one among them).\n")
    return text


BENCH_COMMAND = "python benchmarks/bench.py --data docs/data"
PEER_NAMES = {"numba_gather": "Numba gather", "taichi": "Taichi", "warp": "Warp",
              "newton": "Newton"}
# The goals of issue 5 (requirements, not measurements).
GOAL_W1_OVER_TAICHI = 1.5
GOAL_W1_OVER_FASTEST = 1.5  # issue 16 §2: over the fastest peer of the same run
GOAL_W2_SPRING_STEPS = 1.5e8
GOAL_W3_OVER_BEST = 1.3  # issue 16 §3: a whole step over (Newton iterations × the best solve)
GOAL_W4_MS = 3.0
GOAL_CONTACT_OVER_BOOK = 50.0


def verdict(met: bool) -> str:
    return "met" if met else "**not met**"


def when(data: dict) -> str:
    """A row's date, commit and load (and SMOKE), for a column beside its numbers."""
    m = data["measured"]
    smoke = "**SMOKE RUN, not a measurement**; " if data.get("smoke") else ""
    return (f"{smoke}{m['date'][:10]}, commit {m['commit']}, other processes used "
            f"{m['others_cpu_share']:.0%} of the CPU")


def explicit_row(label: str, data: dict, goal) -> list[str]:
    """A W1/W2 row: hooke's best rate (and on 1 thread), each peer's with hooke's ratio over it
    (the median of the per-round ratios), and ``goal(data, rows by name)``."""
    rows = {row["name"]: row for row in data["rows"]}
    hooke_rows = [row for name, row in rows.items() if name.startswith("hooke")]
    best = max(hooke_rows, key=lambda row: row["steps_per_s"])
    one = rows.get("hooke (1 thread)")
    single = "" if one is None or one is best else f"; {significant(one['steps_per_s'])} on 1 thread"
    hooke = (f"{significant(best['steps_per_s'])} steps/s {best['name'].removeprefix('hooke ')} "
             f"= {significant(best['steps_per_s'] * data['springs'])} springs·steps/s{single}")
    peers = [f"{PEER_NAMES.get(name, name)} {data['peer_versions'].get(name, '')} "
             f"{significant(row['steps_per_s'])} (hooke ×{significant(row['hooke_over_peer'])})"
             for name, row in rows.items() if not name.startswith("hooke")]
    workload = f"{label} cloth {data['n']}², {data['springs']:,} springs, symplectic Euler"
    return [workload, hooke, ", ".join(peers) or "none measured", goal(data, rows), when(data)]


def w1_goal(data: dict, rows: dict) -> str:
    """Issue 5's goal (over Taichi) and issue 16's (over the fastest peer that agreed)."""
    taichi = rows.get("taichi")
    if taichi is None or taichi["hooke_over_peer"] is None:
        text = f"≥ {GOAL_W1_OVER_TAICHI:g} × Taichi in the same run: Taichi not measured"
    else:
        ratio = taichi["hooke_over_peer"]
        text = (f"≥ {GOAL_W1_OVER_TAICHI:g} × Taichi in the same run: ×{significant(ratio)}, "
                f"{verdict(ratio >= GOAL_W1_OVER_TAICHI)}")
    compared = [(row["hooke_over_peer"], name) for name, row in rows.items()
                if not name.startswith("hooke") and row["hooke_over_peer"] is not None]
    if compared:
        ratio, name = min(compared)
        text += (f"; ≥ {GOAL_W1_OVER_FASTEST:g} × the fastest peer (issue 16): "
                 f"×{significant(ratio)} over {PEER_NAMES.get(name, name)}, "
                 f"{verdict(ratio >= GOAL_W1_OVER_FASTEST)}")
    return text


def w2_goal(data: dict, rows: dict) -> str:
    best = max(row["steps_per_s"] for name, row in rows.items() if name.startswith("hooke"))
    return (f"≥ {significant(GOAL_W2_SPRING_STEPS)} springs·steps/s: "
            f"{verdict(best * data['springs'] >= GOAL_W2_SPRING_STEPS)}")


def w3_row(data: dict) -> list[str]:
    """W3: whole implicit_euler steps first (what a run pays), then one Newton iteration's
    linear algebra with every solver; the goal: each whole step (assembly, line search and
    convergence test included) within ``GOAL_W3_OVER_BEST`` × its Newton iterations × the best
    solver's factorisation + solve."""
    rows = data["rows"]
    chosen = next(row for row in rows if row["chosen"])
    best = min(row["total_ms"] for row in rows)
    steps = "; ".join(f"from {step['start']} {significant(step['ms'])} ms "
                      f"({significant(step['newton_iterations'])} Newton "
                      f"iteration{'' if step['newton_iterations'] == 1 else 's'})"
                      for step in data["whole_steps"])
    hooke = (f"whole step {steps}. Per Newton iteration: assembly "
             f"{significant(data['assembly_ms'])} ms, {chosen['solver']} (its choice, analysis "
             f"reused) factorisation {significant(chosen['factorisation_ms'])} + solve "
             f"{significant(chosen['solve_ms'])} = {significant(chosen['total_ms'])} ms")
    others = ", ".join(f"{row['solver']} {significant(row['factorisation_ms'])} + "
                       f"{significant(row['solve_ms'])} = {significant(row['total_ms'])}"
                       for row in rows if row["hooke"] and row is not chosen)
    peers = ", ".join(f"{row['solver']} {significant(row['total_ms'])}"
                      for row in rows if not row["hooke"])
    worst = max(step["ms"] / (max(step["newton_iterations"], 1.0) * best)
                for step in data["whole_steps"])
    goal = (f"a whole step ≤ {GOAL_W3_OVER_BEST:g} × Newton iterations × the best solver's "
            f"factorisation + solve: ×{significant(worst)} (the worse start), "
            f"{verdict(worst <= GOAL_W3_OVER_BEST)}")
    workload = f"W3 one `implicit_euler` step, cloth {data['n']}², {data['dofs']:,} DOFs"
    return [workload, hooke, f"per Newton iteration, ms: hooke with {others or 'no other solver'}"
                             f" (analysis reused); redoing the analysis: {peers}", goal, when(data)]


def w4_row(data: dict) -> list[str]:
    row = data["rows"][0]
    hooke = (f"{significant(row['ms_per_iteration'])} ms per local/global iteration "
             f"(prefactorisation {significant(row['prefactorisation_ms'])} ms, once)")
    goal = (f"≤ {GOAL_W4_MS:g} ms per iteration: "
            f"{verdict(row['ms_per_iteration'] <= GOAL_W4_MS)}")
    return [f"W4 `fast_mass_spring`, {data['nodes']:,} nodes", hooke, "", goal, when(data)]


def bandwidth_text(w1: dict | None, w2: dict | None) -> str:
    """The bandwidth bound of the fused explicit step against hooke's best W1/W2 rate."""
    parts = []
    for label, data in (("W1", w1), ("W2", w2)):
        if data is None:
            continue
        best = max(row["steps_per_s"] for row in data["rows"] if row["name"].startswith("hooke"))
        megabytes = data["bytes_per_spring"] * data["springs"] / 1e6
        parts.append(f"{label} moves {significant(megabytes)} MB per step, which bounds it at "
                     f"{significant(data['bound_steps_per_s'])} steps/s; hooke reaches "
                     f"{best / data['bound_steps_per_s']:.0%} of that")
    if not parts:
        return ""
    data = w1 or w2
    return (f"Memory bandwidth (a NumPy copy on one core, read + write): "
            f"{significant(data['bandwidth_GB_per_s'])} GB/s. The fused explicit step moves "
            f"{significant(data['bytes_per_spring'])} bytes per spring (its kernels' arrays read, its "
            f"scratch arrays written and read, x and v in and out): {'; '.join(parts)}. A bound is real only when "
            "the step's data exceed the caches (W2); for W1 it is a yardstick.\n")


def bench_file(data: Path, workload: str) -> dict | None:
    return read_measurement(data / f"bench_{workload}.json")


@block("speed", BENCH_COMMAND)
def speed(data: Path) -> str:
    found = {name: bench_file(data, name) for name in ("W1", "W2", "W3", "W4")}
    if not any(found.values()):
        return not_measured(BENCH_COMMAND)
    first = next(value for value in found.values() if value is not None)
    m = first["measured"]
    counts = {name: found[name]["rounds"] for name in ("W1", "W2") if found[name]}
    if len(set(counts.values())) == 1:
        rounds = f"; {' and '.join(counts)} in {next(iter(counts.values()))} rounds"
    else:
        rounds = "; " + ", ".join(f"{name} in {count} rounds" for name, count in counts.items())
    rounds = rounds if counts else ""
    text = (f"`{BENCH_COMMAND}` (each workload writes `docs/data/bench_W<k>.json`) on "
            f"{m['cpu']}, {m['cores']} cores, {m['numba_threads']} Numba threads, OpenBLAS kernel "
            f"{m['blas_kernel']}: medians of {first['repeats']} runs after a warm-up{rounds}, "
            "each measuring hooke and then every peer, whose ratios are medians over the rounds "
            "of the ratios within a round:\n\n")
    rows = []
    for name, make in (("W1", lambda d: explicit_row("W1", d, w1_goal)),
                       ("W2", lambda d: explicit_row("W2", d, w2_goal)),
                       ("W3", w3_row), ("W4", w4_row)):
        rows.append(make(found[name]) if found[name] else
                    [name, f"not measured yet: `{BENCH_COMMAND}`", "", "", ""])
    text += markdown_table(["workload", "hooke", "peers (same run)", "goal (issues 5, 16)", "measured"],
                           rows)
    return text + "\n" + bandwidth_text(found["W1"], found["W2"])


@block("speed-w5", BENCH_COMMAND)
def speed_w5(data: Path) -> str:
    """W5: per scene and size the explicit and the implicit step side by side, then the fits."""
    w5 = bench_file(data, "W5")
    if w5 is None:
        return not_measured(BENCH_COMMAND)
    pairs: dict[tuple, dict] = {}
    for row in w5["rows"]:
        pairs.setdefault((row["scene"], row["n"], row["dim"]), {})[row["integrator"]] = row
    rows = []
    for (scene, n, dim), kinds in pairs.items():
        explicit, implicit = kinds.get("symplectic_euler"), kinds.get("implicit_euler_linear")
        springs = next(row["springs"] for row in kinds.values() if not row["failed"])

        def ms(row):
            return "failed" if row is None or row["failed"] else significant(row["ms_per_step"])

        def rss(row):
            return "–" if row is None or row["failed"] else significant(row["peak_rss_MiB"])

        rows.append([f"{scene} {n}{'³' if dim == 3 else '²'}", f"{springs:,}", ms(explicit),
                     "" if ms(explicit) == "failed"
                     else significant(1e6 * explicit["ms_per_step"] / springs),
                     ms(implicit), "" if implicit is None else implicit["solver"],
                     f"{rss(explicit)} / {rss(implicit)}"])
    fits = "; ".join(f"{fit['scene']} {fit['integrator']}: time ∝ springs^"
                     f"{fit['exponent']:.2f}, peak memory {significant(fit['bytes_per_spring'])} "
                     "bytes per spring" for fit in w5["fits"])
    return (f"`{BENCH_COMMAND}` W5 ({provenance(w5)}), one step against the size, each size in "
            "a fresh process, `solver=\"auto\"` (its choice in the solver column):\n\n"
            + markdown_table(["scene", "springs", "symplectic Euler ms", "ns/spring",
                              "implicit_euler_linear ms", "solver",
                              "peak RSS MiB (explicit / implicit)"], rows, "lrrrrlr")
            + f"\nFitted (slopes over the sizes; memory: of peak RSS against springs): {fits}.\n")


JOINTS_COMMAND = "python benchmarks/bench_joints.py --data docs/data"


@measured_block("joints", JOINTS_COMMAND, "bench_joints.json")
def joints(bench: dict) -> str:
    rows = [[row["case"], str(row["particles"]), str(row["joints"]),
             significant(row["steps_per_s"]), significant(row["cpp_steps_per_s"]),
             "" if row["cpp_steps_per_s"] is None
             else f"{significant(row['steps_per_s'] / row['cpp_steps_per_s'])}×",
             significant(row["newton_iterations_per_step"]), str(row["split_steps"])]
            for row in bench["rows"]]
    return (f"`{JOINTS_COMMAND}` ({provenance(bench)}; medians of {bench['repeats']} runs; "
            "C++: seed 002's code as the issue measured it on a 2-core machine like ours, not "
            "rerun):\n\n"
            + markdown_table(["scene", "particles", "joints", "steps/s", "C++ steps/s", "ratio",
                              "Newton iterations/step", "split steps"], rows,
                             "lrrrrrrr"))


CONTACT_COMMAND = "python benchmarks/bench_contact.py --data docs/data"
# Seed 004's book: the step of the square drop's first contact.
BOOK_FIRST_CONTACT = {"square_drop": 32}


@measured_block("contact", CONTACT_COMMAND, "bench_contact.json")
def contact(bench: dict) -> str:
    rows = []
    for row in bench["rows"]:
        first = "–" if row["first_contact"] is None else str(row["first_contact"])
        if row["name"] in BOOK_FIRST_CONTACT:
            first += f" (the book: {BOOK_FIRST_CONTACT[row['name']]})"
        rows.append([f"`{row['name']}`", str(row["particles"]), significant(row["us_step"]),
                     significant(row["us_simulate"]),
                     "(CG: generic)" if row["us_generic"] is None
                     else significant(row["us_generic"]),
                     significant(row["newton"]), first, significant(row["min_distance"])])
    text = (f"`{CONTACT_COMMAND}` ({provenance(bench)}; µs per step, medians of "
            f"{bench['repeats']} runs: the step alone, with a frame saved every step, and the step "
            "with the compiled Newton solve switched off):\n\n"
            + markdown_table(["scene", "nodes", "µs/step", "with frames", "generic path",
                              "Newton iterations/step", "first contact (step)",
                              "min distance [m]"], rows, "lrrrrrlr"))
    peer = bench.get("peer")
    if peer:
        text += (f"\nAgainst a peer in the same process — the book's algorithm in the book's "
                 f"Python style (`hooke.bench.peers.book`: a loop per spring for energy, "
                 f"gradient and Hessian, an eigen-decomposition per spring, SciPy sparse assembly "
                 f"and `spsolve`), its runs alternated with hooke's: on the {peer['steps']} steps "
                 f"of `square_drop` hooke takes {significant(peer['hooke_ms_per_step'])} ms per "
                 f"step, the peer {significant(peer['peer_ms_per_step'])} ms, a median ratio of "
                 f"{significant(peer['ratio'])}× (the goal: {GOAL_CONTACT_OVER_BOOK:g}×, "
                 f"{verdict(peer['ratio'] >= GOAL_CONTACT_OVER_BOOK)}); hooke takes "
                 f"{significant(peer['hooke_newton_per_step'])} Newton iterations per step, the "
                 f"peer {significant(peer['peer_newton_per_step'])}, and their trajectories agree "
                 f"to {significant(peer['positions_agree_m'])} m.\n")
    return text + self_contact_text(bench)


GOAL_CLOTH_80_MS = 100.0  # issue 14 §7: cloth_sphere at 80² under 100 ms per step


def self_contact_text(bench: dict) -> str:
    """The self-contact rows of ``bench_contact.json`` and the squares' peer (issue 14 §7)."""
    rows = [[f"`{row['name']}`", str(row["particles"]), str(row["springs"]),
             significant(row["from_s"]), str(row["steps"]), significant(row["ms_step"]),
             significant(row["newton"]), f"{row['detection_share']:.0%}"]
            for row in bench.get("self_contact") or []]
    if not rows:
        return ""
    text = ("\nSelf-contact (ms per step over the steps after an untimed lead-in, medians of "
            f"{bench['repeats']} runs from the same state; detection: ipctk's pair building and "
            "CCD):\n\n"
            + markdown_table(["case", "particles", "springs", "from [s]", "steps", "ms/step",
                              "Newton iterations/step", "detection"], rows, "lrrrrrrr"))
    cloth = next((row for row in bench["self_contact"] if row["name"] == "cloth_sphere:80"), None)
    if cloth:
        text += (f"\n`cloth_sphere` at 80²: {significant(cloth['ms_step'])} ms per step (the goal: "
                 f"under {GOAL_CLOTH_80_MS:g} ms, "
                 f"{verdict(cloth['ms_step'] < GOAL_CLOTH_80_MS)}).\n")
    peer = bench.get("self_contact_peer")
    if peer:
        text += (f"\nAgainst the book's self-contact simulator in its Python style "
                 f"(`hooke.bench.peers.book_self_contact`: loops over springs, nodes and "
                 f"point–edge pairs, an eigen-decomposition per element, its additive CCD, "
                 f"`spsolve`), alternated with hooke: on the {peer['steps']} steps of "
                 f"`squares_self_contact` hooke takes {significant(peer['hooke_ms_per_step'])} ms "
                 f"per step, the peer {significant(peer['peer_ms_per_step'])} ms, a median ratio "
                 f"of {significant(peer['ratio'])}× (the goal: {GOAL_CONTACT_OVER_BOOK:g}×, "
                 f"{verdict(peer['ratio'] >= GOAL_CONTACT_OVER_BOOK)}); Newton iterations per "
                 f"step {significant(peer['hooke_newton_per_step'])} and "
                 f"{significant(peer['peer_newton_per_step'])}, trajectories agreeing to "
                 f"{significant(peer['positions_agree_m'])} m.\n")
    return text


FRAMES_COMMAND = "hooke bench W6 --data docs/data"
GOAL_FRAME_US = 5.0  # issue 16: a saved frame of a small system
SMALL_SYSTEMS = ("spring1d", "pendulum")


@measured_block("frames", FRAMES_COMMAND, "bench_W6.json")
def frames(bench: dict) -> str:
    rows = []
    for row in bench["rows"]:
        goal = (f"≤ {GOAL_FRAME_US:g} µs: {verdict(row['us_per_frame'] <= GOAL_FRAME_US)}"
                if row["case"] in SMALL_SYSTEMS else "")
        cpp = row["cpp_steps_per_s"]
        if cpp is not None:
            cpp = (f"{significant(cpp)} "
                   f"(hooke ×{significant(row['steps_per_s_with_frames'] / cpp)})")
        rows.append([f"`{row['case']}`", f"`{row['integrator']}`", significant(row["dt"]),
                     significant(row["us_per_step_without_frames"]),
                     significant(row["us_per_frame"]), significant(row["us_per_frame_stored"]),
                     significant(row["us_per_frame_saving_alone"]),
                     significant(row["steps_per_s_with_frames"]), cpp or "", goal])
    return (f"`{FRAMES_COMMAND}` ({provenance(bench)}; medians over {bench['repeats']} rounds of "
            "four runs in turn: a frame every step or only the first and last, in memory or "
            "written to a trajectory file). A saved frame costs the difference per frame; it "
            "includes the integrator's cost of being called once per frame, which the saving "
            "alone (recording and deriving the same frames, no stepping) does not. Seed 002's "
            "C++ as the issue measured it, not rerun:\n\n"
            + markdown_table(["scene", "integrator", "dt [s]", "µs/step without frames",
                              "µs per saved frame", "stored in the file", "saving alone",
                              "steps/s with a frame every step", "C++ steps/s (ratio)",
                              "goal (issue 16)"], rows, "llrrrrrrrl"))


SEED_003_COMMAND = "hooke bench W8 --data docs/data"


@measured_block("seed-003-frames", SEED_003_COMMAND, "bench_W8.json")
def seed_003_frames(bench: dict) -> str:
    """W8: seed 003's double pendulum under rk45 with and without its frames, and the seed's
    script; a saved frame's cost against W6's goal, the speed against issue 16's."""
    rows = []
    for row in bench["rows"]:
        over = row["seed_over_this"]
        rows.append([row["name"], significant(1e3 * row["seconds"]),
                     "" if over is None else f"×{significant(over)}"])
    frame, frame_goal = bench["us_per_frame"], bench["goal_us_per_frame"]
    with_frames = bench["rows"][0]["seed_over_this"]
    agreement = (f"the positions agree with the seed's to {bench['difference_m']:.1e} m over "
                 "the first second (round-off: the ratios are quoted)" if bench["agrees"] else
                 f"the positions differ from the seed's by {bench['difference_m']:.1e} m over "
                 "the first second (more than round-off: no ratio is quoted)")
    speed = ("" if with_frames is None else
             f" With its frames hooke runs ×{significant(with_frames)} the seed's speed (goal "
             f"≥ ×{bench['goal_over_seed']:g}: "
             f"{verdict(with_frames >= bench['goal_over_seed'])}).")
    return (f"`{SEED_003_COMMAND}` ({provenance(bench)}; medians of {bench['repeats']} rounds "
            f"in turn, {bench['t_end']:g} s of the `pendulum` scene, rk45 with "
            "rtol = atol = 1e-4, a frame every 0.01 s as the seed's `t_eval`):\n\n"
            + markdown_table(["run", "ms", "seed's time / this"], rows, "lrr")
            + f"\nA saved frame costs {significant(frame)} µs (the two hooke runs' difference "
            f"per frame; goal ≤ {frame_goal:g} µs: {verdict(frame <= frame_goal)}); "
            f"{agreement}; max ΔL over the run: hooke {significant(bench['max_length_error_m'])} "
            f"m, the seed {significant(bench['seed_max_length_error_m'])} m.{speed}\n")


STARTUP_COMMAND = "hooke bench startup --data docs/data"


@measured_block("startup", STARTUP_COMMAND, "bench_startup.json")
def startup(bench: dict) -> str:
    rows = []
    for row in bench["rows"]:
        goal = ("" if row["goal_s"] is None else
                f"≤ {row['goal_s']:g} s: {verdict(row['best_s'] <= row['goal_s'])}")
        rows.append([f"`{row['command']}`", row["what"], significant(row["best_s"]),
                     significant(row["median_s"]), significant(row["median_cpu_s"]),
                     str(row["modules"]), ", ".join(row["heavy"]) or "none", goal])
    return (f"`{STARTUP_COMMAND}` ({provenance(bench)}; {bench['repeats']} fresh processes of each "
            "command in turn, warm caches; heavy: of " + ", ".join(bench["heavy"]) + "):\n\n"
            + markdown_table(["command", "timed", "best s", "median s", "median CPU s",
                              "modules loaded", "heavy modules loaded", "goal (issue 16)"], rows,
                             "llrrrrll"))


GRADIENT_COMMAND = "hooke bench gradient --peers --data docs/data"
GOAL_GRADIENT_OVER_FORWARD = 3.0  # issue 18 §4


def times_forward(row: dict) -> str:
    """A cell: the milliseconds and, when quoted, the ratio to the forward run."""
    ms = significant(None if row["seconds"] is None else row["seconds"] * 1e3)
    return ms if row["over_forward"] is None else f"{ms} (×{significant(row['over_forward'])})"


def warp_cell(case: dict) -> str:
    warp = case.get("warp")
    if warp is None:
        return ""
    if warp["gradient"] is None:
        return warp["status"]
    rows = {row["name"]: row for row in case["rows"]}
    ms = significant(rows["Warp tape gradient"]["seconds"] * 1e3)
    if not warp["agrees"]:
        difference = significant(warp["gradient_relative_difference"])
        return f"{ms} ms, differs from hooke's by {difference} relative: no ratio"
    ratio = warp["hooke_over_warp"]
    faster = (f"hooke ×{significant(ratio)} faster" if ratio >= 1 else
              f"Warp ×{significant(1 / ratio)} faster")
    return (f"Warp {warp['version']}: {ms} ms (×{significant(warp['warp_gradient_over_forward'])} "
            f"its forward run); {faster}; gradients agree to "
            f"{significant(warp['gradient_relative_difference'])} relative")


@measured_block("gradient", GRADIENT_COMMAND, "bench_gradient.json")
def gradient(bench: dict) -> str:
    rows = []
    for case in bench["rows"]:
        by_name = {row["name"]: row for row in case["rows"]}
        checkpointed = by_name[f"hooke.gradient, {case['sqrt_checkpoints']} checkpoints"]
        central = next(row for name, row in by_name.items() if name.startswith("central"))
        ratio = case["gradient_over_forward"]
        goal = (f"≤ {GOAL_GRADIENT_OVER_FORWARD:g}×: "
                f"{verdict(ratio is not None and ratio <= GOAL_GRADIENT_OVER_FORWARD)}")
        rows.append([f"`{case['scene']}` `{case['integrator']}`",
                     f"{case['particles']:,} / {case['springs']:,}",
                     f"{case['steps']} × {significant(case['dt'])} s",
                     ", ".join(case["params"]), times_forward(by_name["forward run"]),
                     times_forward(by_name["hooke.gradient"]), times_forward(checkpointed),
                     times_forward(central), warp_cell(case), goal])
    return (f"`{GRADIENT_COMMAND}` ({provenance(bench)}; medians over {bench['rounds']} rounds; "
            "loss ½ Σ|x(t_end) − target|², P = 2 shared factors; ms, and in brackets the median "
            "per-round ratio to the forward run):\n\n"
            + markdown_table(["case", "particles / springs", "steps", "parameters",
                              "forward run", "hooke.gradient", "with √steps checkpoints",
                              "central differences (2P runs)", "Warp's tape (same cloth)",
                              "goal (issue 18)"], rows, "lrrlrrrrll"))


# ---------------------------------------------------------------------------------------------
# Verification: `hooke verify` (spring1d, the double pendulum) and `hooke verify --all` (the
# matrix of every integrator × every built-in scene, and its stated limitations).
# ---------------------------------------------------------------------------------------------
VERIFY = "hooke verify --out docs/data"
VERIFY_ALL = "hooke verify --all --out docs/data"
MISSING = "—"  # a field the command left empty: not measured


def scientific(value: float, digits: int = 1, sign: bool = False) -> str:
    """``value`` in scientific notation, with a real minus sign."""
    return f"{value:{'+' if sign else ''}.{digits}e}".replace("-", "−")


def exponent(text: str) -> str:
    """A CSV field's number in scientific notation (two digits), or — when it is empty."""
    return scientific(float(text)) if text else MISSING


def decimals(text: str, digits: int = 2) -> str:
    return f"{float(text):.{digits}f}".replace("-", "−") if text else MISSING


def verify_rows(rows: list[dict[str, str]], drift: bool) -> list[list[str]]:
    """The rows of a `hooke verify` table: order, measured, energy, factor (and drift)."""
    table = []
    for row in rows:
        behaviour = row["behaviour"] if not row.get("failed_at") else (
            f"fails at t = {float(row['failed_at']):.2f} s")
        cells = [row["name"], row["expected_order"], decimals(row["measured_order"]), behaviour,
                 scientific(float(row["energy_change"]), 3, sign=True)]
        if drift:
            cells.append(exponent(row["drift"]))
        table.append(cells)
    return table


@block("verify-spring1d", VERIFY)
def verify_spring1d(data: Path) -> str:
    rows = read_csv(data / "verify_spring1d.csv")
    return (f"From `{VERIFY}` (`verify_spring1d.csv`):\n\n"
            + markdown_table(["integrator", "order", "measured", "energy", "E⁺/E − 1 per step"],
                             verify_rows(rows, drift=False), "lrrlr"))


@block("verify-pendulum", VERIFY)
def verify_pendulum(data: Path) -> str:
    rows = read_csv(data / "verify_pendulum.csv")
    reference_error = max(float(row["reference_error"]) for row in rows)
    return (f"From `{VERIFY}` (`verify_pendulum.csv`; the reference's own error, its distance to "
            f"the same rk45 at twice its step: {scientific(reference_error)} m):\n\n"
            + markdown_table(["integrator", "order", "measured", "energy", "E⁺/E − 1 per step",
                              "max\\|L − L0\\| [m]"], verify_rows(rows, drift=True), "lrrlrr"))


MATRIX_MARKS = {"ok": "", "off": " ✗", "limited": " ‡", "failed": ""}


def matrix_cell(row: dict[str, str]) -> str:
    if row["status"] == "n/a":
        return "·"
    if row["status"] == "failed":
        return "failed"
    text = decimals(row["measured_order"]) + MATRIX_MARKS[row["status"]]
    return f"**{text}**" if row["status"] == "off" else text


@block("verification-matrix", VERIFY_ALL)
def verification_matrix(data: Path) -> str:
    rows = read_csv(data / "verification.csv")
    integrators = list(dict.fromkeys(row["integrator"] for row in rows))
    scenes = list(dict.fromkeys(row["scene"] for row in rows))
    by_key = {(row["integrator"], row["scene"]): row for row in rows}
    expected = {row["integrator"]: row["expected_order"] for row in rows}
    header = ["scene", "kind", *(f"`{name}` ({expected[name]})" for name in integrators)]
    body = []
    for scene in scenes:
        first = by_key[integrators[0], scene]
        size = f"{first['dim']}D, {first['particles']} particles"
        body.append([f"`{scene}`", f"{first['kind']}, {size}",
                     *(matrix_cell(by_key[name, scene]) for name in integrators)])
    minutes = sum(float(row["wall_time"]) for row in rows) / 60
    return (f"From `{VERIFY_ALL}` (`verification.csv`, {len(rows)} cells, {minutes:.0f} min of "
            "runs): the measured order of convergence of every integrator (expected order in "
            "brackets) on every built-in scene; · where the integrator refuses the scene, "
            "✗ off its order by more than 0.3, ‡ a stated limitation (below).\n\n"
            + markdown_table(header, body, "ll" + "r" * len(integrators)))


@block("verification-limitations", VERIFY_ALL)
def verification_limitations(data: Path) -> str:
    rows = [row for row in read_csv(data / "verification.csv")
            if row["status"] in ("off", "limited", "failed")]
    if not rows:
        return f"`{VERIFY_ALL}`: every cell shows its integrator's order.\n"
    body = []
    for row in rows:
        errors = ", ".join(exponent(error) for error in row["errors"].split(";") if error)
        cause = row["limitation"] or f"**not yet explained** ({row['note']})"
        body.append([f"`{row['integrator']}`", f"`{row['scene']}`", row["expected_order"],
                     decimals(row["measured_order"]), f"{float(row['dt0']):g} s", errors, cause])
    return (f"Cells of `{VERIFY_ALL}` off their integrator's order, with their cause:\n\n"
            + markdown_table(["integrator", "scene", "order", "measured", "dt₀", "errors [m], dt "
                              "halving", "cause"], body, "llrrrll"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 when README.md differs from its data")
    args = parser.parse_args(argv)
    current = README.read_text(encoding="utf-8")
    fresh = render(current)
    if args.check:
        if fresh != current:
            changed = [m["name"] for m in BLOCK.finditer(current)
                       if m.group(0) not in fresh]
            print(f"README.md: generated block(s) differ from docs/data: {', '.join(changed)}; "
                  f"run: python scripts/readme_tables.py", file=sys.stderr)
            return 1
        return 0
    if fresh != current:
        README.write_text(fresh, encoding="utf-8")
        print("README.md: blocks rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
