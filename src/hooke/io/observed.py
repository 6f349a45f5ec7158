"""Observed motion from a file, for :func:`hooke.fit` and ``hooke fit``.

Contract: :func:`read_observed(path, n_particles, dim)` returns a
:class:`hooke.fitting.problem.Observation` (t (k,), x (k, n, d) with NaN rows for particles not
observed at a time) from

- a trajectory store hooke wrote (``.h5``, :func:`hooke.io.store.read_trajectory`): every saved
  frame, every particle;
- a CSV file (``.csv``) with a header row naming the columns ``t, particle, x[, y[, z]]`` — one
  coordinate column per dimension of the scene, in that order, any column order otherwise — and
  one row per observed particle and time: t [s], the particle's index (0-based, as in the
  scene), its position [m]. Times may repeat (several particles at one time); a particle seen
  twice at one time is an error.

A CSV file larger than ``MAX_CSV_BYTES`` (16 MiB) is refused before it is read, in one line
naming it and its size. A missing file, a missing or extra column, a value that is not a decimal number (``1_000``
is not: :mod:`.csv_numbers`), a particle index out of
range, a duplicate: one line naming the file, the line or column, and the value.
"""

from __future__ import annotations

import csv

import numpy as np

from ..errors import HookeInputError
from ..fitting.problem import Observation
from .csv_numbers import csv_number
from .files import MAX_TEXT_BYTES, check_regular, too_large
from .outputs import written_aside

AXES = ("x", "y", "z")


# A CSV larger than this is refused before it is read: 16 MiB (some 500,000 rows) took 9 s to
# parse on a loaded 2-core machine (a 43 MB one 25 s and a silent fit after it); the fit's
# runs then save a frame at each of its times.
MAX_CSV_BYTES = MAX_TEXT_BYTES


def read_observed(path, n_particles: int, dim: int) -> Observation:
    what = "file of observed motion"
    path = check_regular(path, "observed", what)
    if path.suffix == ".h5":
        from .store import read_trajectory

        stored = read_trajectory(path)
        return Observation(np.asarray(stored["t"], dtype=float), np.asarray(stored["x"], dtype=float))
    if path.suffix != ".csv":
        raise HookeInputError("observed", "must be a .h5 trajectory hooke wrote or a .csv file "
                              "(columns t, particle, x[, y[, z]])", str(path))
    size = path.stat().st_size
    if size > MAX_CSV_BYTES:
        raise too_large("observed", what, size, path)
    return _read_csv(path, n_particles, dim)


def _read_csv(path, n_particles: int, dim: int) -> Observation:
    columns = ["t", "particle", *AXES[:dim]]
    try:
        return _parse_csv(path, columns, n_particles, dim)
    except UnicodeDecodeError as error:  # a spreadsheet's other encoding, or not text at all
        raise HookeInputError(f"observed {path.name}", f"is not UTF-8 text (byte {error.start})",
                              str(path)) from None


def _parse_csv(path, columns: list[str], n_particles: int, dim: int) -> Observation:
    # utf-8-sig: the byte-order mark spreadsheets write before the header is not part of it
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle)
        header = [name.strip() for name in next(reader, [])]
        if sorted(header) != sorted(columns):
            raise HookeInputError(f"observed {path.name}", f"header must name the columns "
                                  f"{', '.join(columns)} (this scene is {dim}D)", ",".join(header))
        where = [header.index(name) for name in columns]
        rows, lines = [], []  # the values of each row of data, and its line in the file
        for line, row in enumerate(reader, start=2):
            if not row:
                continue
            try:
                values = [csv_number(row[k]) for k in where] if len(row) == len(header) else None
            except ValueError:
                values = None
            if values is None or not np.all(np.isfinite(values)):
                raise HookeInputError(f"observed {path.name} line {line}", f"must be {len(header)} "
                                      "finite decimal numbers", ",".join(row))
            particle = values[1]
            if particle != int(particle) or not 0 <= particle < n_particles:
                raise HookeInputError(f"observed {path.name} line {line}", "particle must be an "
                                      f"index from 0 to {n_particles - 1}", row[where[1]])
            rows.append(values)
            lines.append(line)
    if not rows:
        raise HookeInputError(f"observed {path.name}", "has no rows of data", str(path))
    data = np.array(rows)
    times, row_of = np.unique(data[:, 0], return_inverse=True)
    x = np.full((times.size, n_particles, dim), np.nan)
    particles = data[:, 1].astype(int)
    first_line = np.zeros(x.shape[:2], dtype=int)  # where each (time, particle) was seen, or 0
    for k, (time_row, particle) in enumerate(zip(row_of, particles)):
        if first_line[time_row, particle]:
            raise HookeInputError(f"observed {path.name} line {lines[k]}", f"particle {particle} "
                                  f"at t = {times[time_row]:g} s is already observed on line "
                                  f"{first_line[time_row, particle]}", show_value=False)
        first_line[time_row, particle] = lines[k]
        x[time_row, particle] = data[k, 2:]
    return Observation(times, x)


def write_observed_csv(path, t: np.ndarray, x: np.ndarray) -> None:
    """Write ``x`` (k, n, d) at times ``t`` in the CSV layout above, skipping NaN rows."""
    dim = x.shape[2]
    with written_aside(path) as partial, open(partial, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["t", "particle", *AXES[:dim]])
        for time, frame in zip(t, x):
            for particle, position in enumerate(frame):
                if np.all(np.isfinite(position)):
                    writer.writerow([repr(float(time)), particle, *map(repr, map(float, position))])
