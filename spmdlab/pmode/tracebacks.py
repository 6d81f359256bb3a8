"""Lab tracebacks cut down to the user's own lines.

The library already drops its own frames; here frames of installed code (the standard
library and site-packages: numpy's internals, say) go too, so an error in
``np.linalg.inv(A)`` shows the user's line and numpy's message, not numpy's source.
"""
from __future__ import annotations

import re

from spmdlab._frames import installed_dirs, is_installed
from spmdlab.errors import RemoteError

_FRAME = re.compile(r'  File "(?P<file>.*)", line \d+(?P<func>, in )?')


def is_user_file(filename: str, hidden: tuple[str, ...]) -> bool:
    """``<pmode-3>`` and the user's own files are shown; installed code (and the
    interpreter's frozen modules, ``<frozen _sitebuiltins>``, and compiled Cython modules of
    installed packages, ``numpy/random/_generator.pyx``) is not."""
    return not is_installed(filename, hidden)


def user_frames(text: str, hidden: tuple[str, ...] | None = None) -> str:
    """Drop the frames of installed code from a formatted traceback.

    >>> tb = ('Traceback (most recent call last):\\n  File "<pmode-1>", line 1, in <module>\\n'
    ...       '    f()\\n  File "/usr/lib/python3/x.py", line 2, in f\\n    raise E\\n')
    >>> print(user_frames(tb, ("/usr/lib/python3",)), end="")
    Traceback (most recent call last):
      File "<pmode-1>", line 1, in <module>
        f()
    """
    hidden = installed_dirs() if hidden is None else hidden
    out: list[str] = []
    keep = True
    for line in text.splitlines(True):
        m = _FRAME.match(line)
        if m:
            # a SyntaxError's location (no ", in ...") is always shown
            keep = not m.group("func") or is_user_file(m.group("file"), hidden)
        elif not line.startswith("  "):  # "Traceback ..." or a SyntaxError's own lines
            keep = True
        if keep:
            out.append(line)
    return "".join(out)


def format_error(err: RemoteError, hidden: tuple[str, ...] | None = None) -> str:
    """A lab's error as pmode shows it: the user's frames, then ``Type: message``."""
    return RemoteError(err.type_name, err.message, user_frames(err.traceback, hidden)).format()
