"""Parameter studies on Dask distributed: one simulation per member of a grid or a random sample.

    result = hooke.sweep("spring1d", {"spring.k": [1e3, 1e4, 1e5],
                                      "integrator": ["symplectic_euler", "rk4"]}, out="out/sweep")
    result.table            # one row per member (pandas DataFrame), also DIR/summary.{parquet,csv}

:func:`sweep` (``hooke.sweep(...)``: this package is callable, :mod:`hooke.callable_module`)
validates the description, plans the members, runs those not done yet and writes the summary.
Each step is a module of its own, whose docstring is its part of the contract:

- :mod:`.settings`: what to sweep, the values a path takes, the ``--param`` syntax;
- :mod:`.sweep_file`: sweep files (``[params]``, ``[[grid]]``), and the shipped ones;
- :mod:`.planning`: what each parameter path sets, the checks before anything runs, the members;
- :mod:`.worker`: one member on a Dask worker (failures, the time limit, a stuck member killed);
- :mod:`.member_process`: the child process a member with a time limit runs in;
- :mod:`.execution`: the cluster, retries;
- :mod:`.storage`: the layout of DIR, and what a sweep started again skips;
- :mod:`.table`: the summary table's columns and metrics; :mod:`.metric_plot`: its plot.

Scripts that call ``hooke.sweep`` with the default local cluster need the usual
``if __name__ == "__main__":`` guard (its workers are started as new processes).
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..callable_module import make_callable
from ..errors import HookeInputError, as_path
from ..io.lock import OutputLock
from ..io.outputs import made_for_the_work
from ..io.store import open_result
from .execution import connect, execute
from .metric_plot import plot_metric
from .planning import MODEL_PATHS, RUN_SETTINGS, Member, base_scene, member_id, plan, plan_members
from .settings import Range, Strict, SweepSettings, parse_param, validated
from .storage import (check_layout, check_writable, is_done, summary_table, trajectory_path,
                      write_row, write_summary, write_whole)
from .sweep_file import SweepFile, is_sweep_file, read_sweep_file, shipped_sweeps
from .table import COLUMNS, METRICS, STATUSES, counts, failure_row, metrics
from .worker import MemberTimeout, run_member

__all__ = ["COLUMNS", "METRICS", "MODEL_PATHS", "Member", "MemberTimeout", "RUN_SETTINGS", "Range",
           "STATUSES", "Strict", "SweepFile", "SweepResult", "SweepSettings", "counts",
           "is_sweep_file", "member_id", "metrics", "parse_param", "plan", "plot_metric",
           "read_sweep_file", "run_member", "shipped_sweeps", "summary_table", "sweep"]


@dataclass
class SweepResult:
    """A finished sweep: ``table`` (pandas DataFrame, see :mod:`.table`) and its files;
    ``skipped`` lists the members found done in DIR and not run again."""

    table: Any
    directory: Path
    parquet: Path
    csv: Path
    plot: Path
    metric: str
    paths: list[str]
    skipped: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Members per status."""
        return {status: int((self.table["status"] == status).sum()) for status in STATUSES}

    @property
    def failed(self) -> int:
        """Rows that did not finish ok (failed, invalid settings included, or timed out)."""
        return int((self.table["status"] != "ok").sum())

    def text(self, limit: int = 20) -> str:
        """A summary line and the table's main columns (the first ``limit`` rows)."""
        counts = ", ".join(f"{count} {status}" for status, count in self.counts().items())
        distinct = self.table["member"].nunique()
        head = (f"{len(self.table)} member(s)"
                + (f", {distinct} distinct" if distinct < len(self.table) else "") + f": {counts}"
                + (f" ({len(self.skipped)} done before, skipped)" if self.skipped else ""))
        columns = ["member", *self.paths, "status", self.metric, "wall_time", "error"]
        shown = self.table[list(dict.fromkeys(columns))].head(limit)
        more = f"\n… {len(self.table) - limit} more in {self.csv}" if len(self.table) > limit else ""
        return f"{head}\n{shown.to_string(index=False, max_colwidth=70)}{more}"

    def result(self, member: str):
        """The stored trajectory of ``member`` (an id of the table) as a :class:`hooke.Result`."""
        ids = list(dict.fromkeys(self.table["member"]))
        if not isinstance(member, str) or member not in ids:  # not a path under members/ either
            shown = ", ".join(ids[:5]) + (", …" if len(ids) > 5 else "")
            raise HookeInputError("member", f"is not a member of this sweep (its ids: {shown})",
                                  member)
        return open_result(trajectory_path(self.directory, member))


