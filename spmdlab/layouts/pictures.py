"""Pictures of a layout: which lab owns which part of a distributed array.

:func:`ownership` is the pure part: from a complete codistributor it computes the
array's blocks (edges in global indices) and the lab that owns each, with no MPI and no
matplotlib. Block layouts are drawn by their ``BlockOwners``; chunk maps and layouts with
a halo by the owner of each element (``ownedPieces``), with the cells that more than one
lab stores (halo cells, overlapping chunks) marked: a lighter shade of the owner's colour
in the pictures, ``*`` in the text map. :func:`plot_layout` draws it with matplotlib (an optional extra,
``pip install "spmdlab[plot]"``); :func:`layout_svg` draws it as a small SVG for
notebook displays; :func:`layout_text` as coloured text for the ``pmode`` REPL.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import Selection
from .codistributor import codistributor1d, codistributor2dbc, codistributorBlocks, codistributorChunks

__all__ = ["Ownership", "ownership", "plot_layout", "layout_svg", "layout_text", "lab_color", "LAB_COLORS"]

# One colour per lab (matplotlib's tab10, then tab20's light shades): labs 1..20.
LAB_COLORS = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
    "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
]
# The nearest of the 256 xterm colours, for the REPL's map.
_TERM_COLORS = [25, 208, 34, 160, 97, 94, 176, 244, 142, 38, 152, 222, 150, 217, 182, 181, 218, 251, 187, 153]


def lab_color(lab: int, shared: bool = False) -> str:
    """The colour of lab ``lab`` (1-based) as ``#rrggbb``; repeats after 20 labs. ``shared``:
    the lighter shade marking cells that more than one lab stores."""
    c = LAB_COLORS[(lab - 1) % len(LAB_COLORS)]
    if not shared:
        return c
    rgb = [int(c[k:k + 2], 16) for k in (1, 3, 5)]
    return "#" + "".join(f"{round(v + (255 - v) * 0.55):02x}" for v in rgb)


@dataclass
class Ownership:
    """Blocks of a 2-D picture of an array: ``owners[i, j]`` (1-based lab) owns rows
    ``row_edges[i]:row_edges[i+1]`` and columns ``col_edges[j]:col_edges[j+1]``.
    A 1-D array is drawn as one row (``shape`` keeps its real shape). ``shared[i, j]``
    (kind "chunks" only) is True where more than one lab stores the block (halo cells,
    overlapping chunks); ``label`` names the layout in titles and legends."""

    shape: tuple[int, ...]
    row_edges: np.ndarray
    col_edges: np.ndarray
    owners: np.ndarray
    kind: str  # "1d", "2dbc", "blocks" or "chunks"
    numlabs: int
    shared: np.ndarray | None = None
    label: str = ""


def _runs_1d(partition: list[int]) -> tuple[np.ndarray, np.ndarray]:
    edges = np.concatenate([[0], np.cumsum(partition)]).astype(np.int64)
    labs = np.arange(1, len(partition) + 1)
    keep = np.diff(edges) > 0  # labs that own nothing have no block
    return np.concatenate([edges[:-1][keep], edges[-1:]]), labs[keep]


def ownership(codist: Any, shape: tuple[int, ...] | None = None) -> Ownership:
    """Who owns which block, for a complete codistributor (or one plus ``shape``).

    >>> from spmdlab import codistributor1d
    >>> o = ownership(codistributor1d(2, [2, 3], (4, 5)))
    >>> o.col_edges.tolist(), o.owners.tolist()
    ([0, 2, 5], [[1, 2]])
    """
    size = tuple(codist.GlobalSize) if codist.GlobalSize is not None else shape
    if size is None:
        raise ValueError("plot_layout needs a codistributor with a global size (gsize=...) or a distributed array")
    size = tuple(int(s) for s in size)
    if len(size) not in (1, 2):
        raise ValueError(f"plot_layout draws 1-D and 2-D arrays, not shape {size}")
    rows, cols = (1, size[0]) if len(size) == 1 else size
    if isinstance(codist, (codistributorChunks, codistributorBlocks)) or (
            isinstance(codist, codistributor1d) and codist.Halo):
        if isinstance(codist, codistributorBlocks) and not codist.Halo:
            return _blocks(codist, size)
        return _pieces(codist, size)
    if isinstance(codist, codistributor1d):
        partition = codist.Partition
        dim = codist.Dimension
        if partition is None or dim is None:
            raise ValueError("plot_layout needs a complete codistributor1d (its Partition and Dimension set)")
        edges, labs = _runs_1d(list(partition))
        whole = lambda n: np.array([0, n], dtype=np.int64)
        if len(size) == 1 or dim == 2:
            return Ownership(size, whole(rows), edges, labs[None, :], "1d", len(partition))
        return Ownership(size, edges, whole(cols), labs[:, None], "1d", len(partition))
    if isinstance(codist, codistributor2dbc):
        if len(size) != 2:
            raise ValueError("a codistributor2dbc lays out 2-D arrays only")
        if codist.LabGrid is None:
            raise ValueError("plot_layout needs a codistributor2dbc with its LabGrid set")
        r, c = codist.LabGrid
        mb, nb = codist.BlockSizes
        row_edges = np.append(np.arange(0, rows, mb), rows).astype(np.int64)
        col_edges = np.append(np.arange(0, cols, nb), cols).astype(np.int64)
        pr = (np.arange(len(row_edges) - 1) % r)[:, None]
        pc = (np.arange(len(col_edges) - 1) % c)[None, :]
        if codist.Orientation == "row":
            owners = pr * c + pc + 1
        else:
            owners = pc * r + pr + 1
        return Ownership(size, row_edges, col_edges, owners, "2dbc", r * c)
    raise TypeError(f"plot_layout takes a distributed array or a codistributor, got {type(codist).__name__}")


def _complete(codist: Any, size: tuple[int, ...]) -> Any:
    n = codist.NumLabs
    if n is None and isinstance(codist, codistributor1d) and codist.Partition is not None:
        n = len(codist.Partition)
    if n is None:
        raise ValueError(f"plot_layout needs a complete {type(codist).__name__} (call complete(gsize, numlabs))")
    return codist.complete(size, n)


def _edges(size: int, b: int) -> np.ndarray:
    return np.append(np.arange(0, size, b), size).astype(np.int64)


def _blocks(codist: Any, size: tuple[int, ...]) -> Ownership:
    c = _complete(codist, size)
    bs = c.BlockSize
    owners = c.BlockOwners
    rule = c.Assignment if isinstance(c.Assignment, str) else "array"
    label = f"codistributorBlocks, blocks of {'x'.join(map(str, bs))} ({rule})"
    if len(size) == 1:
        return Ownership(size, np.array([0, 1]), _edges(size[0], bs[0]), owners[None, :], "blocks", c.NumLabs,
                         label=label)
    return Ownership(size, _edges(size[0], bs[0]), _edges(size[1], bs[1]), owners, "blocks", c.NumLabs, label=label)


def _runs(sel: Selection) -> list[tuple[int, int]]:
    """The contiguous runs ``(lo, hi)`` of a selection."""
    if isinstance(sel, slice):
        return [(sel.start, sel.stop)] if sel.stop > sel.start else []
    a = np.asarray(sel)
    if a.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(a) != 1) + 1
    starts, ends = np.concatenate(([0], breaks)), np.concatenate((breaks, [a.size]))
    return [(int(a[s]), int(a[e - 1]) + 1) for s, e in zip(starts, ends)]


def _pieces(codist: Any, size: tuple[int, ...]) -> Ownership:
    """Chunk maps and halo layouts, element by element: the owner from ``ownedPieces``, and
    which blocks more than one lab stores (``chunkSelections``)."""
    c = _complete(codist, size)
    n = c.NumLabs
    as2d = (lambda sel: ((slice(0, 1),) + tuple(sel))) if len(size) == 1 else tuple
    full = (1, size[0]) if len(size) == 1 else size
    owned = {lab: [as2d(g) for _, g, _ in c.ownedPieces(lab, n)] for lab in range(1, n + 1)}
    stored = {lab: [as2d(s) for s in c.chunkSelections(lab, n)] for lab in range(1, n + 1)}
    edges = []
    for d in range(2):
        cuts = {0, full[d]}
        for sels in itertools.chain(owned.values(), stored.values()):
            for sel in sels:
                cuts.update(x for run in _runs(sel[d]) for x in run)
        edges.append(np.array(sorted(cuts), dtype=np.int64))

    def cells(sel: tuple) -> list[tuple[slice, ...]]:
        return [tuple(slice(*np.searchsorted(edges[d], run)) for d, run in enumerate(runs))
                for runs in itertools.product(_runs(sel[0]), _runs(sel[1]))]

    owners = np.zeros((len(edges[0]) - 1, len(edges[1]) - 1), dtype=np.int64)
    holders = np.zeros(owners.shape, dtype=np.int64)
    for lab in range(1, n + 1):
        for sel in owned[lab]:
            for cell in cells(sel):
                owners[cell] = lab
        mine = np.zeros(owners.shape, dtype=bool)
        for sel in stored[lab]:
            for cell in cells(sel):
                mine[cell] = True
        holders += mine
    name = type(c).__name__
    label = f"{name} with halo {c.Halo}" if c.Halo else name
    return Ownership(size, edges[0], edges[1], owners, "chunks", n, holders > 1, label)


def _of(obj: Any) -> Ownership:
    """``obj``'s ownership: an array that has a ``codistributor`` and a ``shape`` (the
    client's ``distributed``: duck-typed, since layouts sit below the client), an
    ``Ownership``, or a codistributor."""
    if isinstance(obj, Ownership):
        return obj
    if hasattr(type(obj), "codistributor") and hasattr(obj, "shape"):
        return ownership(obj.codistributor, obj.shape)
    return ownership(obj)


def _range_ticks(edges: np.ndarray, limit: int = 12) -> tuple[list[float], list[str]]:
    """Tick positions at block centres labelled with their global index ranges."""
    n = len(edges) - 1
    step = max(1, -(-n // limit))
    pos, text = [], []
    for i in range(0, n, step):
        lo, hi = int(edges[i]), int(edges[i + 1])
        pos.append((lo + hi) / 2)
        text.append(f"{lo}:{hi}")
    return pos, text


def box_aspect(o: Ownership) -> float | None:
    """Height over width of a picture of a 2-D array: the array's own, within 1/4..4 (a
    10 x 7 array is drawn taller than wide, a 1000 x 3 one not as a line); None for 1-D."""
    if len(o.shape) != 2:
        return None
    return min(4.0, max(0.25, float(o.row_edges[-1]) / max(float(o.col_edges[-1]), 1.0)))


def plot_layout(obj: Any, ax: Any = None, title: str | None = None) -> Any:
    """A matplotlib figure of who owns what: one colour per lab, the lab number in each
    block, block borders for 2dbc, the global index ranges (0-based, ``lo:hi``) on the axes.

    ``obj``: a client ``distributed`` array, or a codistributor with a global size.
    ``ax``: draw into these axes instead of a new figure. Returns the figure.
    """
    try:
        from matplotlib.colors import ListedColormap
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError('plot_layout needs matplotlib: pip install "spmdlab[plot]" '
                          "(or pip install matplotlib)") from None
    o = _of(obj)
    aspect = box_aspect(o)
    if ax is None:
        size = (6.0, 1.6) if aspect is None else (6.0, 6.0 * aspect) if aspect <= 1 else (6.0 / aspect, 6.0)
        fig = Figure(figsize=(max(size[0], 4.0) + 1.2, size[1] + 1.2))  # room for the title
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    if aspect is not None:
        ax.set_box_aspect(aspect)
    shared = o.shared if o.shared is not None else np.zeros(o.owners.shape, dtype=bool)
    colors = ListedColormap([lab_color(lab, light) for light in (False, True) for lab in range(1, o.numlabs + 1)])
    border = ({"edgecolors": "white", "linewidth": 1.5} if o.kind == "1d"
              else {"edgecolors": "black", "linewidth": 0.8})
    ax.pcolormesh(o.col_edges, o.row_edges, o.owners - 1 + o.numlabs * shared, cmap=colors, vmin=-0.5,
                  vmax=2 * o.numlabs - 0.5, shading="flat", **border)
    ax.set_xlim(0, o.col_edges[-1])
    ax.set_ylim(o.row_edges[-1], 0)  # row 0 at the top, as the array prints
    if o.owners.size <= 400:
        for i in range(o.owners.shape[0]):
            for j in range(o.owners.shape[1]):
                x = (o.col_edges[j] + o.col_edges[j + 1]) / 2
                y = (o.row_edges[i] + o.row_edges[i + 1]) / 2
                ax.text(x, y, str(o.owners[i, j]), ha="center", va="center", color="black" if shared[i, j] else "white",
                        fontweight="bold", fontsize=9 if o.owners.size > 64 else 12)
    ax.set_xticks(*_range_ticks(o.col_edges))
    if len(o.shape) == 2:
        ax.set_yticks(*_range_ticks(o.row_edges))
        ax.set_ylabel("rows")
        ax.set_xlabel("columns")
    else:
        ax.set_yticks([])
        ax.set_xlabel("elements")
    ax.tick_params(axis="x", labelrotation=45 if len(o.col_edges) > 6 else 0, labelsize=8)
    ax.tick_params(axis="y", labelsize=8)
    kind = o.label or ("codistributor1d" if o.kind == "1d" else "codistributor2dbc")
    note = "\n(light: stored on more than one lab)" if shared.any() else ""
    ax.set_title(title if title is not None else f"shape {o.shape}, {kind} over {o.numlabs} labs{note}")
    fig.tight_layout()
    return fig


def layout_svg(obj: Any, width: int = 240) -> str:
    """The layout as a small inline SVG (no matplotlib needed), for notebook displays: at
    most ``width`` pixels on its longer side, with the array's aspect (``box_aspect``)."""
    o = _of(obj)
    rows, cols = int(o.row_edges[-1]), int(o.col_edges[-1])
    aspect = box_aspect(o)
    side = width
    height = 24 if aspect is None else round(side * min(aspect, 1.0))
    width = side if aspect is None else round(side / max(aspect, 1.0))
    sx, sy = width / max(cols, 1), height / max(rows, 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}">']
    stroke = "white" if o.kind == "1d" else "black"
    small = o.owners.size > 400
    for i in range(o.owners.shape[0]):
        for j in range(o.owners.shape[1]):
            x, y = o.col_edges[j] * sx, o.row_edges[i] * sy
            w, h = (o.col_edges[j + 1] - o.col_edges[j]) * sx, (o.row_edges[i + 1] - o.row_edges[i]) * sy
            lab = int(o.owners[i, j])
            shared = o.shared is not None and bool(o.shared[i, j])
            what = f"lab {lab}, also stored on other labs" if shared else f"lab {lab}"
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
                       f'fill="{lab_color(lab, shared)}" stroke="{stroke}" stroke-width="{0 if small else 0.5}">'
                       f'<title>{what}</title></rect>')
            if not small and min(w, h) >= 10:
                out.append(f'<text x="{x + w / 2:.1f}" y="{y + h / 2:.1f}" fill="white" '
                           f'font-size="{min(12, h * 0.7):.0f}" '
                           f'text-anchor="middle" dominant-baseline="central">{lab}</text>')
    out.append("</svg>")
    return "".join(out)


