"""What the codistributed operations share: layout facts and collectives.

Layout facts answer, for a complete codistributor on the labs of the running block,
which global indices this lab holds (slices where contiguous, see
``codistributor.localSelection``) and build results from local parts. The collectives
are nonblocking MPI calls on the block's communicator waited with ``comm.wait``
(interruptible); every lab calls them in the same order. Nothing here imports MPI at
import time: the operations also run at the client, as on a pool of one lab.
"""
from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Tuple

import numpy as np

from . import runtime
from .runtime import lazy_comm as comm
from .codistributor import codistributor1d, codistributor2dbc

if TYPE_CHECKING:
    from .codistributed import codistributed


_NOVALUE = np._NoValue  # numpy's "argument not given" marker


_EMPTY_BYTES = np.empty(0, dtype=np.uint8)


_codistributed_class: Any = None


def _cls():
    """The ``codistributed`` class (imported on first use: it imports this module)."""
    global _codistributed_class
    if _codistributed_class is None:
        from .codistributed import codistributed

        _codistributed_class = codistributed
    return _codistributed_class


def _redistribute(D, codist):
    from .codistributed import redistribute

    return redistribute(D, codist)


def _gather(D):
    from .codistributed import gather

    return gather(D)


# --------------------------------------------------------------------------- layout facts
def _here() -> tuple:
    return runtime.state.index, runtime.state.size


def _is1d(codist) -> bool:
    return isinstance(codist, codistributor1d)


def _layout(codist) -> str:
    if _is1d(codist):
        return f"1d layout (Dimension={codist.Dimension}, Partition={codist.Partition})"
    return (f"2dbc layout (LabGrid={codist.LabGrid}, BlockSize={codist.BlockSize}, "
            f"Orientation={codist.Orientation!r})")


def _describe(x: Any) -> str:
    if isinstance(x, _cls()):
        return f"codistributed {x.shape} {x.dtype} with {_layout(x._codist)}"
    if isinstance(x, np.ndarray):
        return f"replicated array {x.shape} {x.dtype}"
    return f"{type(x).__name__}"


def _labs_of(D, what: str) -> tuple:
    """``(labindex, numlabs)``, checking the array is laid out for this block's labs."""
    lab, n = _here()
    m = _codist_numlabs(D._codist)
    if m != n:
        raise ValueError(f"{what}: the array is distributed over {m} labs but this block runs on {n}")
    return lab, n


_CODISTRIBUTORS = (codistributor1d, codistributor2dbc)


def _codist_numlabs(c) -> int:
    """The number of labs a complete codistributor is laid out for."""
    if isinstance(c, codistributor1d):
        return len(c.Partition)
    grid = c.LabGrid
    return grid[0] * grid[1]


def _check_codist_arg(codist: Any, what: str) -> None:
    if codist is not None and not isinstance(codist, _CODISTRIBUTORS):
        raise TypeError(f"{what}: the distribution scheme must be a codistributor1d or "
                        f"codistributor2dbc, got {type(codist).__name__}")


def _complete(codist, shape: Tuple[int, ...], n: int):
    """``codist`` (or the default codistributor1d()) completed for ``shape`` on n labs."""
    if codist is None:
        codist = codistributor1d()
    if codist.isComplete() and codist.GlobalSize == tuple(shape) and _codist_numlabs(codist) == n:
        return codist
    if codist.isComplete() and codist.GlobalSize == tuple(shape):
        if isinstance(codist, codistributor1d):
            raise ValueError(f"the codistributor's partition {codist.Partition} is for "
                             f"{len(codist.Partition)} labs but there are {n} labs")
        raise ValueError(f"the codistributor's lab grid {codist.LabGrid} holds "
                         f"{_codist_numlabs(codist)} labs but there are {n} labs")
    return codist.complete(tuple(shape), n)


def _check_dtype(dtype: np.dtype) -> Optional[str]:
    if dtype.hasobject:
        return (f"arrays of dtype {dtype} cannot be codistributed: elements must be "
                "plain data (numbers, bools, fixed-width strings), not Python objects")
    return None


def _need(D: Any, what: str) -> "codistributed":
    if not isinstance(D, _cls()):
        raise TypeError(f"{what} needs a codistributed array, got {type(D).__name__}")
    return D


@functools.lru_cache(maxsize=256)
def _local_sel(codist, lab: int, n: int) -> tuple:
    """Per-dimension global indices of ``lab``'s part: slices where contiguous (always for
    1-D layouts), increasing read-only index arrays otherwise (cached)."""
    sel = codist.localSelection(lab, n)
    for a in sel:
        if isinstance(a, np.ndarray):
            a.setflags(write=False)
    return sel


