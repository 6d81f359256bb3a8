"""The ghost exchange of ``S @ x`` (PETSc's MatMult scatter, ``VecScatter``).

A lab holding rows ``lo:hi`` of a row-distributed matrix needs the entries of ``x`` at
the columns its nonzeros touch. Those it owns are its *diagonal block*; the others are
its *ghosts*, owned by other labs. ``GhostPlan`` is worked out once per matrix and
vector partition (one allgather of counts, one all-to-all of indices) and cached on the
matrix: the local matrix split into the diagonal block (local column numbers) and the
off-diagonal block (columns renumbered into the compact ghost buffer, grouped by owner),
which local entries of ``x`` each other lab needs, and contiguous send and ghost buffers
allocated once per dtype. Each product then posts one ``Irecv`` per lab it needs from
and one ``Isend`` per lab that needs from it, on the library's private communicator,
before the local diagonal-block product, and waits for them after it: exactly the ghost
entries travel. ``STATS`` counts what was sent (the tests read it).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ...lab import lazy_comm as comm
from ..base import here
from ..collectives import Exchange, allgather

__all__ = ["GhostPlan", "ghost_plan", "split_blocks", "STATS", "TAG"]

TAG = 25025  # on the private communicator: cannot match a user's message
STATS = {"bytes_sent": 0, "messages_sent": 0}


def split_blocks(A: Any, lo: int, hi: int) -> tuple[Any, Any, np.ndarray]:
    """``(diagonal block, off-diagonal block, ghost columns)`` of a csr part whose
    columns ``lo:hi`` are local: the diagonal block's columns count from ``lo``, the
    off-diagonal block's index the sorted global ``ghost columns``."""
    A = sp.csr_array(A)
    itype = A.indices.dtype  # kept: int32 indices stay int32 in both blocks
    cols = A.indices.astype(np.int64, copy=False)
    inside = (cols >= lo) & (cols < hi)
    ghosts = np.unique(cols[~inside])
    cin = np.concatenate(([0], np.cumsum(inside, dtype=np.int64)))
    cout = np.concatenate(([0], np.cumsum(~inside, dtype=np.int64)))
    m = A.shape[0]
    diag = sp.csr_array((A.data[inside], (cols[inside] - lo).astype(itype), cin[A.indptr].astype(itype)),
                        shape=(m, hi - lo))
    off = sp.csr_array((A.data[~inside], np.searchsorted(ghosts, cols[~inside]).astype(itype),
                        cout[A.indptr].astype(itype)), shape=(m, ghosts.size))
    return diag, off, ghosts