def layout_text(obj: Any, width: int = 60, height: int = 16, color: bool = True) -> str:
    """The layout as text for a terminal: one character cell per part of the array,
    the owning lab's number on its colour (256-colour ANSI), plus a legend of ranges."""
    o = _of(obj)
    rows, cols = int(o.row_edges[-1]), int(o.col_edges[-1])
    ncols = max(1, min(width, cols))
    nrows = max(1, min(height, rows)) if len(o.shape) == 2 else 1
    ri = np.searchsorted(o.row_edges, (np.arange(nrows) + 0.5) * rows / nrows, side="right") - 1
    ci = np.searchsorted(o.col_edges, (np.arange(ncols) + 0.5) * cols / ncols, side="right") - 1
    pick = np.ix_(np.clip(ri, 0, o.owners.shape[0] - 1), np.clip(ci, 0, o.owners.shape[1] - 1))
    grid = o.owners[pick]
    shared = o.shared[pick] if o.shared is not None else np.zeros(grid.shape, dtype=bool)
    lines = []
    for row, row_shared in zip(grid, shared):
        cells = []
        for lab, light in zip(row, row_shared):
            mark = str(lab % 10) if lab < 10 or o.numlabs < 10 else chr(ord("a") + (lab - 10) % 26)
            mark = "*" if light else mark
            if color:
                cells.append(f"\x1b[48;5;{_TERM_COLORS[(lab - 1) % 20]}m\x1b[97m{mark}\x1b[0m")
            else:
                cells.append(mark)
        lines.append("".join(cells))
    kind = o.label or ("codistributor1d" if o.kind == "1d" else f"codistributor2dbc, blocks of {int(o.row_edges[1])}")
    lines.append(f"shape {o.shape}, {kind} over {o.numlabs} labs")
    if shared.any():
        lines.append("  *: stored on more than one lab (halo or overlapping chunks), coloured by its owner")
    if o.kind == "1d":
        axis_edges = o.col_edges if o.owners.shape[0] == 1 else o.row_edges
        what = ("columns" if (o.owners.shape[0] == 1 and len(o.shape) == 2)
                else ("elements" if len(o.shape) == 1 else "rows"))
        for k, lab in enumerate(o.owners.ravel()):
            lines.append(f"  lab {lab}: {what} {axis_edges[k]}:{axis_edges[k + 1]}")
    return "\n".join(lines) + "\n"
