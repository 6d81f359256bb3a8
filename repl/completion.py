"""Tab completion of names that exist on the labs (asked of lab 1), cached per command.

``split(text)`` finds the dotted name being typed; a :class:`LabNames` source asks the
labs for ``dir(obj)`` (or the workspace's names) once per object per command and filters
by prefix at the client. Lookups that fail, time out or find the pool busy give nothing,
so the prompt is never held for long.
"""
from __future__ import annotations

import ast
import builtins
import keyword
import re
import threading
from collections.abc import Callable

from spmdlab.pmode.commands import LAYOUTS, SUBCOMMANDS

_DOTTED = re.compile(r"(?<![\w.\])}'\"])((?:[A-Za-z_]\w*\.)*)([A-Za-z_]\w*)?$")


def split(text: str) -> tuple[str, str] | None:
    """The object expression and name prefix being completed at the end of ``text``.

    >>> split("y = np.lin"), split("pri"), split("x."), split("a[0].b")
    (('np', 'lin'), ('', 'pri'), ('x', ''), None)
    """
    m = _DOTTED.search(text)
    if m is None:
        return None
    obj, prefix = m.group(1)[:-1], m.group(2) or ""
    if not obj and not prefix:
        return None
    if _in_string(text[: m.start()]):
        return None
    return obj, prefix


def _in_string(text: str) -> bool:
    """A rough check that the cursor sits inside a string literal on the current line."""
    line = text.split("\n")[-1]
    line = re.sub(r"\\.", "", line)
    return line.count("'") % 2 == 1 or line.count('"') % 2 == 1


def matches(names: list[str], prefix: str, obj: str) -> list[str]:
    """Names starting with ``prefix``; private names only when asked for (``_`` typed)."""
    found = [n for n in names if n.startswith(prefix)]
    if not prefix.startswith("_"):
        found = [n for n in found if not n.startswith("_")]
    if not obj:
        found += [k for k in keyword.kwlist if k.startswith(prefix) and k not in found]
    return sorted(set(found), key=lambda n: (n.lower(), n))


def lab_query(obj: str) -> str:
    """The source of the one-expression block that lists names on a lab."""
    if obj:
        return f"sorted(set(str(n) for n in dir({obj})))"
    return "sorted(set(globals()) | set(dir(__builtins__)))"


def command_completions(text: str) -> list[str] | None:
    """Completions for a ``pmode`` command line, or None if ``text`` is not one."""
    m = re.match(r"\s*pmode\s+(\w*)$", text)
    if m:
        return [s for s in SUBCOMMANDS if s.startswith(m.group(1))]
    m = re.match(r"\s*pmode\s+layout\s+(\w*)$", text)
    if m:
        return [s for s in LAYOUTS if s.startswith(m.group(1))]
    return None


class NameCache:
    """Remembers name lists by object expression until :meth:`clear` (after each command)."""

    def __init__(self, fetch: Callable[[str], list[str] | None]):
        self._fetch = fetch
        self._names: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._names.clear()

    def names(self, obj: str) -> list[str]:
        with self._lock:
            if obj in self._names:
                return self._names[obj]
        found = self._fetch(obj)
        if found is None:  # busy or timed out: try again next time
            return []
        with self._lock:
            self._names[obj] = found
        return found

    def complete(self, text: str) -> tuple[str, list[str]]:
        """``(prefix, candidates)`` for the text before the cursor."""
        cmd = command_completions(text)
        if cmd is not None:
            m = re.search(r"(\w*)$", text)
            return (m.group(1) if m else ""), cmd
        parts = split(text)
        if parts is None:
            return "", []
        obj, prefix = parts
        return prefix, matches(self.names(obj), prefix, obj)


def parse_echo(echo: str | None) -> list[str] | None:
    """Read back the repr of a name list a lab echoed."""
    if echo is None:
        return None
    try:
        value = ast.literal_eval(echo)
    except (ValueError, SyntaxError):
        return None
    return [str(n) for n in value] if isinstance(value, list) else None


def local_names(namespace: dict, obj: str) -> list[str] | None:
    """Names for the client-side REPL, looked up in its own namespace (no side effects
    beyond attribute access, as ``rlcompleter``)."""
    if not obj:
        return sorted(set(namespace) | set(dir(builtins)))
    head, *rest = obj.split(".")
    if head in namespace:
        value = namespace[head]
    elif hasattr(builtins, head):
        value = getattr(builtins, head)
    else:
        return []
    try:
        for attr in rest:
            value = getattr(value, attr)
        return sorted(set(str(n) for n in dir(value)))
    except Exception:
        return []
