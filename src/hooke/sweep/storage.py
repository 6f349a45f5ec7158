"""Where a sweep keeps its results: the layout of its directory DIR.

- ``members/<id>/trajectory.h5``: the member's HDF5 trajectory (``simulate(..., store=…)``),
  written as it runs; not with ``summary_only``. ``<id>`` is the member's id
  (:func:`~hooke.sweep.planning.member_id`): the same member always has the same id.
- ``members/<id>/row.json``: the member's row, written by the client as soon as it is final;
  strict JSON: a NaN is ``null``, an infinity the string ``"inf"`` (or ``"-inf"``); its
  ``checksum`` (SHA-256 of the rest, :func:`_checksum`) finds a value changed since (a flipped
  digit leaves valid JSON).
- ``summary.parquet`` and ``summary.csv``: the table of :mod:`.table` (one row per member, in
  plan order, once it has a row); ``<metric>.png``: the chosen metric against each swept path
  (:mod:`.metric_plot`).

Everything is written whole (:func:`hooke.io.outputs.written_aside`): a write that fails leaves
the earlier file, and is one :class:`~hooke.errors.OutputWriteError` naming DIR (exit 1 in the
CLI; :func:`check_writable` refuses a DIR it cannot write in before any member runs).

Started again with the same DIR, a sweep skips every member whose row says ok (and whose
trajectory is a whole stored run of that member's settings, its checksums read, unless
``summary_only``: :func:`is_done`); failed and timed-out members, and those whose row or
trajectory is damaged or another run's, run again.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

from ..errors import HookeInputError, OutputWriteError
from ..io.files import not_regular
from ..io.opening import check_checksums, open_trajectory
from ..io.run_attributes import run_settings
from ..io.outputs import check_replaceable, writable_directory, written_aside
from .planning import Member
from .table import COLUMNS, summary_frame


def _member_directory(directory: Path, member_id: str) -> Path:
    return directory / "members" / member_id


def trajectory_path(directory: Path, member_id: str) -> Path:
    return _member_directory(directory, member_id) / "trajectory.h5"


def _row_path(directory: Path, member_id: str) -> Path:
    return _member_directory(directory, member_id) / "row.json"


def check_layout(directory: Path, members: list[Member], metric: str) -> None:
    """Refuse, before any member runs, a DIR where the sweep cannot write what it writes: a file
    where it makes a directory (DIR/members, a member's directory) or a directory, a FIFO, a
    device or a socket where it writes a file (a member's row, the summaries, the plot). Such a
    DIR stopped the sweep with a NotADirectoryError or, after every member had run, an
    IsADirectoryError; a FIFO as a row blocked the sweep forever as it read it (issue 15)."""
    if directory.exists() and not directory.is_dir():
        raise HookeInputError("out", "is an existing file, not a directory", str(directory))
    files = [directory / name for name in ("summary.parquet", "summary.csv", f"{metric}.png")]
    folders = [directory / "members"]
    if folders[0].is_dir():
        for member in members:
            folders.append(_member_directory(directory, member.id))
            if folders[-1].is_dir():
                files.append(_row_path(directory, member.id))  # a trajectory's path taken
                # fails that member alone (the store refuses it), as any member's own error
    for path in folders:
        if path.exists() and not path.is_dir():
            raise HookeInputError("out", f"holds a file {path.relative_to(directory)} where the "
                                  "sweep keeps a directory: remove it or choose another --out",
                                  str(directory))
    for path in files:
        try:  # through a link: a row is read too, and a FIFO would block that read forever
            kind = not_regular(os.stat(path).st_mode)
        except OSError:  # missing (or a dangling link): written afresh
            continue
        if kind is not None:
            raise HookeInputError("out", f"holds {kind} {path.relative_to(directory)} where "
                                  "the sweep writes a file: remove it or choose another --out",
                                  str(directory))


def check_writable(directory: Path, metric: str) -> None:
    """Refuse, before any member runs, a DIR the sweep cannot write in (read-only, immutable:
    proved by a probe file, as root too) or whose earlier summary files may not be replaced (a
    read-only summary.csv, say): such a DIR failed only after every member had run."""
    writable_directory(directory, "out")
    if (directory / "members").is_dir():  # members of an earlier start go on in it
        writable_directory(directory / "members", "out")
    for name in ("summary.parquet", "summary.csv", f"{metric}.png"):
        check_replaceable(directory / name, "out")


def write_whole(path: Path, what: str, directory: Path, write) -> None:
    """``write(partial)`` renamed to ``path`` once whole; a failed write (a full disk) is one
    line naming ``what``, and an earlier file at ``path`` is left as it was."""
    try:
        with written_aside(path) as partial:
            write(partial)
    except OSError as error:
        raise OutputWriteError("out", f"cannot write {what} ({error.strerror or error}); the rows "
                              "written so far stay in members/*/row.json and the same command "
                              "continues the sweep", str(directory)) from None


def write_row(directory: Path, member: Member, row: dict) -> None:
    path = _row_path(directory, member.id)
    record = _strict({"member": member.id, "values": member.values, **row})
    record["checksum"] = _checksum(record)
    text = json.dumps(record, indent=1, allow_nan=False)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputWriteError("out", f"cannot create {path.parent.relative_to(directory)} "
                              f"({error.strerror or error})", str(directory)) from None
    # written whole: an interrupted sweep never leaves half a row
    write_whole(path, f"member {member.id}'s row", directory, lambda partial: partial.write_text(text))


def _checksum(record: dict) -> str:
    """SHA-256 of a row's content (sorted keys, as JSON): a row whose value changed after it was
    written (a flipped digit, still valid JSON) no longer matches it and runs its member again,
    where it was skipped and its wrong value went into the table; so does a row written before
    rows had one."""
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()


def _strict(value):
    """``value`` as strict JSON: NaN as null, ±inf as "inf"/"-inf" (an overflowed energy_error
    is inf, not unknown)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else str(value)
    if isinstance(value, dict):
        return {key: _strict(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(item) for item in value]
    return value


def _read_row(directory: Path, member: Member) -> dict | None:
    """The member's row in DIR, or None when it has none or one that is not a whole row (damaged
    or edited: the member runs again and its row is written anew)."""
    try:
        row = json.loads(_row_path(directory, member.id).read_text())
    except (FileNotFoundError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    needed = [key for key in COLUMNS if key not in ("member", "trajectory")]
    if not isinstance(row, dict) or row.pop("checksum", None) != _checksum(row) \
            or any(key not in row for key in needed) \
            or row["status"] not in ("ok", "failed", "timeout"):
        return None
    try:
        for key, kind in COLUMNS.items():  # back from _strict (a row written before: NaN as is)
            if kind == "float64":
                row[key] = math.nan if row[key] is None else float(row[key])
    except (TypeError, ValueError):
        return None
    return row


def is_done(directory: Path, member: Member, summary_only: bool) -> bool:
    row = _read_row(directory, member)
    return (row is not None and row["status"] == "ok"
            and (summary_only or _whole_run(trajectory_path(directory, member.id), member)))


def _whole_run(path: Path, member: Member) -> bool:
    """Whether ``path`` holds ``member``'s complete stored run whose every checksum holds: a
    member's trajectory damaged, cut short or replaced since its row was written runs again, as
    a damaged row does (it was skipped, and its table row pointed at a file that could not be
    read, or at another member's run copied there). The attributes are checked first (the
    header: complete, the member's scene text, parameters and swept settings); the checksums
    are then read through every frame, which costs a read of the file, far less than the run
    that wrote it, and is the only way to find a flipped byte among the frames."""
    if not path.is_file():
        return False
    try:
        with open_trajectory(path) as handle:
            settings = run_settings(handle.attrs, path)
            if not (settings.get("complete", False) and _is_members(settings, member)):
                return False
            check_checksums(handle)
            return True
    except HookeInputError:
        return False


def _is_members(settings: dict, member: Member) -> bool:
    """Whether a stored run's ``settings`` (:func:`run_settings`) are ``member``'s: its scene
    text and builder parameters, and the run settings and options it sets (the others are the
    scene's, in its text)."""
    def stored(value):  # as the store writes JSON (NumPy scalars as strings, tuples as lists)
        return json.loads(json.dumps(value, default=str))

    options = settings.get("options", {})
    return (settings.get("scene_source") == member.scene_text
            and settings.get("parameters") == stored(member.parameters)
            and settings.get("save_every") == member.save_every
            and all(settings.get(key) == value for key, value in member.run.items())
            and all(key in options and options[key] == stored(value)
                    for key, value in member.options.items()))


def summary_table(members: list[Member], directory: Path):
    """The table (pandas DataFrame) of every member of ``members`` that has a row in DIR."""
    records = []
    for member in members:
        row = _read_row(directory, member)
        if row is None:
            continue
        store = trajectory_path(directory, member.id)
        records.append({"member": member.id, **member.values,
                        **{key: row[key] for key in COLUMNS if key not in ("member", "trajectory")},
                        "trajectory": str(store.relative_to(directory)) if store.is_file() else ""})
    return summary_frame(records, list(members[0].values) if members else [])


def write_summary(table, directory: Path) -> tuple[Path, Path]:
    """Write ``table`` as DIR/summary.parquet and DIR/summary.csv; returns both paths."""
    parquet, csv = directory / "summary.parquet", directory / "summary.csv"
    write_whole(parquet, parquet.name, directory, lambda partial: table.to_parquet(partial, index=False))
    write_whole(csv, csv.name, directory, lambda partial: table.to_csv(partial, index=False, na_rep="nan"))
    return parquet, csv
