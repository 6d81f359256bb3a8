"""Codistributed arrays: the lab side of MATLAB's distributed arrays (DESIGN §4).

A ``codistributed`` array lives inside ``spmd`` blocks: every lab stores only its local
part (a numpy array, ``_local``) and a complete codistributor (``_codist``) that maps
global indices to labs. The numpy operations come from the ``CodistOps`` mixin, the
constructors from sizes (``zeros``, ``rand``, ...) from ``CodistConstructors``
(``codist_create``), and ``gather``/``redistribute`` live in ``codist_transfer``; this
module holds the class, ``codistributed(X)``, ``build`` and the reading functions.

Numbering (DESIGN §1): labs are 1..numlabs, dimensions passed as ``dim`` are 1-based
(``axis=`` is the 0-based alternative), element indices are 0-based.

Communication: collectives are nonblocking MPI requests on the block's communicator,
waited through ``comm.wait`` (interruptible). Every collective is called by all labs
in the same order; checks that may fail on one lab only are exchanged first, so every
lab raises the same error (no lab is left waiting). This module imports no MPI at
import time, so ``from spmdlab import codistributed`` works at the client; there, and
on a lab outside a block, arrays behave as on a pool of one lab.
"""
from __future__ import annotations

import math
import pickle
from typing import Any, Optional, Tuple

import numpy as np

from . import runtime
from .runtime import lazy_comm as comm
from .checks import check_lab
from .codist_comm import (_CODISTRIBUTORS, _check_codist_arg, _check_dtype, _codist_numlabs, _complete,
                          _here, _need)
from .codist_create import CodistConstructors
from .codist_ops import CodistOps
from .codist_transfer import _take, gather, redistribute
from .codistributor import codistributor1d, codistributor2dbc

__all__ = ["codistributed", "getLocalPart", "getCodistributor", "globalIndices",
           "redistribute", "gather", "iscodistributed"]


_HEADER_BYTES = 2048


# --------------------------------------------------------------------------- collectives
def _allgather_small(obj: Any, what: str) -> list:
    """Every lab's small picklable ``obj``, in lab order, with ONE collective."""
    _, n = _here()
    if n == 1:
        return [obj]
    payload = pickle.dumps(obj, 5)
    if len(payload) + 8 > _HEADER_BYTES:
        payload = pickle.dumps(("too-big", repr(obj)[:200]), 5)
    buf = np.zeros(_HEADER_BYTES, dtype=np.uint8)
    buf[:8] = np.frombuffer(np.int64(len(payload)).tobytes(), dtype=np.uint8)
    buf[8:8 + len(payload)] = np.frombuffer(payload, dtype=np.uint8)
    c = comm.block()
    out = np.empty(_HEADER_BYTES * n, dtype=np.uint8)
    comm.wait(c.Iallgather([buf, comm.MPI.BYTE], [out, comm.MPI.BYTE]), what, keep=(buf, out))
    result = []
    for k in range(n):
        chunk = out[k * _HEADER_BYTES:(k + 1) * _HEADER_BYTES]
        length = int(np.frombuffer(chunk[:8].tobytes(), dtype=np.int64)[0])
        result.append(pickle.loads(chunk[8:8 + length].tobytes()))
    return result


def _raise_combined(errors: list, what: str) -> None:
    """Raise one error, the same on every lab, if any lab reported one."""
    bad = [(k + 1, e) for k, e in enumerate(errors) if e is not None]
    if not bad:
        return
    kinds = {e[0] for _, e in bad}
    messages = {e[1] for _, e in bad}
    if len(messages) == 1:
        labs = [lab for lab, _ in bad]
        where = "every lab" if len(labs) == len(errors) else \
            ("lab " if len(labs) == 1 else "labs ") + ", ".join(map(str, labs))
        text = f"{what}: {next(iter(messages))} (on {where})"
    else:
        text = f"{what}: " + "; ".join(f"lab {lab}: {e[1]}" for lab, e in bad[:4])
        if len(bad) > 4:
            text += f"; ... ({len(bad)} labs)"
    raise (TypeError if kinds == {"TypeError"} else ValueError)(text)


