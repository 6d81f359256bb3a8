"""The shape of the library, checked from its source: the layer table of docs/design.md
(packages by role, a lower layer never imports a higher one), imports inside functions
counted as edges (only the lazy ones listed here, each with its reason, pass), no import
circle, no private name imported across packages, pure index math without MPI, the array
package's own layers, no module over 600 lines, and ``import spmdlab`` light: it loads
none of mpi4py, scipy, matplotlib, IPython, prompt_toolkit. Also what a user sees: the
public names, the compatibility module path, the console scripts."""
from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest
from support.processes import ROOT as CHECKOUT
from support.processes import child_pythonpath

import spmdlab

ROOT = os.path.dirname(os.path.abspath(spmdlab.__file__))  # the checkout's, or the installed one

# ---- the layer table (docs/design.md, "Packages and layers") ---------------------------------
# group -> layer; a module's group is its subpackage of spmdlab, or one of the names below.
BASE = {"errors", "settings", "checks", "runtime", "_frames"}
LAYER = {
    "base": 0,  # errors settings checks runtime _frames: stdlib and numpy
    "protocol": 1, "layouts": 1,  # base only (layouts: numpy, no MPI)
    "pmode": 2,  # base, protocol: what the REPL and the notebook share
    "lab": 3,  # base, protocol; lab/comm.py alone imports mpi4py
    "arrays": 4, "codistributed": 4,  # base, protocol, layouts, lab's comm proxy; never client
    "client": 5,  # base, protocol, layouts, arrays (only the modules in CLIENT_USES_ARRAYS)
    "numerics": 6, "dataio": 6,  # client, arrays
    "notebook": 7,  # anything below
    "facade": 8,  # spmdlab/__init__.py: public names; notebook and numerics only lazily
}
MAY_IMPORT = {
    "base": {"base"},
    "protocol": {"base", "protocol"},
    "layouts": {"base", "layouts"},
    "pmode": {"base", "protocol", "pmode"},
    "lab": {"base", "protocol", "lab"},
    "arrays": {"base", "protocol", "layouts", "lab", "arrays"},
    "codistributed": {"arrays"},
    "client": {"base", "protocol", "layouts", "arrays", "client"},
    "numerics": {"base", "client", "arrays"},
    "dataio": {"base", "client", "arrays"},
    "notebook": {"base", "protocol", "layouts", "pmode", "arrays", "client", "numerics", "notebook"},
    "facade": set(LAYER),
}
# The array package reaches the lab package only through its lazy MPI proxy.
ARRAYS_USE_OF_LAB = {"spmdlab.lab"}
# The client modules that name lab-side array functions in the calls they send.
CLIENT_USES_ARRAYS = {"spmdlab.client.distributed", "spmdlab.client.distributed_grid", "spmdlab.client.distributed_sparse",
                      "spmdlab.client.crosscopy", "spmdlab.client.parts", "spmdlab.client.preview", "spmdlab.client.scatter", "spmdlab.client.threads"}

# Imports inside functions: each (importer, imported) allowed, with its reason. Any other
# import made inside a function of spmdlab fails test_imports_inside_functions_are_listed.
ALLOWED_LAZY = {
    ("spmdlab", "spmdlab.numerics"): "MATLAB's numerics import scipy: loaded on first use",
    ("spmdlab", "spmdlab.notebook"): "the magics import IPython: loaded by %load_ext",
    ("spmdlab.lab", "spmdlab.lab.comm"): "the MPI proxy: importing spmdlab must not start MPI",
    ("spmdlab.lab.__main__", "spmdlab.protocol.messages"): "the lab process forks its shim before it imports more",
    ("spmdlab.lab.__main__", "spmdlab.protocol.channel"): "the lab process forks its shim before it imports more",
    ("spmdlab.lab.__main__", "spmdlab.lab.server"): "the server imports MPI: only after the fork",
    ("spmdlab.protocol.channel", "spmdlab.protocol.shipping"): "cloudpickle: the lab's shim, which reads "
                                                                "messages, never pickles user code",
    ("spmdlab.arrays", "spmdlab.arrays.sparse"): "the sparse package imports scipy: loaded on the first scipy.sparse "
                                                 "input (base.sparse_package, the loader this registers)",
    ("spmdlab.notebook.cells", "spmdlab"): "pmode cells offer the façade's public lab API (it is loaded: "
                                           "the notebook is reached through it)",
}
# Third-party modules that only some packages may import (at any depth).
ONLY_IN = {
    "mpi4py": {"spmdlab.lab.comm"},
    "IPython": {"spmdlab.notebook.magics", "spmdlab.client.progress"},
    "prompt_toolkit": set(),
    "spmdlab_repl": set(),  # the library never imports its REPL
}
HEAVY = ("mpi4py", "scipy", "matplotlib", "IPython", "prompt_toolkit")

