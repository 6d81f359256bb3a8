"""Which frames of a traceback are code the user wrote, not installed code.

Installed code is the standard library, site-packages (numpy's internals, scipy, this
library when installed), the interpreter's frozen modules (``<frozen importlib._bootstrap>``)
and Cython modules of installed packages, whose frames name a path relative to the
package (``numpy/random/_generator.pyx``). Typed input (``<pmode-3>``, ``Cell In[4]``)
and the user's files are the user's.
"""
from __future__ import annotations

import functools
import linecache
import os
import sysconfig
from collections.abc import Callable, Sequence
from traceback import FrameSummary
from types import FrameType

__all__ = ["LIBRARY_DIR", "CODE_DIR", "installed_dirs", "is_installed", "is_library", "first_outside", "running_where"]

_CYTHON = (".pyx", ".pxd", ".pxi")

LIBRARY_DIR = os.path.dirname(os.path.abspath(__file__))  # spmdlab/, wherever it is installed
CODE_DIR = os.path.dirname(LIBRARY_DIR)  # the folder holding spmdlab (the checkout, or site-packages)


def is_library(filename: str) -> bool:
    """True for a frame of spmdlab's own code (any of its subpackages)."""
    return not filename.startswith("<") and os.path.abspath(filename).startswith(LIBRARY_DIR + os.sep)


def first_outside(frame: FrameType | None) -> tuple[FrameType | None, int]:
    """The first of ``frame`` and its callers that is not spmdlab's code, with how many
    frames were skipped to reach it (for ``warnings.warn``'s ``stacklevel``)."""
    skipped = 0
    while frame is not None and is_library(frame.f_code.co_filename):
        frame, skipped = frame.f_back, skipped + 1
    return frame, skipped


@functools.lru_cache(maxsize=1)
def installed_dirs() -> tuple[str, ...]:
    """Where this Python keeps the standard library and installed packages."""
    paths = sysconfig.get_paths()
    return tuple(sorted({paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)}))


def is_installed(filename: str, dirs: Sequence[str] | None = None) -> bool:
    """True for a frame of installed code (see the module's docstring); ``dirs``: the
    installed directories (default :func:`installed_dirs`)."""
    if filename.startswith("<"):
        return filename.startswith("<frozen ")
    dirs = installed_dirs() if dirs is None else dirs
    if filename.endswith(_CYTHON) and not os.path.isabs(filename):
        top = filename.replace("\\", "/").split("/", 1)[0]
        return any(os.path.isdir(os.path.join(d, top)) for d in dirs)
    return any(filename == d or filename.startswith(d.rstrip("/") + "/") for d in dirs)


def running_where(frames: Sequence[FrameSummary], library: Callable[[str], bool] = lambda f: False) -> str:
    """Where a stopped lab was, for "lab 2: running line 7 of script.py": the innermost
    of ``frames`` that is neither installed code nor ``library`` code, nor code such code
    generated (a ``<string>`` that ``dataclasses`` compiled: called from such code, with
    no source in ``linecache``, where the user's typed input is)."""
    where = None
    inside = False
    for frame in frames:
        name = frame.filename
        if library(name) or is_installed(name):
            inside = True
        elif not (inside and name.startswith("<") and not linecache.getline(name, frame.lineno or 0)):
            where, inside = frame, False
    return "running" if where is None else f"running line {where.lineno} of {where.filename}"
