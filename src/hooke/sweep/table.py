"""The summary table of a sweep: its columns, a member's row, and the table of rows.

Table columns, in order: ``member`` (str, the id); one column per path as given (float64 for
numbers, int64 for integers, bool, else str: lists as JSON); ``status`` (str: ok, failed,
timeout); ``error`` (str: ``Type: message`` on one line, empty when ok); ``attempts`` (int64);
``wall_time`` (float64, s, of the last attempt on its worker); the metrics of :func:`metrics`
(float64, NaN unless ok or where they do not apply); ``steps``, ``rejected`` (int64, counted up
to a failure, 0 when unknown); ``trajectory`` (str, the path relative to DIR, empty when there
is none). The CSV writes NaN as ``nan`` and empty strings as empty fields:
``pandas.read_csv(path, keep_default_na=False, na_values=["nan"])`` reads it back as the Parquet.

A row is made on the worker (:func:`metrics` of a finished run, :func:`failure_row` of one that
failed) and completed on the client (``attempts``, ``wall_time``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from ..studies import length_drift

METRICS = ("energy_error", "constraint_drift", "penetration", "wall_time", "steps", "rejected")
STATUSES = ("ok", "failed", "timeout")
# The table's columns around the parameter columns (which come right after "member"), with dtypes.
COLUMNS = {"member": "str", "status": "str", "error": "str", "attempts": "int64",
           "wall_time": "float64", "energy_error": "float64", "constraint_drift": "float64",
           "penetration": "float64", "steps": "int64", "rejected": "int64", "trajectory": "str"}


def metrics(result) -> dict[str, float | int]:
    """The scalar metrics of a run.

    ``energy_error``: |E(end) − E(0)| relative to the energy scale max(|E(0)|, max kinetic)
    (:meth:`hooke.Result.energy_drift`), inf when the energy overflowed; ``constraint_drift``:
    seed 003's string-length error ΔL = Σ_joints |L − L0| [m], its maximum over the saved frames
    (:func:`hooke.studies.length_drift`, the max ΔL of ``hooke study``; NaN without joints);
    ``penetration``: max(0, −min contact distance) [m] (NaN without contact planes); ``steps``
    and ``rejected`` (0 for fixed-step integrators) from ``result.stats``.
    """
    model = result.scene.model
    drift = float(length_drift(model, result.x).max()) if model.n_joints else math.nan
    contact = result.contact_distance
    penetration = (max(0.0, -float(np.min(contact))) if np.isfinite(contact).any() else math.nan)
    total = result.energy["total"]
    energy_error = abs(result.energy_drift()) if np.isfinite(total).all() else math.inf
    return {"energy_error": energy_error, "constraint_drift": drift,
            "penetration": penetration, **counts(result)}


def counts(result) -> dict[str, int]:
    return {"steps": int(result.stats.get("steps", 0)), "rejected": int(result.stats.get("rejected", 0))}


def failure_row(status: str, message: str, steps: int = 0, rejected: int = 0) -> dict[str, Any]:
    """The row of a member that did not finish: ``status`` (failed, timeout), its error on one
    line, no metrics."""
    return {"status": status, "error": message.replace("\n", "; "), "energy_error": math.nan,
            "constraint_drift": math.nan, "penetration": math.nan, "steps": steps,
            "rejected": rejected}


def summary_frame(records: list[dict[str, Any]], paths: list[str]):
    """The table (pandas DataFrame) of ``records``, one per row (``member``, the values of
    ``paths``, the other columns), with the dtypes above."""
    import pandas as pd  # only the client needs pandas, not a worker or `import hooke`

    table = pd.DataFrame.from_records(records, columns=["member", *paths, *list(COLUMNS)[1:]])
    for path in paths:
        table[path] = _parameter_column(table[path].tolist())
    return table.astype(COLUMNS)


def _parameter_column(values: list):
    import pandas as pd

    if values and all(isinstance(value, bool) for value in values):
        return pd.Series(values, dtype="bool")
    if values and all(isinstance(value, int) and not isinstance(value, bool) for value in values):
        return pd.Series(values, dtype="int64")
    if values and all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in values):
        return pd.Series(values, dtype="float64")
    return pd.Series([value if isinstance(value, str) else json.dumps(value) for value in values],
                     dtype="str")