# The array package's own layers, bottom-up: a module imports only from its own or lower layers.
ARRAY_LAYERS = [
    {"registry", "elision", "blas"},
    {"threads"},  # threads inside each lab (issue 24): settings and numpy only
    {"base"},
    {"layout"},
    {"collectives", "grid"},
    {"reshard"},
    {"transfer", "fromlab"},
    {"scatter"},
    {"adapt", "printing"},
    {"elementwise"},
    {"reductions"},
    {"reshape"},
    {"shapes"},  # issue 21: *_like, copyto, swapaxes, moveaxis, expand_dims, diagonal
    {"join"},  # issue 21: concatenate, stack, ...
    {"rearrange"},  # issue 21: delete, insert, repeat, tile, flip, roll
    {"fancy"},  # issue 21: indexing by arrays
    {"fancy_set"},
    {"fancy_funcs"},
    {"indexing", "matmul"},
    {"creation"},
    {"ops", "habits"},
    {"array"},
    {"calls"},
    {"subgrid"},  # arrays on a process grid of some labs (issue 24): above the array class
    # sparse matrices (issue 25), built on the array class; reached through base.sparse_package
    {"sparse.matrix"},
    {"sparse.exchange", "sparse.move"},
    {"sparse.products", "sparse.select", "sparse.ops"},
    {"sparse.array"},
    {"sparse.build"},
    {"sparse.problem"},
    {"sparse.pcg"},
    {"sparse.gmres", "sparse.bicgstab", "sparse.others"},
    {"sparse.precond"},
    {"sparse"},
    # numerics built on the array class, registered in registry (no module below imports them)
    {"fft.plan"},
    {"fft.exchange"},
    {"fft.pipeline"},
    {"fft.pencil"},
    {"fft.bailey"},
    {"fft"},
    {"fft.matlab"},
    {"linalg.blocksizes"},  # issue 23: measured block-size table (no imports)
    {"linalg.qrbase", "linalg.grid"},
    {"linalg.tsqr", "linalg.factor"},
    {"linalg.householder"},
    {"linalg.tridiag", "linalg.bidiag"},
    {"linalg.mrrr", "linalg.band"},
    {"linalg.bandsvd"},
    {"linalg.qr", "linalg.eigh", "linalg.hessenberg"},
    {"linalg.svd2d"},
    {"linalg.svd", "linalg.dense", "linalg.eig"},
    {"linalg.norms"},
    {"linalg.spectral"},
    {"linalg"},
    # data in and out: index math, agreed errors, MPI-IO, then the formats
    {"io.plan", "io.agree"},
    {"io.mpiio"},
    {"io.mapped"},
    {"io.twophase"},
    {"io.npy"},
    {"io.boxes"},
    {"io.zarrio", "io.hdf5", "io.csv", "io.files"},
    {"io"},
    # sorting, sets and statistics: a sample sort and a distributed selection, then the functions
    {"sorting.samplesort", "stats.selection"},
    {"sorting.sort", "sorting.sets", "sorting.search"},
    {"sorting"},
    {"stats.histogram", "stats.quantiles"},
    {"stats.moments"},
    {"stats.matlab"},
    {"stats"},
    {"__init__"},
]

