"""Per-lab output: collect it while a command runs, then show it grouped or in a grid.

Each lab's output is a list of segments ``(kind, text)`` with kind ``stdout``, ``stderr``,
``echo`` (the value of a trailing expression) or ``error`` (a formatted traceback). Labs
whose segments are identical collapse into one ``Labs 1-4:`` block (stacked layout) or
keep a column each (grid layout). A command still running after ``stream_after`` seconds
switches to streaming: lines are printed as they arrive, as ``Lab 3: <line>``.

Rendering produces *fragments* ``(style, text)``; a :class:`Printer` writes them plain or
with ANSI colours. Nothing here needs a terminal.
"""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from spmdlab.errors import labs_label

Segment = tuple[str, str]
Fragment = tuple[str, str]

_ANSI = {"header": "\x1b[1;36m", "stderr": "\x1b[33m", "error": "\x1b[31m", "info": "\x1b[2m",
         "warning": "\x1b[35m", "prefix": "\x1b[36m", "echo": ""}
_RESET = "\x1b[0m"
_STATUS = "\x1b[7m"  # reverse video, as prompt_toolkit's bottom toolbar
INDENT = "  "


class Printer:
    """Writes fragments to a stream, coloured with ANSI codes when ``color`` is set.

    With ``live`` (a terminal), :meth:`status` keeps one status line under the output
    (erased and redrawn around every write), e.g. while a long command runs.
    """

    def __init__(self, stream: TextIO | None = None, color: bool = False, width: Callable[[], int] | None = None,
                 live: bool = False):
        self.stream = stream if stream is not None else sys.stdout
        self.color = color
        self.live = live
        self._width = width
        self._status: str | None = None
        self._status_shown = False
        self.lock = threading.RLock()

    def width(self) -> int:
        if self._width is not None:
            return self._width()
        import shutil

        return shutil.get_terminal_size((100, 24)).columns

    def write(self, fragments: list[Fragment]) -> None:
        with self.lock:
            self._erase_status()
            for style, text in fragments:
                code = _ANSI.get(style, "") if self.color else ""
                if code:
                    lines = text.split("\n")  # colour each line, so a terminal resize never bleeds
                    text = "\n".join(f"{code}{line}{_RESET}" if line else line for line in lines)
                self.stream.write(text)
            self._draw_status()
            self.stream.flush()

    def status(self, text: str | None) -> None:
        """Show ``text`` as the status line (None removes it); ignored unless ``live``."""
        if not self.live:
            return
        with self.lock:
            self._erase_status()
            self._status = text
            self._draw_status()
            self.stream.flush()

    def _erase_status(self) -> None:
        if self._status_shown:
            self.stream.write("\r\x1b[K")
            self._status_shown = False

    def _draw_status(self) -> None:
        if self._status:
            text = self._status[: max(1, self.width() - 1)]
            self.stream.write(f"{_STATUS}{text}{_RESET}" if self.color else text)
            self._status_shown = True

    def line(self, text: str, style: str = "") -> None:
        self.write([(style, text + "\n")])


def nlabs(n: int) -> str:
    """``1`` -> ``"1 lab"``, ``4`` -> ``"4 labs"``."""
    return f"{n} lab" if n == 1 else f"{n} labs"


def header(labs: list[int]) -> str:
    """``[1, 2, 3, 4]`` -> ``"Labs 1-4:"``; ``[2]`` -> ``"Lab 2:"`` (reuses spmdlab.errors)."""
    label = labs_label(labs)
    return label[0].upper() + label[1:] + ":"


def merge(segments: list[Segment]) -> list[Segment]:
    """Join consecutive segments of the same kind; drop empty ones."""
    out: list[Segment] = []
    for kind, text in segments:
        if not text:
            continue
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


def group(contents: dict[int, list[Segment]]) -> list[tuple[list[int], list[Segment]]]:
    """Group labs with identical output, in order of their first lab; silent labs are left out.

    >>> group({1: [("stdout", "a\\n")], 2: [("stdout", "b\\n")], 3: [("stdout", "a\\n")], 4: []})
    [([1, 3], [('stdout', 'a\\n')]), ([2], [('stdout', 'b\\n')])]
    """
    groups: dict[tuple, tuple[list[int], list[Segment]]] = {}
    for lab in sorted(contents):
        segs = merge(contents[lab])
        if not segs:
            continue
        groups.setdefault(tuple(segs), ([], segs))[0].append(lab)
    return list(groups.values())


