"""Exports of a stored trajectory for ParaView and other tools.

- :func:`write_xdmf`: an XDMF sidecar next to ``trajectory.h5``, a temporal collection with one
  grid per frame whose points are hyperslabs of /frames/x, so ParaView opens the time series
  directly without copying data. Its cells are the springs and the joints as 2-node polylines (a
  spatial collection of a ``springs`` and a ``joints`` block when the model has both; only the
  particles as vertices when it has neither); point data ``velocity`` and ``contact_force``, cell
  data ``joint_force`` (the joint's tension) on the joints, where the run recorded them.
- :func:`export_vtu`: one .vtu file per frame via meshio — springs then joints as ``line`` cells
  (cell data ``joint``: 1 on joints, 0 on springs, and ``joint_force``, 0 on springs), or the
  particles as ``vertex`` cells when there are neither; point data ``velocity`` and
  ``contact_force`` — plus a .pvd collection listing them with their times.

Both read the whole trajectory (or its header) before writing anything, so a file that cannot be
read leaves the existing exports as they were; the sidecar is replaced atomically.
"""

from __future__ import annotations

import os
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np

from .store import open_trajectory, read_trajectory

POINT_DATA = ("v", "contact_force")  # per-particle frame datasets, exported as point data
POINT_NAMES = {"v": "velocity"}


def _blocks(handle) -> list[tuple[str, str | None, int]]:
    """(name, connectivity dataset or None for the particles as vertices, cell count) of each
    block of cells: never an empty one."""
    blocks = [(name, f"/model/{dataset}", handle[f"model/{dataset}"].shape[0])
              for name, dataset in (("springs", "spring_indices"), ("joints", "joint_indices"))]
    blocks = [block for block in blocks if block[2]]
    return blocks or [("particles", None, handle["frames/x"].shape[1])]


def write_xdmf(h5_path) -> Path:
    """Write ``<name>.xdmf`` beside ``h5_path`` describing every frame written so far."""
    h5_path = Path(h5_path)
    with open_trajectory(h5_path) as handle:
        stored = handle["frames"]
        count = int(handle.attrs.get("frames_written", stored["x"].shape[0]))
        times = stored["t"][:count]
        shapes = {key: stored[key].shape for key in ("x", *POINT_DATA, "joint_force") if key in stored}
        blocks = _blocks(handle)
    name = escape(h5_path.name)
    grids = []
    for k in range(count):
        parts = [_block(name, k, block, shapes) for block in blocks]
        time_tag = f'        <Time Value="{float(times[k])!r}"/>\n'
        if len(parts) == 1:
            grids.append(f'      <Grid Name="frame {k}" GridType="Uniform">\n{time_tag}{parts[0]}'
                         '      </Grid>\n')
        else:
            inner = "".join(f'        <Grid Name="{label}" GridType="Uniform">\n{part}        </Grid>\n'
                            for (label, _, _), part in zip(blocks, parts))
            grids.append(f'      <Grid Name="frame {k}" GridType="Collection" CollectionType="Spatial">\n'
                         f'{time_tag}{inner}      </Grid>\n')
    text = ('<?xml version="1.0" ?>\n<Xdmf Version="3.0">\n  <Domain>\n'
            '    <Grid Name="trajectory" GridType="Collection" CollectionType="Temporal">\n'
            + "".join(grids) + '    </Grid>\n  </Domain>\n</Xdmf>\n')
    path = h5_path.with_suffix(".xdmf")
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)
    return path


def _block(name: str, k: int, block, shapes: dict) -> str:
    """Topology, geometry and attributes of one block of frame k."""
    label, connectivity, cells = block
    n, d = shapes["x"][1:]
    if connectivity is None:
        topology = (f'        <Topology TopologyType="Polyvertex" NodesPerElement="1" NumberOfElements="{n}">\n'
                    f'          <DataItem Dimensions="{n}" NumberType="Int" Format="XML">'
                    f'{" ".join(map(str, range(n)))}</DataItem>\n        </Topology>\n')
    else:
        topology = (f'        <Topology TopologyType="Polyline" NodesPerElement="2" NumberOfElements="{cells}">\n'
                    f'          <DataItem Dimensions="{cells} 2" NumberType="Int" Precision="8" '
                    f'Format="HDF">{name}:{connectivity}</DataItem>\n        </Topology>\n')
    out = topology + _geometry(name, k, shapes["x"])
    for key in POINT_DATA:
        if key in shapes and shapes[key][1]:
            kind = "Vector" if d == 3 else "Matrix"
            out += (f'        <Attribute Name="{POINT_NAMES.get(key, key)}" AttributeType="{kind}" '
                    f'Center="Node">{_slab(name, key, k, shapes[key])}</Attribute>\n')
    if label == "joints" and "joint_force" in shapes:
        out += ('        <Attribute Name="joint_force" AttributeType="Scalar" Center="Cell">'
                f'{_slab(name, "joint_force", k, shapes["joint_force"])}</Attribute>\n')
    return out


