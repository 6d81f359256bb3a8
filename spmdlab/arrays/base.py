"""The bottom of the array package: the codistributed array's data and its codistributor.

``CodistArray`` holds a lab's local part (``_local``, a numpy array) and a complete
codistributor (``_codist``); ``CodistArray.from_parts`` (public; ``_from_local`` inside
the package) wraps the two without checks or communication. The numpy operations are
mixed in by the layers above (``ops``, ``creation``), and the public class is
``codistributed`` (``array``). Every layer builds its results with ``type(D)._from_local``
from an array it was given, so no layer imports one above it. Also here: the facts about
a codistributor that need no index math (its number of labs, completing it for a shape,
describing it in errors).

Nothing here imports MPI: at the client arrays behave as on a pool of one lab.
"""
from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from .. import runtime
from .._frames import first_outside
from ..layouts.blocks import codistributorBlocks
from ..layouts.chunks import codistributorChunks
from ..layouts.codistributor import Codistributor, Layout, codistributor1d, codistributor2dbc

__all__ = ["GRID_HOOKS", "on_subgrid_args",
           "NOVALUE", "CODISTRIBUTORS", "MODES", "CodistArray", "here", "numlabs_of", "labs_for", "is_codist",
           "check_codist_arg",
           "complete", "check_dtype", "need", "layout_text", "describe", "is_plain", "parts_of", "check_mode", "Chunks",
           "sparse_error", "is_scipy_sparse", "sparse_package", "register_sparse_loader"]


NOVALUE: Any = np._NoValue  # numpy's "argument not given" marker

CODISTRIBUTORS = (codistributor1d, codistributor2dbc, codistributorBlocks, codistributorChunks)
# How overlapping copies of an element make its value (CuPy's modes): equal copies, or
# partial values combined by a sum, maximum, minimum or product.
MODES = ("replica", "sum", "max", "min", "prod")

A = TypeVar("A", bound="CodistArray")

# Arrays on a process grid of some labs (``subgrid``, a layer above, fills it in):
# ``distribute``, ``redistribute``, ``run`` (an operation on sub-grid operands) and
# ``on_some_labs(codist, numlabs)``.
GRID_HOOKS: dict[str, Callable] = {}


def on_subgrid_args(args: tuple, kwargs: dict) -> bool:
    """True when an argument (or one inside a list/tuple argument) lives on a sub-grid."""
    for x in (*args, *kwargs.values()):
        if getattr(type(x), "_spmdlab_subgrid", False) or \
                (type(x) in (list, tuple) and any(getattr(type(v), "_spmdlab_subgrid", False) for v in x)):
            return True
    return False


class Chunks(list):
    """A lab's part of an array in a chunked layout (``isChunked``): the list of its
    arrays in the layout's order, which also knows the array's dtype (a lab may hold none)."""

    def __init__(self, arrays: Any = (), dtype: Any = None) -> None:
        super().__init__(arrays)
        self.dtype = np.dtype(dtype) if dtype is not None else (self[0].dtype if self else np.dtype(float))

    def __repr__(self) -> str:
        return f"Chunks({list.__repr__(self)}, dtype={self.dtype})"


def here() -> tuple[int, int]:
    """``(labindex, numlabs)`` of the running block; ``(1, 1)`` at the client."""
    return runtime.state.index, runtime.state.size


def numlabs_of(c: Layout) -> int:
    """The number of labs a complete codistributor is laid out for."""
    n = c.NumLabs
    if n is None:
        raise TypeError(f"{c!r} is not complete: it has no number of labs")
    return n


def labs_for(c: Layout, what: str) -> tuple[int, int]:
    """``(labindex, numlabs)``, checking that the complete codistributor ``c`` is laid out
    for the running block's labs (one clear error, the same on every lab, if not)."""
    lab, n = here()
    m = numlabs_of(c)
    if m != n:
        raise ValueError(f"{what}: the array is distributed over {m} labs but this block runs on {n}")
    return lab, n


def is_codist(x: Any) -> bool:
    """True for a codistributed array (not for a sparse one, nor a replicated value)."""
    return isinstance(x, CodistArray)


def is_plain(c: Any) -> bool:
    """True for MATLAB's two layouts without halos: one array per lab, every element
    stored once. The operations of the layers below work on these; the others (halos,
    blocks, chunk maps) reach them through ``reshard`` and ``adapt`` (docs/design.md §8, §12)."""
    return isinstance(c, codistributor2dbc) or (isinstance(c, codistributor1d) and not c.Halo)


def parts_of(D: CodistArray) -> list:
    """The arrays a lab stores for ``D``: its local part, or the list of its chunks."""
    return D._local if isinstance(D._local, list) else [D._local]


def check_mode(mode: Any, what: str) -> str:
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"{what}: mode must be one of {', '.join(repr(m) for m in MODES)}; got {mode!r}")
    return mode


