"""Shared fixtures: real lab pools under mpiexec, and a check that none outlives its test."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import spmdlab

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


@pytest.fixture(scope="module")
def pool4():
    pool = spmdlab.parpool(4)
    yield pool
    pool.close()
    assert_gone(pool)


@pytest.fixture(scope="module")
def pool2():
    pool = spmdlab.Pool(2)
    yield pool
    pool.close()
    assert_gone(pool)


def run_script(code: str, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    """Run ``code`` as a script file in a fresh interpreter (cwd: a temp dir)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "script.py")
        with open(path, "w") as f:
            f.write(code)
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        return subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=timeout,
                              cwd=tmp, env=env, **kwargs)
