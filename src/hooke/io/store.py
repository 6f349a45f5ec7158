"""Trajectory store: one HDF5 file per run (h5py), written frame by frame as the run goes.

Layout of ``trajectory.h5``::

    /frames/t (F,)  /frames/x (F, n, d)  /frames/v (F, n, d)  /frames/energy/<term> (F,)
    /frames/<extra> (F, ...)   per-frame extras: joint_force (F, joints), contact_distance (F,),
                               contact_force (F, n, d), surface_distance (F,)
    /model/<array>             every array of the Model (masses, springs, pins, joints, planes …)
                               with its mesh cells /model/triangles, /model/tetrahedra: (0, k)
                               when none; files without them read as (0, k)
    /checkpoint                the integrator's state after the last frame (for --resume): its
                               scalars as attributes, its arrays as datasets
    attributes: hooke_version, scene_name, scene_source (the scene file's text), scene_folder
    (its folder, whence a resume reads its obstacle meshes; when it came from a file), parameters,
    integrator, dt, t_end, save_every, options (JSON: the integrator's effective options, its
    defaults included), created (ISO date; SOURCE_DATE_EPOCH when set), input_hash (SHA-256 of
    the scene text, parameters, model arrays but the cells, initial state and settings),
    frames_written, complete, stats (JSON), failure (why the blow-up guard stopped the run, when
    it did); the checkpoint's own frames_written: the frame count it belongs to.

Contract: datasets are chunked along frames (:func:`chunk_frames`: 64 frames, fewer for large
frames, at most ``CHUNK_BYTES`` a chunk) and Fletcher-32 checksummed (so a flipped bit anywhere
in the data is an error, never a silently wrong value); a finished run's frames are
gzip-compressed. The file is written in HDF5's SWMR mode, where HDF5 does not reuse the space an
object leaves (a reader may still be reading it): so while a run writes, its frame chunks are
not compressed, which keeps each chunk's size fixed from its first write and lets a flush
rewrite the last, partly filled chunk in place. (Compressed, that chunk moved at each flush and
left its old copies behind as dead space: cloth2d flushed after each of its 301 frames, as in
tests/test_store.py's dead-space test, took 243 MB at its last flush for 11.6 MB of frames; now
12.4 MB.) A file left by a killed run thus holds its frames' bytes, the unfilled rest of each
dataset's last chunk and the metadata, no more; ``close`` compresses it (:func:`rewrite`: 8.5 MB
there, in about a second). Frames are written in blocks (:meth:`TrajectoryWriter.write_frames`)
at least every ``flush_seconds`` (0.25 s) or :func:`flush_frames` frames (64, more for small
frames: up to 1 MiB of them, at most 4,096), whichever comes first (:meth:`TrajectoryWriter.due`),
and at the end, so a run killed at any moment leaves a file that :func:`read_trajectory` opens, holding
every frame up to the last block (a Ctrl-C writes the frames whose integrator checkpoint is
known: see :class:`hooke.simulate.StoreFeed`); ``close`` rewrites
the file compressed (:func:`rewrite`), so its layout does not depend on when the flushes happened.
``frames_written`` counts only frames on disk: a flush writes them first, then the count and the
checkpoint. A write that fails (a full disk) stops the run with :class:`StoreWriteError` and
leaves the file as its last complete flush did, to be resumed from there. One writer per file
(``<file>.lock``, :mod:`hooke.io.lock`); a new run is written to ``<file>.new`` and takes the
file's name once its first frames are flushed, and so is a resumed run's copy of the file it
continues (see :class:`TrajectoryWriter`); the files that showed the run it replaces
(``outputs``: ``hooke run``'s plots, sidecar and summary) are removed at that moment.
No object carries an HDF5 timestamp (datasets are created with ``track_times=False``; h5py's
groups have none): with SOURCE_DATE_EPOCH set, the same run writes the same bytes.

Reading (:func:`read_trajectory`, :func:`open_trajectory`) never hangs and never raises anything
but :class:`HookeInputError` naming the file (see :mod:`hooke.io.opening`).
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import math
import os
import re
import shutil
import time
from contextlib import contextmanager, suppress
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import h5py
import numpy as np

from ..errors import HookeInputError, StoreWriteError, format_value, is_count
from ..memory import format_bytes
from ..model import Model
from ..result import Result, frame_extras
from ..scene_setup import Scene
from ..source_date import created
from ..version import __version__
from .lock import OutputLock
from .opening import _read, _reason, open_trajectory  # (open_trajectory: re-exported)
from .outputs import check_replaceable, remove_files, writable_directory
from .room import DISK_FULL, RESERVE_SLACK, reserve
from .run_attributes import _frames_written, check_model, run_settings
from .scene_file import build, parse
from .store_place import detached, put_back

FRAME_CHUNK = 64  # frames per chunk of a frame dataset, at most
# A chunk of a frame dataset holds at most this many bytes (its frames uncompressed): HDF5's
# default chunk cache holds 1 MiB, and a file a killed run leaves holds up to one chunk per
# dataset beyond its frames (the last chunk's unfilled rest: it is allocated whole).
CHUNK_BYTES = 2**18


def chunk_frames(frame_bytes: int) -> int:
    """Frames per chunk of a dataset whose frames take ``frame_bytes``: FRAME_CHUNK, fewer (at
    least 1) so that a chunk holds at most CHUNK_BYTES."""
    return max(1, min(FRAME_CHUNK, CHUNK_BYTES // max(frame_bytes, 1)))


# A write after at most this many frames as well as after flush_seconds: what a kill can lose,
# and the size of the first block (which decides whether a run's first frame reaches a nearly
# full disk), then do not depend on how fast the machine runs. Small frames are written in
# larger blocks, up to FLUSH_BYTES of them (at most MAX_FLUSH_FRAMES frames): a block's write
# costs about 2 ms of HDF5 calls whatever its size, 30 µs per frame in blocks of 64.
FLUSH_FRAMES = 64
FLUSH_BYTES = 2**20
MAX_FLUSH_FRAMES = 4096


def flush_frames(frame_bytes: int) -> int:
    """Frames per written block for frames of ``frame_bytes``: FLUSH_FRAMES, more for small
    frames (FLUSH_BYTES of them, at most MAX_FLUSH_FRAMES)."""
    return min(MAX_FLUSH_FRAMES, max(FLUSH_FRAMES, FLUSH_BYTES // max(frame_bytes, 1)))
# HDF5 file-format bounds: 1.10 at least (SWMR needs its superblock), 1.14 at most, so that the
# HDF5 1.14 inside ParaView and VTK reads the files; h5py's own HDF5 2.0 would otherwise write
# object layouts ("latest") that 1.14 refuses ("bad version number for layout message").
LIBVER = ("v110", "v114")


# Model arrays no result depends on (see Model.triangles): hashing them would refuse to resume
# the files written before they existed.
DRAWING_ONLY = ("triangles", "tetrahedra")


def input_hash(scene, settings: dict) -> str:
    """SHA-256 of everything a run's result depends on: the scene (its file text, parameters,
    model arrays but ``DRAWING_ONLY``, and initial state) and the run settings (effective
    integrator options). Empty arrays are left out (a model without joints, surfaces or
    obstacles): a field added later, empty in every older model, leaves their hashes alone."""
    digest = hashlib.sha256(json.dumps(
        {"scene": scene.source, "parameters": scene.parameters, "settings": settings},
        sort_keys=True, default=str).encode())
    arrays = [(item.name, getattr(scene.model, item.name)) for item in dataclasses.fields(scene.model)
              if item.name not in DRAWING_ONLY]
    for name, value in [*arrays, ("state.x", scene.state.x), ("state.v", scene.state.v)]:
        if isinstance(value, np.ndarray) and value.size:
            digest.update(f"{name}{value.dtype}{value.shape}".encode())
            digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()


def _checksummed(value: np.ndarray) -> dict:
    """Dataset options that checksum an array's bytes (HDF5 checksums only chunked data)."""
    return {"chunks": True, "fletcher32": True} if value.size else {}


