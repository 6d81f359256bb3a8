"""Helpers every test folder shares: where the code under test and the checkout are, the
processes a test session started, and child interpreters (scripts, kernels, REPLs) that
import the spmdlab under test. (pytest's fixtures are in tests/conftest.py.)"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import spmdlab

# the checkout or sdist (examples, README): tests/support/ is two folders below it
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The folder holding the spmdlab under test: the checkout (pip install -e .) or site-packages (a wheel).
CODE = os.path.dirname(os.path.dirname(os.path.abspath(spmdlab.__file__)))


def _one_installation() -> None:
    """The tests run against an installed spmdlab (``pip install -e ".[test]"``, or a wheel),
    whose REPL, ``repl/``, imports as ``spmdlab_repl``. Refuse to mix two copies: run from a
    checkout (the current directory comes first on ``sys.path``) with a wheel installed, the
    checkout's spmdlab would be tested with the wheel's REPL."""
    spec = importlib.util.find_spec("spmdlab_repl")
    if spec is None or not spec.submodule_search_locations:
        raise pytest.UsageError('spmdlab_repl is not importable: install the project first, pip install -e ".[test]"')
    repl_home = os.path.dirname(os.path.abspath(list(spec.submodule_search_locations)[0]))
    if repl_home != CODE:
        raise pytest.UsageError(
            f"spmdlab is imported from {CODE} but spmdlab_repl from {repl_home}: install this checkout "
            '(pip install -e ".[test]"), or test an installed wheel from outside the checkout '
            "(cd /tmp && python -m pytest /path/to/tests)")


_one_installation()
# Every process this test session starts (labs, shims, mpiexec, child scripts) inherits
# this marker, so a leftover can be found in /proc whatever its parent became.
SESSION_MARK = f"{os.getpid()}-{time.time_ns()}"
os.environ["SPMDLAB_TEST_SESSION"] = SESSION_MARK


def processes_with(variable: str, value: str, skip_self: bool = True) -> list[str]:
    """Live (not zombie) processes whose environment holds ``variable=value``, as
    ``"pid: command line"``."""
    found = []
    needle = f"{variable}={value}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or (skip_self and int(entry) == os.getpid()):
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry}: {args}")
        except OSError:
            continue
    return found


def marked_processes() -> list[str]:
    """The live processes this test session started."""
    return processes_with("SPMDLAB_TEST_SESSION", SESSION_MARK)


def pool_processes(pool) -> list[int]:
    """The lab, shim and launcher processes of ``pool`` that are still alive."""
    pids = [pool._proc.pid, *pool.pids.values()]
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split()[2] != "Z":
                    alive.append(pid)
        except FileNotFoundError:
            pass
    return alive


def assert_gone(pool, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while pool_processes(pool) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool_processes(pool) == [], f"processes left behind: {pool_processes(pool)}"


def child_pythonpath() -> str:
    """PYTHONPATH for a child interpreter (script, kernel, IPython, REPL): the folder of the
    spmdlab under test first, then this session's own."""
    return os.pathsep.join(p for p in (CODE, os.environ.get("PYTHONPATH")) if p)


def run_script(code: str, timeout: float = 60, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    """Run ``code`` as a script file in a fresh interpreter (cwd: a temp dir), with ``env``
    added to this process's environment."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "script.py")
        with open(path, "w") as f:
            f.write(code)
        return subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=timeout,
                              cwd=tmp, env=dict(os.environ, PYTHONPATH=child_pythonpath(), **(env or {})), **kwargs)


# The REPLs' commands and environment (pmode, spmdlab), for tests that start them.
def command(script: str, module: str) -> list[str]:
    """The installed console script next to this Python, else ``python -m``."""
    path = os.path.join(os.path.dirname(sys.executable), script)
    return [path] if os.path.exists(path) else [sys.executable, "-m", module]


PMODE = command("pmode", "spmdlab_repl.pmode")
CLIENT = command("spmdlab", "spmdlab_repl.client")


def environment(tmp_path) -> dict[str, str]:
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "xdg"), TERM="xterm", NO_COLOR="",
               PYTHONPATH=child_pythonpath())
    env.pop("PROMPT_TOOLKIT_NO_CPR", None)
    env.pop("COLUMNS", None)
    return env


_LENDER = """
import sys, numpy as np
from spmdlab.protocol import crossmem
part = np.arange(4096, dtype=np.float64)
print(repr(tuple(crossmem.lend(part))), flush=True)
sys.stdin.readline()
"""
_cross_memory: list = []


def cross_memory_refused() -> str | None:
    """Why this machine refuses cross-memory copies between two of its processes (a
    kernel without ``process_vm_readv``, a container's seccomp, Yama), or None when a
    copy from a child interpreter works: tests of the copies skip with that reason, as
    spmdlab itself then falls back to its sockets."""
    if not _cross_memory:
        from spmdlab.protocol import crossmem

        if not crossmem.available():
            _cross_memory.append("no process_vm_readv here")
            return _cross_memory[0]
        child = subprocess.Popen([sys.executable, "-c", _LENDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True, env={**os.environ, "PYTHONPATH": child_pythonpath()})
        try:
            where, pid, address, nbytes = eval(child.stdout.readline())
            out = np.zeros(4096)
            crossmem.read_into([(crossmem.Lent(tuple(where), pid, address, nbytes),
                                 crossmem.Region(out, (slice(None),)).iovecs())])
            _cross_memory.append(None if out[-1] == 4095 else "a copy from a child process came back wrong")
        except crossmem.CrossMemoryError as exc:
            _cross_memory.append(f"cross-memory copies refused here: {exc}")
        finally:
            child.kill()
            child.wait(10)
    return _cross_memory[0]
