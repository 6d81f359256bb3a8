"""Argument checks shared by the client and lab APIs (MATLAB numbering, DESIGN §1)."""
from __future__ import annotations

import numbers


def check_lab(lab, numlabs: int, what: str = "lab") -> int:
    """Return ``lab`` as an int if it is a lab number 1..numlabs, else raise ValueError.

    >>> check_lab(2, 4)
    2
    """
    if isinstance(lab, bool) or not isinstance(lab, numbers.Integral):
        raise TypeError(f"{what} must be an integer lab number, got {lab!r}")
    lab = int(lab)
    if not 1 <= lab <= numlabs:
        raise ValueError(
            f"{what} {lab} does not exist: labs are numbered 1..{numlabs} as in MATLAB"
        )
    return lab


def check_tag(tag, allow_any: bool = False) -> int | None:
    if tag is None and allow_any:
        return None
    if isinstance(tag, bool) or not isinstance(tag, numbers.Integral) or tag < 0:
        raise ValueError(f"tag must be a non-negative integer, got {tag!r}")
    return int(tag)


def dim_to_axis(dim, axis, ndim: int | None = None, default: int | None = None) -> int:
    """Turn a MATLAB dimension (1-based) or a numpy ``axis`` (0-based) into an axis.

    >>> dim_to_axis(1, None), dim_to_axis(None, 1)
    (0, 1)
    """
    if dim is not None and axis is not None:
        raise TypeError("give the dimension as dim (1-based, MATLAB) or axis= (0-based), not both")
    if dim is None and axis is None:
        if default is None:
            raise TypeError("a dimension is required")
        return default
    if dim is not None:
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or dim < 1:
            raise ValueError(
                f"dimension {dim!r} is invalid: dimensions are numbered from 1 as in MATLAB "
                "(1 = rows, 2 = columns), or pass axis= (0-based)"
            )
        result = int(dim) - 1
    else:
        if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or axis < 0:
            raise ValueError(f"axis {axis!r} is invalid: axes are numbered from 0 as in numpy")
        result = int(axis)
    if ndim is not None and result >= ndim:
        raise ValueError(
            f"dimension {result + 1} (axis {result}) is invalid for an array with {ndim} dimensions"
        )
    return result