def sweep(scene, params: dict[str, Any] | list[dict[str, Any]], client=None, *, out="out/sweep",
          random: int | None = None, seed: int = 0, retries: int = 0, timeout: float | None = None,
          summary_only: bool = False, metric: str = "energy_error", save_every: int = 1,
          progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """Run one simulation per member of a parameter grid (or of ``random`` samples) on Dask.

    Args:
        scene: a built-in scene name, a scene file path, or a Scene loaded from one.
        params: parameter path → list of values, or range ``{"range": [lo, hi], "log": False}``
            (random mode); or a list of such grids, concatenated. The paths are
            :mod:`hooke.sweep.planning`'s, their values :mod:`hooke.sweep.settings`'.
        client: None (a LocalCluster here), a scheduler address, or a ``distributed.Client``.
        out: the sweep's directory DIR (a sweep started again with the same DIR resumes).
        random: draw this many members instead of the grid, with ``numpy`` generator ``seed``.
        retries: how many more times a failed or timed-out member runs.
        timeout: seconds a member may run.
        summary_only: keep only the rows (no trajectories).
        metric: the table column to plot (one of :data:`METRICS`).
        save_every: saved frame interval of the trajectories (steps).
        progress: ``progress(done, total)`` over the distinct members (those found done in DIR
            count as done): called once the cluster is up, then once as each member finishes.

    A member whose settings cannot run (:mod:`.planning`: ``Member.invalid``) is not run: its
    row is failed with that error, 0 attempts. With ``timeout`` each member runs in a child
    process of its worker, killed when stuck inside one frame (:mod:`.worker`): no worker is
    ever restarted, on the sweep's own LocalCluster or on a cluster it was given.
    """
    settings = validated(SweepSettings, {
        "params": params, "random": random, "seed": seed, "retries": retries, "timeout": timeout,
        "summary_only": summary_only, "metric": metric, "save_every": save_every})
    if progress is not None and not callable(progress):  # (it failed once members had run)
        raise HookeInputError("progress", "must be a callable progress(done, total) or None",
                              progress)
    base = base_scene(scene)
    model = base.model
    if settings.metric == "constraint_drift" and not model.n_joints:
        raise HookeInputError("metric", f"scene '{base.name}' has no joints", settings.metric)
    if settings.metric == "penetration" and not model.n_planes:
        raise HookeInputError("metric", f"scene '{base.name}' has no contact planes", settings.metric)
    members = plan_members(base, settings)
    distinct = list({member.id: member for member in members}.values())
    directory = as_path(out, "out").resolve()
    check_layout(directory, distinct, settings.metric)
    # refused from here on (a scheduler it cannot reach, another sweep at work in DIR), the
    # sweep leaves no DIR it made behind
    with made_for_the_work(directory):
        check_writable(directory, settings.metric)
        # one sweep per DIR: two at once ran the same members, and each wrote the other's rows
        lock = OutputLock(directory / "summary.parquet", "out")
        try:
            return _run(base, members, distinct, directory, settings, client, progress)
        finally:
            lock.release()


def _run(base, members: list[Member], distinct: list[Member], directory: Path,
         settings: SweepSettings, client, progress) -> SweepResult:
    """:func:`sweep` once its input is checked and DIR is its own."""
    skipped = [member.id for member in distinct if is_done(directory, member, settings.summary_only)]
    found = set(skipped)
    invalid = [member for member in distinct if member.invalid]
    todo = [member for member in distinct if member.id not in found and not member.invalid]
    done = len(skipped)

    def on_final(member: Member, row: dict) -> None:
        nonlocal done
        write_row(directory, member, row)
        done += 1
        if progress is not None:
            progress(done, len(distinct))

    # Connect first: a scheduler that cannot be reached leaves DIR as it was.
    with connect(client) if todo else nullcontext() as dask_client:
        try:
            if progress is not None:
                progress(done, len(distinct))
            for member in invalid:  # never run: its settings are its error
                on_final(member, {**failure_row("failed", f"HookeInputError: {member.invalid}"),
                                  "attempts": 0, "wall_time": math.nan})
            if todo:
                execute(dask_client, todo, directory, settings, on_final)
        finally:  # also when interrupted: the table of the members finished so far
            table = summary_table(members, directory)
            parquet, csv = write_summary(table, directory)
    plot = directory / f"{settings.metric}.png"
    write_whole(plot, plot.name, directory, lambda partial: plot_metric(
        table, settings.paths, settings.metric, partial, title=base.name))
    return SweepResult(table, directory, parquet, csv, plot, settings.metric, settings.paths,
                       skipped)


make_callable(__name__, sweep)