def _write_model(group, model) -> None:
    """Arrays as datasets, numbers and strings as attributes; prescribed motions (Python
    callables) are not stored: a model read back from arrays alone has them as fixed pins."""
    for item in dataclasses.fields(model):
        value = getattr(model, item.name)
        if isinstance(value, np.ndarray):
            group.create_dataset(item.name, data=value, track_times=False, **_checksummed(value))
        elif isinstance(value, (bool, int, float, str, np.number)):
            group.attrs[item.name] = value
        elif isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            group.attrs[item.name] = json.dumps(value)


def _read_model(group, path, frames: dict[str, Any]) -> Model:
    """The stored model, checked in the store's words (``path: is corrupted: model/…``, by
    :func:`.run_attributes.check_model`) before :class:`Model` checks it in its own."""
    kwargs = {}
    for item in dataclasses.fields(Model):
        if item.name in group:
            kwargs[item.name] = _read(group[item.name])
        elif item.name in group.attrs:
            value = group.attrs[item.name]
            # tuples (particle names; motions, stored only when there are none) went as JSON
            kwargs[item.name] = tuple(json.loads(value)) if item.type.startswith("tuple") else (
                value.item() if isinstance(value, np.generic) else value)
    defaults = {item.name: item.default if item.default_factory is dataclasses.MISSING else
                item.default_factory() for item in dataclasses.fields(Model)
                if item.name not in kwargs}
    for name, value in defaults.items():
        if value is dataclasses.MISSING:
            raise HookeInputError("path", f"is corrupted: model/{name} is missing", str(path))
    check_model(SimpleNamespace(**defaults, **kwargs), path, frames)
    try:
        return Model(**kwargs)
    except HookeInputError as error:
        raise HookeInputError("path", f"is corrupted: model/{error}", str(path)) from None


