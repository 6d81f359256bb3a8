"""HTML displays of Composites and distributed arrays, from client-side data only (no pool)."""
from __future__ import annotations

import pytest
from support.fakes import FakePool

from spmdlab import Composite, codistributor1d, codistributor2dbc, distributed
from spmdlab.client.display import summary_cells
from spmdlab.layouts.pictures import lab_color
from spmdlab.protocol.messages import Summary

pytestmark = pytest.mark.nompi  # pure logic: no MPI, no lab


def test_summary_cells():
    assert summary_cells(None) == ("", "", "No data")
    assert summary_cells(Summary("scalar", "int", text="30")) == ("int", "", "30")
    assert summary_cells(Summary("array", "float64", (4, 4))) == ("ndarray float64", "(4, 4)", "")
    assert summary_cells(Summary("object", "dict")) == ("dict", "", "")
    assert summary_cells(Summary("codist", "float64", (8, 8))) == ("codistributed float64", "(8, 8)", "")


def test_composite_html_one_row_per_lab_and_a_closed_pool():
    pool = FakePool(3)
    c = Composite._from_labs(pool, 1, {1: Summary("scalar", "int", text="10"), 3: Summary("array", "float64", (2,))})
    html = c._repr_html_()
    assert "<b>Composite</b> with 3 elements" in html and html.count("<tr>") == 4
    assert "<td>int</td><td></td><td>10</td>" in html and "<td></td><td></td><td>No data</td>" in html
    assert f"background:{lab_color(3)}" in html and "was closed" not in html
    pool.state = "closed"
    assert "The pool that held these values was closed: they are lost." in c._repr_html_()
    assert repr(c) == "Composite with 3 elements (its pool was closed: the values are lost)"


def test_distributed_html_parts_and_picture():
    d = distributed.__new__(distributed)
    d._bind(FakePool(4), 7, (10, 6), "float64", codistributor1d(1, [3, 3, 2, 2], (10, 6)))
    html = d._repr_html_()
    assert "<b>distributed</b> array, shape (10, 6), dtype float64" in html
    assert "<td>[0:3, 0:6]</td><td>(3, 6)</td>" in html and "<td>[8:10, 0:6]</td><td>(2, 6)</td>" in html
    assert html.count("<rect") == 4 and "<svg" in html
    e = distributed.__new__(distributed)
    e._bind(FakePool(4), 8, (8, 8), "int64", codistributor2dbc([2, 2], 2, "row", (8, 8)))
    html = e._repr_html_()
    assert "codistributor2dbc" in html and html.count("<rect") == 16