def check_codist_arg(codist: Any, what: str) -> None:
    if codist is not None and not isinstance(codist, CODISTRIBUTORS):
        raise TypeError(f"{what}: the distribution scheme must be a codistributor1d, "
                        f"codistributor2dbc, codistributorBlocks or codistributorChunks, "
                        f"got {type(codist).__name__}")


def complete(codist: Codistributor | None, shape: tuple[int, ...], n: int) -> Codistributor:
    """``codist`` (or the default codistributor1d()) completed for ``shape`` on n labs."""
    if codist is None:
        codist = codistributor1d()
    grid = getattr(codist, "Grid", None)
    if grid is not None and not grid.is_full(n):
        raise ValueError(f"this constructor makes arrays of all {n} labs, and the layout is on {grid!r}: use "
                         "codistributed(X, codist) (X on every lab), or redistribute(D, codist)")
    if codist.isComplete() and codist.GlobalSize == tuple(shape) and numlabs_of(codist) == n:
        return codist
    if codist.isComplete() and codist.GlobalSize == tuple(shape):
        if isinstance(codist, codistributor1d):
            raise ValueError(f"the codistributor's partition {codist.Partition} is for "
                             f"{codist.NumLabs} labs but there are {n} labs")
        if isinstance(codist, codistributor2dbc):
            raise ValueError(f"the codistributor's lab grid {codist.LabGrid} holds "
                             f"{numlabs_of(codist)} labs but there are {n} labs")
        raise ValueError(f"the codistributor is laid out for {numlabs_of(codist)} labs "
                         f"but there are {n} labs")
    return codist.complete(tuple(shape), n)


def check_dtype(dtype: np.dtype) -> str | None:
    """Why arrays of ``dtype`` cannot be codistributed, or None."""
    if dtype.hasobject:
        return (f"arrays of dtype {dtype} cannot be codistributed: elements must be "
                "plain data (numbers, bools, fixed-width strings), not Python objects")
    return None


def is_scipy_sparse(x: Any) -> bool:
    """True for a scipy.sparse matrix or array (without importing scipy)."""
    sparse = sys.modules.get("scipy.sparse")  # not imported: x cannot be one
    return sparse is not None and bool(sparse.issparse(x))


_SPARSE_LOADER: list[Callable[[], Any]] = []  # spmdlab.arrays registers it (it imports arrays.sparse)


def register_sparse_loader(load: Callable[[], Any]) -> None:
    """How ``sparse_package`` loads the sparse package: registered by ``spmdlab.arrays``,
    a layer above every module that accepts scipy.sparse input."""
    _SPARSE_LOADER[:] = [load]


def sparse_package() -> Any:
    """The sparse matrix package (``arrays/sparse``), loaded on first use (it imports
    scipy) by the loader ``spmdlab.arrays`` registers."""
    if not _SPARSE_LOADER:
        raise RuntimeError("spmdlab.arrays registers the sparse package's loader: import spmdlab.arrays")
    return _SPARSE_LOADER[0]()


def sparse_error(x: Any) -> str | None:
    """Why ``x``, a scipy.sparse matrix, cannot be a part in a chunked or haloed layout; else None."""
    if not is_scipy_sparse(x):
        return None
    return ("scipy.sparse local parts are distributed by rows or columns only (codistributor1d(1) or "
            "codistributor1d(2), no halos); use one of those, or pass S.toarray() for a dense array")


def layout_text(codist: Codistributor) -> str:
    """A layout as error messages name it."""
    if isinstance(codist, codistributor1d):
        halo = f", Halo={codist.Halo}" if codist.Halo else ""
        return f"1d layout (Dimension={codist.Dimension}, Partition={codist.Partition}{halo})"
    if not isinstance(codist, codistributor2dbc):
        return f"{codist!r}"
    return (f"2dbc layout (LabGrid={codist.LabGrid}, BlockSize={codist.BlockSize}, "
            f"Orientation={codist.Orientation!r})")


def describe(x: Any) -> str:
    """An operand as error messages name it."""
    if isinstance(x, CodistArray):
        return f"codistributed {x.shape} {x.dtype} with {layout_text(x._codist)}"
    if isinstance(x, np.ndarray):
        return f"replicated array {x.shape} {x.dtype}"
    return f"{type(x).__name__}"


def need(D: Any, what: str) -> CodistArray:
    if not isinstance(D, CodistArray):
        raise TypeError(f"{what} needs a codistributed array, got {type(D).__name__}")
    return D


