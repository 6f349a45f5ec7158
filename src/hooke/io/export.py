"""Exports of a stored trajectory for ParaView and other tools.

- :func:`write_xdmf`: an XDMF sidecar next to ``trajectory.h5``, a temporal collection with one
  grid per frame that points into the HDF5 file (hyperslabs of /frames/x …), so ParaView opens
  the time series directly without copying data. Each frame is a spatial collection of the
  model's blocks of cells that are not empty, in this order: ``springs`` and ``joints`` (2-node
  polylines), ``triangles`` and ``tetrahedra`` (the body's mesh cells, ``Model.triangles`` and
  ``Model.tetrahedra``); a single block is the frame itself, and a model with none of them is its
  particles as vertices. Points are 3D and every block has the frame's point data ``velocity``
  and ``contact_force`` (where the run recorded it) as 3-component vectors (2D and 1D values
  JOINed with zeros), and the joints block its cell data ``joint_force`` (the joint's tension).
- :func:`export_frames` (and :func:`export_vtu`): one file per stored frame for each of
  ``FORMATS``, in ``<out>/<format>/frame_00000.<format>`` via meshio, numbered as the frames:
  ``vtu`` — the same blocks as ``line``, ``triangle`` and ``tetra`` cells (cell data ``joint``:
  1 on joints, 0 elsewhere, and ``joint_force``, 0 off the joints, when the model has joints),
  or the particles as ``vertex`` cells, point data ``velocity`` and ``contact_force`` (3
  components), plus ``frames.pvd`` listing them with their times; ``obj`` and ``ply`` — the
  body's surface (``Model.surface_triangles``: a 2D sheet's triangles at z = 0, a 3D body's
  triangles and tetrahedra's boundary) with every particle as a vertex (vertex i is particle
  i in every frame, so tools that play mesh sequences see one topology), positions only.

Both read the whole trajectory through its checksums (the sidecar, which reads only the
times, checks the rest's unless told it was just written) and check every requested format and
every file to write before writing anything, so a file that cannot be read or is corrupted, a
format the model cannot give (a surface format for a run without triangles), or a directory,
FIFO or device where a file goes leaves the existing exports as they were; every file is
written aside and renamed (a symbolic link in its place is replaced, never written through);
the partial files of those outputs that an export killed midway left are removed first
(:func:`~hooke.io.outputs.remove_stale_partials`), and the frame files numbered past this run's
last frame, an export of a longer run's, once this run's frames are written.

XDMF as VTK's reader (ParaView's "XDMF Reader") reads it without a complaint: the reader caches
a block's points under the text that comes first inside its geometry's data item, and logs
"Cannot find DataItem element in geometry xml" at every step when there is none (a HyperSlab
starts with an element); each frame's geometry item starts with a comment naming the frame, a
key of its own, so the points read are always the frame's. The blocks of frame k are named
``<block> k`` (``springs 7``): names unique in the file, as the reader makes them anyway.
"""

from __future__ import annotations

import re
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

from ..errors import HookeInputError, as_path
from .outputs import (check_replaceable, check_replaceables, remove_stale_partials,
                      writable_directory, written_aside)
from .opening import check_checksums, open_trajectory
from .store import read_trajectory

POINT_DATA = ("v", "contact_force")  # per-particle frame datasets, exported as point data
POINT_NAMES = {"v": "velocity"}
# Blocks of cells: (name, /model dataset, XDMF topology, meshio cell type).
CELL_BLOCKS = (("springs", "spring_indices", "Polyline", "line"),
               ("joints", "joint_indices", "Polyline", "line"),
               ("triangles", "triangles", "Triangle", "triangle"),
               ("tetrahedra", "tetrahedra", "Tetrahedron", "tetra"))
FORMATS = ("vtu", "obj", "ply")
SURFACE_FORMATS = ("obj", "ply")


def _blocks(handle) -> list[tuple[str, str | None, int, int]]:
    """(name, connectivity dataset or None for the particles as vertices, cell count, nodes per
    cell) of each block of cells: never an empty one (files written before the model had cells
    have no triangles or tetrahedra datasets)."""
    blocks = [(name, f"/model/{dataset}", *handle[f"model/{dataset}"].shape)
              for name, dataset, _, _ in CELL_BLOCKS if f"model/{dataset}" in handle]
    blocks = [block for block in blocks if block[2]]
    return blocks or [("particles", None, handle["frames/x"].shape[1], 1)]