def _create_checkpoint(group, checkpoint: dict[str, Any]) -> None:
    """The checkpoint's arrays as resizable datasets, before SWMR starts (a SWMR writer may
    write into existing datasets but not create objects, so a run's checkpoints keep the same
    keys); :func:`_write_checkpoint` then updates them in place."""
    for key, value in checkpoint.items():
        if isinstance(value, np.ndarray) and value.ndim and key not in group:
            group.create_dataset(key, data=value, maxshape=(None,) * value.ndim, fletcher32=True,
                                 chunks=value.shape if value.size else True, track_times=False)


def _write_checkpoint(group, checkpoint: dict[str, Any], frames: int) -> None:
    """Scalars and strings as attributes, arrays into their datasets; stamped with the number of
    frames it follows (``frames_written``), which resume checks against the file's."""
    for key, value in checkpoint.items():
        if not isinstance(value, np.ndarray) or value.ndim == 0:
            group.attrs[key] = value
            continue
        dataset = group[key]
        if dataset.shape != value.shape:
            dataset.resize(value.shape)
        dataset[...] = value
    group.attrs[CHECKPOINT_STAMP] = frames


CHECKPOINT_STAMP = "frames_written"


def _write_failure(error: BaseException) -> str:
    """Why writing failed, in a few words: h5py reports the system's errno inside HDF5's text."""
    code = getattr(error, "errno", None)
    found = re.search(r"errno = (\d+)", str(error))
    code = int(found.group(1)) if code is None and found else code
    if code in DISK_FULL:
        return f"the disk is full ({os.strerror(code)})"
    return f"it cannot be written ({os.strerror(code) if code else _reason(error)})"


def _aside(path: Path, field: str) -> Path:
    """Where a writer of ``path`` writes until its first flush: ``<path>.new``, whose leftover
    (a killed writer's) is removed, not written through; a directory there is refused before
    any step, naming it (it failed at the first write, exit 1, naming ``path`` only), and so
    is one where its compacted copy goes (:func:`_compacted`: the run ended with a note that
    the disk had no room for it)."""
    aside = path.with_name(path.name + ".new")
    for place in (aside, _compacted(path)):
        if place.is_dir() and not place.is_symlink():
            raise HookeInputError(field, f"cannot be written: a directory {place.name} stands "
                                  "where its new content is written first; remove it", str(path))
    return aside


