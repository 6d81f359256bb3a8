"""Layout pictures: the pure ownership map, the matplotlib figure (pixel colours), SVG, text."""
from __future__ import annotations

import numpy as np
import pytest

from spmdlab import codistributor1d, codistributor2dbc
from spmdlab.layout_plot import lab_color, layout_svg, layout_text, ownership

pytestmark = pytest.mark.nompi  # pure logic: no MPI, no lab


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


@pytest.mark.parametrize("codist", [
    codistributor2dbc([2, 2], 3, "row", (10, 8)),
    codistributor1d(2, [2, 3, 3], (6, 8)),
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
            assert np.allclose(pixel, to_rgb(lab_color(int(o.owners[i, j]))), atol=0.02), (i, j, pixel)
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
