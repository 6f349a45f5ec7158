"""The sweep's plot, DIR/<metric>.png: the chosen metric of the summary table against each
swept path (members that are not ok are left out and counted in the title).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def plot_metric(table, paths: list[str], metric: str, path: Path, title: str = "") -> Path:
    """``metric`` against each swept path (one panel per path with more than one value); in a
    grid, one line per combination of the other paths when there are at most 8."""
    from ..viz.plots import finish, new_figure  # Matplotlib loads when a sweep plots, not on import

    varying = [name for name in paths if table[name].nunique() > 1] or paths[:1]
    figure = new_figure(figsize=(5.5 * len(varying), 4.2))
    axes = figure.subplots(1, len(varying), squeeze=False)
    values = table[metric].to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    positive = finite[finite > 0]
    logscale = positive.size > 0 and positive.size == finite.size and positive.max() >= 100 * positive.min()
    for axis, name in zip(axes[0], varying):
        numeric = table[name].dtype.kind in "if"
        levels = sorted(table[name].unique()) if not numeric else None
        position = (lambda frame: frame[name].to_numpy(dtype=float)) if numeric else (
            lambda frame: frame[name].map(levels.index).to_numpy(dtype=float))
        others = [other for other in varying if other != name]
        groups = list(table.groupby(others, sort=False)) if others else [((), table)]
        if len(groups) <= 8:
            for key, frame in groups:
                key = key if isinstance(key, tuple) else (key,)
                label = ", ".join(f"{other}={value}" for other, value in zip(others, key)) or None
                frame = frame.sort_values(name)
                axis.plot(position(frame), frame[metric].to_numpy(dtype=float), "o-", ms=4, label=label)
            if others:
                axis.legend(fontsize=7, loc="best")
        else:
            axis.scatter(position(table), values, s=12)
        if numeric:
            column = table[name].to_numpy(dtype=float)
            if column.min() > 0 and column.max() >= 100 * column.min():
                axis.set_xscale("log")
        else:
            axis.set_xticks(range(len(levels)), levels, rotation=20)
        if logscale:
            axis.set_yscale("log")
        axis.set_xlabel(name)
        axis.set_ylabel(metric)
        axis.grid(alpha=0.3)
    failed = int((table["status"] != "ok").sum())
    figure.suptitle(f"{title}: {metric} over {len(table)} member(s)"
                    + (f", {failed} not ok (not shown)" if failed else ""), fontsize=10)
    finish(figure, path)
    return Path(path)