# spmdlab.__all__ before the packages were made: what a user imports stays.
PUBLIC_NAMES = [
    "Pool", "gcp", "parpool", "delete", "spmd", "spmd_run",
    "Composite", "NoDataError", "exist",
    "labindex", "numlabs", "spmdIndex", "spmdSize",
    "gcat", "gop", "gplus", "labBarrier", "labBroadcast", "labProbe", "labReceive", "labSend",
    "labSendReceive", "spmdBarrier", "spmdBroadcast", "spmdCat", "spmdPlus", "spmdProbe",
    "spmdReceive", "spmdReduce", "spmdSend", "spmdSendReceive",
    "codistributor", "codistributor1d", "codistributor2dbc", "codistributorBlocks", "codistributorChunks",
    "codistributed", "gather",
    "getCodistributor", "getLocalPart", "globalIndices", "iscodistributed", "redistribute",
    "updateHalos", "changeMode",
    "distributed", "isdistributed", "plot_layout",
    "fft", "fft2", "fftn", "ifft", "ifft2", "ifftn",
    "mldivide", "mrdivide", "lu", "chol", "inv", "det", "solve_triangular",
    "qr", "lstsq", "svd", "eig", "norm", "trace", "triu", "tril",
    "LabDiedError", "PoolError", "RemoteError", "SpmdError", "SpmdSourceError", "SpmdTimeoutError",
    "load_ipython_extension", "unload_ipython_extension",
]
# What this round's capabilities added to the façade (never a rename of a name above).
ADDED_NAMES = {
    "pinv", "rank", "cond",  # eigenvalues and singular values
    # data in and out
    "save", "load", "to_zarr", "from_zarr", "to_hdf5", "from_hdf5", "read_csv", "write_csv", "read_files",
    # sparse matrices and Krylov solvers (issue 25)
    "sparse", "speye", "sprand", "sprandn", "spdiags", "kron", "issparse", "full", "nnz", "nonzeros", "find",
    "pcg", "gmres", "bicgstab", "bicg", "cgs", "minres", "lsqr", "jacobi", "ilu", "ichol",
    # the seed systems' last gaps (issue 24): pbdMPI's comm.print, Dagger's AutoBlocks, CuPy's index maps
    "labprint", "AutoBlocks", "make_2d_index_map",
    "cat", "horzcat", "vertcat",  # joining (issue 21)
    # threads inside each lab, PDL's auto-threading (issue 24)
    "set_autothread_targ", "set_autothread_size", "get_autothread_targ", "get_autothread_size",
    "get_autothread_actual",
    # process grids (issue 24, pbdBASE's contexts)
    "grid", "rowgrid", "colgrid", "gridexit",
    # sorting and statistics (issue 21)
    "sort", "unique", "median", "prctile", "histcounts", "cumsum", "cumprod", "diff",
}


def group(module: str) -> str:
    """The layer-table group of a dotted spmdlab module name."""
    parts = module.split(".")
    if parts == ["spmdlab"]:
        return "facade"
    if len(parts) == 2 and parts[1] in BASE:
        return "base"
    return parts[1]


def load_modules() -> dict:
    """``{dotted name: (parsed tree, path)}`` of every module of spmdlab."""
    found = {}
    for folder, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                with open(path, encoding="utf-8") as fh:
                    found[rel.removesuffix(".__init__")] = (ast.parse(fh.read()), path)
    return found


def module_imports(name: str, tree: ast.Module, is_package: bool, known: set) -> list:
    """``(imported module, [names], top level?)`` for every import, skipping ``if
    TYPE_CHECKING:`` blocks; ``from package import module`` is an edge to the module."""
    package = name if is_package else name.rsplit(".", 1)[0]
    out = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    target = ".".join(base[:len(base) - child.level + 1] + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                names = [a.name for a in child.names]
                subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in known]
                out.extend((s, [], top) for s in subs)
                if len(subs) < len(names):
                    out.append((target, [n for n in names if f"{target}.{n}" not in known], top))
            elif isinstance(child, ast.Import):
                out.extend((a.name, [], top) for a in child.names)
            visit(child, top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, True)
    return out


@pytest.fixture(scope="module")
def graph() -> tuple[dict, dict]:
    mods = load_modules()
    edges = {name: module_imports(name, tree, path.endswith("__init__.py"), set(mods))
             for name, (tree, path) in mods.items()}
    return edges, mods