class GhostPlan:
    """Who sends which entries of ``x`` to whom for one row-distributed matrix and one
    partition of ``x`` (offsets ``xoff``). Collective to make (every lab, same order)."""

    def __init__(self, A: Any, xoff: np.ndarray, what: str) -> None:
        lab, n = here()
        lo, hi = int(xoff[lab - 1]), int(xoff[lab])
        self.diag, self.off, ghosts = split_blocks(A, lo, hi)
        self.ghosts, self.lo, self.ncols = ghosts, lo, int(A.shape[1])
        self.nlocal = hi - lo
        owner = np.searchsorted(xoff, ghosts, side="right")  # 1-based labs
        need = np.bincount(owner, minlength=n + 1)[1:].astype(np.int64)
        starts = np.concatenate(([0], np.cumsum(need)))
        self.recv = [(q, int(starts[q - 1]), int(starts[q])) for q in range(1, n + 1) if need[q - 1]]
        self.nghost = int(ghosts.size)
        if n == 1:
            self.send_index = np.empty(0, dtype=np.intp)
            self.send = []
        else:
            counts = allgather(need, what)  # counts[k, q]: lab k+1 needs from lab q+1
            sends = [(ghosts[starts[q]:starts[q + 1]] - xoff[q]).astype(np.int64) for q in range(n)]
            chunks = Exchange(sends, [int(counts[k, lab - 1]) * 8 for k in range(n)], what).finish()
            wanted = [c.view(np.int64) for c in chunks]
            self.send_index = np.concatenate(wanted).astype(np.intp) if wanted else np.empty(0, np.intp)
            sstarts = np.concatenate(([0], np.cumsum([w.size for w in wanted])))
            self.send = [(q, int(sstarts[q - 1]), int(sstarts[q])) for q in range(1, n + 1) if wanted[q - 1].size]
        self._buffers: dict = {}
        self._typed: dict = {}

    def merged(self) -> Any:
        """The local csr part rebuilt from the two blocks (a new matrix, O(nnz): the
        entries are stored once, in the blocks; see ``SparseBase._local``)."""
        d, o = self.diag, self.off
        nd, no = np.diff(d.indptr), np.diff(o.indptr)
        indptr = d.indptr + o.indptr
        starts = indptr[:-1]
        dpos = np.arange(d.nnz) + np.repeat(starts - d.indptr[:-1], nd)
        opos = np.arange(o.nnz) + np.repeat(starts + nd - o.indptr[:-1], no)
        indices = np.empty(int(indptr[-1]), d.indices.dtype)
        data = np.empty(int(indptr[-1]), d.dtype)
        indices[dpos], data[dpos] = d.indices + self.lo, d.data
        indices[opos], data[opos] = self.ghosts[o.indices], o.data
        A = sp.csr_array((data, indices, indptr), shape=(d.shape[0], self.ncols))
        A.has_sorted_indices = False
        A.sort_indices()
        return A

    def blocks(self, dtype: np.dtype) -> tuple[Any, Any]:
        """The diagonal and off-diagonal blocks with data of ``dtype`` (made once)."""
        if dtype == self.diag.dtype:
            return self.diag, self.off
        found = self._typed.get(dtype)
        if found is None:  # a product with a vector of a wider type: converted once
            found = (self.diag.astype(dtype), self.off.astype(dtype))
            self._typed[dtype] = found
        return found

    def compressed(self, off: Any) -> tuple[np.ndarray | None, Any]:
        """PETSc's compressed rows (``MatCheckCompressedRow``) of the off-diagonal block
        ``off`` (``blocks``'s, of any dtype): ``(rows, block of those rows)`` sharing its
        entries, the rows being the few with ghost entries; ``(None, off)`` when most rows
        have some. Skipping the empty rows saves a pass over the whole result vector."""
        key = ("rows", off.dtype)
        found = self._typed.get(key)
        if found is None:
            rows = np.flatnonzero(np.diff(off.indptr))
            if 2 * rows.size > off.shape[0]:
                found = (None, off)
            else:
                indptr = np.append(off.indptr[rows], off.indptr[-1]).astype(off.indptr.dtype)
                found = (rows, sp.csr_array((off.data, off.indices, indptr), shape=(rows.size, off.shape[1])))
            self._typed[key] = found
        return found

    def buffers(self, dtype: np.dtype, k: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Contiguous send and ghost buffers for vectors (``k == 0``) or ``k`` columns."""
        key = (dtype, k)
        found = self._buffers.get(key)
        if found is None:
            tail = (k,) if k else ()
            found = (np.empty((self.send_index.size,) + tail, dtype), np.empty((self.nghost,) + tail, dtype))
            self._buffers[key] = found
        return found

    def start(self, xloc: np.ndarray) -> tuple[list, np.ndarray, np.ndarray]:
        """Pack the entries other labs need and post every receive and send; returns
        ``(requests, send buffer, ghost buffer)`` for ``finish``."""
        k = xloc.shape[1] if xloc.ndim == 2 else 0
        sendbuf, ghost = self.buffers(xloc.dtype, k)
        if not self.recv and not self.send:
            return [], sendbuf, ghost
        np.take(xloc, self.send_index, axis=0, out=sendbuf)
        c = comm.private_comm()
        requests = [c.Irecv(ghost[a:b], q - 1, TAG) for q, a, b in self.recv]
        for q, a, b in self.send:
            requests.append(c.Isend(sendbuf[a:b], q - 1, TAG))
            STATS["bytes_sent"] += sendbuf[a:b].nbytes
            STATS["messages_sent"] += 1
        return requests, sendbuf, ghost

    @staticmethod
    def finish(requests: list, sendbuf: np.ndarray, ghost: np.ndarray, what: str) -> None:
        if requests:
            comm.wait_every(requests, what, keep=(sendbuf, ghost))


def ghost_plan(S: Any, xoff: np.ndarray, what: str) -> GhostPlan:
    """The cached plan of row-distributed ``S`` for vectors partitioned by ``xoff``.

    The plan's two blocks then hold ``S``'s entries and the csr part is dropped
    (``S._adopt``), as PETSc's MPIAIJ stores only its A and B blocks: the matrix is
    stored once. A plan for another partition of ``x`` replaces the cached one."""
    key = ("ghosts", tuple(int(v) for v in xoff))
    plan = S._cache.get(key)
    if plan is None:
        plan = GhostPlan(S._local, xoff, what)
        for old in [k for k in S._cache if k[0] == "ghosts"]:
            del S._cache[old]
        S._cache[key] = plan
        S._adopt(plan)
    return plan
