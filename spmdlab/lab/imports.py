"""Stopping a lab never leaves a package half-imported.

An abort interrupts user code with an exception raised from a SIGINT handler. Raised
inside an import, it unwinds the package's ``__init__`` and Python drops the package from
``sys.modules`` but keeps the submodules that had finished; the next import of the package
runs ``__init__`` again, and its ``from . import sub as _sub`` finds ``sub`` already loaded
and never makes it an attribute of the new package object (``pkg.sub`` then raises
AttributeError for the rest of the session). So the server defers an abort that lands
inside an import until the import is done (for at most ``IMPORT_GRACE`` seconds) and,
after a block that failed or was stopped, forgets the submodules of packages that are no
longer loaded, so the next import loads the whole package again.
"""
from __future__ import annotations

import sys
import types

__all__ = ["IMPORT_GRACE", "drop_orphans", "importing"]

# seconds an abort waits for an import to finish (a hung import is still stopped); shorter
# than the client's wait for the labs after an error (client/collect.py's ERROR_GIVE_UP)
IMPORT_GRACE = 5.0


def importing(frame: types.FrameType | None) -> bool:
    """True when ``frame`` or a caller of it runs the import machinery."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def drop_orphans() -> list[str]:
    """Forget every loaded module whose package is no longer loaded (what an import cut
    short leaves), so that importing the package again loads them afresh and binds them
    to it; return their names."""
    orphans = [name for name in list(sys.modules)
               if any(name[:i] not in sys.modules for i, c in enumerate(name) if c == ".")]
    for name in orphans:
        sys.modules.pop(name, None)
    return orphans
