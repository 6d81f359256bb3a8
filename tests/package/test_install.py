"""What an install holds: every module of ``spmdlab`` and ``spmdlab_repl`` imports, and an
installed copy (a wheel, as ``.ci/run`` tests it) holds every module of the source it was
built from, subpackages included."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.processes import CODE, ROOT, child_pythonpath

import spmdlab
import spmdlab_repl

# In a fresh interpreter: importing spmdlab.lab.comm starts MPI, which this process must not.
IMPORT_ALL = """
import importlib, pkgutil, spmdlab, spmdlab_repl
for package in (spmdlab, spmdlab_repl):
    print(package.__name__)
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(module.name)
        print(module.name)
"""


@pytest.mark.timeout(120)
def test_every_module_of_both_packages_imports(tmp_path):
    result = subprocess.run([sys.executable, "-c", IMPORT_ALL], capture_output=True, text=True, timeout=100,
                            cwd=tmp_path, env=dict(os.environ, PYTHONPATH=child_pythonpath()))
    assert result.returncode == 0, result.stderr
    names = set(result.stdout.split())
    assert {"spmdlab.arrays.linalg.dense", "spmdlab.arrays.fft", "spmdlab.lab.comm", "spmdlab.notebook.magics",
            "spmdlab_repl.pmode"} <= names, names


def files_under(folder: str) -> set[str]:
    """The modules and package data under ``folder``, relative to it."""
    found = set()
    for where, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found |= {os.path.relpath(os.path.join(where, f), folder) for f in files if f.endswith((".py", ".typed", ".txt"))}
    return found


@pytest.mark.skipif(CODE == ROOT, reason="the package under test is this source tree itself (an editable install)")
def test_the_installed_packages_hold_every_module_of_the_source():
    for source, package in [("spmdlab", spmdlab), ("repl", spmdlab_repl)]:
        installed = files_under(os.path.dirname(package.__file__))
        assert files_under(os.path.join(ROOT, source)) - installed == set(), f"{package.__name__} lacks these"
