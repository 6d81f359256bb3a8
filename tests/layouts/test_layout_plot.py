"""Layout pictures: the pure ownership map, the matplotlib figure (pixel colours), SVG, text."""
from __future__ import annotations

import numpy as np
import pytest

from spmdlab import codistributor1d, codistributor2dbc, codistributorBlocks, codistributorChunks
from spmdlab.layouts.pictures import lab_color, layout_svg, layout_text, ownership


def owner_grid(codist, numlabs: int, shape) -> np.ndarray:
    """Element-wise owner map from the codistributor's own localIndices (the reference)."""
    grid = np.zeros(shape, dtype=int)
    for lab in range(1, numlabs + 1):
        idx = codist.localIndices(lab, numlabs)
        grid[np.ix_(*idx)] = lab
    return grid


def expand(o) -> np.ndarray:
    rows = np.repeat(np.arange(o.owners.shape[0]), np.diff(o.row_edges))
    cols = np.repeat(np.arange(o.owners.shape[1]), np.diff(o.col_edges))
    return o.owners[np.ix_(rows, cols)]


@pytest.mark.parametrize("codist, numlabs", [
    (codistributor1d(1, [3, 3, 2, 2], (10, 6)), 4),
    (codistributor1d(2, [1, 0, 4], (3, 5)), 3),
    (codistributor2dbc([2, 2], 3, "row", (10, 8)), 4),
    (codistributor2dbc([2, 3], 2, "col", (9, 13)), 6),
    (codistributor2dbc([1, 4], 5, "row", (7, 23)), 4),
])
def test_ownership_matches_local_indices(codist, numlabs):
    o = ownership(codist)
    assert o.numlabs == numlabs
    assert np.array_equal(expand(o), owner_grid(codist, numlabs, codist.GlobalSize))


def test_ownership_of_a_vector_and_errors():
    o = ownership(codistributor1d(1, [2, 2], (4,)))
    assert o.row_edges.tolist() == [0, 1] and o.col_edges.tolist() == [0, 2, 4] and o.owners.tolist() == [[1, 2]]
    with pytest.raises(ValueError, match="needs a codistributor with a global size"):
        ownership(codistributor1d(1))
    with pytest.raises(ValueError, match="1-D and 2-D arrays"):
        ownership(codistributor1d(1, [1, 1], (2, 2, 2)))


S = slice
NEW_LAYOUTS = [  # (codistributor, kind)
    (codistributorBlocks((2, 2), [[2, 1], [4, 3]]).complete((7, 11), 4), "blocks"),
    (codistributorBlocks(3, "cyclicrow").complete((10,), 3), "blocks"),
    (codistributorBlocks((1, 2), "blockrow").complete((7, 11), 4), "blocks"),
    (codistributorBlocks((2, 2), [[1, 2], [2, 1]]).complete((5, 6), 2), "blocks"),  # chunked: a checkerboard
    (codistributorChunks({1: [(S(0, 2), S(0, 3)), (S(2, 4), S(3, 5))], 2: [(S(0, 2), S(3, 5)), (S(2, 4), S(3, 5))],
                          3: (S(2, 4), S(0, 3))}).complete((4, 5), 3), "chunks"),
    (codistributorChunks({2: [S(0, 6)], 1: [S(4, 10)]}).complete((10,), 2), "chunks"),
    (codistributor1d(1, [3, 3, 2], (8, 6), halo=1), "chunks"),
    (codistributor1d(2, [4, 0, 4], (3, 8), halo=2), "chunks"),
    (codistributorBlocks(2, "blockcol", halo=1).complete((5, 9), 3), "chunks"),
]


def stored_count(codist, n, shape) -> np.ndarray:
    """How many labs store each element (the reference for ``shared``)."""
    count = np.zeros(shape, dtype=int)
    for lab in range(1, n + 1):
        mine = np.zeros(shape, dtype=bool)
        for sel in codist.chunkSelections(lab, n):
            mine[sel] = True
        count += mine
    return count


@pytest.mark.parametrize("codist, kind", NEW_LAYOUTS)
def test_ownership_of_blocks_chunks_and_halos(codist, kind):
    o = ownership(codist)
    n = codist.NumLabs
    shape = codist.GlobalSize
    assert o.kind == kind and o.numlabs == n and o.shape == shape
    owners = codist.ownerOf(tuple(np.indices(shape)), n)
    grid = expand(o)
    assert np.array_equal(grid, owners if len(shape) == 2 else owners[None, :])
    if kind == "blocks":
        assert o.shared is None and np.array_equal(o.owners.reshape(codist.BlockOwners.shape), codist.BlockOwners)
        return
    shared = o.shared[np.ix_(np.repeat(np.arange(o.owners.shape[0]), np.diff(o.row_edges)),
                             np.repeat(np.arange(o.owners.shape[1]), np.diff(o.col_edges)))]
    want = stored_count(codist, n, shape) > 1
    assert np.array_equal(shared, want if len(shape) == 2 else want[None, :])
    assert shared.any()