class CodistArray:
    """A lab's part of a distributed array and the layout of the whole; the data of
    ``codistributed`` (whose operations come from the mixins of the layers above)."""

    _local: Any  # np.ndarray, or a list of them for chunked layouts (``isChunked``)
    _codist: Codistributor
    _mode: str = "replica"

    @classmethod
    def from_parts(cls: type[A], local: Any, codist: Codistributor, mode: str = "replica") -> A:
        """The array whose part on this lab is ``local`` (a list of arrays, ``Chunks``, for
        a chunked layout), laid out by the complete codistributor ``codist``: wrapped as
        given, with no checks and no communication, so every lab must pass its own correct
        part. For parts of unknown shape use ``build(L, codist, 'noCommunication')``
        (MATLAB's), which checks this lab's part against ``codist``, or ``build(L, codist)``,
        which also checks the parts across the labs."""
        self = object.__new__(cls)
        self._local = local
        self._codist = codist
        if mode != "replica":
            self._mode = mode
        return self

    _from_local = from_parts  # the array package's own spelling (docs/design.md §2b)

    @property
    def mode(self) -> str:
        """How copies of an element held by several labs make its value: ``'replica'``
        (they are equal), or ``'sum'``, ``'max'``, ``'min'``, ``'prod'`` (partial values
        combined). See ``changeMode``."""
        return self._mode

    @property
    def codistributor(self) -> Codistributor:
        """The array's (complete) codistributor, as ``getCodistributor(D)`` and as the
        client's ``distributed`` handle names it."""
        return self._codist

    def _map_local(self: A, fn: Any) -> A:
        """The same layout and mode with ``fn`` applied to every stored array."""
        if isinstance(self._local, Chunks):
            dtype = fn(np.empty(0, dtype=self._local.dtype)).dtype
            local: Any = Chunks([fn(x) for x in self._local], dtype)
        else:
            local = fn(self._local)
        return type(self)._from_local(local, self._codist, self._mode)

    def __reduce_ex__(self, protocol: Any) -> tuple:
        # A contiguous local part travels out of band (pickle 5): no extra copy.
        local = self._local
        local = Chunks([np.ascontiguousarray(x) for x in local], local.dtype) if isinstance(local, Chunks) \
            else np.ascontiguousarray(local)
        return (type(self)._from_local, (local, self._codist, self._mode))

    def _global_size(self) -> tuple[int, ...]:
        size = self._codist.GlobalSize
        assert size is not None  # an array's codistributor is complete
        return tuple(size)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._global_size()

    @property
    def dtype(self) -> np.dtype:
        return self._local.dtype

    @property
    def ndim(self) -> int:
        return len(self._global_size())

    @property
    def size(self) -> int:
        """The number of elements (numpy's meaning)."""
        return math.prod(self._global_size())

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def astype(self: A, dtype: Any, copy: bool = True) -> A:
        """The same array converted to ``dtype`` (each lab converts its own part)."""
        return self._map_local(lambda x: x.astype(dtype, copy=copy))

    def copy(self: A) -> A:
        return self._map_local(np.copy)

    def __copy__(self: A) -> A:
        return self.copy()

    def __deepcopy__(self: A, memo: Any) -> A:
        return self.copy()

    def _bound_name(self) -> str:
        """The name this array is bound to where it is shown (the first frame outside
        spmdlab, else the running block's names); ``ans`` when it has none."""
        frame, _ = first_outside(sys._getframe(1))
        spaces = [frame.f_locals, frame.f_globals] if frame is not None else []
        if runtime.state.namespace is not None:
            spaces.append(runtime.state.namespace)
        for space in spaces:
            for key, value in list(space.items()):
                if value is self and not key.startswith("_"):
                    return key
        return "ans"

    def _describe(self, name: str | None = None) -> str:
        """``This lab stores E[0:3].``: this lab's slice, under the name the array is bound
        to (``_bound_name``) unless ``name`` is given."""
        name = self._bound_name() if name is None else name
        lab = runtime.state.index if runtime.state.size == numlabs_of(self._codist) else 1
        return self._codist.describe_slice(lab, numlabs_of(self._codist), name)

    def _global_line(self) -> str:
        parts = getattr(self._codist, "partitions_text", None)  # Dagger's words for block layouts
        return f"  global: shape {self.shape}{' ' + parts() if parts else ''}, {self._codist!r}"

    def __repr__(self) -> str:
        local = self._local
        if isinstance(local, list):
            shapes = ", ".join(str(x.shape) for x in local) or "none"
            return "\n".join([self._describe(), f"  local part: {len(local)} chunks of shapes {shapes}, "
                              f"dtype {self.dtype}", self._global_line()]
                             + ([f"  mode: {self._mode}"] if self._mode != "replica" else []))
        lines = [self._describe(),
                 f"  local part: shape {local.shape}, dtype {local.dtype}",
                 self._global_line()]
        if self._mode != "replica":
            lines.append(f"  mode: {self._mode}")
        if 0 < local.size <= 64:
            lines.append("  " + np.array2string(local, separator=", ").replace("\n", "\n  "))
        return "\n".join(lines)

    __str__ = __repr__

    def _spmdlab_summary(self) -> tuple:
        """What the client learns about this value without fetching it."""
        return ("codist", self.shape, str(self.dtype), repr(self._codist), self._codist)

