"""The package's shape: every module is reachable by its dotted name (no public name hides a
module), the import graph has no cycle, and every module is small and states its contract.

The import checks run in fresh interpreters: this process imported hooke long ago."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import hooke

PACKAGE = Path(hooke.__file__).parent
# The largest modules with one job (cli.py, builder.py) are under it; sweep.py was 945 lines of
# five jobs before it became a package.
MAX_LINES = 700


def modules() -> dict[str, Path]:
    """Every module of hooke by dotted name (a package by its own name), with its file."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


# -- public names and modules --------------------------------------------------------------------

# What the callable modules must still do once any submodule was imported first.
CALLABLE_API = """
import inspect
import hooke
import hooke.integrators.base, hooke.integrators.newmark, hooke.scenes.builders
from hooke.integrators import newmark
from hooke.sweep import planning
assert hooke.integrators.newmark is newmark and hooke.sweep.planning is planning
assert hooke.integrators() == hooke.integrators.base.names() and "newmark" in hooke.integrators()
assert hooke.scenes() == hooke.scenes.names() and "spring1d" in hooke.scenes()
assert inspect.signature(hooke.simulate) == inspect.signature(hooke.simulate.simulate)
assert inspect.signature(hooke.sweep) == inspect.signature(hooke.sweep.sweep)
assert hooke.simulate(hooke.scene("spring1d"), t_end=0.01).n_frames == 3
"""


@pytest.mark.parametrize("first", [
    "import hooke.integrators.newmark", "from hooke.integrators import newmark",
    "import hooke.integrators.base", "import hooke.sweep.planning", "from hooke.sweep import planning",
    "import hooke.simulate", "import hooke.scenes.builders"])
def test_submodules_import_first_in_a_fresh_interpreter_and_the_callable_names_still_work(first):
    done = run_python(f"{first}\n{CALLABLE_API}")
    assert done.returncode == 0, done.stderr


# Records each package's attributes as its own __init__ leaves them: a function bound to a
# submodule's name there is replaced by the module whenever the submodule is imported later, so
# the end state alone would hide it.
SHADOWS = """
import importlib, json, sys

MODULES = {modules!r}
namespaces = {{}}

class Recorder:
    @staticmethod
    def find_spec(name, path, target=None):
        if name.partition(".")[0] != "hooke":
            return None
        finders = (finder for finder in sys.meta_path if finder is not Recorder)
        spec = next(filter(None, (finder.find_spec(name, path, target) for finder in finders)), None)
        if spec is not None and spec.submodule_search_locations is not None:
            execute = spec.loader.exec_module

            def exec_module(module, execute=execute):
                execute(module)
                namespaces[module.__name__] = dict(vars(module))
            spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Recorder)
for name in MODULES:
    importlib.import_module(name)
shadows = []
for name in MODULES:
    package, _, attribute = name.rpartition(".")
    if not package:
        continue
    for when, namespace in (("after its __init__", namespaces[package]),
                            ("after every import", vars(sys.modules[package]))):
        if attribute in namespace and namespace[attribute] is not sys.modules[name]:
            shadows.append(f"{{package}}.{{attribute}} {{when}} is {{namespace[attribute]!r}}, "
                           f"not the module {{name}}")
print(json.dumps(shadows))
"""


def test_no_public_name_of_a_package_shadows_one_of_its_modules():
    done = run_python(SHADOWS.format(modules=list(modules())))
    assert done.returncode == 0, done.stderr
    shadows = json.loads(done.stdout)
    assert not shadows, "\n".join(shadows)


# -- import graph --------------------------------------------------------------------------------

def imported_modules(name: str, path: Path, everywhere: bool, known: dict) -> set[str]:
    """The hooke modules that importing ``name`` runs (``everywhere``: also the imports inside its
    functions, which run later), with the packages above each (run first), except ``name``'s own
    packages (already running when it is imported)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()

    def visit(node) -> None:
        if not everywhere and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:  # `from a import b`: module a.b, or a name of module a
                targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    explicit = {target for target in targets if target in known}
    ancestors = {".".join(name.split(".")[:k]) for k in range(1, name.count(".") + 1)}
    above = {".".join(target.split(".")[:k]) for target in explicit for k in range(1, target.count(".") + 1)}
    return (explicit | (above - ancestors)) - {name}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as [a, b, …, a], or None."""
    state: dict[str, str] = {}  # "open" while on the current path, then "done"
    path: list[str] = []

    def search(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state and (cycle := search(target)):
                return cycle
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (cycle := search(node)):
            return cycle
    return None


@pytest.mark.parametrize("everywhere", [False, True], ids=["module level", "with imports in functions"])
def test_the_import_graph_has_no_cycle(everywhere):
    """At module level a cycle breaks imports; counting the imports inside functions too, none
    may be hiding a cycle either (an import is put in a function to defer a heavy dependency, and
    the modules stay importable in any order)."""
    known = modules()
    graph = {name: imported_modules(name, path, everywhere, known) for name, path in known.items()}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def test_the_cycle_finder_reports_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


# -- module shape --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(modules()))
def test_every_module_is_small_and_states_its_contract(name):
    text = modules()[name].read_text(encoding="utf-8")
    assert ast.get_docstring(ast.parse(text)), f"{name} has no module docstring"
    assert text.count("\n") <= MAX_LINES, f"{name} has {text.count(chr(10))} lines"