def test_ownership_errors_for_new_layouts():
    with pytest.raises(ValueError, match=r"plot_layout needs a complete codistributorBlocks \(call complete\(gsize, numlabs\)\)"):
        ownership(codistributorBlocks(2, gsize=(4, 4)))
    with pytest.raises(ValueError, match="plot_layout needs a complete codistributorChunks"):
        ownership(codistributorChunks({1: S(0, 4)}, (4,)))
    with pytest.raises(ValueError, match="1-D and 2-D arrays"):
        ownership(codistributorBlocks(2).complete((2, 2, 2), 2))
    assert NEW_LAYOUTS[3][0].isChunked(2)  # blocks are drawn by BlockOwners, chunked or not
    o = ownership(codistributor1d(1, [2, 2], halo=1), shape=(4,))  # a Partition is enough
    assert o.kind == "chunks" and o.owners.tolist() == [[1, 1, 2, 2]] and o.shared.tolist() == [[False, True, True, False]]


def test_layout_text_and_svg_mark_shared_cells():
    c = codistributor1d(1, [4, 4], (8,), halo=2)
    assert layout_text(c, color=False) == (
        "11****22\n"
        "shape (8,), codistributor1d with halo 2 over 2 labs\n"
        "  *: stored on more than one lab (halo or overlapping chunks), coloured by its owner\n")
    coloured = layout_text(c)
    assert coloured.count("*") == 5 and "\x1b[48;5;" in coloured
    svg = layout_svg(c)
    assert svg.count("<rect") == 4 and f'fill="{lab_color(1, True)}"' in svg and f'fill="{lab_color(1)}"' in svg
    assert "<title>lab 2, also stored on other labs</title>" in svg
    assert lab_color(1, True) != lab_color(1) and lab_color(3, shared=True).startswith("#")
    b = codistributorBlocks(2, "cyclicrow").complete((4, 4), 2)
    assert layout_text(b, color=False) == ("1111\n1111\n2222\n2222\n"
                                          "shape (4, 4), codistributorBlocks, blocks of 2x2 (cyclicrow) over 2 labs\n")
    assert layout_svg(b).count("<rect") == 4


@pytest.mark.parametrize("codist", [
    codistributor2dbc([2, 2], 3, "row", (10, 8)),
    codistributor1d(2, [2, 3, 3], (6, 8)),
    codistributorBlocks((2, 2), [[2, 1], [4, 3]]).complete((7, 11), 4),
    codistributorChunks({1: [(S(0, 2), S(0, 3)), (S(2, 4), S(3, 5))], 2: [(S(0, 2), S(3, 5)), (S(2, 4), S(3, 5))],
                         3: (S(2, 4), S(0, 3))}).complete((4, 5), 3),
    codistributor1d(1, [3, 3, 2], (8, 6), halo=1),
])
def test_plot_layout_block_centres_have_their_labs_colour(codist, tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_rgb

    import spmdlab

    fig = spmdlab.plot_layout(codist)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    image = np.asarray(canvas.buffer_rgba())[:, :, :3].astype(float) / 255
    ax = fig.axes[0]
    o = ownership(codist)
    height = image.shape[0]
    for i in range(o.owners.shape[0]):
        for j in range(o.owners.shape[1]):
            # a point between the centre and the corner, clear of the lab number drawn at the centre
            x = o.col_edges[j] + 0.25 * (o.col_edges[j + 1] - o.col_edges[j])
            y = o.row_edges[i] + 0.25 * (o.row_edges[i + 1] - o.row_edges[i])
            px, py = ax.transData.transform((x, y))
            pixel = image[int(round(height - py)), int(round(px))]
            shared = o.shared is not None and bool(o.shared[i, j])
            assert np.allclose(pixel, to_rgb(lab_color(int(o.owners[i, j]), shared)), atol=0.02), (i, j, pixel)
    labels = [t.get_text() for t in ax.texts]
    assert sorted(labels) == sorted(str(v) for v in o.owners.ravel())
    assert [t.get_text() for t in ax.get_xticklabels()][0] == f"0:{o.col_edges[1]}"
    fig.savefig(tmp_path / "layout.png")
    assert (tmp_path / "layout.png").stat().st_size > 1000


def test_plot_layout_without_matplotlib_says_how_to_get_it(monkeypatch):
    import builtins

    import spmdlab

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(ImportError, match=r'pip install "spmdlab\[plot\]"'):
        spmdlab.plot_layout(codistributor1d(1, [1, 1], (2, 2)))


def test_layout_svg_and_text():
    codist = codistributor1d(2, [2, 2], (2, 4))
    svg = layout_svg(codist)
    assert svg.startswith("<svg") and svg.count("<rect") == 2 and f'fill="{lab_color(2)}"' in svg
    assert layout_text(codist, color=False) == (
        "1122\n1122\n"
        "shape (2, 4), codistributor1d over 2 labs\n"
        "  lab 1: columns 0:2\n  lab 2: columns 2:4\n")
    assert "\x1b[48;5;" in layout_text(codist)