class TrajectoryWriter:
    """Appends frames to ``path`` in blocks (``write_frames``, when ``due``); ``close`` marks the
    run complete. ``field``: what a refusal of ``path`` calls it (``simulate``'s ``store``).

    Safety (each is tested in tests/test_store_faults.py):

    - everything is computed and checked before a file is touched; an output another writer
      holds is refused (:class:`~hooke.io.lock.OutputLock`, naming its PID);
    - a new run is written aside, to ``<path>.new``, and takes ``path``'s name only once its
      first frames are flushed: a rejected or failed start leaves an earlier run as it was; a
      resumed run (:meth:`append`) writes its copy of the stored run aside in the same way;
    - ``outputs``, the files that showed the run ``path`` held, are removed right after the new
      file took its name: a run killed from then on (``kill -9`` too, which nothing cleans up
      after) leaves none of them to pass for its own;
    - a flush writes the frames, flushes, and only then advances ``frames_written`` and the
      checkpoint (stamped with that count), and flushes again: the file never counts frames
      that are not on disk, and its checkpoint belongs to its last counted frame;
    - a write that fails (a full disk) stops the run with :class:`StoreWriteError`; the file is
      abandoned as its last complete flush left it (:meth:`abandon`) and resumes from there.
    """

    def __init__(self, path, scene, integrator: str, dt: float, t_end: float, save_every: int,
                 options: dict[str, Any], max_energy_growth: float | None = None,
                 flush_seconds: float = 0.25, field: str = "path", outputs=()):
        settings = {"integrator": integrator, "dt": dt, "t_end": t_end, "save_every": save_every,
                    "options": options}
        attributes = {
            "hooke_version": __version__, "scene_name": scene.name,
            "scene_source": scene.source or "", "parameters": json.dumps(scene.parameters, default=str),
            "integrator": integrator, "dt": dt, "t_end": t_end, "save_every": save_every,
            "options": json.dumps(options, default=str),
            "created": created(),
            "input_hash": input_hash(scene, settings),
            "frames_written": 0, "complete": False,
        }
        if max_energy_growth is not None:  # the blow-up guard, kept on by a resumed run
            attributes["max_energy_growth"] = max_energy_growth
        if scene.folder is not None:  # where its obstacle meshes are read from (stored_scene)
            attributes["scene_folder"] = scene.folder
        path = Path(path)
        if os.path.isdir(path):  # (Path's raises for a name too long for the file system)
            raise HookeInputError(field, "is a directory, not a trajectory file", str(path))
        writable_directory(path.parent, field)  # made if missing; a place none can be, named
        check_replaceable(path, field)  # a read-only earlier run is kept, not renamed over
        aside = _aside(path, field)  # (before the lock, which a refusal here would leave held)
        self._hold(path, OutputLock(path, field), aside, 0)
        self._outputs = tuple(outputs)
        with self._opening():
            # a leftover (a killed run's) is removed, not written through: a symbolic link
            # there would have HDF5 truncate the file it points to
            self._aside.unlink(missing_ok=True)
            self.file = h5py.File(self._aside, "w", libver=LIBVER)
            model_bytes = sum(value.nbytes for value in vars(scene.model).values()
                              if isinstance(value, np.ndarray))
            text_bytes = sum(len(str(value)) for value in attributes.values())
            reserve(self._aside, 2 * (model_bytes + text_bytes) + RESERVE_SLACK)
            self.file.attrs.update(attributes)
            _write_model(self.file.create_group("model"), scene.model)
            self.file.create_group("frames")
            self.file.create_group("checkpoint")
        self._start(flush_seconds)

    def _hold(self, path: Path, lock: OutputLock, aside: Path | None, count: int) -> None:
        """The writer's hold on ``path``: its lock, the file it writes until its first frames
        (``aside``; None: ``path`` itself) and the frames already in it."""
        self.path, self._lock, self._aside, self.count = path, lock, aside, count
        self.file = None
        self.failure: StoreWriteError | None = None
        self._outputs: tuple = ()

    def _start(self, flush_seconds: float) -> None:
        self.frames = self.file["frames"]
        self.flush_seconds = flush_seconds
        self._last_flush = time.perf_counter()
        self._started_swmr = False

    @classmethod
    def append(cls, path: Path, frames: int, flush_seconds: float = 0.25,
               lock: OutputLock | None = None) -> "TrajectoryWriter":
        """Reopen a stored run to add frames after its first ``frames`` (extra rows are dropped),
        holding ``lock`` (taken here when None).

        The kept frames are copied into a fresh file beside it, ``<path>.new`` (:func:`copy_run`:
        a killed writer's "open for writing" flag, which blocks a plain reopen, goes too), which
        is appended to and takes ``path``'s name at its first flush, as a new run's file does:
        a resume that fails or is killed before then (a full disk, a Ctrl-C, ``kill -9``)
        leaves ``path`` byte for byte as it was. A disk with no room for the copy is a
        :class:`StoreWriteError`, as a full disk at a flush is.
        """
        self = cls.__new__(cls)
        path = Path(path)
        aside = _aside(path, "path")
        self._hold(path, OutputLock(path) if lock is None else lock, aside, frames)
        try:
            with self._opening():  # appended to in place (see the module's contract)
                copy_run(self.path, self._aside, frames, compress=False)
                self.file = h5py.File(self._aside, "a", libver=LIBVER)
        except NoRoom:  # as a full disk at a flush is: the file keeps its frames
            raise self._stopped(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))) from None
        self._start(flush_seconds)
        return self

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """A write that fails stops the run: :class:`StoreWriteError`, the file abandoned."""
        try:
            yield
        except (OSError, RuntimeError) as error:
            raise self._stopped(error) from None

    @contextmanager
    def _opening(self) -> Iterator[None]:
        """As :meth:`_writing`, and any other exception (a Ctrl-C) abandons the file too."""
        try:
            with self._writing():
                yield
        except BaseException:
            self.abandon()
            raise

    def _dataset(self, key: str, value: np.ndarray):
        if key not in self.frames:
            value = np.asarray(value)
            _frame_dataset(self.frames, key, value.shape, value.dtype, 0, compress=False)
        return self.frames[key]

    def due(self, pending: int, frame_bytes: int) -> bool:
        """Whether ``pending`` frames of ``frame_bytes`` each are to be written now: once they
        are :func:`flush_frames` of them, or ``flush_seconds`` after the last write."""
        return pending > 0 and (pending >= flush_frames(frame_bytes)
                                or time.perf_counter() - self._last_flush >= self.flush_seconds)

    def write_frames(self, block: dict[str, np.ndarray], checkpoint: dict[str, Any]) -> None:
        """Write a block of frames (keys: t, x, v, energy/<term>, extras; (F, …) arrays) and the
        integrator's checkpoint after its last frame, then count them (see the class's safety
        notes); a write that fails raises :class:`StoreWriteError`."""
        if self.failure is not None:  # stopped already: nothing more reaches the file
            raise self.failure
        frames = len(block["t"])
        if not frames:
            return
        count = self.count + frames
        with self._writing():
            if self._aside is not None:  # SWMR starts in this write: see _reserve
                reserve(self._aside, self.file.id.get_filesize()
                        + _block_bytes(block, checkpoint) + RESERVE_SLACK)
            self._write_block(block, checkpoint, count)
            _write_checkpoint(self.file["checkpoint"], checkpoint, count)
            self.file.attrs["frames_written"] = count
            self.file.flush()
            if self._aside is not None:  # its first frames are on disk: it replaces the old run
                os.truncate(self._aside, self.file.id.get_filesize())  # the reserve's unused rest
                os.replace(self._aside, self.path)  # (a refusal: the old run stays, as it was)
                self._aside = None
                remove_files(self._outputs)
        self.count = count
        self._last_flush = time.perf_counter()

    def _write_block(self, block: dict[str, np.ndarray], checkpoint: dict[str, Any],
                     count: int) -> None:
        """The frames into the frame datasets, flushed (readers still see the old count)."""
        datasets = [(self._dataset(key, value[0]), value) for key, value in block.items()]
        if not self._started_swmr:
            _create_checkpoint(self.file["checkpoint"], checkpoint)
            self.file.swmr_mode = True  # every object exists now; from here a reader is always safe
            self._started_swmr = True
        for dataset, value in datasets:
            dataset.resize(count, axis=0)
            dataset[self.count:count] = value
        self.file.flush()

    def close(self, complete: bool, stats: dict[str, int], failure: str = "") -> None:
        """Flush, close and :func:`rewrite`; ``failure``: why the run stopped (its last frame may
        then lie off the save grid, so such a run is not resumed). A run that wrote no frame
        leaves no file (an earlier run at ``path`` stays). On a disk too full for the compacting
        copy the file stays as it was flushed: complete and readable, only larger."""
        if self._aside is not None:
            self.abandon()
            return
        try:
            # a Ctrl-C here abandons the file too: left open, it stayed locked by this process
            with self._opening():
                self.file.attrs["complete"] = complete
                self.file.attrs["stats"] = json.dumps(stats)
                if failure:
                    self.file.attrs["failure"] = failure
                self.file.flush()  # a failure here finds the file open: it is abandoned safely
                kept = detached(self.file.id.get_vfd_handle(), self.path)  # (io.store_place)
                self.file.close()
            if kept is not None:
                put_back(kept, self.path, self.count)
            rewrite(self.path)
        except HookeInputError:  # the copy could not be written: the file it would copy stays
            pass
        finally:
            self._lock.release()

    def _stopped(self, error: BaseException) -> StoreWriteError:
        """The error that stops the run after a failed write, the file abandoned."""
        self.abandon()
        what = (f"after {self.count} frame(s); the file keeps them: free space, then continue "
                f"with `hooke run --resume {self.path}`" if self.count else
                "before the first frame was written; any earlier run in the file is left as it was")
        self.failure = StoreWriteError(f"path: {_write_failure(error)} {what}, got "
                                       f"{format_value(str(self.path))}", self.count)
        return self.failure

    def abandon(self) -> None:
        """Let go of the file without writing to it again, and of the lock; a file written aside
        (no frame of it counted yet) is removed.

        After a failed write HDF5 holds changes it could not write, and closing the file would
        try again: h5py's close then fails half-way and the process crashes in HDF5's shutdown
        (the segmentation fault after h5py's "Can't decrement id ref count" tracebacks). So the
        file's descriptor is first pointed at /dev/null: the close writes nowhere, and the file
        stays as its last complete flush left it, readable as a killed writer's (SWMR)."""
        if self.file is not None:
            try:
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, self.file.id.get_vfd_handle())
                os.close(null)
                self.file.close()
            except (OSError, RuntimeError, ValueError):
                pass  # HDF5 may still complain while closing: nothing reaches the file any more
            self.file = None
        if self._aside is not None:
            try:
                self._aside.unlink(missing_ok=True)
            except OSError:
                pass  # the directory refuses even that: the lock is let go all the same
        self._lock.release()


