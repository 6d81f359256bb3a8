"""Elementwise operations on codistributed arrays: operators, ufuncs, np.where/clip/....

Operands are aligned to the result's layout (the first codistributed operand with the
result's shape; see the layout rules in ``codist_ops``) and each lab applies the numpy
function to its local parts. An operator whose operand is an unnamed temporary writes
the result into it, as numpy does for ``L * 2 + 1`` (see ``elision``).
"""
from __future__ import annotations

import numbers
import sys
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import elision
from .codist_comm import (_NOVALUE, _cls, _describe, _from_local, _gather, _labs_of, _layout,
                          _local_sel, _redistribute, _take_sel)
from .elision import is_temporary, note_result


def _is_operand(x: Any) -> bool:
    return isinstance(x, (_cls(), np.ndarray, numbers.Number, np.generic, list, tuple))


def _prep(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    return x


def _local_operand(x: Any, codist, G: tuple, lab: int, n: int, what: str) -> Any:
    """The part of operand ``x`` matching this lab's part of the result (layout codist)."""
    CD = _cls()
    if isinstance(x, CD):
        _labs_of(x, what)
        if tuple(x.shape) == G:
            return x._local if x._codist == codist else _redistribute(x, codist)._local
        x = _gather(x)  # a smaller operand that broadcasts: every lab takes it whole
    if isinstance(x, np.ndarray):
        if x.ndim == 0:
            return x
        a = x.reshape((1,) * (len(G) - x.ndim) + x.shape) if x.ndim < len(G) else x
        sel = _local_sel(codist, lab, n)
        sel = tuple(slice(None) if a.shape[e] == 1 and G[e] != 1 else s for e, s in enumerate(sel))
        return _take_sel(a, sel)
    return x


def _elementwise(what: str, fn: Callable, operands: Sequence, out: Optional[tuple] = None):
    """Apply ``fn`` (a numpy function of the local parts) to aligned operands."""
    CD = _cls()
    operands = [_prep(x) for x in operands]
    shapes = [tuple(x.shape) if isinstance(x, CD) else np.shape(x) for x in operands]
    try:
        G = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"{what}: operands could not be broadcast together with shapes "
                         + " ".join(str(s) for s in shapes)) from None
    if out is not None:
        for o in out:
            if tuple(o.shape) != G:
                raise ValueError(f"{what}: the output has shape {o.shape} but the result has "
                                 f"shape {G}")
        base = out[0]
        for o in out[1:]:
            if o._codist != base._codist:
                raise NotImplementedError(f"{what}: outputs with different layouts "
                                          f"({_layout(base._codist)} and {_layout(o._codist)}) "
                                          "are not supported")
    else:
        base = next((x for x in operands if isinstance(x, CD) and tuple(x.shape) == G), None)
        if base is None:
            raise NotImplementedError(
                f"{what}: broadcasting {', '.join(_describe(x) for x in operands)} to the "
                f"shape {G} is not supported for codistributed arrays: one codistributed "
                "operand must have the result's shape")
    lab, n = _labs_of(base, what)
    codist = base._codist
    locs = [_local_operand(x, codist, G, lab, n, what) for x in operands]
    if out is not None:
        fn(*locs, out=tuple(o._local for o in out))
        return out[0] if len(out) == 1 else tuple(out)
    res = fn(*locs)
    if isinstance(res, tuple):
        return tuple(_from_local(np.asarray(r), codist) for r in res)
    return _from_local(np.asarray(res), codist)


def _ufunc_call(ufunc: np.ufunc, inputs: tuple, kwargs: dict):
    CD = _cls()
    what = f"numpy.{ufunc.__name__}"
    out = kwargs.pop("out", None)
    if out is not None:
        out = out if isinstance(out, tuple) else (out,)
        if any(o is None for o in out):
            if all(o is None for o in out):
                out = None
            else:
                raise NotImplementedError(f"{what}: out= must give every output as a codistributed "
                                          "array, not None (inputs: "
                                          + ", ".join(_describe(x) for x in inputs) + ")")
        elif not all(isinstance(o, CD) for o in out):
            raise NotImplementedError(f"{what}: out= must be codistributed arrays, got "
                                      + ", ".join(_describe(o) for o in out) + " for inputs "
                                      + ", ".join(_describe(x) for x in inputs))
    where = kwargs.pop("where", True)
    operands = list(inputs)
    has_where = where is not True
    if has_where:
        operands.append(where)
    nin = len(inputs)

    def fn(*locs, out=None):
        extra = dict(kwargs)
        if has_where:
            extra["where"] = locs[nin]
        if out is not None:
            extra["out"] = out
        return ufunc(*locs[:nin], **extra)

    return _elementwise(what, fn, operands, out)


