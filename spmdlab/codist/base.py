"""The bottom of the array package: the codistributed array's data and its codistributor.

``CodistArray`` holds a lab's local part (``_local``, a numpy array) and a complete
codistributor (``_codist``); ``CodistArray._from_local`` wraps the two without checks or
communication. The numpy operations are mixed in by the layers above (``ops``,
``creation``), and the public class is ``codistributed`` (``array``). Every layer builds
its results with ``type(D)._from_local`` from an array it was given, so no layer imports
one above it. Also here: the facts about a codistributor that need no index math (its
number of labs, completing it for a shape, describing it in errors).

Nothing here imports MPI: at the client arrays behave as on a pool of one lab.
"""
from __future__ import annotations

import math
import os
import sys
from types import FrameType
from typing import Any, Optional, Tuple, Type, TypeVar

import numpy as np

from .. import runtime
from ..codistributor import Codistributor, codistributor1d, codistributor2dbc

__all__ = ["NOVALUE", "CODISTRIBUTORS", "CodistArray", "here", "numlabs_of", "check_codist_arg",
           "complete", "check_dtype", "need", "layout_text", "describe"]

_LIBRARY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # spmdlab/

NOVALUE: Any = np._NoValue  # numpy's "argument not given" marker

CODISTRIBUTORS = (codistributor1d, codistributor2dbc)

A = TypeVar("A", bound="CodistArray")


def here() -> Tuple[int, int]:
    """``(labindex, numlabs)`` of the running block; ``(1, 1)`` at the client."""
    return runtime.state.index, runtime.state.size


def numlabs_of(c: Codistributor) -> int:
    """The number of labs a complete codistributor is laid out for."""
    if isinstance(c, codistributor1d):
        return len(c.Partition)
    grid = c.LabGrid
    return grid[0] * grid[1]


def check_codist_arg(codist: Any, what: str) -> None:
    if codist is not None and not isinstance(codist, CODISTRIBUTORS):
        raise TypeError(f"{what}: the distribution scheme must be a codistributor1d or "
                        f"codistributor2dbc, got {type(codist).__name__}")


def complete(codist: Optional[Codistributor], shape: Tuple[int, ...], n: int) -> Codistributor:
    """``codist`` (or the default codistributor1d()) completed for ``shape`` on n labs."""
    if codist is None:
        codist = codistributor1d()
    if codist.isComplete() and codist.GlobalSize == tuple(shape) and numlabs_of(codist) == n:
        return codist
    if codist.isComplete() and codist.GlobalSize == tuple(shape):
        if isinstance(codist, codistributor1d):
            raise ValueError(f"the codistributor's partition {codist.Partition} is for "
                             f"{len(codist.Partition)} labs but there are {n} labs")
        raise ValueError(f"the codistributor's lab grid {codist.LabGrid} holds "
                         f"{numlabs_of(codist)} labs but there are {n} labs")
    return codist.complete(tuple(shape), n)


def check_dtype(dtype: np.dtype) -> Optional[str]:
    """Why arrays of ``dtype`` cannot be codistributed, or None."""
    if dtype.hasobject:
        return (f"arrays of dtype {dtype} cannot be codistributed: elements must be "
                "plain data (numbers, bools, fixed-width strings), not Python objects")
    return None


def layout_text(codist: Codistributor) -> str:
    """A layout as error messages name it."""
    if isinstance(codist, codistributor1d):
        return f"1d layout (Dimension={codist.Dimension}, Partition={codist.Partition})"
    return (f"2dbc layout (LabGrid={codist.LabGrid}, BlockSize={codist.BlockSize}, "
            f"Orientation={codist.Orientation!r})")


def describe(x: Any) -> str:
    """An operand as error messages name it."""
    if isinstance(x, CodistArray):
        return f"codistributed {x.shape} {x.dtype} with {layout_text(x._codist)}"
    if isinstance(x, np.ndarray):
        return f"replicated array {x.shape} {x.dtype}"
    return f"{type(x).__name__}"


def need(D: Any, what: str) -> "CodistArray":
    if not isinstance(D, CodistArray):
        raise TypeError(f"{what} needs a codistributed array, got {type(D).__name__}")
    return D


class CodistArray:
    """A lab's part of a distributed array and the layout of the whole; the data of
    ``codistributed`` (whose operations come from the mixins of the layers above)."""

    _local: np.ndarray
    _codist: Codistributor

    @classmethod
    def _from_local(cls: Type[A], local: np.ndarray, codist: Codistributor) -> A:
        """Wrap a local part and a complete codistributor; no checks, no communication."""
        self = object.__new__(cls)
        self._local = local
        self._codist = codist
        return self

    def __reduce_ex__(self, protocol: Any) -> tuple:
        # A contiguous local part travels out of band (pickle 5): no extra copy.
        return (type(self)._from_local, (np.ascontiguousarray(self._local), self._codist))

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

    def astype(self: A, dtype: Any, copy: bool = True) -> A:
        """The same array converted to ``dtype`` (each lab converts its own part)."""
        return type(self)._from_local(self._local.astype(dtype, copy=copy), self._codist)

    def copy(self: A) -> A:
        return type(self)._from_local(self._local.copy(), self._codist)

    def __copy__(self: A) -> A:
        return self.copy()

    def __deepcopy__(self: A, memo: Any) -> A:
        return self.copy()

    def _bound_name(self) -> str:
        """The name this array is bound to where it is shown (the first frame outside
        spmdlab, else the running block's names); ``ans`` when it has none."""
        frame: FrameType | None = sys._getframe(1)
        while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_LIBRARY_DIR + os.sep):
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
        """``This lab stores E[0:3].``: this lab's slice, under the name the array is bound
        to (``_bound_name``) unless ``name`` is given."""
        name = self._bound_name() if name is None else name
        lab = runtime.state.index if runtime.state.size == numlabs_of(self._codist) else 1
        return self._codist.describe_slice(lab, numlabs_of(self._codist), name)

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