def _block_bytes(block: dict[str, np.ndarray], checkpoint: dict[str, Any]) -> int:
    """At most what writing ``block`` and ``checkpoint`` into a fresh file allocates: each
    frame dataset's chunks whole (:func:`chunk_frames`), each checkpoint array."""
    total = 0
    for value in block.values():
        frames = np.asarray(value)
        frame_bytes = frames[0].nbytes
        chunk = chunk_frames(frame_bytes)
        total += math.ceil(len(frames) / chunk) * chunk * frame_bytes
    return total + sum(value.nbytes for value in checkpoint.values()
                       if isinstance(value, np.ndarray))


def _copy_bytes(source: h5py.File, frames: int | None) -> int:
    """At most what :func:`rewrite`'s copy of ``source`` takes: every dataset uncompressed (the
    frame datasets' first ``frames`` frames), and 1 MiB for the metadata."""
    sizes: list[int] = []

    def count(name: str, item) -> None:
        if isinstance(item, h5py.Dataset):
            rows = item.shape[0] if item.shape else 1
            kept = rows if frames is None or not name.startswith("frames/") else min(rows, frames)
            sizes.append(item.dtype.itemsize * kept * math.prod(item.shape[1:]))

    source.visititems(count)
    return sum(sizes) + 2**20


COPY_BYTES = 2**24  # frames copied at a time by rewrite: whole chunks, about this many bytes


