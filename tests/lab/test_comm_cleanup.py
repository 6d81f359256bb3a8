"""What ``lab/comm.py`` does with communicators MPI refuses to free at once: kept in the
graveyard as ``(None, communicator, renewal)`` and freed by a later reap (issue 19: it
once stored a bare communicator where ``_reap`` unpacks triples)."""
from __future__ import annotations

import sys

import cloudpickle
import pytest

import spmdlab

pytestmark = pytest.mark.timeout(120)
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def refused_once_then_freed() -> tuple:
    """On a lab: a grid communicator whose first ``Free`` MPI refuses, freed as ``renew``
    frees grid communicators, then reaped."""
    from mpi4py import MPI

    from spmdlab.lab import comm

    class RefusesOnce:
        def __init__(self) -> None:
            self.calls = 0

        def Free(self) -> None:
            self.calls += 1
            if self.calls == 1:
                raise MPI.Exception(MPI.ERR_COMM)

    stand_in = RefusesOnce()
    before = len(comm._graveyard)
    comm._grid_comms[("a test's grid",)] = (stand_in,)
    comm._free_grid_comms()
    shapes = [len(entry) for entry in comm._graveyard]
    kept = [entry[1] is stand_in for entry in comm._graveyard[before:]]
    comm._reap()
    return shapes, kept, stand_in.calls, len(comm._graveyard) - before


def test_a_communicator_mpi_refuses_to_free_is_kept_as_a_triple_and_freed_by_the_next_reap(pools):
    for shapes, kept, calls, left in spmdlab.spmd_run(refused_once_then_freed, pool=pools(2), timeout=60):
        assert set(shapes) == {3}, shapes
        assert kept == [True]
        assert calls == 2  # refused, then freed by the reap
        assert left == 0
