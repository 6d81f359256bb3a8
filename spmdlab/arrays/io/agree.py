"""Errors about files, agreed by every lab: each lab reports what it saw (None when all
was well), one collective exchanges the reports, and every lab raises the same error,
naming the file and the labs concerned (docs/design.md §13)."""
from __future__ import annotations

from typing import Any

from ..collectives import allgather_objects

__all__ = ["Report", "report", "agree", "raise_agreed"]

# (kind, text): kind is the name of the exception to raise
Report = tuple[str, str] | None

_KINDS = {"FileNotFoundError": FileNotFoundError, "PermissionError": PermissionError, "OSError": OSError,
          "ValueError": ValueError, "TypeError": TypeError, "FileExistsError": FileExistsError,
          "IsADirectoryError": IsADirectoryError, "NotImplementedError": NotImplementedError}


def report(exc: BaseException) -> Report:
    """A lab's report of an exception it caught."""
    kind = type(exc).__name__
    if kind not in _KINDS:
        kind = "OSError" if isinstance(exc, OSError) else "ValueError"
    text = getattr(exc, "strerror", None) if isinstance(exc, OSError) and getattr(exc, "strerror", None) else str(exc)
    return (kind, str(text)[:500])


def raise_agreed(reports: list[Report], what: str, path: Any) -> None:
    """Raise one error, the same on every lab, if any lab reported one."""
    bad = [(k + 1, r) for k, r in enumerate(reports) if r is not None]
    if not bad:
        return
    texts = {r[1] for _, r in bad}
    if len(texts) == 1:
        labs = [lab for lab, _ in bad]
        where = "every lab" if len(labs) == len(reports) else ("lab " if len(labs) == 1 else "labs ") + \
            ", ".join(map(str, labs))
        text = f"{what} {str(path)!r}: {next(iter(texts))} (on {where})"
    else:
        text = f"{what} {str(path)!r}: " + "; ".join(f"lab {lab}: {r[1]}" for lab, r in bad[:4])
        if len(bad) > 4:
            text += f"; ... ({len(bad)} labs)"
    cls = _KINDS.get(bad[0][1][0], ValueError)
    raise cls(text)


def agree(mine: Report, what: str, path: Any, extra: Any = None) -> list:
    """Exchange every lab's report (and ``extra``, a small value) with one collective;
    raise the agreed error if any lab had one, else return every lab's ``extra``."""
    everyone = allgather_objects((mine, extra), f"{what} {path}")
    raise_agreed([r for r, _ in everyone], what, path)
    return [e for _, e in everyone]
