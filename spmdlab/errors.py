"""The spmdlab exception hierarchy and the description of an error raised on a lab."""
from __future__ import annotations

import pickle
import re
import sys
from dataclasses import dataclass, field

__all__ = ["SpmdError", "LabDiedError", "SpmdTimeoutError", "PoolError", "SpmdSourceError", "NoDataError",
           "RemoteError", "lab_ranges", "labs_label", "labs_words", "labs_verb", "where_lines",
           "group_errors", "display_names", "shared_kind"]


@dataclass(frozen=True)
class RemoteError:
    """An exception raised on a lab, as plain data that crosses to the client.

    ``traceback`` holds the user-code part of the lab's traceback, already formatted.
    ``pickled`` is the original exception, pickled on the lab; ``exception`` rebuilds it
    at the client, or is None when the client cannot (a class defined in the block or in
    a module the client lacks, an ``__init__`` pickle cannot call): the error still
    reaches the client as text.
    """

    type_name: str
    message: str
    traceback: str = ""
    pickled: bytes | None = field(default=None, compare=False, repr=False)

    @property
    def exception(self) -> BaseException | None:
        if self.pickled is None:
            return None
        try:
            exc = pickle.loads(self.pickled)
        except Exception:
            return None
        return exc if isinstance(exc, BaseException) else None

    def signature(self) -> tuple[str, str, str]:
        return (self.type_name, self.message, self.traceback)

    def format(self) -> str:
        head = f"{self.type_name}: {self.message}" if self.message else self.type_name
        if self.traceback:
            return f"{self.traceback.rstrip()}\n{head}"
        return head


def lab_ranges(labs: list[int]) -> str:
    """``[1, 2, 3, 5]`` -> ``"1-3, 5"``."""
    labs = sorted(labs)
    parts: list[str] = []
    start = prev = labs[0]
    following: list[int | None] = [*labs[1:], None]
    for lab in following:
        if lab is not None and lab == prev + 1:
            prev = lab
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if lab is not None:
            start = prev = lab
    return ", ".join(parts)


def labs_label(labs: list[int]) -> str:
    """``[2]`` -> ``"lab 2"``, ``[1, 2, 3, 4]`` -> ``"labs 1-4"`` (a header: ``Labs 1, 3:``)."""
    return f"lab {labs[0]}" if len(labs) == 1 else f"labs {lab_ranges(labs)}"


def where_lines(where: dict[int, str]) -> str:
    """``{1: "waiting in labBarrier()"}`` -> ``"  lab 1: waiting in labBarrier()"``
    (a notebook cell's file named as IPython names it: ``running line 3 of Cell In[7]``)."""
    return "\n".join(f"  lab {lab}: {display_names(where[lab])}" for lab in sorted(where))


def labs_words(labs: list[int]) -> str:
    """The labs as a sentence names them: ``"lab 2"``, ``"labs 1 and 3"``, ``"labs 1-3 and 5"``."""
    if len(labs) == 1:
        return f"lab {labs[0]}"
    parts = []
    for part in lab_ranges(labs).split(", "):
        lo, _, hi = part.partition("-")
        parts += [lo, hi] if hi and int(hi) == int(lo) + 1 else [part]  # "1, 2", not "1-2"
    return "labs " + (parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}")


def labs_verb(labs: list[int], singular: str, plural: str) -> str:
    """``labs_verb([2], "has", "have")`` -> ``"lab 2 has"``; ``[1, 3]`` -> ``"labs 1 and 3 have"``."""
    return f"{labs_words(labs)} {singular if len(labs) == 1 else plural}"


def group_errors(errors: dict[int, RemoteError]) -> list[tuple[list[int], RemoteError]]:
    """Group identical lab errors, in lab order of their first occurrence."""
    groups: dict[tuple, tuple[list[int], RemoteError]] = {}
    for lab in sorted(errors):
        key = errors[lab].signature()
        groups.setdefault(key, ([], errors[lab]))[0].append(lab)
    return list(groups.values())


