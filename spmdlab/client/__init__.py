"""The client: pools of labs (:mod:`.pool`, started by :mod:`.launch`), spmd blocks
(:mod:`.spmd`, their source from :mod:`.blocksource`, run by :mod:`.execute`), the handles
to values on the labs (:mod:`.composite`, :mod:`.distributed`) and how they are shown
(:mod:`.display`, :mod:`.preview`, :mod:`.progress`, :mod:`.console`). Never imports the
lab package or mpi4py."""
from __future__ import annotations

from . import (
    distributed_grid,  # registers the handle of arrays on a grid of some labs
    distributed_sparse,  # registers the sparse handle and distributed(S) of scipy.sparse S
)

__all__ = ["distributed_grid", "distributed_sparse"]