def internal(edges: dict) -> list:
    """``(importer, imported, names, top level?)`` for the imports of spmdlab modules."""
    return [(m, t, names, top) for m, imports in edges.items() for t, names, top in imports
            if t.split(".")[0] == "spmdlab" and t in edges]


def test_every_module_has_a_layer(graph):
    edges, _ = graph
    assert {m for m in edges if group(m) not in LAYER} == set(), "add the new package to LAYER and MAY_IMPORT"


def test_layers_import_only_downwards(graph):
    edges, _ = graph
    wrong = []
    for m, t, _, top in internal(edges):
        gm, gt = group(m), group(t)
        if not top and (m, t) in ALLOWED_LAZY:
            continue  # listed with its reason
        if gt not in MAY_IMPORT[gm] or LAYER[gt] > LAYER[gm]:
            wrong.append(f"{m} ({gm}, layer {LAYER[gm]}) imports {t} ({gt}, layer {LAYER[gt]})")
        elif gm == "arrays" and gt == "lab" and t not in ARRAYS_USE_OF_LAB:
            wrong.append(f"{m} imports {t}: the array package reaches MPI only through spmdlab.lab's proxy")
        elif gm == "client" and gt == "arrays" and m not in CLIENT_USES_ARRAYS:
            wrong.append(f"{m} imports {t}: only {sorted(CLIENT_USES_ARRAYS)} name the array package's calls")
    assert wrong == []


def test_imports_inside_functions_are_listed(graph):
    edges, _ = graph
    lazy = {(m, t) for m, t, _, top in internal(edges) if not top}
    assert lazy - set(ALLOWED_LAZY) == set(), "an import inside a function: move it to the top, or list it with why"
    assert set(ALLOWED_LAZY) - lazy == set(), "ALLOWED_LAZY lists an import that is gone: delete it"


def test_no_import_cycle(graph):
    """Every edge counts, imports inside functions too (the allowed lazy ones aside: a
    submodule that reads its parent package's names runs after the parent was loaded)."""
    edges, _ = graph
    out: dict = {}
    for m, t, _, _ in internal(edges):
        if t != m and (m, t) not in ALLOWED_LAZY:
            out.setdefault(m, set()).add(t)
    state: dict = {}

    def visit(m: str, stack: list) -> None:
        state[m] = "open"
        for t in sorted(out.get(m, ())):
            if state.get(t) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(t):] + [t]))
            if t not in state:
                visit(t, stack + [t])
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])


def test_no_private_name_imported_across_packages(graph):
    edges, _ = graph
    wrong = [f"{m} imports {names} from {t}" for m, t, names, _ in internal(edges)
             if group(m) != group(t) and any(n.startswith("_") for n in names)]
    assert wrong == []


def test_third_party_modules_stay_where_they_belong(graph):
    edges, _ = graph
    wrong = []
    for m, imports in edges.items():
        for t, _, _ in imports:
            top = t.split(".")[0]
            if top in ONLY_IN and m not in ONLY_IN[top]:
                wrong.append(f"{m} imports {t}")
    assert wrong == []


def test_array_package_layers_import_only_downwards(graph):
    edges, _ = graph
    level = {f"spmdlab.arrays.{m}" if m != "__init__" else "spmdlab.arrays": k
             for k, layer in enumerate(ARRAY_LAYERS) for m in layer}
    assert set(level) == {m for m in edges if group(m) == "arrays"}, "a module is missing from ARRAY_LAYERS"
    for m, t, _, _ in internal(edges):
        if m in level and t in level:
            assert level[t] <= level[m], f"{m} imports {t}, a layer above it"


def test_pure_index_math_reaches_no_mpi(graph):
    edges, _ = graph
    for m in [m for m in edges if group(m) in ("layouts", "protocol", "pmode", "base")]:
        reachable, todo = set(), [m]
        while todo:
            for t, _, _ in edges.get(todo.pop(), []):
                if t not in reachable:
                    reachable.add(t)
                    if t in edges:
                        todo.append(t)
        assert {t for t in reachable if t.startswith("mpi4py") or t == "spmdlab.lab.comm"} == set(), m