# --------------------------------------------------------------------------- operators
_ELIDE_BYTES = 256 * 1024  # as numpy: below this an allocation is cheap


_CAN_ELIDE = elision.enabled() and np.lib.NumpyVersion(np.__version__) >= "2.0.0"


elided = 0  # how many operator results were written into a temporary operand (tests read it)


def _big(x: Any) -> bool:
    return _CAN_ELIDE and isinstance(x, _cls()) and x._local.nbytes >= _ELIDE_BYTES


def _dtype_arg(x: Any):
    """What ``ufunc.resolve_dtypes`` needs for an operand (NEP 50: Python scalars weak)."""
    if isinstance(x, (_cls(), np.ndarray, np.generic)):
        return x.dtype
    if type(x) in (int, float, complex):
        return type(x)
    if type(x) is bool:
        return np.dtype(bool)
    return None


def _reusable(target, ufunc: np.ufunc, operands: tuple) -> bool:
    """Can ``target`` (an unnamed temporary operand) take the result of ``ufunc`` on
    ``operands``? Only if it owns its buffer, nothing else refers to that buffer, and
    the result would have its dtype and layout anyway."""
    if ufunc.nout != 1:
        return False
    L = target.__dict__.get("_local")
    if type(L) is not np.ndarray or L.base is not None or not L.flags.writeable \
            or not L.flags.owndata or sys.getrefcount(L) != 3:  # dict, L, getrefcount's argument
        return False
    del L
    dts = [_dtype_arg(x) for x in operands]
    if any(d is None for d in dts):
        return False
    try:
        if ufunc.resolve_dtypes(tuple(dts) + (None,))[-1] != target.dtype:
            return False
    except (TypeError, ValueError):
        return False
    shapes = [tuple(x.shape) if isinstance(x, _cls()) else np.shape(x) for x in operands]
    try:
        G = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return False
    base = next(x for x in operands if isinstance(x, _cls()) and tuple(x.shape) == G) \
        if tuple(target.shape) == G else None
    return base is not None and base._codist == target._codist


def _into(ufunc: np.ufunc, operands: tuple, target):
    global elided
    elided += 1
    return _ufunc_call(ufunc, operands, {"out": (target,)})


# numpy >= 2 computes ``a ** 2`` as ``square(a)``, also for bools (giving int8); before, and
# for ``** -1`` / ``** 0.5`` still, only for floating and complex arrays.
_SQUARE_ANY_DTYPE = (np.ones(1, dtype=bool) ** 2).dtype == np.dtype(np.int8)


def _fast_power(dtype: np.dtype, exponent: Any) -> Optional[np.ufunc]:
    """The unary ufunc numpy's ``**`` operator uses for ``array ** exponent``, if any."""
    inexact = dtype.kind in "fc"
    if type(exponent) is int:
        if exponent == 2 and (inexact or (_SQUARE_ANY_DTYPE and dtype.kind in "biu")):
            return np.square
        if exponent == -1 and inexact:
            return np.reciprocal
    elif type(exponent) is float and exponent == 0.5 and inexact:
        return np.sqrt
    return None


