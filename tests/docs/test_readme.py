"""Every ```python block of README.md runs as written.

Each block runs as a script in a fresh interpreter, from a file (``spmd`` reads its body
from the file), with a timeout, from an empty folder; it passes when it exits with 0.

Markers, in README.md itself:

- ``<!-- continues -->``, an HTML comment (invisible once rendered) on the last non-blank
  line before a block's opening fence: the block continues the python block before it.
  A block and its continuations run as one script, in order.
- A group with IPython syntax (a line starting with ``%``: ``%load_ext spmdlab``,
  ``%%spmd``) runs in an IPython shell instead, each block as one cell.

A block that relies on the default pool gets 2 labs here (``SPMDLAB_NUM_LABS``); blocks
that start their own use 2-4 labs, so the whole file runs in well under a minute.
"""
from __future__ import annotations

import functools
import os
import re
import subprocess

import pytest
from support.processes import ROOT, run_script

CONTINUES = "<!-- continues -->"
TIMEOUT = 240  # seconds per group: a few seconds each when the machine is idle


@functools.cache
def groups() -> list[tuple[str, list[str]]]:
    """``(where, blocks)`` for each block and its continuations: ``where`` names the section
    and the line of the first block."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    found: list[tuple[str, list[str]]] = []
    section, i = "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            section = line.lstrip("#").strip()
        fence = re.match(r"^```(\w*)", line)
        if not fence:
            i += 1
            continue
        end = lines.index("```", i + 1)
        if fence.group(1) == "python":
            before = [text for text in lines[:i] if text.strip()]
            block = "\n".join(lines[i + 1:end]) + "\n"
            if before and before[-1].strip() == CONTINUES:
                assert found, f"README.md line {i + 1}: the first python block continues nothing"
                found[-1][1].append(block)
            else:
                found.append((f"{section}, line {i + 1}", [block]))
        i = end + 1
    return found


def ipython_driver(cells: list[str]) -> str:
    return ("import sys\n"
            "from IPython.core.interactiveshell import InteractiveShell\n"
            "shell = InteractiveShell.instance()\n"
            f"for cell in {cells!r}:\n"
            "    if not shell.run_cell(cell).success:\n"
            "        sys.exit(1)\n")


@pytest.fixture(autouse=True)
def real_defaults(monkeypatch):
    """The blocks run as users run them: conftest's SPMDLAB_DISTRIBUTE_SIZE=0 (which keeps
    the other tests' small arrays spread) is not theirs."""
    monkeypatch.delenv("SPMDLAB_DISTRIBUTE_SIZE", raising=False)


@functools.cache
def run_group(where: str) -> subprocess.CompletedProcess:
    blocks = dict(groups())[where]
    if any(line.startswith("%") for block in blocks for line in block.splitlines()):
        pytest.importorskip("IPython")
        code = ipython_driver(blocks)
    else:
        code = "".join(blocks)
    return run_script(code, timeout=TIMEOUT, env={"SPMDLAB_NUM_LABS": "2"})


@pytest.mark.nompi
def test_the_readme_has_python_blocks_and_continuations():
    found = groups()
    assert sum(len(blocks) for _, blocks in found) >= 11, found
    assert [len(blocks) for where, blocks in found if where.startswith("2. A first spmd block")] == [4], found


@pytest.mark.timeout(TIMEOUT + 30)
@pytest.mark.parametrize("where", [where for where, _ in groups()])
def test_the_readme_block_runs_as_written(where):
    result = run_group(where)
    assert result.returncode == 0, f"{where}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr


@pytest.mark.timeout(TIMEOUT + 30)
def test_the_tutorial_prints_what_its_comments_say():
    where = next(where for where, _ in groups() if where.startswith("2. A first spmd block"))
    result = run_group(where)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # The values the tutorial's comments promise, in order.
    expected = ["2000", "10000", "[30 31 32]", "[33, 63, 0, 123]", "Lab 3: No data", "[2, 5, 10, 17]",
                "[400, 100, 200, 300]", "[1 2 3 4] 16 hello", "(80, 250) 250 499", "20 39", "distributed",
                "[1. 3. 5.]", "4.0"]
    lines = out.splitlines()
    at = 0
    for text in expected:
        found = [i for i in range(at, len(lines)) if lines[i] == text]
        assert found, f"{text!r} not printed (after line {at}):\n{out}"
        at = found[0] + 1
    assert "Lab 2: This lab stores D[:, 250:500]." in out
    assert "Lab 3: I am lab 3 of 4" in out