def write_xdmf(h5_path, verify: bool = True) -> Path:
    """Write ``<name>.xdmf`` beside ``h5_path`` describing every frame written so far; with
    ``verify``, only once every stored array has passed its checksum (:func:`check_checksums`:
    the sidecar points into the frames without reading them), as ``hooke.open`` would check
    them. A sidecar path that is a directory, FIFO or device is refused (``path``) before that
    (:func:`check_replaceable`)."""
    h5_path = as_path(h5_path, "path")
    if not isinstance(verify, (bool, np.bool_)):  # [] skipped the checksums, "no" ran them
        raise HookeInputError("verify", "must be True or False", verify)
    path = h5_path.with_suffix(".xdmf")
    check_replaceable(path, "path")
    remove_stale_partials([path])
    with open_trajectory(h5_path) as handle:
        if verify:
            check_checksums(handle)
        stored = handle["frames"]
        count = int(handle.attrs.get("frames_written", stored["x"].shape[0]))
        times = stored["t"][:count]
        shapes = {key: stored[key].shape for key in ("x", *POINT_DATA, "joint_force") if key in stored}
        blocks = _blocks(handle)
    name = escape(h5_path.name)
    # Written frame by frame, never held whole: 1.2 kB a frame, 0.5 GB for the 411,000 frames of
    # a spring1d run saved at each step (the text and its parts held twice over before).
    with written_aside(path) as partial, open(partial, "w", encoding="utf-8") as sidecar:
        sidecar.write('<?xml version="1.0" ?>\n<Xdmf Version="3.0">\n  <Domain>\n'
                      '    <Grid Name="trajectory" GridType="Collection" CollectionType="Temporal">\n')
        for k in range(count):
            sidecar.write(_frame_grid(name, k, float(times[k]), blocks, shapes))
        sidecar.write('    </Grid>\n  </Domain>\n</Xdmf>\n')  # (a full disk: no partial file left)
    return path


def _frame_grid(name: str, k: int, time: float, blocks, shapes: dict) -> str:
    """Frame k's grid: its time and its blocks."""
    parts = [_block(name, k, block, shapes) for block in blocks]
    time_tag = f'        <Time Value="{time!r}"/>\n'
    if len(parts) == 1:
        return (f'      <Grid Name="frame {k}" GridType="Uniform">\n{time_tag}{parts[0]}'
                '      </Grid>\n')
    # Names unique in the file ("springs 7"): VTK's reader renames a repeated leaf name by
    # probing "springs[1]", "springs[2]" … in turn, time that grows with the square of the frame
    # count (4 s to open 2,000 frames of two blocks, 0.4 s unique).
    inner = "".join(f'        <Grid Name="{label} {k}" GridType="Uniform">\n{part}        </Grid>\n'
                    for (label, *_), part in zip(blocks, parts))
    return (f'      <Grid Name="frame {k}" GridType="Collection" CollectionType="Spatial">\n'
            f'{time_tag}{inner}      </Grid>\n')


def _vectors(name: str, key: str, k: int, shape, first: str = "") -> str:
    """Frame k of /frames/<key> (F, n, d) as (n, 3) values: the hyperslab itself in 3D, else
    its d components JOINed (interleaved) with 3 − d zeros written as 0·$0 (XDMF has no
    constant array, and zeros written out would repeat n numbers in every frame). ``first``
    goes first inside the item (see :func:`_block`)."""
    n, d = shape[1:]
    if d == 3:
        return _slab(name, key, k, shape, first=first)
    terms = ", ".join([f"${c}" for c in range(d)] + ["0 * $0"] * (3 - d))
    return (f'<DataItem ItemType="Function" Function="JOIN({terms})" Dimensions="{n} 3">{first}'
            f'{"".join(_slab(name, key, k, shape, c) for c in range(d))}</DataItem>')


def _block(name: str, k: int, block, shapes: dict) -> str:
    """Topology, geometry and attributes of one block of frame k."""
    label, connectivity, cells, nodes = block
    kind = {block_name: topology for block_name, _, topology, _ in CELL_BLOCKS}.get(label)
    if connectivity is None:
        topology = (f'        <Topology TopologyType="Polyvertex" NodesPerElement="1" NumberOfElements="{cells}">\n'
                    f'          <DataItem Dimensions="{cells}" NumberType="Int" Format="XML">'
                    f'{" ".join(map(str, range(cells)))}</DataItem>\n        </Topology>\n')
    else:
        topology = (f'        <Topology TopologyType="{kind}" NodesPerElement="{nodes}" NumberOfElements="{cells}">\n'
                    f'          <DataItem Dimensions="{cells} {nodes}" NumberType="Int" Precision="8" '
                    f'Format="HDF">{name}:{connectivity}</DataItem>\n        </Topology>\n')
    # VTK's reader keys a block's cached points by the text first inside the geometry's item:
    # this comment makes it the frame's own (a HyperSlab has no text: the reader would complain).
    geometry = _vectors(name, "x", k, shapes["x"], first=f"<!-- frame {k} -->")
    out = topology + f'        <Geometry GeometryType="XYZ">{geometry}</Geometry>\n'
    for key in POINT_DATA:
        if key in shapes and shapes[key][1]:
            out += (f'        <Attribute Name="{POINT_NAMES.get(key, key)}" AttributeType="Vector" '
                    f'Center="Node">{_vectors(name, key, k, shapes[key])}</Attribute>\n')
    if label == "joints" and "joint_force" in shapes:
        out += ('        <Attribute Name="joint_force" AttributeType="Scalar" Center="Cell">'
                f'{_slab(name, "joint_force", k, shapes["joint_force"])}</Attribute>\n')
    return out


