"""How the operations reach arrays in the extended layouts (halos, Dagger's blocks,
CuPy's chunk maps, combining modes).

The operation layers below work on MATLAB's layouts (``base.is_plain``) in replica mode.
``ops`` wraps each operator and method with one of these adapters:

- ``on_plain``: arrays in other layouts or modes are first made plain (``reshard.plain``:
  a view of the interior for a 1d halo layout, else one move to the default layout), so
  reductions count every element once and no operation sees a halo or a partial value;
- ``on_elementwise``: when every array operand has the same layout, in replica mode, and
  the others are scalars, the numpy function runs on each stored array as it is (halo
  cells and overlaps included, so they stay valid) and the result keeps the layout;
  otherwise the operation runs on the plain arrays and the result is moved back to the
  first operand's layout;
- ``on_inplace``: ``D += x``, ``D[i] = v``, ``D.fill(v)``: the same, then the new values
  are written into ``D``'s own arrays, every copy of an element included.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .base import GRID_HOOKS, Chunks, CodistArray, is_plain, on_subgrid_args, parts_of
from .reshard import plain, reshard

__all__ = ["needs_adapting", "plain_args", "on_plain", "chunkwise", "adapted_call", "on_elementwise", "assign",
           "assign_out", "check_out_cast", "check_ufunc_out", "on_inplace", "restore"]


def needs_adapting(x: Any) -> bool:
    """True for a codistributed array the plain operations cannot take as it is."""
    return isinstance(x, CodistArray) and (x._mode != "replica" or not is_plain(x._codist))


def _any_adapting(args: Any, kwargs: dict) -> bool:
    for x in (*args, *kwargs.values()):
        if needs_adapting(x) or (type(x) in (list, tuple) and any(needs_adapting(v) for v in x)):
            return True
    return False


def _plain_value(x: Any) -> Any:
    if needs_adapting(x):
        return plain(x)
    if type(x) in (list, tuple) and any(needs_adapting(v) for v in x):
        return type(x)(plain(v) if needs_adapting(v) else v for v in x)
    return x


def plain_args(args: tuple, kwargs: dict) -> tuple:
    """``args`` and ``kwargs`` with every array that needs it made plain (also inside a
    list or tuple argument, as ``np.concatenate([D, E])`` passes them)."""
    return tuple(_plain_value(x) for x in args), {k: _plain_value(v) for k, v in kwargs.items()}


def on_plain(method: Callable) -> Callable:
    """``method`` run on plain arrays."""
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        if GRID_HOOKS and on_subgrid_args(args, kwargs):  # operands on a sub-grid: run on its labs
            return GRID_HOOKS["run"](call, args, kwargs)
        if _any_adapting(args, kwargs):
            args, kwargs = plain_args(args, kwargs)
        return method(*args, **kwargs)

    return call


def chunkwise(fn: Callable, operands: tuple, kwargs: dict | None = None) -> Any:
    """``fn`` applied to each stored array when every codistributed operand has the same
    non-plain layout in replica mode and the rest are scalars; else None."""
    arrays = [x for x in operands if isinstance(x, CodistArray)]
    if not arrays:
        return None
    first = arrays[0]
    c = first._codist
    if is_plain(c) or any(x._codist != c or x._mode != "replica" for x in arrays):
        return None
    if any(not isinstance(x, CodistArray) and np.ndim(x) != 0 for x in operands):
        return None
    kwargs = kwargs or {}
    outs = []
    for i in range(len(parts_of(first))):
        r = fn(*[parts_of(x)[i] if isinstance(x, CodistArray) else x for x in operands], **kwargs)
        if not isinstance(r, np.ndarray):
            return None
        outs.append(r)
    if isinstance(first._local, Chunks):
        probe = fn(*[np.empty(0, x.dtype) if isinstance(x, CodistArray) else x for x in operands], **kwargs)
        if not isinstance(probe, np.ndarray):
            return None
        return type(first)._from_local(Chunks(outs, probe.dtype), c)
    return type(first)._from_local(outs[0], c)


def restore(result: Any, like: CodistArray) -> Any:
    """An elementwise result computed on plain arrays, moved back to ``like``'s layout
    (when it has ``like``'s shape)."""
    if isinstance(result, CodistArray) and tuple(result.shape) == tuple(like.shape) \
            and result._codist != like._codist:
        return reshard(result, like._codist)
    if isinstance(result, tuple):
        return tuple(restore(r, like) for r in result)
    return result


def adapted_call(fn: Callable | None, operands: tuple, kwargs: dict, compute: Callable) -> Any:
    """An elementwise operation with operands that need adapting: chunk by chunk when
    ``chunkwise`` can (``fn`` the numpy function; None: never), else
    ``compute(plain operands, plain kwargs)`` moved back to the first adapted operand's
    layout."""
    done = chunkwise(fn, operands, kwargs) if fn is not None and not kwargs.get("out") else None
    if done is not None:
        return done
    like = next(x for x in operands if needs_adapting(x))
    pargs, pkwargs = plain_args(operands, kwargs)
    return restore(compute(pargs, pkwargs), like)


def on_elementwise(fn: Callable | None, method: Callable, reflected: bool = False) -> Callable:
    """An elementwise ``method`` (numpy function ``fn``, or None when it has none that
    ``chunkwise`` could apply) for arrays in any layout."""
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not _any_adapting(args, kwargs):
            return method(*args, **kwargs)
        operands = args[::-1] if reflected else args
        return adapted_call(fn, operands, kwargs, lambda a, k: method(*(a[::-1] if reflected else a), **k))

    return call


def assign(D: CodistArray, value: CodistArray) -> None:
    """Write the values of ``value`` (same shape, any layout) into ``D``'s own arrays,
    every copy of each element included; ``D`` is then in replica mode."""
    if value._codist != D._codist or value._mode != "replica":
        value = reshard(value, D._codist, "assignment")
    for mine, new in zip(parts_of(D), parts_of(value)):
        if mine is not new:
            np.copyto(mine, new, casting="unsafe")
    if D._mode != "replica":
        del D._mode  # back to the class's 'replica'


def assign_out(out: CodistArray, result: Any, what: str) -> CodistArray:
    """``out=`` for an ``out`` in a layout the operation cannot write into: ``result``
    (computed without it) written into ``out``'s own arrays, with numpy's checks."""
    if not isinstance(result, CodistArray) or tuple(result.shape) != tuple(out.shape):
        raise ValueError(f"{what}: out= has shape {tuple(out.shape)}, the result has "
                         f"{tuple(np.shape(result))}")
    check_out_cast(what, result.dtype, out.dtype)
    assign(out, result)
    return out


def check_out_cast(what: str, result: np.dtype, out: np.dtype) -> None:
    """numpy's own error (``UFuncTypeError``, numpy's message) when a result of dtype
    ``result`` cannot go into an ``out=`` of dtype ``out`` under numpy's 'same_kind' rule:
    the same numpy function raises it on two elements."""
    if np.can_cast(result, out, "same_kind"):
        return
    name = what.rsplit(".", 1)[-1]
    one_d = getattr(np.fft, name.rstrip("2n"), None) if "fft" in name else None
    if one_d is not None:
        x = np.zeros(2, dtype=np.zeros(0, result).real.dtype if name.startswith("rfft") else result)
        one_d(x, out=np.zeros(2, dtype=out))
    raise TypeError(f"{what}: Cannot cast the result from dtype('{result}') to the out= dtype('{out}') "
                    "with casting rule 'same_kind'")


def check_ufunc_out(ufunc: np.ufunc, method: str, inputs: tuple, out: tuple, kwargs: dict) -> None:
    """numpy's casting error for ``ufunc(*inputs, out=out)``, raised by numpy itself on
    one-element arrays of the same dtypes, before anything is computed."""
    if method != "__call__":
        return
    one = tuple(np.zeros(1, dtype=x.dtype) if isinstance(x, (CodistArray, np.ndarray)) else x for x in inputs)
    outs = tuple(None if o is None else np.zeros(1, dtype=o.dtype) for o in out)
    with np.errstate(all="ignore"):
        ufunc(*one, out=outs, **kwargs)


def on_inplace(fn: Callable | None, method: Callable) -> Callable:
    """An in-place ``method`` (``D op= x`` with numpy function ``fn``; ``fn`` None for
    ``D[key] = v``) for ``D`` in any layout: in place chunk by chunk where ``chunkwise``
    can, else on plain arrays and written back."""
    @functools.wraps(method)
    def call(D: Any, *args: Any, **kwargs: Any) -> Any:
        if not _any_adapting((D, *args), kwargs):
            return method(D, *args, **kwargs)
        if fn is not None and needs_adapting(D):
            done = chunkwise(lambda a, b: fn(a, b, out=a, casting="same_kind"), (D, *args))
            if done is not None:
                return D
        P = plain(D) if needs_adapting(D) else D
        pargs, pkwargs = plain_args(args, kwargs)
        result = method(P, *pargs, **pkwargs)
        if needs_adapting(D):
            assign(D, result if isinstance(result, CodistArray) else P)
            return D
        return result

    return call
