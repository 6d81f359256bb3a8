"""What the client writes to its own terminal besides the user's values: lab output as
``Lab N: <line>`` and the one line saying a pool is being started implicitly."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

from .. import settings

__all__ = ["print_sink", "announce_start"]

T = TypeVar("T")


def print_sink(lab: int, stream: str, text: str) -> None:
    """Write lab output to the client's stdout/stderr as ``Lab N: <line>``; characters
    the stream cannot encode are replaced, never raised."""
    out = sys.stderr if stream == "stderr" else sys.stdout
    data = "".join(f"Lab {lab}: {line}\n" for line in text.splitlines() or [""])
    encoding = getattr(out, "encoding", None) or "utf-8"
    try:
        data.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        data = data.encode(encoding, errors="replace").decode(encoding, errors="replace")
    out.write(data)
    out.flush()


def _say(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def announce_start(n: int, start: Callable[[], T]) -> T:
    """``start()`` (which starts a pool of ``n`` labs), announced on stderr in one line:
    ``Starting parallel pool with 4 labs ... connected in 0.5 s`` (``... failed`` when it
    raises). Nothing is written with ``SPMDLAB_QUIET=1``."""
    say: Callable[[str], Any] = (lambda text: None) if settings.quiet() else _say
    say(f"Starting parallel pool with {n} lab{'s' if n != 1 else ''} ...")
    try:
        pool = start()
    except BaseException:
        say(" failed\n")
        raise
    say(f" connected in {getattr(pool, 'startup_seconds', 0.0):.1f} s\n")
    return pool
