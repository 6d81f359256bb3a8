"""The spmdlab exception hierarchy and the description of an error raised on a lab."""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field


@dataclass
class RemoteError:
    """An exception raised on a lab, as plain data that crosses to the client.

    ``exception`` is the original exception object when it could be pickled, else None.
    ``traceback`` holds the user-code part of the lab's traceback, already formatted.
    """

    type_name: str
    message: str
    traceback: str = ""
    exception: BaseException | None = field(default=None, compare=False)

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
    for lab in labs[1:] + [None]:  # type: ignore[list-item]
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
    (``("done", epoch, result)``), so a REPL can still show what those labs computed.
    """

    def __init__(self, message: str, errors: dict[int, RemoteError] | None = None,
                 replies: dict[int, tuple] | None = None):
        super().__init__(message)
        self.errors: dict[int, RemoteError] = dict(errors or {})
        self.replies: dict[int, tuple] = dict(replies or {})

    @classmethod
    def from_lab_errors(cls, errors: dict[int, RemoteError], replies: dict[int, tuple] | None = None,
                        stopped: list[int] | None = None) -> "SpmdError":
        """``stopped``: the labs aborted because of the error (named in the message)."""
        parts = []
        for labs, err in group_errors(errors):
            parts.append(f"Error detected on {labs_words(labs)}:\n{display_names(err.format())}")
        text = "\n\n".join(parts)
        if stopped:
            phrase = labs_verb(sorted(stopped), "was", "were")
            text += f"\n\n{phrase[0].upper()}{phrase[1:]} stopped because of this error."
        return cls(text, errors, replies)


_FRAME_FILE = re.compile(r'^(  File )"(?P<file>[^"]*)", line (?P<line>\d+)', re.M)


def display_names(text: str) -> str:
    """Frames of IPython cells named as IPython names them: ``Cell In[7], line 3``."""
    shell = None
    ipython = sys.modules.get("IPython")
    if ipython is not None:
        try:
            shell = ipython.get_ipython()
        except Exception:
            shell = None
    fmt = getattr(getattr(shell, "compile", None), "format_code_name", None)
    if fmt is None:
        return text

    def rename(m: re.Match) -> str:
        try:
            named = fmt(m.group("file"))
        except Exception:
            named = None
        if not named:
            return m.group(0)
        return f"  {named[0]} {named[1]}, line {m.group('line')}"

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


class PoolError(SpmdError):
    """The pool could not be started or used (launcher missing, start-up timed out, closed)."""


class SpmdSourceError(SpmdError):
    """The source of a ``with spmd():`` body could not be read."""
