"""Is an operand of a Python operator a temporary that nothing else can see?

numpy evaluates ``L * 2 + 1`` with one new array: the ``+`` writes into the temporary
``L * 2`` because its reference count shows that only the interpreter's value stack
holds it (and a C-stack check shows the call came straight from the interpreter).
Codistributed operators do the same through :func:`is_temporary`, which may say yes
only when all of these hold (any doubt says no; a no only costs an allocation):

- CPython 3.11-3.13 with the GIL (3.14 pushes borrowed references on the value stack,
  free-threaded builds count references differently), and the self-test below passed;
- the operator was called straight from a Python frame that is executing a
  ``BINARY_OP`` (not an in-place one) or a unary operator instruction, so not from C
  code such as ``operator.add`` or ``functools.reduce``;
- the bytecode shows that the operand on the queried side was produced by the
  instruction just before (a binary or unary operator), with no jump into either
  instruction, so it is the unnamed result of a subexpression;
- the object is the most recent result of a codistributed operator in this process
  (so it is that subexpression's result, not something C code reached from it);
- its reference count is exactly the stack's reference plus the calls' own.

The caller then also checks that the object owns its buffer (``elementwise``).
This module imports only the standard library.
"""
from __future__ import annotations

import dis
import sys
import weakref
from typing import Any

__all__ = ["is_temporary", "note_result", "enabled"]

_SUPPORTED = (sys.implementation.name == "cpython" and (3, 11) <= sys.version_info[:2] < (3, 14)
              and getattr(sys, "_is_gil_enabled", lambda: True)())
_UNARY = frozenset({"UNARY_NEGATIVE", "UNARY_INVERT", "UNARY_POSITIVE"})
_PUSH = frozenset({"LOAD_CONST", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_NAME", "LOAD_GLOBAL",
                   "LOAD_DEREF", "LOAD_CLASSDEREF"})
_BINARY_OP = dis.opmap.get("BINARY_OP")
_INPLACE = frozenset(k for k, (_, sym) in enumerate(getattr(dis, "_nb_ops", ())) if sym.endswith("="))

_last: weakref.ref | None = None
_sites: dict = {}  # id(code) -> (code, left sites, right sites, unary sites)
_expected_refs: int | None = None  # calibrated by the self-test; None: disabled


def note_result(obj: Any) -> None:
    """Record ``obj`` as the most recent result of a codistributed operator."""
    global _last
    if _expected_refs is not None:
        _last = weakref.ref(obj)


def _is_producer(ins: dis.Instruction) -> bool:
    if ins.opname == "BINARY_OP":
        return ins.arg not in _INPLACE
    return ins.opname in _UNARY


def _analyse(code) -> tuple:
    """Offsets of the operator instructions whose left / right / only operand is the
    result of the instruction just before them."""
    ins = list(dis.get_instructions(code))
    left, right, unary = set(), set(), set()
    for k in range(1, len(ins)):
        op, prev = ins[k], ins[k - 1]
        if op.is_jump_target:
            continue
        if op.opname in _UNARY:
            if _is_producer(prev):
                unary.add(op.offset)
            continue
        if op.opname != "BINARY_OP" or op.arg in _INPLACE:
            continue
        if _is_producer(prev):
            right.add(op.offset)
        elif (k >= 2 and prev.opname in _PUSH and not prev.is_jump_target
              and dis.stack_effect(prev.opcode, prev.arg) == 1 and _is_producer(ins[k - 2])):
            left.add(op.offset)
    return frozenset(left), frozenset(right), frozenset(unary)


def _sites_of(code) -> tuple:
    entry = _sites.get(id(code))
    if entry is None or entry[0] is not code:
        if len(_sites) > 512:
            _sites.clear()
        entry = (code,) + _analyse(code)
        _sites[id(code)] = entry
    return entry


def is_temporary(obj: Any, side: str) -> bool:
    """True when ``obj``, the ``side`` ('left', 'right' or 'unary') operand of the
    operator whose method calls this function directly, is an unnamed temporary that
    may be overwritten with the result."""
    refs = sys.getrefcount(obj)  # first, before anything else refers to obj
    if _expected_refs is None:
        return False
    if _calibration is not None:
        _calibration.append(refs)
        return False
    # Frames: 0 here, 1 the operator method, 2 the code running the operator.
    frame = sys._getframe(2)
    _, left, right, unary = _sites_of(frame.f_code)
    sites = left if side == "left" else right if side == "right" else unary
    if frame.f_lasti not in sites:
        return False
    last = _last() if _last is not None else None
    return last is obj and refs == _expected_refs


def enabled() -> bool:
    """Whether temporaries are recognised on this interpreter (self-test passed)."""
    return _expected_refs is not None


# --------------------------------------------------------------------------- self-test
class _Probe:
    """Stands in for a codistributed array: ``*`` makes a new one, ``+``/``-`` report
    what :func:`is_temporary` says about the operands."""

    def __mul__(self, other):
        r = _Probe()
        note_result(r)
        return r

    def __add__(self, other):
        return ("left", is_temporary(self, "left"), isinstance(other, _Probe) and is_temporary(other, "right"))

    def __radd__(self, other):
        return ("right", is_temporary(self, "right"))

    def __neg__(self):
        return ("unary", is_temporary(self, "unary"))


class _Stashing(_Probe):
    """A producer that keeps a second reference to its result."""

    stash: list = []

    def __mul__(self, other):
        r = _Stashing()
        note_result(r)
        _Stashing.stash.append(r)
        return r


def _calibrate() -> int | None:
    """The reference count a temporary operand shows, if the self-test then agrees
    with every case below; else None (never elide)."""
    global _expected_refs, _calibration
    import functools
    import operator

    _expected_refs, _calibration = -1, []
    try:
        (_Probe() * 1) + 1
        1 + (_Probe() * 1)
        -(_Probe() * 1)
        counts, _calibration = _calibration, None
    finally:
        _calibration = None
    if len(counts) != 3 or len(set(counts)) != 1:
        return None
    _expected_refs = counts[0]
    try:
        yes = [(_Probe() * 1) + 1, 1 + (_Probe() * 1), -(_Probe() * 1)]
        x = _Probe() * 1
        keep = [x]
        c = False
        no = [x + 1, 1 + x, -x, operator.add(_Probe() * 1, 1), functools.reduce(operator.add, [_Probe() * 1, 1]),
              (_Probe() * 1).__add__(1), keep[0] + 1, (x if c else _Probe() * 1) + 1, (_Stashing() * 1) + 1,
              -(_Stashing() * 1), (_Probe() * 1) + (_Probe() * 1)]
        _Stashing.stash.clear()
        ok = all(r[1] for r in yes) and not any(r[1] for r in no[:-1]) and no[-1][1:] == (False, True)
    except Exception:
        ok = False
    return _expected_refs if ok else None


_calibration: list | None = None
if _SUPPORTED and _BINARY_OP is not None:
    _expected_refs = _calibrate()
    _last = None
