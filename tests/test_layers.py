"""The import graph of the package: no cycles, and no arrow that points up.

Each module sits on a floor; a module may import from its own floor or below, never above. The ground floor holds
shared facts (errors, hardware, files, the console); inference sits below training, so deblurring a photo never
loads the training code; the CLI is the top and nothing imports it.
"""

import ast
from pathlib import Path

import pytest

import deblur

PACKAGE = Path(deblur.__file__).parent
FLOORS = [
    # 0: shared facts, imported by anything
    {
        "deblur.errors",
        "deblur.hardware",
        "deblur.files",
        "deblur.console",
        "deblur.tables",
        "deblur.strength",
        "deblur.image_array",
    },
    {"deblur.tiling", "deblur.config", "deblur.paths", "deblur.imageio", "deblur.photo16", "deblur.min_side"},
    {"deblur.model", "deblur.losses", "deblur.data", "deblur.runtime", "deblur.shake", "deblur.ways"},
    {"deblur.inference", "deblur.video", "deblur.settings"},
    {"deblur.predict", "deblur.training", "deblur.evaluation", "deblur.export", "deblur.timings", "deblur.serve"},
    {"deblur.scale"},  # predict on a distributed engine
    {"deblur.cli", "deblur.__main__"},
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every deblur module `path` imports, at the top or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.startswith("deblur.") or name == "deblur"}


def graph() -> dict[str, set[str]]:
    modules = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {
        name: {other for other in imports(path) if other in modules and other != name} for name, path in modules.items()
    }


def floor(module: str) -> int:
    for level, members in enumerate(FLOORS):
        if any(module == member or module.startswith(member + ".") for member in members):
            return level
    raise AssertionError(f"{module} is on no floor: add it to FLOORS")


def test_every_module_is_on_a_floor_and_no_arrow_points_up():
    upward = []
    for module, imported in graph().items():
        if module == "deblur":  # the package's lazy re-exports: names only, loaded on first use
            continue
        upward += [f"{module} -> {other}" for other in imported if other != "deblur" and floor(other) > floor(module)]
    assert upward == []


def test_no_cycles():
    edges = graph()
    state: dict[str, str] = {}
    cycles = []

    def visit(module: str, trail: list[str]) -> None:
        state[module] = "open"
        for other in sorted(edges[module]):
            if state.get(other) == "open":
                cycles.append(" -> ".join(trail[trail.index(other) :] + [other]))
            elif other not in state:
                visit(other, [*trail, other])
        state[module] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_inference_and_the_ground_floor_never_load_training():
    edges = graph()
    reached, todo = set(), ["deblur.inference", "deblur.hardware"]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo += edges[module]
    assert not {module for module in reached if module.startswith(("deblur.training", "deblur.cli"))}


def test_every_package_is_in_the_wheel():
    """A package missing from pyproject's list installs from a checkout (editable) and not from the wheel."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and newer
    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {module_name(path) for path in PACKAGE.rglob("__init__.py")}
    assert found - listed == set()