def _sel_global(s, pos) -> np.ndarray:
    """Global indices of the local positions ``pos`` along a dimension selected by ``s``."""
    if isinstance(s, slice):
        return np.asarray(pos, dtype=np.int64) + s.start
    return np.asarray(s)[pos]


@functools.lru_cache(maxsize=256)
def _default(shape: tuple, n: int):
    """The default (complete) codistributor1d of ``shape`` on n labs."""
    return codistributor1d().complete(shape, n)


def _region(sel: Sequence) -> tuple:
    """An index tuple selecting the Cartesian product of per-dimension slices/arrays."""
    arrays = [k for k, s in enumerate(sel) if not isinstance(s, slice)]
    if len(arrays) <= 1:
        return tuple(sel)
    return np.ix_(*[np.asarray(s) if not isinstance(s, slice) else np.arange(s.start, s.stop)
                    for s in sel])


def _take_sel(a: np.ndarray, sel: Sequence) -> np.ndarray:
    """``a`` restricted to the Cartesian product ``sel`` (slices or increasing arrays)."""
    arrays = [k for k, s in enumerate(sel) if not isinstance(s, slice)]
    if len(arrays) <= 1:
        return a[tuple(sel)]
    out = a[tuple(s if isinstance(s, slice) else slice(None) for s in sel)]
    for k in arrays:
        out = np.take(out, sel[k], axis=k)
    return out


def _ix(arrays: Sequence[np.ndarray]) -> tuple:
    """``np.ix_`` that also accepts a single dimension and keeps empty arrays integer."""
    return np.ix_(*[np.asarray(a, dtype=np.intp) for a in arrays])


# --------------------------------------------------------------------------- collectives
def _contig(x: Any) -> np.ndarray:
    """``x`` as a C-contiguous array, keeping 0-d arrays 0-d (unlike ascontiguousarray)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy(order="C")


def _bytes(a: np.ndarray) -> np.ndarray:
    a = _contig(a)
    if a.size == 0 or a.dtype.itemsize == 0:
        return _EMPTY_BYTES
    return a.reshape(-1).view(np.uint8)


def _allreduce(x: np.ndarray, how: str, what: str) -> np.ndarray:
    send = _contig(x)
    if _here()[1] == 1:
        return send.copy()
    MPI = comm.MPI
    op = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}[how]
    recv = np.empty_like(send)
    if send.size == 0:
        return recv
    comm.wait(comm.block().Iallreduce(send, recv, op), what, keep=(send, recv))
    return recv


def _allgather(x: np.ndarray, what: str) -> np.ndarray:
    """``(numlabs,) + x.shape``: every lab's ``x`` (same shape and dtype on every lab)."""
    _, n = _here()
    x = _contig(x)
    out = np.empty((n,) + x.shape, dtype=x.dtype)
    if n == 1:
        out[0] = x
        return out
    if x.nbytes == 0:
        return out
    send = _bytes(x)
    recv = out.reshape(-1).view(np.uint8)
    MPI = comm.MPI
    comm.wait(comm.block().Iallgather([send, MPI.BYTE], [recv, MPI.BYTE]), what, keep=(send, out))
    return out


def _allgatherv(x: np.ndarray, counts: np.ndarray, what: str) -> np.ndarray:
    """Concatenation, in lab order, of every lab's 1-D ``x`` (lab k has ``counts[k-1]``)."""
    _, n = _here()
    x = np.ascontiguousarray(x)
    if n == 1:
        return x.copy()
    item = x.dtype.itemsize
    out = np.empty(int(np.sum(counts)), dtype=x.dtype)
    if out.nbytes == 0:
        return out
    c = np.asarray(counts, dtype=np.int64) * item
    d = np.concatenate(([0], np.cumsum(c)[:-1])).astype(np.int64)
    send = _bytes(x)
    recv = out.view(np.uint8)
    MPI = comm.MPI
    comm.wait(comm.block().Iallgatherv([send, MPI.BYTE], [recv, (c, d), MPI.BYTE]), what,
              keep=(send, out, c, d))
    return out


def _bcast(x: np.ndarray, root: int, what: str) -> np.ndarray:
    """Lab ``root``'s ``x`` on every lab (``x`` has the same shape/dtype everywhere)."""
    _, n = _here()
    x = np.array(x, copy=True, order="C")
    if n == 1 or x.nbytes == 0:
        return x
    MPI = comm.MPI
    buf = x.reshape(-1).view(np.uint8)
    comm.wait(comm.block().Ibcast([buf, MPI.BYTE], root - 1), what, keep=(x,))
    return x


_IN_FLIGHT: set = set()  # started exchanges; one abandoned by an abort stays here forever


