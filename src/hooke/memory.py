"""Sizes checked before anything is allocated: what cannot fit in this machine's memory is one
:class:`HookeInputError` naming the field, the value and the estimate, not a ``MemoryError`` (or
a machine swapping) minutes later.

Contract: :func:`check_fits` compares an estimate in bytes with the machine's physical memory
(``os.sysconf``; 16 GiB where it cannot be read). The estimates are per element, rounded up from
what this code was measured to take: a model built element by element with ModelBuilder
(``add_particle``, ``add_spring``, ``grid``, a mesh) about 1 KiB per particle and per spring or
joint, one built from arrays (:func:`hooke.array_models.model_from_arrays`) about 150 bytes per
spring; a sweep's member under 1 KiB to plan, 4 KiB counted for its row, table line and task. So
what is refused could not have been built here, and what passes may still be refused by a finer
check later (a run's frames: :func:`hooke.scene_setup.check_frames_fit`).
"""

from __future__ import annotations

import os

from .errors import HookeInputError

# Bytes per (particle, spring or joint) of a model, by how it is built.
MODEL_BYTES = {"builder": (1024, 1024), "arrays": (256, 160)}
MEMBER_BYTES = 4096  # a sweep member: its plan, row, table line and Dask task


def physical_memory() -> int:
    """This machine's memory [bytes] (16 GiB where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 16 * 2**30


def format_bytes(count: float) -> str:
    units = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    power = 0
    while count >= 1024 and power < len(units) - 1:
        count, power = count / 1024, power + 1
    return f"{count:.3g} {units[power]}"


def check_fits(field: str, value, need: float, what: str, advice: str) -> None:
    """Refuse ``value`` of ``field`` when ``what`` (e.g. "the run would keep 1e+11 frames of 96
    bytes") needs ``need`` bytes, more than this machine's memory; ``advice``: what to change."""
    memory = physical_memory()
    if need > memory:
        raise HookeInputError(field, f"{what} ({format_bytes(need)}) in memory, more than this "
                              f"machine's {format_bytes(memory)}: {advice}", value)


def check_model_size(field: str, value, particles: int, springs: int,
                     built_from: str = "builder") -> None:
    """Refuse a model of ``particles`` and ``springs`` (or joints) that cannot be built here,
    before its first array; ``field``/``value``: what sets its size (e.g. parameters.n)."""
    per_particle, per_spring = MODEL_BYTES[built_from]
    check_fits(field, value, float(particles) * per_particle + float(springs) * per_spring,
               f"the model would have {float(particles):.4g} particles and {float(springs):.4g} "
               "springs", f"choose a smaller {field}")
