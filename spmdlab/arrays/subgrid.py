"""Process grids on the labs and arrays that live on some labs only (pbdBASE's BLACS
contexts: ``init.grid``, ``blacs_gridinit``, ``blacs_gridexit``, ``redistribute``).

``grid(nprow, npcol, labs)`` makes a :class:`~spmdlab.layouts.grids.Grid` on every lab
of the block. A grid on the whole pool (labs 1..numlabs in order: pbdBASE's contexts 0,
1 and 2, ``grid(context=0|1|2)``) is an ordinary lab grid: arrays on it are ordinary
codistributed arrays. A grid on some labs gets its own communicator (``comm.labs_comm``,
made once, collectively, when the grid is made), and an array laid out on it by
``codistributed(X, codistributor2dbc(g, (mb, nb)))`` is a :class:`SubgridArray`.

The rule for a ``SubgridArray`` (the design of this module):

- a lab of the grid holds its part, an ordinary codistributed array of the grid's labs
  (numbered 1..size inside the grid); a lab outside holds nothing;
- every operation on it (operators, methods, numpy functions, spmdlab's numerics:
  ``lu``/``chol``/``qr``/``mldivide``/``np.linalg.solve``/``@``/``np.fft.*``) runs on the
  grid's communicator (``comm.within``) with the existing algorithms, as if the block ran
  on the grid's labs alone; labs outside take part in nothing and get back a
  ``SubgridArray`` that holds nothing (``D.holds`` is False), whatever the result is on
  the grid (an array, a tuple, a number: they never compute it);
- operands on different grids, or a sub-grid array with an array of the whole pool, are an
  error naming both (on every lab alike): ``redistribute`` one of them first;
- ``redistribute`` between grids (or between a grid and the whole pool) is collective over
  the block's labs, as pbdBASE's (``p?gemr2d`` runs in a context holding both grids): it
  moves the array as the pool-wide ``codistributorBlocks`` that assigns the same blocks to
  the grid's labs (``layouts.grids.pool_blocks``); no lab ever holds the whole array;
- the constructors from sizes (``codistributed.zeros/ones/eye/rand/...`` with a layout on
  the grid) run on the grid's labs alone (``_construct``); labs outside hold nothing but
  know its shape, dtype and layout;
- a grid that reaches the labs without a communicator (made at the client) gets one,
  collectively, the first time a constructor, ``codistributed(X, ...)`` or
  ``redistribute`` that every lab calls uses it (``_adopt``);
- ``gather(D)`` gives the whole array to the grid's labs (None to the others);
- ``gridexit(g)`` frees the communicator; a grid made before an error's recovery (a
  renewal of the communicators) or released is an error to use, never a hang.

The factorizations and SUMMA need square blocks (ScaLAPACK's PDGETRF/PDPOTRF take
``MB_A = NB_A``): on rectangular blocks they first redistribute, inside the grid, to
square ones (``linalg.grid.to_2dbc``, ``matmul``).
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import runtime
from ..checks import is_int
from ..lab import lazy_comm as comm
from ..layouts.blocks import codistributorBlocks
from ..layouts.codistributor import codistributor1d, codistributor2dbc
from ..layouts.grids import CONTEXT_COL, CONTEXT_FULL, CONTEXT_ROW, Grid, make_grid, pool_blocks
from ..layouts.regions import take
from .array import codistributed, getCodistributor, getLocalPart
from .base import GRID_HOOKS, CodistArray, check_dtype, complete, here, is_plain
from .collectives import allgather_objects, check_agree, error_entry, raise_combined
from .transfer import gather, redistribute, redistribute_into

__all__ = ["grid", "rowgrid", "colgrid", "gridexit", "SubgridArray", "on_subgrid", "subgrid_facts", "subgrid_local",
           "grid_layout"]

_made = [2]  # the last context number given (0, 1, 2 are pbdBASE's ready-made ones)


# --------------------------------------------------------------------------- grids
def grid(nprow: int | None = None, npcol: int | None = None, labs: Sequence[int] | None = None, *,
         orientation: str = "row", context: int | None = None) -> Grid:
    """A process grid ``nprow x npcol`` on ``labs`` (default: labs ``1..nprow*npcol``);
    both sizes missing: as near square as the number of labs allows (``nprow <= npcol``,
    as pbdBASE's ``init.grid`` and ScaLAPACK advise). ``context=0|1|2``: pbdBASE's
    ready-made grids of the whole pool (near square, one row ``1 x P``, one column
    ``P x 1``). Call it on every lab of the block (with the same arguments): a grid on
    some labs makes their communicator (collective). Bad arguments raise one error on
    every lab (a grid larger than the pool, a lab outside it or in two places)."""
    what = "grid"
    lab, n = here()
    error, g = None, None
    if context is None and nprow is None and npcol is None and labs is None:
        context = CONTEXT_FULL  # pbdBASE's init.grid(): the default grid is context 0
    if not runtime.state.on_lab:  # at the client: the labs check the pool's size when they use it
        n = max([n, (nprow or 1) * (npcol or 1)] + [int(x) for x in (labs or ()) if is_int(x)])
    try:
        if context is not None:
            if context not in (CONTEXT_FULL, CONTEXT_ROW, CONTEXT_COL) or not (nprow is npcol is labs is None):
                raise ValueError(f"context= takes 0 (the full grid), 1 (one row) or 2 (one column) "
                                 f"and no sizes or labs; got context={context!r}")
            size = {CONTEXT_FULL: (None, None), CONTEXT_ROW: (1, n), CONTEXT_COL: (n, 1)}[context]
            g = make_grid(*size, numlabs=n, orientation=orientation, context=context)
        else:
            g = make_grid(nprow, npcol, labs, numlabs=n, orientation=orientation)
    except (TypeError, ValueError) as exc:
        error = error_entry(str(exc), type(exc).__name__)
    if runtime.state.on_lab and n > 1:
        infos = allgather_objects((error, None if g is None else g.key), what)
        raise_combined([i[0] for i in infos], what)
        if len({i[1] for i in infos}) > 1:
            detail = "; ".join(f"lab {k + 1}: {i[1][0]}x{i[1][1]} on labs {list(i[1][2])}"
                               for k, i in enumerate(infos))
            raise ValueError(f"{what}: make the same grid on every lab; got {detail}")
    elif error is not None:
        raise (TypeError if error[0] == "TypeError" else ValueError)(f"{what}: {error[1]}")
    assert g is not None
    if g.context is None:
        _made[0] += 1
        g.context = _made[0]
    g.renewal = comm.renewals() if runtime.state.on_lab else 0  # type: ignore[attr-defined]
    if runtime.state.on_lab and n > 1 and not g.is_full(n):
        g.comm = comm.labs_comm(tuple(k - 1 for k in g.labs), what)
    return g


def rowgrid() -> Grid:
    """The pool's labs as one row, ``1 x numlabs`` (pbdBASE's context 1)."""
    return grid(context=CONTEXT_ROW)


def colgrid() -> Grid:
    """The pool's labs as one column, ``numlabs x 1`` (pbdBASE's context 2)."""
    return grid(context=CONTEXT_COL)


def gridexit(g: Grid) -> None:
    """Release grid ``g`` (BLACS' ``blacs_gridexit``): its communicator is freed on its
    labs; arrays on it can no longer be used. Call it on every lab (no communication)."""
    if not isinstance(g, Grid):
        raise TypeError(f"gridexit needs a grid from spmdlab.grid, got {type(g).__name__}")
    if g.comm is not None and runtime.state.on_lab:
        for k in [k for k, c in _adopted.items() if c is g.comm]:
            del _adopted[k]
        comm.free_labs_comm(g.comm)
    g.comm = None
    g.released = True


# communicators of grids that reached the labs without one (made at the client, pickled into
# a block): (grid key, renewal, block size) -> communicator; made once, collectively
_adopted: dict[tuple, Any] = {}


def _adopt(codist: Any, what: str) -> None:
    """Give the grid of ``codist`` a communicator if it came to the labs without one (a
    grid made at the client: ``distributed.zeros(..., codist=codistributor2dbc(g, b))``).
    Called only where every lab of the block is (constructors, distribute, redistribute),
    so making it is a collective they all reach; the same grid later reuses it."""
    g = getattr(codist, "Grid", None)
    if g is None or not runtime.state.on_lab or hasattr(g, "renewal") or g.released:
        return
    n = here()[1]
    if g.is_full(n) or max(g.labs) > n:
        return
    key = (g.key, comm.renewals(), n)
    if key not in _adopted:
        _adopted[key] = comm.labs_comm(tuple(k - 1 for k in g.labs), what)
    g.comm, g.renewal = _adopted[key], comm.renewals()


def _usable(g: Grid, what: str) -> bool:
    """Check ``g`` can be used now; True if this lab is in it."""
    if g.released:
        raise ValueError(f"{what}: the grid {g!r} was released by gridexit")
    lab, n = here()
    if max(g.labs) > n:
        raise ValueError(f"{what}: the grid {g!r} uses lab {max(g.labs)} but this block runs on {n} labs")
    if not runtime.state.on_lab or g.is_full(n):
        return True
    if getattr(g, "renewal", None) != comm.renewals():
        raise ValueError(f"{what}: the grid {g!r} was made before the labs recovered from an error "
                         "(its communicator is gone): make it again with spmdlab.grid")
    member = g.rank_of(lab) is not None
    if member and g.comm is None:
        raise ValueError(f"{what}: the grid {g!r} has no communicator on lab {lab}: make it with "
                         "spmdlab.grid inside the block, on every lab")
    return member


def _on_some_labs(codist: Any, n: int) -> bool:
    g = getattr(codist, "Grid", None)
    return isinstance(codist, codistributor2dbc) and g is not None and not g.is_full(n)


def _build(local: np.ndarray, codist: Any) -> Any:
    """A codistributed array of this lab's part ``local`` and a complete layout (no checks;
    inside ``comm.within`` for a layout of the grid's labs)."""
    return codistributed.build(local, codist, noCommunication=True)


def _plain(full: codistributor2dbc) -> codistributor2dbc:
    """The same layout on the grid's labs alone, numbered 1..size (no Grid)."""
    return codistributor2dbc(full.LabGrid, full.BlockSizes, full.Orientation, full.GlobalSize)


# --------------------------------------------------------------------------- the array
class SubgridArray:
    """An array on the labs of a grid (see the module docstring): ``inner``, the grid's
    codistributed array, on those labs; nothing elsewhere."""

    _spmdlab_subgrid = True
    __array_priority__ = 30.0
    # the hooks of spmdlab's gather and redistribute for arrays that are not codistributed
    _spmdlab_gather = staticmethod(lambda D, lab=None: _gather(D, lab))
    _spmdlab_gather_to = _spmdlab_gather
    _spmdlab_redistribute = staticmethod(lambda D, codist: _redistribute(D, codist))

    def __init__(self, g: Grid, inner: Any, codist: Any = None, dtype: Any = None) -> None:
        self.grid = g
        self.inner = inner
        # every lab knows the layout and dtype (made by codistributed/redistribute, which give
        # them; the same on every lab): moving it needs no collective to tell the outside labs
        self.known = codist is not None
        self._codist = codist if codist is not None else _public_codist(g, inner)
        self._dtype = np.dtype(dtype) if dtype is not None else (None if inner is None else inner.dtype)

    # ---- facts
    @property
    def holds(self) -> bool:
        """True on the grid's labs (they hold a part), False elsewhere."""
        return self.inner is not None

    @property
    def shape(self) -> tuple[int, ...] | None:
        if self.inner is not None:
            return tuple(self.inner.shape)
        return None if self._codist is None else tuple(self._codist.GlobalSize)

    @property
    def dtype(self) -> np.dtype | None:
        return self._dtype

    @property
    def ndim(self) -> int | None:
        s = self.shape
        return None if s is None else len(s)

    @property
    def codistributor(self) -> Any:
        return self._codist

    @property
    def local(self) -> np.ndarray:
        """This lab's part (an empty array outside the grid)."""
        if self.inner is None:
            return np.empty((0,) * (self.ndim or 2), dtype=self._dtype or float)
        return getLocalPart(self.inner)

    def globalIndices(self, dim: int | None = None, lab: int | None = None, *, axis: int | None = None) -> np.ndarray:
        """``globalIndices(D, dim, lab)``: the indices pool lab ``lab`` (default: this lab)
        stores along ``dim``; empty for a lab outside the grid."""
        lab = here()[0] if lab is None else lab
        rank = self.grid.rank_of(lab)
        if rank is None or self._codist is None:
            return np.empty(0, dtype=np.int64)
        c = self._codist
        if isinstance(c, codistributor2dbc) and c.Grid is not None:
            c = _plain(c)
        return c.globalIndices(dim, rank, self.grid.size, axis=axis)

    def __len__(self) -> int:
        s = self.shape
        if s is None:
            raise TypeError("len() of an array this lab does not hold (it is outside the grid)")
        return s[0]

    def __repr__(self) -> str:
        if self.inner is None:
            return (f"This lab (lab {here()[0]}) is outside {self.grid!r} and holds nothing of this array"
                    + ("" if self.shape is None else f" (global shape {self.shape}, dtype {self._dtype})") + ".")
        with comm.within(self.grid.comm):
            text = repr(self.inner)
        return f"On {self.grid!r} (this lab is lab {self.grid.rank_of(here()[0])} of it):\n{text}"

    __str__ = __repr__

    # ---- operations: run on the grid's communicator
    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        return on_subgrid(func, args, kwargs)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return on_subgrid(getattr(ufunc, method), inputs, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("grid", "inner", "known"):
            raise AttributeError(name)
        found = getattr(codistributed, name, None)
        if found is None:
            raise AttributeError(f"codistributed arrays have no attribute {name!r}")
        if callable(found) and not isinstance(found, property):
            def method(*args: Any, **kwargs: Any) -> Any:
                return on_subgrid(lambda D, *a, **k: getattr(D, name)(*a, **k), (self, *args), kwargs)
            return method
        return on_subgrid(lambda D: getattr(D, name), (self,), {})

    def __getitem__(self, key: Any) -> Any:
        return on_subgrid(operator.getitem, (self, key), {})

    def __setitem__(self, key: Any, value: Any) -> None:
        on_subgrid(operator.setitem, (self, key, value), {})

    def copy(self) -> SubgridArray:
        return on_subgrid(lambda D: D.copy(), (self,), {})

    def __iter__(self) -> Any:
        if self.inner is None:  # its length is unknown here: never index on without end
            raise TypeError("iterating over an array this lab does not hold (it is outside the grid)")
        return iter([self[k] for k in range(len(self))])

    def __neg__(self) -> Any:
        return np.negative(self)

    def __abs__(self) -> Any:
        return np.absolute(self)

    __hash__ = None  # type: ignore[assignment]

    def _spmdlab_summary(self) -> tuple:
        """What the client learns (``client.distributed_grid``): kind ``subgrid``; ``text``
        says whether this lab holds a part; ``layout`` is ``(layout or None when this lab
        does not know it, the grid, the block's number of labs)``."""
        known = self.known or self.inner is not None
        return ("subgrid", self.shape if known else None, str(self._dtype) if known else "unknown",
                "holds" if self.inner is not None else "empty", (self._codist if known else None, self.grid, here()[1]))


def subgrid_facts(D: SubgridArray) -> tuple:
    """``Call`` handler on a lab of the grid: ``(shape, dtype, layout)`` of ``D``."""
    return tuple(D.shape or ()), np.dtype(D.dtype).str, D.codistributor


def subgrid_local(D: Any, key: int) -> np.ndarray:
    """``Call`` handler: this lab's part of the sub-grid array ``D`` (empty outside)."""
    if not isinstance(D, SubgridArray):
        raise ValueError(f"the distributed array's data (key {key}) is gone from this lab")
    return np.ascontiguousarray(D.local)


def grid_layout(codist: Any) -> Any:
    """The layout of a sub-grid array in the grid's own numbering (1..size), as the grid's
    labs store it: a 2dbc layout on a grid loses its Grid; any other layout is already so."""
    return _plain(codist) if isinstance(codist, codistributor2dbc) and codist.Grid is not None else codist


def _operator(fn: Callable, reflected: bool = False) -> Callable:
    if reflected:
        return lambda self, other: fn(other, self)
    return lambda self, other: fn(self, other)


for _name, _fn in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("truediv", np.true_divide),
                   ("floordiv", np.floor_divide), ("mod", np.remainder), ("pow", np.power),
                   ("matmul", np.matmul), ("and", np.logical_and), ("or", np.logical_or)]:
    setattr(SubgridArray, f"__{_name}__", _operator(_fn))
    setattr(SubgridArray, f"__r{_name}__", _operator(_fn, reflected=True))
for _name, _fn in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                   ("gt", np.greater), ("ge", np.greater_equal)]:
    setattr(SubgridArray, f"__{_name}__", _operator(_fn))