def _frame_dataset(group, name: str, frame_shape: tuple, dtype, frames: int, compress: bool):
    """A frame dataset of ``frames`` frames, growable, chunked by :func:`chunk_frames`; gzip
    compressed when ``compress`` (a finished file), else with chunks of a fixed size (a file
    being written: see the module's contract)."""
    frame_bytes = int(np.prod(frame_shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    packing = {"compression": "gzip", "compression_opts": 4, "shuffle": True} if compress else {}
    return group.create_dataset(name, shape=(frames, *frame_shape), maxshape=(None, *frame_shape),
                                dtype=dtype, chunks=(chunk_frames(frame_bytes), *frame_shape),
                                fletcher32=True, track_times=False, **packing)


def _copy_frames(source: h5py.Dataset, target, name: str, frames: int, compress: bool) -> None:
    """The first ``frames`` frames of ``source`` into a new frame dataset, whole chunks of about
    COPY_BYTES at a time (a run's frames need not fit in memory)."""
    copy = _frame_dataset(target, name, source.shape[1:], source.dtype, frames, compress)
    chunk_bytes = int(np.prod(copy.chunks, dtype=np.int64)) * source.dtype.itemsize
    step = copy.chunks[0] * max(1, COPY_BYTES // max(chunk_bytes, 1))
    for start in range(0, frames, step):
        copy[start:start + step] = _read(source, slice(start, min(start + step, frames)))


def _copy_group(source, target, frames: int | None = None, compress: bool = True) -> None:
    """``source``'s attributes (by name) and members into the new group ``target``; groups are
    made afresh, not copied, because a copy keeps their object headers' message order, which
    depends on the order in which the run's flushes rewrote their attributes. Frame datasets
    (under /frames) keep their first ``frames`` frames (all when None) and are made compressed
    or not (``compress``); other datasets are copied as they are."""
    for key in sorted(source.attrs):
        target.attrs[key] = source.attrs[key]
    for name, item in source.items():
        if isinstance(item, h5py.Group):
            _copy_group(item, target.create_group(name, track_order=False), frames, compress)
        elif item.name.startswith("/frames/"):
            _copy_frames(item, target, name, item.shape[0] if frames is None else frames, compress)
        else:
            source.copy(item, target, name=name)


class NoRoom(HookeInputError):
    """A copy of a stored run that the disk has no room for (see :func:`copy_run`)."""


def copy_run(path: Path, fresh: Path, frames: int | None = None, compress: bool = True) -> None:
    """Copy every object of the stored run at ``path`` into a new file ``fresh`` (a leftover
    there is removed first, never written through), keeping the first ``frames`` frames (all
    when None), compressed (``compress``: a finished run) or in the fixed-size chunks a writer
    appends to (a resumed run). ``path`` is only read. A file that cannot be read
    (:func:`open_trajectory`), or whose copy cannot be written, is one line (:class:`NoRoom`
    when the disk is full) and leaves no copy."""
    with open_trajectory(path) as source:
        with suppress(OSError):  # a leftover, never written through: its space counts as free
            fresh.unlink(missing_ok=True)
        need = _copy_bytes(source, frames)
        free = shutil.disk_usage(fresh.parent).free
        if need > free:  # refused before writing: HDF5 crashes the process once a copy fails
            raise NoRoom("path", f"could not be rewritten through {fresh.name} (the disk is "
                         f"full: its copy may take {format_bytes(need)}, {format_bytes(free)} "
                         "are free); it is left as it was", str(path))
        try:
            with h5py.File(fresh, "w", libver=LIBVER) as target:
                _copy_group(source, target, frames, compress)
        except BaseException as error:
            if fresh.is_file():
                fresh.unlink()
            if isinstance(error, OSError) or (isinstance(error, RuntimeError)
                                              and fresh.name in str(error)):  # (h5py's words)
                failure = _write_failure(error)
                refusal = NoRoom if failure.startswith("the disk is full") else HookeInputError
                raise refusal("path", f"could not be rewritten through {fresh.name} "
                              f"({failure}); it is left as it was", str(path)) from None
            raise


def _compacted(path: Path) -> Path:
    """Where :func:`rewrite` writes ``path``'s copy: ``<path>.rewrite``."""
    return path.with_name(path.name + ".rewrite")


def rewrite(path: Path, frames: int | None = None, compress: bool = True) -> None:
    """:func:`copy_run` of ``path`` into a fresh file that then atomically replaces it. The
    file's layout then depends on its content only, not on when frames were flushed; a killed
    writer's "open for writing" flag goes too. A file that cannot be read, or whose copy cannot
    be written or renamed, is left as it was, with a one-line error that says which."""
    fresh = _compacted(path)
    copy_run(path, fresh, frames, compress)
    try:
        os.replace(fresh, path)
    except OSError as error:  # the folder or the file refuses (immutable): no copy is left
        fresh.unlink(missing_ok=True)
        raise HookeInputError("path", f"could not be replaced by its copy {fresh.name} "
                              f"({error.strerror or error}); it is left as it was",
                              str(path)) from None


# -- reading (opening a file, reading a dataset: hooke.io.opening) -----------------------------
def read_trajectory(path, frames: slice | int | None = None) -> dict[str, Any]:
    """The stored run as plain arrays: only the requested frame range is read from disk.

    ``frames`` is a slice or one frame's index (negative counts from the end). Returns a dict
    with ``t``, ``x``, ``v``, ``energy`` (dict), ``extras`` (dict), ``model`` (a Model), ``attrs``
    (dict), ``checkpoint`` (dict: attributes and arrays) and ``total_frames``.
    """
    with open_trajectory(path) as handle:
        total = _frames_written(handle, path)
        pick = _frame_range(frames, total)
        out: dict[str, Any] = {"energy": {}, "extras": {}}
        for key, item in handle["frames"].items():
            if isinstance(item, h5py.Group):
                out["energy"] = {term: _read(data, pick) for term, data in item.items()}
            elif key in ("t", "x", "v"):
                out[key] = _read(item, pick)
            else:
                out["extras"][key] = _read(item, pick)
        check_finite({key: out[key] for key in ("t", "x", "v")}, pick, path)
        out["model"] = _read_model(handle["model"], path, out)
        out["attrs"] = dict(handle.attrs)
        checkpoint = handle["checkpoint"]
        out["checkpoint"] = {**checkpoint.attrs, **{key: _read(item) for key, item in checkpoint.items()}}
        out["total_frames"] = total
    return out


def check_finite(frames: dict[str, Any], pick: slice, path) -> None:
    """hooke stores finite frames only (the blow-up guard stops a run at its last finite state),
    so a NaN or inf in t, x or v (``frames``: arrays by their name under /frames, read at
    ``pick``) is an edit or damage: refused, never plotted or resumed from."""
    for key in frames:
        values = np.asarray(frames[key], dtype=float)
        finite = np.isfinite(values.reshape(len(values), -1)).all(axis=1)
        if not finite.all():
            frame = range(pick.stop)[pick][int(np.argmin(finite))]
            raise HookeInputError("path", f"is corrupted: frames/{key} holds a non-finite value at "
                                  f"frame {frame} (hooke stores finite frames only)", str(path))


def _frame_range(frames: slice | int | None, total: int) -> slice:
    if frames is None:
        return slice(0, total)
    if is_count(frames):
        index = int(frames) + (total if frames < 0 else 0)
        if not 0 <= index < total:
            raise HookeInputError("frames", f"out of range for {total} stored frame(s)", int(frames))
        return slice(index, index + 1)
    shown = f"{frames.start}:{frames.stop}:{frames.step}" if isinstance(frames, slice) else frames
    if not isinstance(frames, slice):
        raise HookeInputError("frames", "must be a slice (e.g. slice(0, 100, 10)) or one "
                              "frame's index", frames)
    if not all(part is None or is_count(part) for part in (frames.start, frames.stop, frames.step)):
        raise HookeInputError("frames", "must be a slice of integers (e.g. slice(0, 100, 10)) or "
                              "one frame's index", shown)
    start = 0 if frames.start is None else int(frames.start)
    stop = total if frames.stop is None else int(frames.stop)
    step = 1 if frames.step is None else int(frames.step)
    if step < 1:  # a slice of a stored run reads forwards
        raise HookeInputError("frames", "the slice's step must be an integer >= 1", shown)
    if start < 0:
        start += total
    if stop < 0:
        stop += total
    if not 0 <= start < stop <= total:
        raise HookeInputError("frames", f"out of range for {total} stored frame(s)", shown)
    return slice(start, stop, min(step, total))  # the same frames; h5py takes a C long


def stored_scene(settings: dict[str, Any], path) -> Scene:
    """The scene a stored run's text builds (its :func:`run_settings`), obstacle meshes read
    from the folder of the scene file it was loaded from (``scene_folder``; without it, as in a
    file written before it was kept, from the current directory)."""
    folder = settings.get("scene_folder")
    return build(parse(settings["scene_source"], source=str(path), folder=folder),
                 settings["scene_source"], overrides=settings["parameters"],
                 default_name=settings["scene_name"], folder=folder)


def open_result(path, frames: slice | int | None = None):
    """``hooke.open``: a stored run as a :class:`hooke.Result`, reading only ``frames`` (a slice,
    or one frame's index for a one-frame Result).

    The scene is rebuilt from the stored scene file text when there is one (so analytic solutions
    and prescribed motions come back), else — or when the text cannot be built here, as when an
    obstacle's mesh file (a path relative to the scene file) is not found — from the stored
    model arrays.
    """
    data = read_trajectory(path, frames)
    settings = run_settings(data["attrs"], path)
    scene = None
    if settings["scene_source"]:
        try:
            scene = stored_scene(settings, path)
        except HookeInputError:
            scene = None
    if scene is None:  # its motions are not stored: fixed pins, at rest (their u̇(0) was refused)
        model = data["model"]
        scene = Scene(dataclasses.replace(model, v0=np.where(model.pinned[:, None], 0.0, model.v0)),
                      integrator=settings["integrator"], dt=settings["dt"],
                      t_end=settings["t_end"], name=settings["scene_name"])
    return Result(t=data["t"], x=data["x"], v=data["v"], energy=data["energy"], scene=scene,
                  integrator=settings["integrator"], dt=settings["dt"], options=settings["options"],
                  stats=settings.get("stats", {}), complete=settings["complete"],
                  **frame_extras(data["extras"], len(data["t"]), data["model"].dim))
