"""Shared fixtures: real lab pools under mpiexec, and a check that none outlives its test;
the ``nompi`` marker, given by folder (NO_MPI_FOLDERS); helpers are in tests/support/."""
from __future__ import annotations

import os
import time

import pytest
from support.processes import assert_gone, marked_processes

import spmdlab

# Folders of pure logic: every test in them is marked ``nompi`` (no MPI, no lab; the fast
# loop ``pytest -m nompi``). Tests elsewhere that need no lab carry the mark themselves.
NO_MPI_FOLDERS = ("layouts", "package")
HERE = os.path.dirname(os.path.abspath(__file__))

# Labs unpickle functions and classes a test module (or tests/support) defines by its name
# (``test_spmd``): every test folder goes on their path (pools pass PYTHONPATH on).
TEST_FOLDERS = sorted(where for where, _, files in os.walk(HERE)
                      if any(f.startswith("test_") and f.endswith(".py") for f in files))
os.environ["PYTHONPATH"] = os.pathsep.join([HERE, *TEST_FOLDERS, *filter(None, [os.environ.get("PYTHONPATH")])])

# Tests of layouts, operations and moves use small arrays and mean them spread over the
# labs; the default keeps a distributed array under SPMDLAB_DISTRIBUTE_SIZE elements whole
# on lab 1 (issue 24). The tests' pools spread every array; tests/arrays/test_threads.py
# checks the default itself with a pool of its own.
os.environ["SPMDLAB_DISTRIBUTE_SIZE"] = "0"


def pytest_collection_modifyitems(items: list) -> None:
    for item in items:
        folder = os.path.relpath(str(item.path), HERE).split(os.sep)[0]
        if folder in NO_MPI_FOLDERS:
            item.add_marker(pytest.mark.nompi)


@pytest.fixture(scope="module", autouse=True)
def no_orphans_after_module():
    """After each test module (its pools closed), no process it started may remain."""
    yield
    import spmdlab.client.pool

    for pool in list(spmdlab.client.pool._live_pools):
        pool.close()
    deadline = time.monotonic() + 5
    while marked_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marked_processes() == []


@pytest.fixture(scope="module")
def pools():
    """``pools(n)``: a pool of n labs, started on first use in the module and closed after
    it (with no process left behind); ``pools(n, current=True)`` starts it with
    ``parpool``, so that ``spmd()`` without ``pool=`` uses it. The one way tests make pools."""
    started: dict = {}

    def get(n: int, current: bool = False):
        key = (n, current)
        if key not in started or started[key].state == "closed":
            started[key] = spmdlab.parpool(n) if current else spmdlab.Pool(n)
        return started[key]

    yield get
    for pool in started.values():
        pool.close()
        assert_gone(pool)


@pytest.fixture(scope="module")
def pool4(pools):
    """The current pool, of 4 labs."""
    return pools(4, current=True)


@pytest.fixture(scope="module")
def pool2(pools):
    return pools(2)