def _public_codist(g: Grid, inner: Any) -> Any:
    """The layout as the user sees it: a 2dbc layout on the grid names the grid."""
    if inner is None:
        return None
    c = getCodistributor(inner)
    if isinstance(c, codistributor2dbc) and c.LabGrid == g.LabGrid and c.Orientation == g.orientation:
        return codistributor2dbc(g, c.BlockSizes, None, c.GlobalSize)
    return c


def _subs(x: Any) -> list:
    if isinstance(x, SubgridArray):
        return [x]
    if type(x) in (list, tuple):
        return [v for v in x if isinstance(v, SubgridArray)]
    return []


def _inner(x: Any) -> Any:
    if isinstance(x, SubgridArray):
        return x.inner
    if type(x) in (list, tuple) and any(isinstance(v, SubgridArray) for v in x):
        return type(x)(v.inner if isinstance(v, SubgridArray) else v for v in x)
    return x


def _wrap(g: Grid, r: Any) -> Any:
    if isinstance(r, CodistArray):
        return SubgridArray(g, r)
    if type(r) in (list, tuple):
        return type(r)(_wrap(g, v) for v in r)
    return r


def on_subgrid(fn: Callable, args: Sequence, kwargs: dict) -> Any:
    """``fn(*args, **kwargs)`` with sub-grid arrays among the arguments: on the grid's
    labs, run on their parts inside the grid's communicator (results that are arrays come
    back on the grid); elsewhere nothing runs: an empty-handed array comes back."""
    what = getattr(fn, "__name__", "the operation")
    subs = [s for x in (*args, *kwargs.values()) for s in _subs(x)]
    g = subs[0].grid
    n = here()[1]
    for s in subs[1:]:
        if s.grid != g:
            raise ValueError(f"{what}: the operands live on different grids ({g!r} and {s.grid!r}): "
                             "redistribute one of them to the other's grid first")
    for x in (*args, *kwargs.values()):
        for v in (x if type(x) in (list, tuple) else (x,)):
            if isinstance(v, CodistArray):
                raise ValueError(f"{what}: an array on {g!r} and an array of all {n} labs: redistribute "
                                 "one of them first (redistribute(D, codistributor2dbc(grid, ...)))")
    if not _usable(g, what):
        return SubgridArray(g, None)
    inner_args = tuple(_inner(x) for x in args)
    inner_kwargs = {k: _inner(v) for k, v in kwargs.items()}
    with comm.within(g.comm):
        result = fn(*inner_args, **inner_kwargs)
    return _wrap(g, result)