def _err(message: Optional[str]) -> Optional[tuple]:
    return None if message is None else ("ValueError", message[:600])


def _check_same_codist(codists: list, what: str) -> None:
    if any(c != codists[0] for c in codists[1:]):
        detail = "; ".join(f"lab {k + 1}: {c!r}" for k, c in enumerate(codists))
        raise ValueError(f"{what}: use the same codistributor on every lab; got {detail}")


# --------------------------------------------------------------------------- the class
def _rebuild(local: np.ndarray, codist) -> "codistributed":
    return codistributed._from_local(local, codist)


class codistributed(CodistOps, CodistConstructors):
    """An array distributed over the labs of an ``spmd`` block; each lab stores its part.

    ``codistributed(X)`` distributes ``X``, which must be the same on every lab (each lab
    keeps its own part); ``codistributed(X, codist)`` uses the given codistributor.
    ``codistributed.build(L, codist)`` assembles an array from the local parts ``L``.
    Constructors: ``zeros ones eye rand randn randi inf nan true false colon linspace``.

    >>> with spmd():                                          # doctest: +SKIP
    ...     D = codistributed(np.zeros((80, 1000)))
    ...     L = getLocalPart(D)          # 80 x 250 on each of 4 labs
    """

    __array_priority__ = 20.0

    # ---- creation ---------------------------------------------------------------------
    def __init__(self, X: Any, codist=None, *, noCommunication: bool = False):
        what = "codistributed(X)"
        _check_codist_arg(codist, what)
        if isinstance(X, codistributed):
            source = redistribute(X, codist) if codist is not None else X.copy()
            self._local, self._codist = source._local, source._codist
            return
        lab, n = _here()
        X = np.asarray(X)
        error = _check_dtype(X.dtype)
        target = None
        if error is None:
            try:
                target = _complete(codist, X.shape, n)
            except (ValueError, TypeError) as exc:
                error = str(exc)
        if not noCommunication and n > 1:
            infos = _allgather_small((X.shape, X.dtype.str, _err(error), target), what)
            _raise_combined([i[2] for i in infos], what)
            shapes = {(i[0], i[1]) for i in infos}
            if len(shapes) > 1:
                detail = ", ".join(f"lab {k + 1}: {i[0]} {np.dtype(i[1])}" for k, i in enumerate(infos))
                raise ValueError(f"{what}: X must be the same array on every lab (replicated), "
                                 f"but its size or dtype differs: {detail}")
            _check_same_codist([i[3] for i in infos], what)
        elif error is not None:
            raise ValueError(f"{what}: {error}")
        part = np.ascontiguousarray(_take(X, target.localSelection(lab, n)))
        self._local = part.copy() if np.may_share_memory(part, X) else part
        self._codist = target

    @classmethod
    def _from_local(cls, local: np.ndarray, codist) -> "codistributed":
        """Wrap a local part and a complete codistributor; no checks, no communication."""
        self = object.__new__(cls)
        self._local = local
        self._codist = codist
        return self

    _new = _from_local

    def __reduce_ex__(self, protocol):
        # A contiguous local part travels out of band (pickle 5): no extra copy.
        return (_rebuild, (np.ascontiguousarray(self._local), self._codist))

    @classmethod
    def build(cls, L: Any, codist=None, *, noCommunication: bool = False) -> "codistributed":
        """Assemble a codistributed array from each lab's local part ``L``.

        ``codist`` should be complete (GlobalSize set); otherwise the global size is
        inferred from the local parts (1-D: along ``Dimension``, default the last one;
        2dbc: from the grid). Local sizes and dtypes are checked across labs with one
        collective; a mismatch raises the same ``ValueError`` on every lab.
        """
        what = "codistributed.build"
        _check_codist_arg(codist, what)
        lab, n = _here()
        L = np.asarray(L)
        error = _check_dtype(L.dtype)
        if noCommunication:
            infos = [(L.shape, L.dtype.str, None)] * n
            if error is not None:
                raise ValueError(f"{what}: {error}")
        else:
            infos = _allgather_small((L.shape, L.dtype.str, _err(error), codist), what)
            _raise_combined([i[2] for i in infos], what)
            _check_same_codist([i[3] for i in infos], what)
        shapes = [tuple(i[0]) for i in infos]
        dtypes = [np.dtype(i[1]) for i in infos]
        if len(set(dtypes)) > 1:
            detail = ", ".join(f"lab {k + 1}: {d}" for k, d in enumerate(dtypes))
            raise ValueError(f"{what}: the local parts must have the same dtype on every lab; got {detail}")
        if len({len(s) for s in shapes}) > 1:
            detail = ", ".join(f"lab {k + 1}: {s}" for k, s in enumerate(shapes))
            raise ValueError(f"{what}: the local parts must have the same number of dimensions "
                             f"on every lab; got {detail}")
        if codist is None:
            codist = codistributor1d(len(shapes[0]) if shapes[0] else None)
        if codist.GlobalSize is None:
            gsize = _infer_gsize(codist, shapes, n, what)
            codist = _complete(codist, gsize, n)
        else:
            codist = _complete(codist, codist.GlobalSize, n)
        bad = [(k, shapes[k - 1], codist.localShape(k, n)) for k in range(1, n + 1)
               if shapes[k - 1] != codist.localShape(k, n)]
        if bad:
            detail = "; ".join(f"lab {k} has {got}, expected {want}" for k, got, want in bad[:6])
            if len(bad) > 6:
                detail += f"; ... ({len(bad)} labs)"
            raise ValueError(f"{what}: the local part sizes do not match the codistributor "
                             f"{codist!r}: {detail}")
        return cls._from_local(L, codist)

    # (the constructors from sizes, zeros ... linspace, come from CodistConstructors)

    # ---- properties ----------------------------------------------------------------------
    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self._codist.GlobalSize)

    @property
    def dtype(self) -> np.dtype:
        return self._local.dtype

    @property
    def ndim(self) -> int:
        return len(self._codist.GlobalSize)

    @property
    def size(self) -> int:
        """The number of elements (numpy's meaning)."""
        return math.prod(self._codist.GlobalSize)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def astype(self, dtype, copy: bool = True) -> "codistributed":
        """The same array converted to ``dtype`` (each lab converts its own part)."""
        return type(self)._from_local(self._local.astype(dtype, copy=copy), self._codist)

    def copy(self) -> "codistributed":
        return type(self)._from_local(self._local.copy(), self._codist)

    def __copy__(self) -> "codistributed":
        return self.copy()

    def __deepcopy__(self, memo) -> "codistributed":
        return self.copy()

    # ---- display -------------------------------------------------------------------------
    def _bound_name(self) -> str:
        """The name this array is bound to where it is shown (the user's frame, else the
        running block's names); ``ans`` when it has none."""
        import os
        import sys

        package = os.path.dirname(os.path.abspath(__file__))
        frame = sys._getframe(1)
        while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
            frame = frame.f_back
        spaces = [frame.f_locals, frame.f_globals] if frame is not None else []
        if runtime.state.namespace is not None:
            spaces.append(runtime.state.namespace)
        for space in spaces:
            for key, value in list(space.items()):
                if value is self and not key.startswith("_"):
                    return key
        return "ans"

    def _describe(self, name: str | None = None) -> str:
        name = self._bound_name() if name is None else name
        lab = runtime.state.index if runtime.state.size == _codist_numlabs(self._codist) else 1
        return self._codist.describe_slice(lab, _codist_numlabs(self._codist), name)

    def __repr__(self) -> str:
        local = self._local
        lines = [self._describe(),
                 f"  local part: shape {local.shape}, dtype {local.dtype}",
                 f"  global: shape {self.shape}, {self._codist!r}"]
        if 0 < local.size <= 64:
            lines.append("  " + np.array2string(local, separator=", ").replace("\n", "\n  "))
        return "\n".join(lines)

    __str__ = __repr__

    def _spmdlab_summary(self) -> tuple:
        """What the client learns about this value without fetching it."""
        return ("codist", self.shape, str(self.dtype), repr(self._codist), self._codist)