def _slab(name: str, dataset: str, k: int, shape, component: int | None = None,
          first: str = "") -> str:
    """Frame k of /frames/<dataset> (F, ...) as a HyperSlab data item (one component of the last
    axis when ``component`` is given), ``first`` first inside it."""
    rest = list(shape[1:])
    start = [k] + [0] * len(rest)
    count = [1] + rest
    if component is not None:
        start[-1], count[-1] = component, 1
    dims = " ".join(str(c) for c in (count[1:-1] if component is not None else count[1:]))
    rank = len(shape)
    numbers = " ".join(str(v) for v in [*start, *([1] * rank), *count])
    full = " ".join(str(s) for s in shape)
    return (f'<DataItem ItemType="HyperSlab" Dimensions="{dims}" Type="HyperSlab">{first}'
            f'<DataItem Dimensions="3 {rank}" Format="XML">{numbers}</DataItem>'
            f'<DataItem Dimensions="{full}" NumberType="Float" Precision="8" Format="HDF">'
            f'{name}:/frames/{dataset}</DataItem></DataItem>')


def export_vtu(h5_path, out_dir, progress=None) -> list[Path]:
    """One ``frame_00000.vtu`` per stored frame plus ``frames.pvd`` in ``out_dir``; returns the
    written paths."""
    out_dir = Path(out_dir)
    return export_frames(h5_path, out_dir.parent, ("vtu",), progress, {"vtu": out_dir})


def export_frames(h5_path, out_dir, formats=("vtu",), progress=None, folders=None,
                  field: str = "formats", out_field: str = "out_dir") -> list[Path]:
    """One file per stored frame for each of ``formats`` (``FORMATS``) in
    ``out_dir/<format>`` (or ``folders[format]``), plus ``frames.pvd`` for vtu; returns the
    written paths. ``progress(done, total)`` is called after each file. A format that is
    unknown or that the run's model cannot give is an input error on ``field`` before any
    write; so, on ``out_field``, is a folder that is a file or cannot be written in, and a
    file to write that is a directory, FIFO or device (:func:`check_replaceable`). Each file
    is written aside and renamed: a link in its place is replaced, never written through."""
    known = ", ".join(FORMATS)
    if isinstance(formats, str):
        formats = (formats,)  # one format by name, not its letters
    if not isinstance(formats, (list, tuple)):
        raise HookeInputError(field, f"must be a format name or a list of them (known: {known})",
                              formats)
    if not formats:
        raise HookeInputError(field, f"must name at least one format (known: {known})", formats)
    for fmt in formats:
        if not isinstance(fmt, str) or fmt not in FORMATS:
            raise HookeInputError(field, f"unknown export format (known: {known})", fmt)
    out_dir = as_path(out_dir, out_field)
    if progress is not None and not callable(progress):
        raise HookeInputError("progress", "must be None or a function progress(done, total)",
                              progress)
    if folders is not None and not isinstance(folders, dict):
        raise HookeInputError("folders", "must be None or a mapping format → directory", folders)
    data = read_trajectory(h5_path)
    model = data["model"]
    faces = model.surface_triangles()
    if not faces.size and set(formats) & set(SURFACE_FORMATS):
        raise HookeInputError(field, "a surface format needs the body's triangles or tetrahedra, "
                              "which this run's model has none of (grid, lattice and from_mesh "
                              "bodies have them)", next(f for f in formats if f in SURFACE_FORMATS))
    total, done, written = len(data["t"]) * len(formats), 0, []
    folders = {fmt: Path((folders or {}).get(fmt, Path(out_dir) / fmt)) for fmt in formats}
    stale = {}
    for fmt in formats:
        writable_directory(folders[fmt], out_field)
        outputs = [*(folders[fmt] / f"frame_{k:05d}.{fmt}" for k in range(len(data["t"]))),
                   folders[fmt] / "frames.pvd"]
        stale[fmt] = _frames_beyond(folders[fmt], fmt, len(data["t"]))
        check_replaceables([*outputs, *stale[fmt]], out_field)  # (so each can be removed)
        remove_stale_partials(outputs)  # of an earlier export killed in the middle
    for fmt in formats:
        meshes = _vtu_meshes(data) if fmt == "vtu" else _surface_meshes(data, faces)
        for k, mesh in enumerate(meshes):
            written.append(folders[fmt] / f"frame_{k:05d}.{fmt}")
            with written_aside(written[-1]) as partial:
                mesh.write(partial)
                if fmt in SURFACE_FORMATS:
                    _drop_write_time(Path(partial))
            done += 1
            if progress is not None:
                progress(done, total)
        if fmt == "vtu":
            written.append(_pvd(folders[fmt], data["t"]))
        for path in stale[fmt]:
            path.unlink(missing_ok=True)
    return written


