"""The shape of the library, checked from its source (issue 11): no import cycle, the
array package's layers import only downwards, pure index math imports no MPI, no module
over 600 lines, no private names imported across modules of the array package."""
from __future__ import annotations

import ast
import os

import pytest

import spmdlab

pytestmark = pytest.mark.nompi

ROOT = os.path.dirname(os.path.abspath(spmdlab.__file__))  # the checkout's, or the installed one

# The array package's layers, bottom-up: a module may import only from its own or lower layers.
LAYERS = [
    {"regions", "registry", "elision", "blas"},
    {"base"},
    {"layout", "plan", "pieces"},
    {"collectives"},
    {"reshard"},
    {"transfer"},
    {"adapt"},
    {"elementwise"},
    {"reductions"},
    {"reshape"},
    {"indexing", "matmul"},
    {"creation"},
    {"ops"},
    {"array"},
    # numerics built on the array class, registered in registry (no module below imports them)
    {"fft_plan"},
    {"fft_exchange"},
    {"fft_bailey"},
    {"fft"},
    {"fft_matlab"},
    {"linalg.qrbase", "linalg.grid"},
    {"linalg.tsqr", "linalg.factor"},
    {"linalg.householder"},
    {"linalg.qr"},
    {"linalg.svd", "linalg.dense"},
    {"linalg.norms"},
    {"linalg"},
    # data in and out (issue 26): index math, agreed errors, MPI-IO, then the formats
    {"io.plan", "io.agree"},
    {"io.mpiio"},
    {"io.npy"},
    {"io.boxes"},
    {"io.zarrio", "io.hdf5", "io.csv", "io.files"},
    {"io"},
    {"__init__"},
]


def modules() -> dict:
    """``{dotted name: parsed tree}`` of every module of spmdlab."""
    found = {}
    for folder, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                with open(path) as fh:
                    found[rel.removesuffix(".__init__")] = (ast.parse(fh.read()), path)
    return found


def module_imports(name: str, tree: ast.Module, is_package: bool) -> list:
    """``(imported module, [names], top level?)`` for every import of spmdlab modules,
    skipping ``if TYPE_CHECKING:`` blocks."""
    package = name if is_package else name.rsplit(".", 1)[0]
    out = []

    def visit(node, top):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[:len(base) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                if target.split(".")[0] == "spmdlab":
                    names = [a.name for a in child.names]
                    if child.module is None or target in found_modules:
                        subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in found_modules]
                        for s in subs:
                            out.append((s, [], top))
                        if len(subs) < len(names):
                            out.append((target, [n for n in names if f"{target}.{n}" not in found_modules], top))
                    else:
                        out.append((target, names, top))
            elif isinstance(child, ast.Import):
                for a in child.names:
                    if a.name.split(".")[0] in ("spmdlab", "mpi4py"):
                        out.append((a.name, [], top))
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner)

    visit(tree, True)
    return out


found_modules = set()


@pytest.fixture(scope="module")
def graph():
    mods = modules()
    found_modules.update(mods)
    return {name: module_imports(name, tree, path.endswith("__init__.py"))
            for name, (tree, path) in mods.items()}, mods


def test_the_import_graph_has_no_cycle(graph):
    edges, _ = graph
    state: dict = {}

    def visit(m, stack):
        state[m] = "open"
        for target, _, top in edges.get(m, []):
            if not top or target not in edges or target == m:
                continue
            if state.get(target) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(target):] + [target]))
            if target not in state:
                visit(target, stack + [target])
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])


def test_array_package_layers_import_only_downwards(graph):
    edges, _ = graph
    level = {f"spmdlab.codist.{m}" if m != "__init__" else "spmdlab.codist": k
             for k, layer in enumerate(LAYERS) for m in layer}
    assert set(level) == {m for m in edges if m == "spmdlab.codist" or m.startswith("spmdlab.codist.")}, \
        "a module is missing from LAYERS"
    for m, imports in edges.items():
        if m not in level:
            continue
        for target, names, top in imports:
            if target in level:
                assert level[target] <= level[m], f"{m} imports {target}, a layer above it"
                assert not [n for n in names if n.startswith("_")], f"{m} imports private {names} from {target}"
            assert top or target.endswith("comm"), f"{m} imports {target} inside a function"


def test_pure_index_math_imports_no_mpi(graph):
    edges, _ = graph
    pure = ["spmdlab.checks", "spmdlab.codistributor", "spmdlab.layoutbase", "spmdlab.codistributor_blocks",
            "spmdlab.codistributor_chunks", "spmdlab.layout_plot", "spmdlab.codist.regions", "spmdlab.codist.plan",
            "spmdlab.codist.pieces", "spmdlab.codist.io.plan",
            "spmdlab.codist.layout", "spmdlab.codist.base"]
    for m in pure:
        reachable, todo = set(), [m]
        while todo:
            for target, _, top in edges.get(todo.pop(), []):
                if top and target not in reachable:
                    reachable.add(target)
                    todo.append(target)
        assert not {t for t in reachable if t.startswith("mpi4py") or t == "spmdlab.comm"}, m


def test_no_module_is_over_600_lines(graph):
    _, mods = graph
    for name, (_, path) in mods.items():
        with open(path) as f:
            assert sum(1 for _ in f) <= 600, name
