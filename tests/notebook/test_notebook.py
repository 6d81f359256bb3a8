"""The notebook tour run in a real Jupyter kernel (nbclient + ipykernel), outputs checked."""
from __future__ import annotations

import json
import os
import re
import sys

import pytest
from support.processes import ROOT, child_pythonpath

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

TOUR = os.path.join(ROOT, "examples", "notebook_tour.ipynb")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_notebook(path: str, tmp_path, monkeypatch) -> nbformat.NotebookNode:
    kernels = tmp_path / "jupyter" / "kernels" / "spmdlab-test"
    kernels.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "spmdlab test", "language": "python",
            "env": {"PYTHONPATH": child_pythonpath(), "SPMDLAB_NUM_LABS": "4",
                    "SPMDLAB_TEST_SESSION": os.environ.get("SPMDLAB_TEST_SESSION", "")}}
    (kernels / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="spmdlab-test",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    return nb


def text_of(cell) -> str:
    parts = []
    for out in cell.outputs:
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts.append(ANSI.sub("", "\n".join(out.traceback)))
        elif "text/plain" in out.get("data", {}):
            parts.append(out.data["text/plain"] + "\n")
    return "".join(parts)


def cell(nb, start: str):
    return next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith(start))


@pytest.mark.timeout(240)
def test_notebook_tour(tmp_path, monkeypatch):
    nb = run_notebook(TOUR, tmp_path, monkeypatch)
    setup = cell(nb, "import numpy")
    assert text_of(setup) == ""  # parpool(4) started explicitly: no implicit-start line
    spmd_cell = cell(nb, "%%spmd\nx = labindex()")
    lines = sorted(text_of(spmd_cell).splitlines())
    assert lines == [f"Lab {i}: lab {i} of 4 has {10 * i}" for i in range(1, 5)]
    assert text_of(cell(nb, "print(x[2]")) == "20 40\n"
    assert text_of(cell(nb, "total[1]")) == "100\n"
    assert text_of(cell(nb, "from spmdlab import spmd\nwith spmd()")) == "[1, 4, 9, 16]\n"
    html = cell(nb, "x").outputs[0].data["text/html"]
    assert "<b>Composite</b> with 4 elements" in html
    assert html.count("<tr>") == 5 and "<td>int</td><td></td><td>30</td>" in html
    a_html = cell(nb, "A").outputs[0].data["text/html"]
    assert "<b>distributed</b> array, shape (8, 8), dtype float64" in a_html and "<svg" in a_html
    assert "codistributor2dbc" in a_html
    assert "[[ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.]," in a_html  # the values, fetched for the display
    assert "<td>rows [0:2, 4:6], columns [2:4, 6:8]</td>" in a_html  # lab 2's part, by its indices
    s_html = cell(nb, "s").outputs[0].data["text/html"]
    assert s_html.count("<td>float64</td><td></td><td>2016.0</td>") == 4  # A.sum() on every lab, shown
    assert text_of(cell(nb, "fig = spmdlab.plot_layout")) == \
        "'shape (8, 8), codistributor2dbc over 4 labs'\n"
    assert (tmp_path / "layout.png").exists()
    error = cell(nb, "%%spmd\nimport time\nif labindex() == 3")
    err = error.outputs[-1]
    assert err.output_type == "error" and err.ename == "SpmdError"
    tb = text_of(error)
    count = error.execution_count
    assert f"Error detected on lab 3:\nTraceback (most recent call last):\n  Cell In[{count}], line 4, in <module>\n" in tb
    assert "ValueError: lab 3 is unhappy\n\nLabs 1, 2 and 4 were stopped because of this error:\n" in tb
    assert re.findall(r"  lab (\d): running line \d+ of (.*)", tb) == [(lab, f"Cell In[{count}]") for lab in "124"], tb
    assert "spmdlab/" not in tb and "ipykernel_" not in tb
    assert text_of(cell(nb, "%pmode start")) == \
        "pmode: every cell now runs on 4 labs; %pmode exit returns to the client.\n"
    assert text_of(cell(nb, "y = labindex() ** 2")) == \
        "Lab 1:\n  1\nLab 2:\n  4\nLab 3:\n  9\nLab 4:\n  16\n"
    assert text_of(cell(nb, "print('same everywhere')")) == "Labs 1-4:\n  same everywhere\n"
    pmode_error = cell(nb, "1 / (labindex() - 2)")
    count = pmode_error.execution_count
    shown = re.sub(r"\n +~*\^+~*\n", "\n", text_of(pmode_error))  # Python's ^^^ markers vary by version
    assert shown == (
        "Lab 1:\n  -1.0\nLab 2:\n  Traceback (most recent call last):\n"
        f"    Cell In[{count}], line 1, in <module>\n      1 / (labindex() - 2)\n"
        "  ZeroDivisionError: division by zero\nLab 3:\n  1.0\nLab 4:\n  0.5\n"
        "PmodeCellError: lab 2 has raised an error (shown above)\n")
    assert text_of(cell(nb, "%pmode lab2client")) == "y from lab 3 is now client variable y3.\n"
    assert text_of(cell(nb, "%pmode client2lab")) == "Client variable y3 is now w on labs 1 and 2.\n"
    assert text_of(cell(nb, "print('w' in globals()")) == "Labs 1-2:\n  9\nLabs 3-4:\n  False\n"
    assert text_of(cell(nb, "%pmode exit")) == \
        "pmode ended; cells run at the client again (the pool stays open).\n"
    assert text_of(cell(nb, "print(y3, y[2])")) == "9 4\n"
