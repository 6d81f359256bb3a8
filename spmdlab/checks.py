"""Argument checks shared by the client and lab APIs (MATLAB numbering, docs/design.md §1).

Internal module: the one place where lab numbers, tags and dimensions are checked, so
each rule has one error text.
"""
from __future__ import annotations

import numbers
from typing import Any, TypeGuard

import numpy as np

__all__ = ["REQUIRED", "check_lab", "check_numlabs", "check_tag", "dim_to_axis", "is_int"]


def is_int(x: Any) -> TypeGuard[int]:
    """True for integers, numpy's included, but not for bools."""
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def check_numlabs(numlabs: Any) -> int:
    """``numlabs`` as an int if it is a positive integer, else ValueError."""
    if not is_int(numlabs) or numlabs < 1:
        raise ValueError(f"numlabs must be a positive integer, got {numlabs!r}")
    return int(numlabs)


def check_lab(lab: Any, numlabs: int, what: str = "lab") -> int:
    """Return ``lab`` as an int if it is a lab number 1..numlabs.

    Anything but a number is a TypeError; a number that names no lab (0, 5 of 4, 1.5,
    True) is a ValueError stating the rule.

    >>> check_lab(2, 4)
    2
    """
    n = check_numlabs(numlabs)
    if not isinstance(lab, (numbers.Number, np.generic)):
        raise TypeError(f"{what} must be an integer lab number, got {lab!r}")
    if not is_int(lab) or not 1 <= lab <= n:
        raise ValueError(f"{what} {lab} does not exist: labs are numbered 1..{n} as in MATLAB")
    return int(lab)


def check_tag(tag: Any, allow_any: bool = False) -> int | None:
    """A message tag: a non-negative integer (or None for any tag, if allowed)."""
    if tag is None and allow_any:
        return None
    if not is_int(tag) or tag < 0:
        raise ValueError(f"tag must be a non-negative integer, got {tag!r}")
    return int(tag)


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()  # dim_to_axis(default=REQUIRED): a dimension must be given


def dim_to_axis(dim: Any, axis: Any, ndim: int | None = None, default: Any = REQUIRED,
                what: str = "") -> Any:
    """The 0-based axis named by ``dim`` (1-based, MATLAB) or ``axis`` (0-based, numpy;
    negative counts from the end when ``ndim`` is known); ``default`` when neither is
    given (by default that is a TypeError). The one dim/axis rule of the library.

    >>> dim_to_axis(1, None), dim_to_axis(None, 1), dim_to_axis(None, -1, 3)
    (0, 1, 2)
    """
    prefix = f"{what}: " if what else ""
    if dim is not None and axis is not None:
        raise TypeError(f"{prefix}give the dimension as dim (1-based, MATLAB) or axis= (0-based), "
                        "not both")
    if dim is None and axis is None:
        if default is REQUIRED:
            raise TypeError(f"{prefix}a dimension is needed: pass dim (1-based) or axis= (0-based)")
        return default
    if dim is not None:
        if not is_int(dim):
            raise TypeError(f"{prefix}the dimension must be an integer, got {dim!r}")
        if dim < 1:
            raise ValueError(f"{prefix}invalid dimension {dim}: dimensions are numbered from 1 "
                             "as in MATLAB (or use axis= for 0-based)")
        if ndim is not None and dim > ndim:
            raise ValueError(f"{prefix}dimension {dim} is out of range for a {ndim}-D array: "
                             f"dimensions are numbered 1..{ndim} as in MATLAB (axis= 0..{ndim - 1})")
        return int(dim) - 1
    if not is_int(axis):
        raise TypeError(f"{prefix}the axis must be an integer, got {axis!r}")
    if ndim is None:
        if axis < 0:
            raise ValueError(f"{prefix}axis {axis} counts from the end, but the number of "
                             "dimensions is not known here: use a non-negative axis or dim")
        return int(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"{prefix}axis {axis} is out of bounds for array of dimension {ndim}")
    return int(axis) % ndim
