"""Sizes checked before anything is allocated: what cannot fit in this machine's memory, or a
model that would take more than ``MAX_BUILD_SECONDS`` to build, is one :class:`HookeInputError`
naming the field, the value and the estimate, not a ``MemoryError`` (or a machine swapping, or a
build that prints nothing for minutes) later.

Contract: :func:`check_fits` compares an estimate in bytes with the machine's physical memory
(``os.sysconf``; 16 GiB where it cannot be read). The estimates are per element, rounded up from
what this code was measured to take: a model built element by element with ModelBuilder
(``add_particle``, ``add_spring``, ``grid``, a mesh) about 1 KiB per particle and per spring or
joint, one built from arrays (:func:`hooke.array_models.model_from_arrays`) about 150 bytes per
spring; a sweep's member under 1 KiB to plan, 4 KiB counted for its row, table line and task. So
what is refused could not have been built here, and what passes may still be refused by a finer
check later (a run's frames: :func:`hooke.scene_setup.check_frames_fit`). :func:`check_model_size`
also estimates the build's time from per-element costs measured the same way (``BUILD_SECONDS``).
"""

from __future__ import annotations

import math
import os
import sys
from decimal import Decimal

from .errors import HookeInputError

# Bytes per (particle, spring or joint) of a model, by how it is built.
MODEL_BYTES = {"builder": (1024, 1024), "arrays": (256, 160)}
# Seconds per (particle, spring or joint) to build a model, by how: ModelBuilder's add_particle
# takes 9.5 µs, add_spring 7 µs, add_joint with finalize's joint checks 14 µs; the scenes chain,
# jointed_chain, npendulum and chain_pile took 17–27 µs per particle and link at n = 200,000,
# cloth2d's grid 33 µs per particle and its 4 springs; from arrays under 1 µs per particle
# (2-core AMD EPYC, 2026-11). No override: 60 s is millions of particles built one by one, and a
# larger body is built from arrays in seconds (hooke.array_models.model_from_arrays).
BUILD_SECONDS = {"builder": (14e-6, 8e-6), "arrays": (1e-6, 0.5e-6)}
MAX_BUILD_SECONDS = 60.0
MEMBER_BYTES = 4096  # a sweep member: its plan, row, table line and Dask task


def physical_memory() -> int:
    """This machine's memory [bytes] (16 GiB where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 16 * 2**30


def available_memory() -> int:
    """The memory this machine has free for a new allocation now [bytes]: the kernel's
    MemAvailable (free memory and the caches it can drop), or :func:`physical_memory` where
    ``/proc/meminfo`` does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return physical_memory()


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


def real_count(count: int) -> float:
    """``count`` as a float, inf past float's range (grid(10**400, 3): float() raises)."""
    return float(count) if count <= sys.float_info.max else math.inf


def _shown(count: int) -> str:
    """``count`` to four digits as float formats them, however large (float() overflows)."""
    if count <= sys.float_info.max:
        return f"{float(count):.4g}"
    exponent = len(str(count)) - 1
    return f"{float(Decimal(count).scaleb(-exponent)):.4g}e+{exponent}"


def check_model_size(field: str, value, particles: int, springs: int,
                     built_from: str = "builder") -> None:
    """Refuse a model of ``particles`` and ``springs`` (or joints) that cannot be built here
    (in memory, or within ``MAX_BUILD_SECONDS``), before its first array; ``field``/``value``:
    what sets its size (e.g. parameters.n)."""
    per_particle, per_spring = MODEL_BYTES[built_from]
    what = f"the model would have {_shown(particles)} particles and {_shown(springs)} springs"
    check_fits(field, value, real_count(particles) * per_particle + real_count(springs) * per_spring,
               what, f"choose a smaller {field}")
    particle_seconds, spring_seconds = BUILD_SECONDS[built_from]
    seconds = real_count(particles) * particle_seconds + real_count(springs) * spring_seconds
    if seconds > MAX_BUILD_SECONDS:
        arrays = ("" if built_from == "arrays" else
                  ", or build it from arrays (hooke.array_models.model_from_arrays)")
        raise HookeInputError(field, f"{what}, about {seconds:.3g} s to build here, more than the "
                              f"{MAX_BUILD_SECONDS:.0f} s a build may take: choose a smaller "
                              f"{field}{arrays}", value)
