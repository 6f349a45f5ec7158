"""The command line's progress bar: shown on a terminal once a command has run for a second.

Contract: :class:`LazyProgress` is a ``progress(done, total)`` callback (``hooke.simulate``'s,
export's, animate's) that draws a Rich bar on standard error only after ``delay`` seconds and only
on a terminal, so quick commands and redirected output print nothing of it; ``close`` removes it.
"""

from __future__ import annotations

import time

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .cli_common import errors


class LazyProgress:
    """A progress bar that appears only once a run has taken longer than ``delay`` seconds, on a
    terminal (elsewhere Rich ends it with an empty line before the run's own last line)."""

    def __init__(self, label: str, delay: float = 1.0, unit: str = "steps"):
        self.label, self.delay, self.unit = label, delay, unit
        self.started = time.perf_counter()
        self.bar: Progress | None = None
        self.task = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if time.perf_counter() - self.started < self.delay or not errors.is_terminal:
                return
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                TextColumn(f"{{task.completed}}/{{task.total}} {self.unit}"),
                                TimeElapsedColumn(), TimeRemainingColumn(), console=errors,
                                transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=total)
        self.bar.update(self.task, completed=done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
