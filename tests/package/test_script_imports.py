"""The benchmarks and examples import only names spmdlab has: an import inside a lab-side
function runs only when that benchmark runs, so a package move can break it unseen
(bench_io's ``from spmdlab import comm`` and bench_stall_check's ``stall`` did)."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted([*ROOT.glob("benchmarks/*.py"), *ROOT.glob("examples/*.py")])


def _missing(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "spmdlab":
            module = importlib.import_module(node.module)
            for alias in node.names:
                if hasattr(module, alias.name):
                    continue
                try:
                    importlib.import_module(f"{node.module}.{alias.name}")
                except ImportError:
                    out.append(f"line {node.lineno}: from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "spmdlab":
                    try:
                        importlib.import_module(alias.name)
                    except ImportError:
                        out.append(f"line {node.lineno}: import {alias.name}")
    return out


@pytest.mark.nompi
@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_spmdlab_import_of_a_script_resolves(path):
    assert _missing(path) == []


@pytest.mark.nompi
def test_there_are_scripts_to_check():
    assert len(SCRIPTS) > 20