def _slab(name: str, dataset: str, k: int, shape, component: int | None = None) -> str:
    """Frame k of /frames/<dataset> (F, ...) as a HyperSlab data item (one component of the last
    axis when ``component`` is given)."""
    rest = list(shape[1:])
    start = [k] + [0] * len(rest)
    count = [1] + rest
    if component is not None:
        start[-1], count[-1] = component, 1
    dims = " ".join(str(c) for c in (count[1:-1] if component is not None else count[1:]))
    rank = len(shape)
    numbers = " ".join(str(v) for v in [*start, *([1] * rank), *count])
    full = " ".join(str(s) for s in shape)
    return (f'<DataItem ItemType="HyperSlab" Dimensions="{dims}" Type="HyperSlab">'
            f'<DataItem Dimensions="3 {rank}" Format="XML">{numbers}</DataItem>'
            f'<DataItem Dimensions="{full}" NumberType="Float" Precision="8" Format="HDF">'
            f'{name}:/frames/{dataset}</DataItem></DataItem>')


def _geometry(name: str, k: int, shape) -> str:
    n, d = shape[1:]
    if d > 1:
        return (f'        <Geometry GeometryType="{"XYZ" if d == 3 else "XY"}">'
                f'{_slab(name, "x", k, shape)}</Geometry>\n')
    zeros = f'<DataItem Dimensions="{n}" Format="XML">{" ".join(["0"] * n)}</DataItem>'
    return (f'        <Geometry GeometryType="X_Y_Z">{_slab(name, "x", k, shape, 0)}'
            f'{zeros}{zeros}</Geometry>\n')


def export_vtu(h5_path, out_dir) -> list[Path]:
    """One ``frame_00000.vtu`` per stored frame plus ``frames.pvd``; returns the written paths."""
    import meshio

    data = read_trajectory(h5_path)
    model = data["model"]
    point_data = {"velocity": data["v"], **{key: value for key, value in data["extras"].items()
                                            if key == "contact_force" and value.shape[1]}}
    blocks = [indices.astype(np.int64) for indices in (model.spring_indices, model.joint_indices)
              if indices.shape[0]]
    cells = [("line", indices) for indices in blocks] or [
        ("vertex", np.arange(model.n_particles, dtype=np.int64)[:, None])]
    joint = [np.zeros(model.n_springs, dtype=np.int8)] * (model.n_springs > 0) + [
        np.ones(model.n_joints, dtype=np.int8)] * (model.n_joints > 0)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written, entries = [], []
    for k, (t, x) in enumerate(zip(data["t"], data["x"])):
        cell_data = {}
        if model.n_joints:
            force = data["extras"]["joint_force"][k]
            cell_data = {"joint": joint,
                         "joint_force": [np.zeros(model.n_springs)] * (model.n_springs > 0) + [force]}
        path = out_dir / f"frame_{k:05d}.vtu"
        meshio.write(path, meshio.Mesh(_padded(x), cells, cell_data=cell_data,
                                       point_data={key: _padded(value[k])
                                                   for key, value in point_data.items()}))
        written.append(path)
        entries.append(f'    <DataSet timestep="{float(t)!r}" file="{path.name}"/>')
    collection = out_dir / "frames.pvd"
    collection.write_text('<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1">\n'
                          '  <Collection>\n' + "\n".join(entries) + '\n  </Collection>\n</VTKFile>\n')
    return written + [collection]


def _padded(values: np.ndarray) -> np.ndarray:
    """(n, d) values as (n, 3), zeros in the missing components (VTK points are 3D)."""
    out = np.zeros((values.shape[0], 3))
    out[:, : values.shape[1]] = values
    return out
