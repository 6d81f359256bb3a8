"""The process grid of a 2dbc codistributed matrix, as ScaLAPACK's BLACS sees it.

A ``codistributor2dbc`` with ``LabGrid = [nprow, npcol]`` and block size ``nb`` puts
global row ``i`` on grid row ``(i // nb) % nprow`` and global column ``j`` on grid
column ``(j // nb) % npcol`` (ScaLAPACK's block-cyclic map with source process 0;
NUMROC/INDXG2L/INDXL2G in the ScaLAPACK TOOLS). :class:`ProcessGrid` gives those maps
for one lab, plus the row and column sub-communicators (made by ``spmdlab.lab.comm``, the
one module owning communicators) and the collectives the factorizations use along a
grid row or column: panel broadcast, all-gather of panel pieces, row exchanges. Every
wait is ``comm.wait`` (interruptible: Ctrl-C, another lab's error, a timeout end it).

Those three move panels, so they are point-to-point messages (as BLACS builds its
broadcasts), not MPI's nonblocking collectives: a block aborted inside a factorization
leaves collectives that some lab never joined, and MPICH keeps such a collective's
internal copies for good (~one panel per abort; issue 19), while an abandoned receive is
cancelled and an unmatched send holds only its request. A grid row or column holds a
few labs, so the root sends to each in turn. Tags carry ``comm.renewals()``, so a
message of an aborted block can never match one of a later block.

The index functions at module level are pure arithmetic (no MPI) and are tested
without a pool. With one lab (and at the client) no communicator is made.

It sits low in the array package (no arrays imported) so that SUMMA (``matmul``) and
the factorizations (``linalg/``) share it.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import runtime
from ..lab import lazy_comm as comm
from ..layouts.codistributor import codistributor2dbc, numroc

__all__ = ["ProcessGrid", "g2l", "l2g", "local_before", "numroc", "owner"]


# --------------------------------------------------------------------------- index math
def owner(i: Any, nb: int, nprocs: int) -> Any:
    """Grid coordinate owning global index ``i`` (int or array)."""
    return (i // nb) % nprocs


def g2l(i: Any, nb: int, nprocs: int) -> tuple[Any, Any]:
    """``(owner, local index)`` of global index ``i`` (ScaLAPACK INDXG2P/INDXG2L)."""
    return (i // nb) % nprocs, (i // (nb * nprocs)) * nb + i % nb


def l2g(li: Any, nb: int, iproc: int, nprocs: int) -> Any:
    """Global index of local index ``li`` on grid coordinate ``iproc`` (INDXL2G)."""
    return (li // nb) * (nb * nprocs) + iproc * nb + li % nb


def local_before(g: int, nb: int, iproc: int, nprocs: int) -> int:
    """Number of ``iproc``'s local indices whose global index is below ``g``: the local
    position where the global range ``g..`` starts on ``iproc``."""
    return numroc(g, nb, iproc, nprocs)


# --------------------------------------------------------------------------- the grid
class ProcessGrid:
    """One lab's view of the process grid of a complete ``codistributor2dbc``.

    ``nprow, npcol`` the grid, ``myrow, mycol`` this lab's 0-based coordinates,
    ``nb`` the block size, ``m, n`` the global size, ``mloc, nloc`` the local part's
    shape. ``row_comm``/``col_comm`` exist after :meth:`connect` (collective)."""

    def __init__(self, codist: Any, lab: int | None = None,
                 numlabs: int | None = None) -> None:
        if not isinstance(codist, codistributor2dbc) or not codist.isComplete():
            raise TypeError(f"ProcessGrid needs a complete codistributor2dbc, got {codist!r}")
        self.lab = runtime.labindex() if lab is None else int(lab)
        self.numlabs = runtime.numlabs() if numlabs is None else int(numlabs)
        self.codist = codist
        grid, size = codist.LabGrid, codist.GlobalSize
        assert grid is not None and size is not None  # complete
        self.nprow, self.npcol = grid
        if codist.BlockSizes[0] != codist.BlockSizes[1]:
            raise TypeError(f"ProcessGrid needs square blocks (ScaLAPACK's PDGETRF/PDPOTRF take MB = NB), got "
                            f"{codist.BlockSizes}: redistribute first (linalg.to_2dbc does)")
        self.nb = codist.BlockSizes[0]
        self.m, self.n = size
        self.orientation = codist.Orientation
        self.myrow, self.mycol = codist.gridCoords(self.lab, self.numlabs)
        self.mloc = numroc(self.m, self.nb, self.myrow, self.nprow)
        self.nloc = numroc(self.n, self.nb, self.mycol, self.npcol)
        self.row_comm: Any = None
        self.col_comm: Any = None

    @classmethod
    def of(cls, D: Any) -> ProcessGrid:
        """The grid of a 2dbc codistributed array on this lab."""
        return cls(getattr(D, "_codist", None))

    def __repr__(self) -> str:
        return (f"ProcessGrid({self.nprow}x{self.npcol}, nb={self.nb}, lab {self.lab} at "
                f"({self.myrow}, {self.mycol}), global {self.m}x{self.n}, local "
                f"{self.mloc}x{self.nloc})")

    # ---- index maps
    def lab_at(self, pr: int, pc: int) -> int:
        """Lab (1-based) at grid coordinates ``(pr, pc)``."""
        if self.orientation == "row":
            return pr * self.npcol + pc + 1
        return pc * self.nprow + pr + 1

    def row_owner(self, i: Any) -> Any:
        return owner(i, self.nb, self.nprow)

    def col_owner(self, j: Any) -> Any:
        return owner(j, self.nb, self.npcol)

    def rows_before(self, g: int, pr: int | None = None) -> int:
        """Local row position where global rows ``g..`` start on grid row ``pr`` (mine)."""
        return local_before(g, self.nb, self.myrow if pr is None else pr, self.nprow)

    def cols_before(self, g: int, pc: int | None = None) -> int:
        return local_before(g, self.nb, self.mycol if pc is None else pc, self.npcol)

    def global_rows(self, pr: int | None = None) -> np.ndarray:
        """Global rows of grid row ``pr`` (mine) in local order."""
        pr = self.myrow if pr is None else pr
        return l2g(np.arange(numroc(self.m, self.nb, pr, self.nprow)), self.nb, pr, self.nprow)

    def global_cols(self, pc: int | None = None) -> np.ndarray:
        pc = self.mycol if pc is None else pc
        return l2g(np.arange(numroc(self.n, self.nb, pc, self.npcol)), self.nb, pc, self.npcol)

    def local_row(self, i: Any) -> tuple[Any, Any]:
        """``(grid row, local row)`` of global row ``i``."""
        return g2l(i, self.nb, self.nprow)

    def local_col(self, j: Any) -> tuple[Any, Any]:
        return g2l(j, self.nb, self.npcol)

    # ---- communicators and collectives
    def connect(self, what: str) -> ProcessGrid:
        """Fetch the row and column communicators (collective over the block's labs;
        cached per block communicator in ``spmdlab.lab.comm``). Nothing with one lab."""
        if self.numlabs > 1 and self.row_comm is None:
            self.row_comm, self.col_comm = comm.grid_comms(
                ("grid", self.nprow, self.npcol, self.orientation), self.myrow, self.mycol, what)
        return self

    def _wait(self, request: Any, what: str, keep: tuple) -> None:
        comm.wait(request, what, keep=keep)

    def bcast_row(self, buf: np.ndarray, root_col: int, what: str) -> np.ndarray:
        """Broadcast ``buf`` (C-contiguous, same shape on every lab of my grid row) from
        the lab in grid column ``root_col`` to my grid row, in place."""
        if self.npcol > 1 and buf.nbytes:
            self._bcast(self.row_comm, buf, root_col, what)
        return buf

    def bcast_col(self, buf: np.ndarray, root_row: int, what: str) -> np.ndarray:
        """Broadcast ``buf`` from the lab in grid row ``root_row`` down my grid column."""
        if self.nprow > 1 and buf.nbytes:
            self._bcast(self.col_comm, buf, root_row, what)
        return buf

    def _bcast(self, c: Any, buf: np.ndarray, root: int, what: str) -> None:
        if not buf.flags.c_contiguous:
            raise ValueError("panel broadcast needs a C-contiguous buffer")
        comm.wait_every(_start_bcast(c, buf, root), what, (buf,))

    def ibcast_row(self, buf: np.ndarray, root_col: int) -> Any:
        """Start a row broadcast (C-contiguous ``buf``, in place); returns a handle for
        :meth:`finish` (None if there is nothing to send). Until finished, the request
        and buffer are tracked in ``spmdlab.comm``: if the block is aborted with the
        broadcast pending, the next renewal abandons them (MPI never writes into freed
        memory)."""
        if self.npcol == 1 or buf.nbytes == 0:
            return None
        return self._ibcast(self.row_comm, buf, root_col)

    def ibcast_col(self, buf: np.ndarray, root_row: int) -> Any:
        """Start a broadcast down my grid column (see :meth:`ibcast_row`)."""
        if self.nprow == 1 or buf.nbytes == 0:
            return None
        return self._ibcast(self.col_comm, buf, root_row)

    def _ibcast(self, c: Any, buf: np.ndarray, root: int) -> Any:
        pending = (_start_bcast(c, buf, root), buf)
        comm.track(pending, pending[0], (buf,))
        return pending

    def finish(self, pending: Any, what: str) -> None:
        """Wait (interruptibly) for a broadcast from :meth:`ibcast_row`/:meth:`ibcast_col`."""
        if pending is not None:
            comm.wait_every(pending[0], what, (pending[1],))
            comm.untrack(pending)

    def allgatherv_col(self, part: np.ndarray, counts: Sequence[int], what: str) -> np.ndarray:
        """Rows from every lab of my grid column stacked by grid row: ``part`` has
        ``counts[myrow]`` rows (C-contiguous, same trailing shape and dtype everywhere)."""
        part = np.ascontiguousarray(part)
        tail = part.shape[1:]
        out = np.empty((int(sum(counts)),) + tail, dtype=part.dtype)
        if self.nprow == 1:
            out[...] = part
            return out
        if out.nbytes == 0:
            return out
        row_bytes = math.prod(tail) * part.dtype.itemsize
        c = np.asarray(counts, dtype=np.int64) * row_bytes
        d = np.concatenate(([0], np.cumsum(c)[:-1])).astype(np.int64)
        recv = out.reshape(-1).view(np.uint8)
        recv[d[self.myrow]:d[self.myrow] + c[self.myrow]] = part.reshape(-1).view(np.uint8)
        mine = recv[d[self.myrow]:d[self.myrow] + c[self.myrow]]
        sends = [mine if k != self.myrow else None for k in range(self.nprow)]
        recvs = [recv[d[k]:d[k] + c[k]] if k != self.myrow else None for k in range(self.nprow)]
        comm.wait_every(_exchange(self.col_comm, sends, recvs, _TAG_GATHER), what, (out,))
        return out

    def alltoallv(self, c: Any, size: int, sends: Sequence[np.ndarray | None],
                  rbytes: Sequence[int], what: str) -> list[np.ndarray]:
        """All-to-all of byte chunks over ``c`` (a row or column communicator of ``size``
        labs): ``sends[k]`` to rank k, ``rbytes[k]`` bytes back from rank k."""
        chunks = [np.empty(0, np.uint8) if s is None or s.nbytes == 0
                  else np.ascontiguousarray(s).reshape(-1).view(np.uint8) for s in sends]
        sc = np.array([x.size for x in chunks], dtype=np.int64)
        sd = np.concatenate(([0], np.cumsum(sc)[:-1])).astype(np.int64)
        sbuf = np.concatenate(chunks) if sc.sum() else np.empty(0, np.uint8)
        rc = np.asarray(rbytes, dtype=np.int64)
        rd = np.concatenate(([0], np.cumsum(rc)[:-1])).astype(np.int64)
        rbuf = np.empty(int(rc.sum()), dtype=np.uint8)
        me = c.Get_rank()
        parts = [rbuf[o:o + k] for o, k in zip(rd, rc)]
        if sc[me]:
            parts[me][...] = sbuf[sd[me]:sd[me] + sc[me]]
        sends = [sbuf[o:o + k] if k and r != me else None for r, (o, k) in enumerate(zip(sd, sc))]
        recvs = [p if p.size and r != me else None for r, p in enumerate(parts)]
        comm.wait_every(_exchange(c, sends, recvs, _TAG_EXCHANGE), what, (sbuf, rbuf))
        return parts

    def allreduce(self, x: np.ndarray, how: str, what: str, scope: str = "all") -> np.ndarray:
        """Sum/max/min of a small array over the block (``scope='all'``) or my grid row
        or column (``'row'``/``'col'``)."""
        x = np.ascontiguousarray(x)
        if self.numlabs == 1:
            return x.copy()
        c = {"all": None, "row": self.row_comm, "col": self.col_comm}[scope]
        if c is None:
            c = comm.block()
        op = {"sum": comm.MPI.SUM, "max": comm.MPI.MAX, "min": comm.MPI.MIN}[how]
        out = np.empty_like(x)
        self._wait(c.Iallreduce(x, out, op), what, (x, out))
        return out


_TAG_BCAST, _TAG_GATHER, _TAG_EXCHANGE = 1, 2, 3


def _tag(kind: int) -> int:
    """The tag of a grid message of ``kind``: new after every renewal of the labs'
    communicators (the same on every lab), so nothing of an aborted block matches it."""
    return kind + 4 * (comm.renewals() % (1 << 20))


def _start_bcast(c: Any, buf: np.ndarray, root: int) -> list:
    """Start a broadcast of ``buf`` from rank ``root`` of ``c``: the root sends to each
    other rank, the others receive; the requests to wait for."""
    b = buf.reshape(-1).view(np.uint8)
    tag = _tag(_TAG_BCAST)
    if c.Get_rank() != root:
        return [c.Irecv([b, comm.MPI.BYTE], root, tag)]
    return [c.Isend([b, comm.MPI.BYTE], k, tag) for k in range(c.Get_size()) if k != root]


def _exchange(c: Any, sends: Sequence[np.ndarray | None], recvs: Sequence[np.ndarray | None],
              kind: int) -> list:
    """Start the messages of an exchange over ``c``: ``sends[k]`` to rank k, ``recvs[k]``
    (a byte buffer of the size rank k sends) from rank k; None: nothing. Receives first."""
    tag, B = _tag(kind), comm.MPI.BYTE
    requests = [c.Irecv([r, B], k, tag) for k, r in enumerate(recvs) if r is not None]
    return requests + [c.Isend([x, B], k, tag) for k, x in enumerate(sends) if x is not None]