# meshio's OBJ and PLY writers put the wall-clock time in a header comment ("Created by meshio
# v5.3.5, 2026-11-28T02:59:41.123456"); without it an export of a run is the same bytes each time.
_WRITE_TIME = re.compile(rb"(Created by meshio v[^,\n]*), [^\n]*\n")
_HEADER_BYTES = 512  # the comment is in the first lines of either header


def _drop_write_time(path: Path) -> None:
    """Rewrite ``path`` without the time meshio stamps its OBJ and PLY headers with (the PLY
    header is text up to its end_header line and holds no offsets: it may change length)."""
    data = path.read_bytes()
    head = _WRITE_TIME.sub(rb"\1\n", data[:_HEADER_BYTES], count=1)
    if len(head) != min(len(data), _HEADER_BYTES):
        path.write_bytes(head + data[_HEADER_BYTES:])


def _frames_beyond(folder: Path, fmt: str, frames: int) -> list[Path]:
    """The frame files an export of a longer run left in ``folder`` (``frame_k.fmt``, k at least
    ``frames``): tools that play a folder's numbered files as one sequence (ParaView groups
    ``frame_*.vtu``) would show them after this run's frames as if they were its own."""
    numbers = ((path, path.stem[len("frame_"):]) for path in folder.glob(f"frame_*.{fmt}"))
    return sorted(path for path, number in numbers
                  if number.isascii() and number.isdigit() and int(number) >= frames)


def _pvd(folder: Path, times) -> Path:
    entries = "".join(f'    <DataSet timestep="{float(t)!r}" file="frame_{k:05d}.vtu"/>\n'
                      for k, t in enumerate(times))
    collection = folder / "frames.pvd"
    with written_aside(collection) as partial:
        partial.write_text('<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1">\n'
                           f'  <Collection>\n{entries}  </Collection>\n</VTKFile>\n')
    return collection


def _vtu_meshes(data):
    """The meshio Mesh of each frame for the vtu format (see the module's contract)."""
    import meshio

    model = data["model"]
    point_data = {"velocity": data["v"], **{key: value for key, value in data["extras"].items()
                                            if key == "contact_force" and value.shape[1]}}
    blocks = [(cell_type, getattr(model, dataset).astype(np.int64))
              for _, dataset, _, cell_type in CELL_BLOCKS if getattr(model, dataset).shape[0]]
    cells = blocks or [("vertex", np.arange(model.n_particles, dtype=np.int64)[:, None])]
    joint_block = [dataset == "joint_indices" for _, dataset, _, _ in CELL_BLOCKS
                   if getattr(model, dataset).shape[0]]
    joint = [np.full(len(indices), int(is_joint), dtype=np.int8)
             for (_, indices), is_joint in zip(blocks, joint_block)]
    for k, x in enumerate(data["x"]):
        cell_data = {}
        if model.n_joints:
            force = data["extras"]["joint_force"][k]
            cell_data = {"joint": joint, "joint_force": [
                force if is_joint else np.zeros(len(indices))
                for (_, indices), is_joint in zip(blocks, joint_block)]}
        yield meshio.Mesh(_padded(x), cells, cell_data=cell_data,
                          point_data={key: _padded(value[k]) for key, value in point_data.items()})


def _surface_meshes(data, faces: np.ndarray):
    """Each frame's surface triangles over all particles, positions only (obj, ply)."""
    import meshio

    faces = faces.astype(np.int32)  # what PLY stores (meshio warns on every int64 frame)
    for x in data["x"]:
        yield meshio.Mesh(_padded(x), [("triangle", faces)])


def _padded(values: np.ndarray) -> np.ndarray:
    """(n, d) values as (n, 3), zeros in the missing components (VTK points are 3D)."""
    out = np.zeros((values.shape[0], 3))
    out[:, : values.shape[1]] = values
    return out