def _infer_gsize(codist, shapes: list, n: int, what: str) -> Tuple[int, ...]:
    """The global size implied by the local parts' shapes for an incomplete codistributor."""
    ndim = len(shapes[0])
    if isinstance(codist, codistributor1d):
        dim = codist.Dimension
        if dim is None:
            pending = codist._pending_axis
            dim = (pending % ndim + 1) if (pending is not None and ndim) else ndim
        if ndim == 0 or dim > ndim:
            raise ValueError(f"{what}: cannot distribute {ndim}-D local parts along dimension {dim}")
        others = {s[:dim - 1] + s[dim:] for s in shapes}
        if len(others) > 1:
            detail = ", ".join(f"lab {k + 1}: {s}" for k, s in enumerate(shapes))
            raise ValueError(f"{what}: local parts distributed along dimension {dim} must agree "
                             f"in the other dimensions; got {detail}")
        g = list(shapes[0])
        g[dim - 1] = sum(s[dim - 1] for s in shapes)
        part = codist.Partition
        if part is not None and len(part) == n and part != [s[dim - 1] for s in shapes]:
            pass  # reported below as a size mismatch
        return tuple(g)
    if ndim != 2:
        raise ValueError(f"{what}: codistributor2dbc distributes 2-D arrays; the local parts are {ndim}-D")
    grid = codist.LabGrid or codistributor2dbc.defaultLabGrid(n)
    if grid[0] * grid[1] != n:
        raise ValueError(f"{what}: labgrid {grid} holds {grid[0] * grid[1]} labs but there are {n} labs")
    probe = codistributor2dbc(grid, codist.BlockSize, codist.Orientation, (1, 1))
    # Labs in grid column 0 hold every row once; labs in grid row 0 hold every column once.
    rows = sum(shapes[lab - 1][0] for lab in range(1, n + 1) if probe.gridCoords(lab, n)[1] == 0)
    cols = sum(shapes[lab - 1][1] for lab in range(1, n + 1) if probe.gridCoords(lab, n)[0] == 0)
    return (rows, cols)


