"""The API reference (docs/, Sphinx): it builds with warnings as errors — as ``make docs`` does —
and documents every public name of ``hooke`` and every public function and class of the modules
the reference covers.

Skipped where the [docs] extra (Sphinx, MyST) is not installed; ``make test`` installs it.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import hooke

ROOT = Path(__file__).resolve().parents[1]
# The modules with a page of their own: each public function and class of theirs is listed.
MODULES = ("hooke.system", "hooke.integrators.base", "hooke.energies", "hooke.losses",
           "hooke.motion", "hooke.io.store", "hooke.viz.plots", "hooke.viz.animate", "hooke.viz.notebook",
           "hooke.errors")

pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ("sphinx", "myst_parser")),
    reason="the [docs] extra (sphinx, myst-parser) is not installed: pip install -e '.[docs]'")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("docs")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q",
                           "-b", "html", str(ROOT / "docs"), str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    return done, out


def inventory(out: Path) -> dict[str, str]:
    """objects.inv as {name: domain:role}: four header lines, then zlib-compressed lines of
    ``name domain:role priority uri display-name``."""
    data = (out / "objects.inv").read_bytes()
    body = data.split(b"\n", 4)[4]
    entries = {}
    for line in zlib.decompress(body).decode().splitlines():
        name, role = line.split(" ", 2)[:2]
        entries[name] = role
    return entries


def documented_as(value) -> str:
    """The name the reference lists ``value`` under: a callable module by its function."""
    if inspect.ismodule(value) and callable(value):
        value = type(value).__call__
    if inspect.ismodule(value):
        return value.__name__
    return f"{value.__module__}.{value.__qualname__}"


def test_docs_build_without_warnings(built):
    done, out = built
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    for page in ("index", "readme", "scene-files", "api/hooke", "api/system", "api/integrators"):
        assert (out / f"{page}.html").is_file(), page


def test_every_public_name_of_hooke_is_documented(built):
    entries = inventory(built[1])
    missing = []
    for name in hooke.__all__:
        if name == "__version__":
            continue
        value = getattr(hooke, name)
        if f"hooke.{name}" not in entries and documented_as(value) not in entries:
            missing.append(f"hooke.{name} ({documented_as(value)})")
    assert not missing, missing
    assert entries["hooke.system.System"] == "py:class"
    assert entries["hooke.get_integrator"] == "py:function"


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_function_and_class_of_a_module_with_a_page_is_documented(built, module_name):
    entries = inventory(built[1])
    module = importlib.import_module(module_name)
    assert entries.get(module_name) == "py:module"
    defined = [name for name, value in vars(module).items()
               if not name.startswith("_") and (inspect.isfunction(value) or inspect.isclass(value))
               and value.__module__ == module_name]
    assert defined, module_name
    missing = [name for name in defined if f"{module_name}.{name}" not in entries]
    assert not missing, missing
