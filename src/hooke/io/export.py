"""Exports of a stored trajectory for ParaView and other tools.

- :func:`write_xdmf`: an XDMF sidecar next to ``trajectory.h5`` (a temporal collection of grids
  whose points are hyperslabs of /frames/x and whose cells are the springs as 2-node polylines),
  so ParaView opens the time series directly without copying data.
- :func:`export_vtu`: one .vtu file per frame via meshio (springs as ``line`` cells, velocity as
  point data) plus a .pvd collection listing them with their times.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

import h5py
import numpy as np

from ..errors import HookeInputError

FORMATS = ("vtu",)


def write_xdmf(h5_path, frames: int | None = None) -> Path:
    """Write ``<name>.xdmf`` beside ``h5_path`` describing its first ``frames`` frames."""
    h5_path = Path(h5_path)
    with h5py.File(h5_path, "r", libver="latest", swmr=True) as handle:
        x_shape = handle["frames/x"].shape
        count = int(handle.attrs.get("frames_written", x_shape[0])) if frames is None else frames
        times = handle["frames/t"][:count]
        springs = handle["model/spring_indices"].shape[0]
        has_velocity = "v" in handle["frames"]
    _, n, d = x_shape
    name = h5_path.name
    grids = []
    for k in range(count):
        grids.append(
            f'      <Grid Name="frame {k}" GridType="Uniform">\n'
            f'        <Time Value="{float(times[k])!r}"/>\n'
            f'        <Topology TopologyType="Polyline" NodesPerElement="2" NumberOfElements="{springs}">\n'
            f'          <DataItem Dimensions="{springs} 2" NumberType="Int" Precision="8" Format="HDF">'
            f'{escape(name)}:/model/spring_indices</DataItem>\n'
            f'        </Topology>\n'
            f'{_geometry(name, k, n, d, x_shape)}'
            + (_attribute("velocity", name, "v", k, n, d, x_shape) if has_velocity else "")
            + '      </Grid>\n')
    text = ('<?xml version="1.0" ?>\n<Xdmf Version="3.0">\n  <Domain>\n'
            '    <Grid Name="trajectory" GridType="Collection" CollectionType="Temporal">\n'
            + "".join(grids) + '    </Grid>\n  </Domain>\n</Xdmf>\n')
    path = h5_path.with_suffix(".xdmf")
    path.write_text(text)
    return path


def _slab(name: str, dataset: str, k: int, n: int, d: int, shape, component: int | None = None) -> str:
    start, count = (f"{k} 0 0", f"1 {n} {d}") if component is None else (f"{k} 0 {component}", f"1 {n} 1")
    dims = f"{n} {d}" if component is None else f"{n}"
    full = " ".join(str(s) for s in shape)
    return (f'<DataItem ItemType="HyperSlab" Dimensions="{dims}" Type="HyperSlab">'
            f'<DataItem Dimensions="3 3" Format="XML">{start} 1 1 1 {count}</DataItem>'
            f'<DataItem Dimensions="{full}" NumberType="Float" Precision="8" Format="HDF">'
            f'{escape(name)}:/frames/{dataset}</DataItem></DataItem>')


def _geometry(name: str, k: int, n: int, d: int, shape) -> str:
    if d == 3:
        return f'        <Geometry GeometryType="XYZ">{_slab(name, "x", k, n, d, shape)}</Geometry>\n'
    if d == 2:
        return f'        <Geometry GeometryType="XY">{_slab(name, "x", k, n, d, shape)}</Geometry>\n'
    zeros = f'<DataItem Dimensions="{n}" Format="XML">{" ".join(["0"] * n)}</DataItem>'
    return (f'        <Geometry GeometryType="X_Y_Z">{_slab(name, "x", k, n, d, shape, 0)}'
            f'{zeros}{zeros}</Geometry>\n')


def _attribute(label: str, name: str, dataset: str, k: int, n: int, d: int, shape) -> str:
    kind = "Vector" if d == 3 else "Matrix"
    return (f'        <Attribute Name="{label}" AttributeType="{kind}" Center="Node">'
            f'{_slab(name, dataset, k, n, d, shape)}</Attribute>\n')


def export_vtu(h5_path, out_dir) -> list[Path]:
    """One ``frame_00000.vtu`` per stored frame plus ``frames.pvd``; returns the written paths."""
    import meshio

    from .store import read_trajectory

    data = read_trajectory(h5_path)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    springs = data["model"].spring_indices.astype(np.int64)
    written, entries = [], []
    for k, (t, x, v) in enumerate(zip(data["t"], data["x"], data["v"])):
        points = np.zeros((x.shape[0], 3))
        points[:, : x.shape[1]] = x
        velocity = np.zeros_like(points)
        velocity[:, : v.shape[1]] = v
        path = out_dir / f"frame_{k:05d}.vtu"
        meshio.write(path, meshio.Mesh(points, [("line", springs)],
                                       point_data={"velocity": velocity}))
        written.append(path)
        entries.append(f'    <DataSet timestep="{float(t)!r}" file="{path.name}"/>')
    collection = out_dir / "frames.pvd"
    collection.write_text('<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1">\n'
                          '  <Collection>\n' + "\n".join(entries) + '\n  </Collection>\n</VTKFile>\n')
    return written + [collection]


def check_format(name: str) -> str:
    if name not in FORMATS:
        raise HookeInputError("format", f"unknown export format (known: {', '.join(FORMATS)})", name)
    return name