# --------------------------------------------------------------------------- functions
def iscodistributed(X: Any) -> bool:
    """True if ``X`` is a codistributed array."""
    return isinstance(X, codistributed)


def getLocalPart(D: codistributed) -> np.ndarray:
    """This lab's part of ``D`` (the stored numpy array itself, not a copy)."""
    return _need(D, "getLocalPart")._local


def getCodistributor(D: Any):
    """The (complete) codistributor of a codistributed (or client distributed) array."""
    codist = getattr(D, "_codist", None)
    if codist is None:
        raise TypeError(f"getCodistributor needs a codistributed array, got {type(D).__name__}")
    return codist


def globalIndices(D: Any, dim: Optional[int] = None, lab: Optional[int] = None, *,
                  axis: Optional[int] = None) -> np.ndarray:
    """0-based global indices along ``dim`` (1-based; or ``axis=``, 0-based) of the
    elements that ``lab`` (default: this lab) stores, as a numpy int64 array.

    ``D`` is a codistributed array or a complete codistributor. For a 1-D
    codistributor ``dim`` defaults to its distribution dimension.

    >>> c = codistributor1d(2, None, (1, 10)).complete((1, 10), 4)
    >>> globalIndices(c, 2, 3)
    array([6, 7])
    """
    if isinstance(D, _CODISTRIBUTORS):
        codist = D
    else:
        codist = getattr(D, "_codist", None)
        if not isinstance(codist, _CODISTRIBUTORS):
            raise TypeError(f"globalIndices needs a codistributed array or a codistributor, "
                            f"got {type(D).__name__}")
    if not codist.isComplete():
        raise ValueError("globalIndices needs a complete codistributor (GlobalSize set); "
                         "use codist.complete(gsize, numlabs) or pass the array")
    n = _codist_numlabs(codist)
    if lab is None:
        lab = runtime.state.index if runtime.state.size == n else None
        if lab is None:
            raise ValueError(f"globalIndices: pass lab= (1..{n}): this block does not run on "
                             f"the {n} labs of the codistributor")
    lab = check_lab(lab, n)
    if dim is None and axis is None and isinstance(codist, codistributor2dbc):
        raise TypeError("globalIndices of a 2dbc layout needs dim (1 = rows, 2 = columns) or axis=")
    return codist.globalIndices(dim, lab, n, axis=axis)