def _binary(ufunc: np.ufunc, reflected: bool = False):
    # is_temporary must be called from `op` itself, before anything else refers to
    # the operand (it counts references and reads the caller's frame).
    def op(self, other, modulo=None):
        if modulo is not None:
            raise NotImplementedError(f"pow(D, e, modulo) is not supported for codistributed arrays "
                                      f"({_describe(self)})")
        if not _is_operand(other):
            return NotImplemented
        if _big(self) and is_temporary(self, "right" if reflected else "left"):
            temporary = self
        elif _big(other) and is_temporary(other, "left" if reflected else "right"):
            temporary = other
        else:
            temporary = None
        operands = (other, self) if reflected else (self, other)  # only now: it adds references
        fn = ufunc
        if ufunc is np.power and not reflected:
            fast = _fast_power(self.dtype, other)
            if fast is not None:
                fn, operands = fast, (self,)
        if temporary is not None and _reusable(temporary, fn, operands):
            result = _into(fn, operands, temporary)
            note_result(result)
            return result
        result = _ufunc_call(fn, operands, {})
        if fn.nout == 1:
            note_result(result)
        return result

    op.__name__ = f"__{'r' if reflected else ''}{ufunc.__name__}__"
    return op


def _unary(ufunc: np.ufunc):
    def op(self):
        if _big(self) and is_temporary(self, "unary") and _reusable(self, ufunc, (self,)):
            result = _into(ufunc, (self,), self)
        else:
            result = _ufunc_call(ufunc, (self,), {})
        note_result(result)
        return result

    op.__name__ = f"__{ufunc.__name__}__"
    return op


def _inplace(ufunc: np.ufunc):
    def op(self, other):
        if not _is_operand(other):
            return NotImplemented
        fast = _fast_power(self.dtype, other) if ufunc is np.power else None
        if fast is not None:
            _ufunc_call(fast, (self,), {"out": (self,)})
        else:
            _ufunc_call(ufunc, (self, other), {"out": (self,)})
        return self

    return op


# --------------------------------------------------------------------------- elementwise numpy functions
def _np_where(condition, x=_NOVALUE, y=_NOVALUE):
    if x is _NOVALUE or y is _NOVALUE:
        raise NotImplementedError("numpy.where with one argument (indices of nonzero elements) "
                                  f"is not supported for codistributed arrays ({_describe(condition)}); "
                                  "use where(c, x, y) or nonzero(c)")
    return _elementwise("numpy.where", np.where, [condition, x, y])


def _np_clip(a, a_min=_NOVALUE, a_max=_NOVALUE, out=None, *, min=_NOVALUE, max=_NOVALUE, **kwargs):
    lo = a_min if a_min is not _NOVALUE else (min if min is not _NOVALUE else None)
    hi = a_max if a_max is not _NOVALUE else (max if max is not _NOVALUE else None)
    ops = [a]
    if lo is not None:
        ops.append(lo)
    if hi is not None:
        ops.append(hi)
    has_lo, has_hi = lo is not None, hi is not None

    def fn(x, *bounds, out=None):
        it = iter(bounds)
        l = next(it) if has_lo else None
        h = next(it) if has_hi else None
        if out is not None:
            return np.clip(x, l, h, out=out[0], **kwargs)
        return np.clip(x, l, h, **kwargs)

    if out is not None:
        if not isinstance(out, _cls()):
            raise NotImplementedError(f"numpy.clip: out= must be a codistributed array, got "
                                      f"{_describe(out)} for {_describe(a)}")
        return _elementwise("numpy.clip", fn, ops, (out,))
    return _elementwise("numpy.clip", fn, ops)


def _np_round(a, decimals=0, out=None):
    if out is not None:
        raise NotImplementedError(f"numpy.round: out= is not supported for codistributed arrays "
                                  f"({_describe(a)})")
    return _elementwise("numpy.round", lambda x: np.round(x, decimals), [a])


def _np_isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return _elementwise("numpy.isclose",
                        lambda x, y: np.isclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan), [a, b])


def _np_allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(_np_isclose(a, b, rtol, atol, equal_nan).all())


def _np_array_equal(a1, a2, equal_nan=False):
    if tuple(np.shape(a1) if not isinstance(a1, _cls()) else a1.shape) != \
            tuple(np.shape(a2) if not isinstance(a2, _cls()) else a2.shape):
        return False
    if equal_nan:
        eq = _elementwise("numpy.array_equal",
                          lambda x, y: (x == y) | (np.isnan(x) & np.isnan(y)), [a1, a2])
    else:
        eq = _elementwise("numpy.array_equal", np.equal, [a1, a2])
    return bool(eq.all())