def test_no_module_is_over_600_lines(graph):
    _, mods = graph
    long = []
    for name, (_, path) in mods.items():
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > 600:
            long.append(f"{name}: {n} lines")
    assert long == []


# Environment variables read outside settings.py: the lab's start-up hand-over from the
# client (address, key), which are not settings a user sets.
ENV_READERS = {"spmdlab.settings", "spmdlab.lab.__main__"}


def test_only_settings_reads_spmdlab_variables(graph):
    """One place reads settings: no other module looks ``SPMDLAB_*`` up in ``os.environ``."""
    _, mods = graph
    readers = []
    for name, (_, path) in mods.items():
        if name in ENV_READERS:
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr == "environ"
                    and any(isinstance(c, ast.Constant) and str(c.value).startswith("SPMDLAB_")
                            for c in ast.walk(tree))):
                readers.append(f"{name}: line {node.lineno}")
                break
    assert readers == []


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=child_pythonpath()))


def test_import_spmdlab_loads_nothing_heavy():
    result = run_python(f"import sys, spmdlab; print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_public_names_are_those_before_the_packages():
    assert [n for n in spmdlab.__all__ if n in set(PUBLIC_NAMES)] == PUBLIC_NAMES
    assert set(spmdlab.__all__) - set(PUBLIC_NAMES) == ADDED_NAMES
    result = run_python("import spmdlab; missing = [n for n in spmdlab.__all__ if getattr(spmdlab, n, None) is None]; "
                        "print(missing)")
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stdout + result.stderr


def test_spmdlab_codistributed_is_still_a_module_path():
    result = run_python("import sys\nimport spmdlab.codistributed\nimport spmdlab\nm = sys.modules['spmdlab.codistributed']\n"
                        "from spmdlab.codistributed import redistribute\n"
                        "assert spmdlab.codistributed is m.codistributed and isinstance(spmdlab.codistributed, type)\n"
                        "print(m.codistributed.__name__, redistribute.__name__)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["codistributed", "redistribute"]


def test_the_console_scripts_are_unchanged():
    pyproject = os.path.join(CHECKOUT, "pyproject.toml")
    if not os.path.exists(pyproject):
        pytest.skip("no pyproject.toml beside the tests")
    with open(pyproject, encoding="utf-8") as f:
        text = f.read()
    scripts = text.split("[project.scripts]")[1].split("\n\n")[0]
    assert scripts.split() == ['pmode', '=', '"spmdlab_repl.pmode:main"', 'spmdlab', '=', '"spmdlab_repl.client:main"']
    result = run_python("from spmdlab_repl.pmode import main; from spmdlab_repl.client import main as m2; print('ok')")
    assert result.stdout.strip() == "ok", result.stderr


# The modules mypy still checks with some error codes off (pyproject.toml's overrides): the
# number only goes down. Lower it when a module comes off the list.
MYPY_EXCEPTIONS_AT_MOST = 16


def test_mypy_checks_every_code_and_its_exceptions_only_shrink():
    import re

    pyproject = os.path.join(CHECKOUT, "pyproject.toml")
    if not os.path.exists(pyproject):
        pytest.skip("no pyproject.toml beside the tests")
    with open(pyproject, encoding="utf-8") as f:
        text = f.read()
    head, *overrides = text.split("[tool.mypy]")[1].split("[[tool.mypy.overrides]]")
    assert "disable_error_code" not in head and "warn_unused_ignores = true" in head
    listed = set()
    for block in overrides:
        if "disable_error_code" in block:
            listed |= set(re.findall(r'"(spmdlab[\w.]*)"', block.split("disable_error_code")[0]))
    assert len(listed) <= MYPY_EXCEPTIONS_AT_MOST, f"{len(listed)} modules with codes off: the list only shrinks"


def test_test_modules_share_helpers_only_through_support():
    """A test module that imports another runs only when pytest happened to collect the
    other first (its folder then on sys.path): alone, it fails to import."""
    tests = os.path.join(CHECKOUT, "tests")
    offenders = []
    for folder, _, files in os.walk(tests):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [module]
                offenders += [f"{os.path.relpath(path, tests)}: {n}" for n in names
                              if n.split(".")[0].startswith("test_") or n.startswith("conftest")]
    assert offenders == []