def _segment_lines(segs: list[Segment]) -> list[tuple[str, str]]:
    """Split segments into ``(kind, line)`` pairs, tabs expanded."""
    lines = []
    for kind, text in merge(segs):
        body = text[:-1] if text.endswith("\n") else text
        for line in body.split("\n"):
            lines.append((kind, line.expandtabs()))
    return lines


def render_stacked(contents: dict[int, list[Segment]]) -> list[Fragment]:
    """``Lab N:`` / ``Labs 1-4:`` blocks with each group's lines indented under its header."""
    frags: list[Fragment] = []
    for labs, segs in group(contents):
        frags.append(("header", header(labs) + "\n"))
        for kind, line in _segment_lines(segs):
            frags.append((kind, f"{INDENT}{line}\n" if line else "\n"))
    return frags


def wrap(line: str, width: int) -> list[str]:
    """Fold a line into ``width`` columns: at a space when there is one in the last two
    thirds of the column, else mid-word; continuation lines keep the line's indentation.

    >>> wrap("  global: shape (4, 4), codistributor1d(Dimension=2)", 24)
    ['  global: shape (4, 4),', '  codistributor1d(Dimens', '  ion=2)']
    """
    if width <= 0 or len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip(" "))]
    if len(indent) > width // 2:
        indent = ""
    pieces: list[str] = []
    rest = line
    while len(rest) > width:
        cut = rest.rfind(" ", 0, width + 1)
        if cut > max(len(indent), width // 3) and rest[:cut].strip():
            pieces.append(rest[:cut].rstrip(" "))
            rest = indent + rest[cut:].lstrip(" ")
        else:
            pieces.append(rest[:width])
            rest = indent + rest[width:]
    pieces.append(rest)
    return pieces


def grid_columns(nlabs: int, width: int, min_column: int = 16) -> tuple[int, int]:
    """``(labs per row, column width)`` of the grid layout for ``nlabs`` labs."""
    sep = 3  # " | "
    per_row = max(1, min(nlabs, (width + sep) // (min_column + sep)))
    return per_row, max(4, (width - sep * (per_row - 1)) // per_row)


def render_grid(contents: dict[int, list[Segment]], labs: list[int], width: int,
                min_column: int = 16, ascii_only: bool = False) -> list[Fragment]:
    """Labs side by side in columns (MATLAB's Parallel Command Window), one column per lab.

    With more labs than fit at ``min_column`` characters each, the columns wrap onto
    further rows of panels. Nothing is shown when no lab printed anything.
    """
    if not any(merge(contents.get(lab, [])) for lab in labs):
        return []
    bar, rule, cross = ("|", "-", "+") if ascii_only else ("\u2502", "\u2500", "\u253c")
    sep = f" {bar} "
    per_row, col = grid_columns(len(labs), width, min_column)
    frags: list[Fragment] = []
    for start in range(0, len(labs), per_row):
        row = labs[start:start + per_row]
        columns = []
        for lab in row:
            cells: list[Fragment] = []
            for kind, line in _segment_lines(contents.get(lab, [])):
                cells.extend((kind, piece) for piece in wrap(line, col))
            columns.append(cells)
        if start:
            frags.append(("", "\n"))
        heads = [f"Lab {lab}".ljust(col)[:col] for lab in row]
        frags.append(("header", sep.join(heads).rstrip() + "\n"))
        frags.append(("info", f"{rule}{cross}{rule}".join(rule * col for _ in row) + "\n"))
        height = max(len(c) for c in columns)
        for i in range(height):
            used = [j for j, cells in enumerate(columns) if i < len(cells)]
            shown = columns[: used[-1] + 1]  # no separators after the last column with text
            for j, cells in enumerate(shown):
                kind, text = cells[i] if i < len(cells) else ("", "")
                last = j == len(shown) - 1
                frags.append((kind, text if last else text.ljust(col)))
                if not last:
                    frags.append(("info", sep))
            frags.append(("", "\n"))
    return _strip_trailing(frags)


def _strip_trailing(frags: list[Fragment]) -> list[Fragment]:
    """Drop trailing blanks before each newline, so captures carry no invisible spaces."""
    out: list[Fragment] = []
    pending: list[Fragment] = []
    for style, text in frags:
        if text == "\n":
            while pending and not pending[-1][1].strip():
                pending.pop()
            if pending:
                s, t = pending[-1]
                pending[-1] = (s, t.rstrip(" "))
            out.extend(pending)
            out.append((style, text))
            pending = []
        else:
            pending.append((style, text))
    return out + pending


class Ticker:
    """Shows ``text(seconds)`` as the printer's status line once a command has run for
    ``after`` seconds, refreshed every ``every`` seconds, until :meth:`stop`."""

    def __init__(self, printer: Printer, text: Callable[[float], str], after: float = 1.0, every: float = 1.0):
        self.printer = printer
        self._text = text
        self._after = after
        self._every = every
        self._started = time.monotonic()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pmode-ticker", daemon=True)
        if printer.live:
            self._thread.start()

    def _run(self) -> None:
        wait = self._after
        while not self._stopped.wait(wait):
            with self.printer.lock:
                if self._stopped.is_set():
                    return
                self.printer.status(self._text(time.monotonic() - self._started))
            wait = self._every

    def stop(self) -> None:
        """Remove the status line (idempotent)."""
        with self.printer.lock:
            self._stopped.set()
            self.printer.status(None)


def render_stream_line(lab: int, kind: str, line: str) -> list[Fragment]:
    """One streamed line: ``Lab 3: <line>``."""
    return [("prefix", f"Lab {lab}: "), (kind, line + "\n")]


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return (lines[-1] + "\n") if lines else ""


class Collector:
    """Gathers the output of one command from all labs (the ``sink`` of ``Pool.run``).

    Output is held back and shown grouped by :meth:`finish`, unless the command runs
    longer than ``stream_after`` seconds: then what was held is printed as
    ``Lab N: <line>`` and later lines follow as they arrive.
    """

    def __init__(self, printer: Printer, labs: list[int], layout: str = "stacked",
                 stream_after: float | None = 1.0):
        self.printer = printer
        self.labs = labs
        self.layout = layout
        self.contents: dict[int, list[Segment]] = {lab: [] for lab in labs}
        self.streaming = False
        self.finished = False
        self._arrivals: list[tuple[int, str, str]] = []
        self._lock = threading.Lock()
        self._stream_after = stream_after
        self._timer: threading.Timer | None = None
        self.arm()

    def arm(self) -> None:
        """(Re)start the ``stream_after`` clock, e.g. once a pool restart is over."""
        self.stop()
        if self._stream_after is not None and not self.streaming and not self.finished:
            self._timer = threading.Timer(self._stream_after, self.start_streaming)
            self._timer.daemon = True
            self._timer.start()

    def sink(self, lab: int, stream: str, text: str) -> None:
        """``Pool.run``'s output callback."""
        kind = "stderr" if stream == "stderr" else "stdout"
        with self._lock:
            if self.streaming:
                self._print_lines(lab, kind, text)
            else:
                self.contents.setdefault(lab, []).append((kind, text))
                self._arrivals.append((lab, kind, text))

    def _print_lines(self, lab: int, kind: str, text: str) -> None:
        body = text[:-1] if text.endswith("\n") else text
        frags: list[Fragment] = []
        for line in body.split("\n"):
            frags.extend(render_stream_line(lab, kind, line))
        self.printer.write(frags)

    def start_streaming(self) -> None:
        """Print what is held back as ``Lab N:`` lines and stream from now on."""
        with self._lock:
            if self.streaming or self.finished:
                return
            self.streaming = True
            for lab, kind, text in self._arrivals:
                self._print_lines(lab, kind, text)
            self._arrivals = []
            self.contents = {lab: [] for lab in self.labs}

    def stop(self) -> None:
        """End the streaming timer (idempotent)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def add(self, lab: int, kind: str, text: str) -> None:
        """Add a final segment (an ``echo`` value or an ``error`` traceback) for ``lab``."""
        if text and not text.endswith("\n"):
            text += "\n"
        with self._lock:
            self.contents.setdefault(lab, []).append((kind, text))

    def finish(self) -> None:
        """Show everything not printed yet, in the session's layout."""
        self.stop()
        with self._lock:
            self.finished = True
            if self.layout == "grid":  # tracebacks are too wide for a column: stacked below,
                # with the error's last line ("ZeroDivisionError: ...") in the lab's column
                plain = {lab: [g if g[0] != "error" else ("error", _last_line(g[1])) for g in segs]
                         for lab, segs in self.contents.items()}
                errors = {lab: [g for g in segs if g[0] == "error"] for lab, segs in self.contents.items()}
                frags = render_grid(plain, self.labs, self.printer.width()) + render_stacked(errors)
            else:
                frags = render_stacked(self.contents)
            self.contents = {lab: [] for lab in self.labs}  # a second finish shows nothing twice
            self.printer.write(frags)