class SpmdError(Exception):
    """An error inside an ``spmd`` block, on the labs or in the pool running them.

    ``errors`` maps lab number -> :class:`RemoteError` for errors raised by user code;
    ``replies`` maps each lab that finished the block before it was aborted to its reply
    (a ``protocol.Reply`` of kind ``done``), so a REPL can still show what those labs
    computed; ``stopped`` maps each lab aborted because of the error to where it was.
    """

    def __init__(self, message: str, errors: dict[int, RemoteError] | None = None,
                 replies: dict | None = None, stopped: dict[int, str] | None = None):
        super().__init__(message)
        self.errors: dict[int, RemoteError] = dict(errors or {})
        self.replies: dict = dict(replies or {})  # lab -> protocol.Reply of labs that finished
        self.stopped: dict[int, str] = dict(stopped or {})  # lab -> where it was stopped

    @classmethod
    def from_lab_errors(cls, errors: dict[int, RemoteError], replies: dict | None = None,
                        stopped: dict[int, str] | None = None) -> SpmdError:
        """``stopped``: each lab aborted because of the error -> where it was (named in the
        message as "Labs 1, 3 and 4 were stopped because of this error:" and one line a lab)."""
        parts = []
        for labs, err in group_errors(errors):
            parts.append(f"Error detected on {labs_words(labs)}:\n{display_names(err.format())}")
        if stopped:
            phrase = labs_verb(sorted(stopped), "was", "were")
            head = f"{phrase[0].upper()}{phrase[1:]} stopped because of this error"
            where = {lab: text for lab, text in stopped.items() if text}
            parts.append(f"{head}:\n{where_lines(where)}" if where else f"{head}.")
        kind = shared_kind(errors) if cls is SpmdError else None
        made = cls if kind is None else _spmd_error_as(kind)
        return made("\n\n".join(parts), errors, replies, stopped)


# The exception types a lab's error keeps at the client (most specific first): an
# ``SpmdError`` whose labs all raised, say, IndexError is also an IndexError, so
# ``except IndexError`` around ``D[idx]`` at the client works as it does around
# ``X[idx]`` (numpy's types, issue 21). KeyError is left out: its str() is a repr.
_KINDS: tuple[type[Exception], ...] = (
    IndexError, ZeroDivisionError, FloatingPointError, OverflowError, NotImplementedError,
    TypeError, ValueError, ArithmeticError, LookupError)
_AS_KIND: dict[type, type] = {}


def shared_kind(errors: dict[int, RemoteError]) -> type[Exception] | None:
    """The most specific of ``_KINDS`` (or numpy's LinAlgError) that every lab's
    exception is an instance of; None if one of them is not, or cannot be rebuilt."""
    found = [e.exception for e in errors.values()]
    if not found or any(exc is None for exc in found):
        return None
    linalg = sys.modules.get("numpy.linalg")
    kinds = ((linalg.LinAlgError,) if linalg is not None else ()) + _KINDS
    return next((k for k in kinds if all(isinstance(exc, k) for exc in found)), None)


def _spmd_error_as(kind: type[Exception]) -> type[SpmdError]:
    """``SpmdError`` that is also a ``kind`` (named SpmdError in tracebacks, pickled as one)."""
    made = _AS_KIND.get(kind)
    if made is None:
        made = type("SpmdError", (SpmdError, kind), {
            "__module__": __name__, "__qualname__": "SpmdError",
            "__doc__": f"An SpmdError whose labs all raised {kind.__name__}: also a {kind.__name__}.",
            "__reduce__": lambda self: (SpmdError, self.args)})
        _AS_KIND[kind] = made
    return made


_FRAME_FILE = re.compile(r'^(  File )"(?P<file>[^"]*)", line (?P<line>\d+)', re.M)
_WHERE_FILE = re.compile(r"^(?P<pre>running line (?P<line>\d+) of )(?P<file>.+)$")


def _ipython_code_name():
    """IPython's ``compile.format_code_name`` when an IPython shell is running, else None."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
    except Exception:
        return None
    return getattr(getattr(shell, "compile", None), "format_code_name", None)


def display_names(text: str) -> str:
    """Frames of IPython cells named as IPython names them: ``Cell In[7], line 3`` (and a
    stopped lab's "running line 3 of Cell In[7]")."""
    fmt = _ipython_code_name()
    if fmt is None:
        return text

    def named(file: str):
        try:
            return fmt(file) or None
        except Exception:
            return None

    def rename(m: re.Match) -> str:
        name = named(m.group("file"))
        return m.group(0) if name is None else f"  {name[0]} {name[1]}, line {m.group('line')}"

    where = _WHERE_FILE.match(text)
    if where is not None:
        name = named(where.group("file"))
        return text if name is None else f"{where.group('pre')}{name[0]} {name[1]}"
    return _FRAME_FILE.sub(rename, text)


class LabDiedError(SpmdError):
    """A lab process ended while the pool was in use; the pool is gone."""

    def __init__(self, message: str, statuses: dict[int, int | None]):
        super().__init__(message)
        self.statuses = statuses


class SpmdTimeoutError(SpmdError):
    """An ``spmd`` block ran past its ``timeout=``; ``waiting`` maps lab -> where it was."""

    def __init__(self, message: str, waiting: dict[int, str]):
        super().__init__(message)
        self.waiting = waiting


class NoDataError(SpmdError, LookupError):
    """A Composite element was read on a lab that holds no value for it."""


class PoolError(SpmdError):
    """The pool could not be started or used (launcher missing, start-up timed out, closed)."""


class SpmdSourceError(SpmdError):
    """The source of a ``with spmd():`` body could not be read."""
