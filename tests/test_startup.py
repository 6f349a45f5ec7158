"""Start-up (issue 16 §6): `import hooke` and `hooke --help` load none of the heavy optional
modules, and the public names still lead where they did. Checked by which modules a fresh
process holds, not by timing it (the machine's load would decide a timing); `hooke bench startup`
measures the times."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hooke.bench.startup import HEAVY

LOADED = f"""
import json, sys
print(json.dumps([name for name in {list(HEAVY)!r} if name in sys.modules]))
"""


def loaded_after(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code + LOADED], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_hooke_loads_no_heavy_module():
    assert HEAVY == ("pypardiso", "sksparse", "h5py", "matplotlib", "dask", "distributed",
                     "fastapi", "uvicorn", "pandas", "pyarrow")
    assert loaded_after("import hooke") == []


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["bench", "--help"]])
def test_hooke_help_loads_no_heavy_module(args):
    code = (f"import sys\nsys.argv = ['hooke', *{args!r}]\nfrom hooke.cli import main\n"
            "try:\n    main()\nexcept SystemExit as done:\n    assert done.code == 0, done.code\n")
    assert loaded_after(code) == []


def test_a_run_in_memory_loads_no_solver_store_or_plotting_module():
    """spring1d in memory needs no sparse direct solver, no HDF5 and no plots."""
    code = "import hooke\nhooke.simulate(hooke.scene('spring1d'), t_end=0.1)\n"
    assert loaded_after(code) == []


def test_the_public_names_are_there_on_first_use():
    """Every name of hooke.__all__ and every submodule resolve after a bare `import hooke`, to
    the same objects their modules define."""
    code = """
import hooke
import hooke.io.scene_file, hooke.io.store, hooke.simulate, hooke.system
assert hooke.scene is hooke.io.scene_file.builtin_scene and hooke.open is hooke.io.store.open_result
assert hooke.System is hooke.system.System and hooke.resume is hooke.simulate.resume
assert callable(hooke.simulate) and "rk4" in hooke.integrators()
assert {"simulate", "System", "scene"} <= set(dir(hooke))
for name in hooke.__all__:
    getattr(hooke, name)
assert hooke.kernels.SpringGather and hooke.builder.ModelBuilder is hooke.ModelBuilder
try:
    hooke.no_such_name
except AttributeError as error:
    assert "no attribute 'no_such_name'" in str(error)
else:
    raise AssertionError("hooke.no_such_name resolved")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