class _Exchange:
    """One nonblocking all-to-all of byte chunks: ``sends[k]`` goes to lab k+1, and
    ``rcounts[k]`` bytes come from lab k+1 (both sides know the sizes from metadata).

    Until ``finish`` the exchange (request and buffers) is referenced from ``_IN_FLIGHT``,
    so if the block is aborted while it is pending (SUMMA keeps one exchange ahead), MPI
    never writes into freed memory."""

    def __init__(self, sends: list, rcounts: Sequence[int], what: str):
        chunks = [_EMPTY_BYTES if s is None else _bytes(s) for s in sends]
        self.scounts = np.array([c.size for c in chunks], dtype=np.int64)
        self.sdispl = np.concatenate(([0], np.cumsum(self.scounts)[:-1])).astype(np.int64)
        self.sendbuf = np.concatenate(chunks) if self.scounts.sum() else _EMPTY_BYTES
        self.rcounts = np.asarray(rcounts, dtype=np.int64)
        self.rdispl = np.concatenate(([0], np.cumsum(self.rcounts)[:-1])).astype(np.int64)
        self.recvbuf = np.empty(int(self.rcounts.sum()), dtype=np.uint8)
        self.what = what
        MPI = comm.MPI
        _IN_FLIGHT.add(self)
        self.request = comm.block().Ialltoallv(
            [self.sendbuf, (self.scounts, self.sdispl), MPI.BYTE],
            [self.recvbuf, (self.rcounts, self.rdispl), MPI.BYTE])

    def finish(self) -> list:
        comm.wait(self.request, self.what, keep=(self.sendbuf, self.recvbuf, self.scounts,
                                                 self.sdispl, self.rcounts, self.rdispl))
        _IN_FLIGHT.discard(self)
        self.sendbuf = None
        return [self.recvbuf[o:o + c] for o, c in zip(self.rdispl, self.rcounts)]


def _match(want: np.ndarray, have) -> tuple:
    """Positions in ``want`` whose global index is in ``have`` (a slice or an increasing
    array), and where in ``have``."""
    want = np.asarray(want)
    if isinstance(have, slice):
        found = np.flatnonzero((want >= have.start) & (want < have.stop))
        return found, (want[found] - have.start).astype(np.intp)
    if have.size == 0 or want.size == 0:
        e = np.empty(0, dtype=np.intp)
        return e, e
    pos = np.searchsorted(have, want)
    ok = pos < have.size
    ok[ok] = have[pos[ok]] == want[ok]
    return np.flatnonzero(ok), pos[ok]


def _fetch(src_local: np.ndarray, src, want: Callable[[int], tuple], what: str) -> np.ndarray:
    """This lab's block ``S[np.ix_(*want(me))]`` of the array S laid out by ``src``
    (this lab holding ``src_local``). ``want(q)`` gives, for every lab q, per-dimension
    global indices into S (any order, no repeats needed); one all-to-all."""
    lab, n = _here()
    mine = want(lab)
    dtype = src_local.dtype
    out = np.empty(tuple(len(w) for w in mine), dtype=dtype)
    sends: list = [None] * n
    rcounts = [0] * n
    mine_ix = _local_sel(src, lab, n)
    for q in range(1, n + 1):
        wq = mine if q == lab else want(q)
        pairs = [_match(np.asarray(w), h) for w, h in zip(wq, mine_ix)]
        block = src_local[_ix([p[1] for p in pairs])] if all(p[1].size for p in pairs) else None
        if q == lab:
            if block is not None:
                out[_ix([p[0] for p in pairs])] = block
        else:
            sends[q - 1] = block
    recv_pairs = {}
    for p in range(1, n + 1):
        if p == lab:
            continue
        pairs = [_match(np.asarray(w), h) for w, h in zip(mine, _local_sel(src, p, n))]
        shape = tuple(len(x[0]) for x in pairs)
        recv_pairs[p] = (pairs, shape)
        rcounts[p - 1] = math.prod(shape) * dtype.itemsize
    if n > 1:
        chunks = _Exchange(sends, rcounts, what).finish()
        for p, (pairs, shape) in recv_pairs.items():
            if rcounts[p - 1]:
                out[_ix([x[0] for x in pairs])] = chunks[p - 1].view(dtype).reshape(shape)
    return out


def _from_local(local: np.ndarray, codist):
    return _cls()._from_local(local, codist)


def _replicated_result(full: Any):
    """A replicated result as the caller expects: 0-d → numpy scalar, else a
    codistributed array with the default layout (each lab keeps its slice)."""
    full = np.asarray(full)
    if full.ndim == 0:
        return full[()]
    lab, n = _here()
    codist = _default(full.shape, n)
    return _from_local(np.array(_take_sel(full, _local_sel(codist, lab, n)), copy=True), codist)