# --------------------------------------------------------------------------- hooks
def _distribute(X: Any, codist: codistributor2dbc) -> SubgridArray:
    """``codistributed(X, codistributor2dbc(g, ...))`` for a grid on some labs: every lab
    has ``X``; the grid's labs keep their parts, no communication."""
    what = "codistributed(X)"
    lab, n = here()
    X = np.asarray(X)
    bad = check_dtype(X.dtype)
    if bad:
        raise ValueError(f"{what}: {bad}")
    _adopt(codist, what)
    full = codist.complete(X.shape, n)
    g = full.Grid
    if not _usable(g, what):
        return SubgridArray(g, None, full, X.dtype)
    inner = _plain(full)
    part = np.array(take(X, inner.localSelection(g.rank_of(lab), g.size)), copy=True)
    with comm.within(g.comm):
        return SubgridArray(g, _build(part, inner), full)


def _to_pool(D: Any, what: str) -> Any:
    """``D`` (on a grid, or of the whole pool) as a codistributed array of the whole pool,
    outside labs empty: a 2dbc layout of the grid's labs seen pool-wide (``pool_blocks``);
    any other layout first moved, inside the grid, to equal row blocks in rank order (a
    ``codistributorBlocks`` over the grid's labs). Shape, dtype and layout reach the
    outside labs from the grid's first lab (one small collective)."""
    if not isinstance(D, SubgridArray):
        return D
    lab, n = here()
    g = D.grid
    member = _usable(g, what)
    inner = D.inner
    info: tuple | None = None
    if D.known:  # the same on every lab: no collective
        c = D.codistributor
        info = ("2dbc", c.GlobalSize, np.dtype(D.dtype).str, c.BlockSizes, c.LabGrid, c.Orientation)
    elif member:
        c = getCodistributor(inner)
        shape = tuple(inner.shape)
        if isinstance(c, codistributor2dbc):
            info = ("2dbc", shape, inner.dtype.str, c.BlockSizes, c.LabGrid, c.Orientation)
        else:
            b = max(1, -(-shape[0] // g.size)) if shape else 1
            part = [max(0, min(b, shape[0] - k * b)) for k in range(g.size)] if shape else None
            with comm.within(g.comm):
                inner = redistribute(inner, codistributor1d(1, part, shape))
            info = ("rows", shape, inner.dtype.str, b, None, None)
    if not D.known:
        info = allgather_objects(info, what)[g.labs[0] - 1]
    assert info is not None
    kind, shape, dt, bs, labgrid, orient = info
    if kind == "2dbc":
        view = pool_blocks(codistributor2dbc(Grid(labgrid[0], labgrid[1], g.labs, orient), bs, None, shape), n)
    else:
        owners = np.asarray(g.labs, dtype=np.int64).reshape((g.size,) + (1,) * (len(shape) - 1))
        view = codistributorBlocks((bs,) + tuple(max(1, x) for x in shape[1:]), owners, shape).complete(shape, n)
    local = getLocalPart(inner) if member else np.empty(view.localShape(lab, n), dtype=np.dtype(dt))
    return _build(local, view)


def _one_part(c: Any, n: int) -> bool:
    """True for a layout of one array per lab, every element once (MATLAB's two, and the
    pool-wide views of a grid's blocks that ``pool_blocks`` and ``_to_pool`` make)."""
    return is_plain(c) or (isinstance(c, codistributorBlocks) and not c.Halo and not c.isChunked(n))


def _move(D: Any, codist: Any, what: str) -> Any:
    """The pool's ``redistribute(D, codist)`` for layouts of one part per lab: the moves
    ``redistribute`` works out (``redistribute_into``: its staging window on one machine,
    else one ``Alltoallv``) also for a grid's view, which the pool's ``redistribute``
    sends through the general ``reshard`` (packing and unpacking element lists)."""
    lab, n = here()
    target = complete(codist, tuple(D.shape), n)
    source = getCodistributor(D)
    if D.mode != "replica" or not (_one_part(source, n) and _one_part(target, n)):
        return redistribute(D, target)
    check_agree(what, tuple(D.shape), D.dtype, target)  # a target that differs between labs: one error
    new = np.empty(target.localShape(lab, n), dtype=D.dtype)
    redistribute_into(D, target, new, what)
    return _build(new, target)


def _redistribute(D: Any, codist: Any) -> Any:
    """``redistribute(D, codist)`` where ``D`` or ``codist`` is on a grid of some labs:
    collective over the block's labs (both grids' and the others, which move nothing)."""
    what = "redistribute"
    lab, n = here()
    pool = _to_pool(D, what)
    if not _on_some_labs(codist, n):
        return _move(pool, codist, what) if isinstance(D, SubgridArray) else redistribute(pool, codist)
    _adopt(codist, what)
    full = codist.complete(tuple(pool.shape), n)
    member = _usable(full.Grid, what)
    moved = _move(pool, pool_blocks(full, n), what)
    if not member:
        return SubgridArray(full.Grid, None, full, moved.dtype)
    with comm.within(full.Grid.comm):
        return SubgridArray(full.Grid, _build(getLocalPart(moved), _plain(full)), full)


def _gather(D: SubgridArray, lab: int | None = None) -> Any:
    """The whole array on the grid's labs (``lab``: on that lab of the grid only)."""
    if lab is None:
        return on_subgrid(gather, (D,), {}) if _usable(D.grid, "gather") else None
    rank = D.grid.rank_of(lab)
    if rank is None:
        raise ValueError(f"gather(D, {lab}): lab {lab} is not in {D.grid!r}")
    return on_subgrid(gather, (D, rank), {})


def _construct(shape: tuple, dtype: Any, codist: codistributor2dbc, make: Callable) -> SubgridArray:
    """A constructor (``codistributed.zeros/ones/eye/rand/...``) on a grid of some labs:
    the grid's labs run it on the grid's communicator with the layout of their own
    numbering (``make(layout)``: random streams per grid rank); the others hold nothing
    and take part in nothing (shape, dtype and layout are known on every lab)."""
    what = "a codistributed constructor"
    lab, n = here()
    _adopt(codist, what)
    full = codist.complete(tuple(shape), n)
    if not _usable(full.Grid, what):
        return SubgridArray(full.Grid, None, full, dtype)
    with comm.within(full.Grid.comm):
        inner = make(_plain(full))
    return SubgridArray(full.Grid, inner, full)


GRID_HOOKS.update(construct=_construct, distribute=_distribute, redistribute=_redistribute, run=on_subgrid,
                  on_some_labs=_on_some_labs)
