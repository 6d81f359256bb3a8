"""Rich (HTML) displays of Composites and distributed arrays for notebooks.

Built from what the client already knows (the summaries the labs sent back, the
codistributor): showing a Composite never asks the labs for its values; a distributed
array's display asks only for the elements numpy's repr would show (``preview``).
"""
from __future__ import annotations

import html
from typing import Any

import numpy as np

from ..layouts.base import box_text, runs_text, selection_size
from ..layouts.pictures import lab_color, layout_svg, ownership
from ..protocol.messages import Summary
from ..protocol.seam import Pool

__all__ = ["composite_html", "distributed_html", "summary_cells"]

_STYLE = ('<style>.spmdlab-t td, .spmdlab-t th {padding: 1px 8px; text-align: left; font-family: monospace}'
          '.spmdlab-sw {display: inline-block; width: 0.8em; height: 0.8em; margin-right: 4px}</style>')


def summary_cells(summary: Summary | None) -> tuple[str, str, str]:
    """``(class, size, value)`` texts for one lab's ``protocol.Summary``."""
    if summary is None:
        return ("", "", "No data")
    if summary.kind == "array":
        return (f"ndarray {summary.type_name}", str(summary.shape), summary.text or "")
    if summary.kind == "scalar":
        return (summary.type_name, "", summary.text or "")
    if summary.kind == "codist":
        return (f"codistributed {summary.type_name}", str(summary.shape), "")
    return (summary.type_name, "", "")


def _swatch(lab: int) -> str:
    return f'<span class="spmdlab-sw" style="background:{lab_color(lab)}"></span>'


def _table(head: list[str], rows: list[list[str]]) -> str:
    out = ['<table class="spmdlab-t"><thead><tr>', *(f"<th>{h}</th>" for h in head), "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _pool_note(pool: Pool, generation: int) -> str:
    if pool is not None and (pool.state == "closed" or pool.generation != generation):
        return "<p><b>The pool that held these values was closed: they are lost.</b></p>"
    return ""


def composite_html(n: int, summaries: dict[int, Summary], pool: Pool, generation: int) -> str:
    """A Composite of ``n`` labs as a table: one row per lab with class, size and value
    (when short) from its ``summaries``; of a closed ``pool`` (or one restarted since
    ``generation``), only that its values are lost."""
    title = f"<b>Composite</b> with {n} element{'s' if n != 1 else ''}"
    lost = _pool_note(pool, generation)
    if lost:
        return _STYLE + f'<div class="spmdlab">{title}{lost}</div>'
    rows = []
    for lab in range(1, n + 1):
        cls, size, value = (html.escape(t) for t in summary_cells(summaries.get(lab)))
        rows.append([f"{_swatch(lab)}Lab {lab}", cls, size, value])
    return _STYLE + f'<div class="spmdlab">{title}' + _table(["lab", "class", "size", "value"], rows) + "</div>"


def distributed_html(d: Any, numlabs: int, values: str | None, pool: Pool, generation: int) -> str:
    """A distributed array ``d`` on ``numlabs`` labs: shape, dtype, layout, each lab's
    part, the layout picture, and ``values`` (the text of its corner, or None)."""
    codist = d.codistributor
    head = (f"<b>distributed</b> array, shape {html.escape(str(d.shape))}, dtype {html.escape(str(d.dtype))}"
            f"<br><code>{html.escape(repr(codist))}</code>")
    rows = []
    for lab in range(1, numlabs + 1):
        try:
            sl = codist.localSlices(lab, numlabs) if hasattr(codist, "localSlices") else None
        except Exception:
            sl = None
        if codist.isChunked(numlabs):  # a list of chunks (chunk maps, blocks off the grid)
            sels = codist.chunkSelections(lab, numlabs)
            shown = ", ".join(box_text(sel) for sel in sels[:4]) + (", ..." if len(sels) > 4 else "")
            part = f"{len(sels)} chunk{'s' if len(sels) != 1 else ''}: {shown}"
            local: tuple[Any, ...] = tuple(tuple(selection_size(x) for x in sel) for sel in sels)
        elif sl is not None:
            part = "[" + ", ".join(f"{s.start}:{s.stop}" for s in sl) + "]"
            local = tuple(s.stop - s.start for s in sl)
        else:
            idx = codist.localIndices(lab, numlabs)
            local = tuple(len(i) for i in idx)
            part = _index_runs(idx)
        rows.append([f"{_swatch(lab)}Lab {lab}", html.escape(part), html.escape(str(local))])
    try:
        ownership(codist, d.shape)
        picture = f'<div style="margin-top:4px">{layout_svg(d)}</div>'
    except (ValueError, TypeError):
        picture = ""
    shown = f'<pre class="spmdlab-v">{html.escape(values)}</pre>' if values is not None else ""
    return (_STYLE + f'<div class="spmdlab">{head}{_pool_note(pool, generation)}{shown}'
            + _table(["lab", "part (global indices)", "local size"], rows) + picture + "</div>")


def _index_runs(idx: list) -> str:
    """``rows [0:10], columns [0:2, 4:6]``: a lab's global indices along each dimension,
    as runs (a long list shortened as ``[0:64, 128:192, ..., 960:1000] (8 blocks)``)."""
    labels = (["elements"] if len(idx) == 1 else ["rows", "columns"] if len(idx) == 2
              else [f"dimension {d}" for d in range(1, len(idx) + 1)])
    return ", ".join(f"{label} {runs_text(np.asarray(i))}" for label, i in zip(labels, idx))
