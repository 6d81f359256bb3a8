"""Messages: error reports that say what the user did and what to do instead, the
values a Composite and a distributed array show, and MATLAB habits met with a hint or
accepted (the decisions are in the README's "From MATLAB" section)."""
from __future__ import annotations

import copy
import os
import pickle
import re
import sysconfig
import traceback

import numpy as np
import pytest
from support.processes import ROOT, run_script

import spmdlab
from spmdlab import (
    codistributed,
    codistributor1d,
    codistributor2dbc,
    distributed,
    gather,
    gcp,
    getCodistributor,
    labindex,
    parpool,
    spmd,
)
from spmdlab.errors import SpmdError
from spmdlab.protocol.values import describe, summarize

# ---- where a stopped lab was: the user's line, never importlib's or an installed module's -----


def _frames(*files: str) -> list[traceback.FrameSummary]:
    return [traceback.FrameSummary(f, 10 + k, "f", line=None) for k, f in enumerate(files)]


@pytest.mark.nompi
def test_a_stopped_lab_is_named_at_the_users_line():
    from spmdlab._frames import running_where

    purelib = sysconfig.get_paths()["purelib"]
    script = "/home/me/script.py"
    frames = _frames(script, "<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")
    assert running_where(frames) == f"running line 10 of {script}"
    frames = _frames(script, f"{purelib}/scipy/linalg/_basic.py", "<frozen importlib._bootstrap>")
    assert running_where(frames) == f"running line 10 of {script}"
    assert running_where(_frames(script, "/home/me/helper.py")) == "running line 11 of /home/me/helper.py"
    assert running_where(_frames("<frozen importlib._bootstrap>")) == "running"
    assert running_where([]) == "running"
    # a "<string>" that installed code compiled (a dataclass's __init__) is not the user's ...
    frames = _frames(script, f"{purelib}/x/y.py", sysconfig.get_paths()["stdlib"] + "/dataclasses.py", "<string>")
    assert running_where(frames) == f"running line 10 of {script}"
    # ... but a function of the user's that installed code calls back is
    frames = _frames(script, f"{purelib}/scipy/optimize/_minimize.py", "/home/me/cost.py", "<string>")
    assert running_where(frames) == "running line 13 of <string>"
    import linecache

    linecache.cache["<pmode-991>"] = (20, None, ["x = 1\n"] * 20, "<pmode-991>")
    frames = _frames(script, f"{purelib}/scipy/optimize/_minimize.py", "<pmode-991>")
    assert running_where(frames) == "running line 12 of <pmode-991>"  # typed input is the user's
    library = "/site/spmdlab/codist/registry.py"
    frames = _frames(script, library, "<string>")
    assert running_where(frames, lambda name: name.startswith("/site/spmdlab/")) == f"running line 10 of {script}"


STOPPED = '''\
import threading
import numpy as np
from spmdlab import parpool, spmd, labindex, distributed
with parpool(2):
    D = distributed(np.ones((4, 4)))
    for case in ("stdlib", "import"):
        try:
            with spmd():
                if labindex() == 1:
                    raise ValueError("lab one")
                if case == "stdlib":
                    threading.Event().wait(30)   # line 12: inside threading.py when stopped
                n = np.linalg.norm(D)   # line 13: the first linear algebra call imports scipy
        except Exception as exc:
            print(str(exc).splitlines()[-1])
'''


@pytest.mark.timeout(120)
def test_a_lab_stopped_inside_installed_code_names_the_users_line():
    result = run_script(STOPPED, timeout=100)
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout + result.stderr
    assert re.fullmatch(r"  lab 2: running line 12 of .*script\.py", lines[0]), lines
    # the import may be over when the abort arrives: then the lab waits in the norm's collective
    assert re.fullmatch(r"  lab 2: (running line 13 of .*script\.py|waiting in .*)", lines[1]), lines
    assert "frozen" not in result.stdout and "site-packages" not in result.stdout


# ---- pmode: no generated code, no compiled-module frames ---------------------------------------


@pytest.mark.nompi
def test_cython_frames_of_installed_packages_are_hidden(tmp_path):
    from spmdlab.pmode.tracebacks import user_frames

    (tmp_path / "numpy" / "random").mkdir(parents=True)
    hidden = (str(tmp_path),)
    tb = ('Traceback (most recent call last):\n'
          '  File "<pmode-1>", line 1, in <module>\n    rng.integers(5, 2)\n'
          '  File "numpy/random/_generator.pyx", line 674, in numpy.random._generator.Generator.integers\n'
          '  File "numpy/random/_bounded_integers.pyx", line 1334, in numpy.random._bounded_integers._rand_int64\n'
          '  File "mine/fast.pyx", line 3, in mine.fast.f\n')
    assert user_frames(tb, hidden) == (
        'Traceback (most recent call last):\n'
        '  File "<pmode-1>", line 1, in <module>\n    rng.integers(5, 2)\n'
        '  File "mine/fast.pyx", line 3, in mine.fast.f\n')  # the user's own Cython module stays


PMODE_SCRIPT = ("np.random.default_rng().integers(5, 2)\n"
                "pmode layout nosuch\n"
                "x = 3\n"
                "pmode layout x\n")


@pytest.mark.timeout(60)
def test_pmode_errors_show_no_compiled_frames_and_no_generated_code(tmp_path):
    import subprocess

    from support.processes import PMODE, environment

    proc = subprocess.run([*PMODE, "start", "2"], input=PMODE_SCRIPT, capture_output=True, text=True,
                          timeout=50, env=environment(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.stdout.startswith(
        "Labs 1-2:\n  Traceback (most recent call last):\n    File \"<pmode-1>\", line 1, in <module>\n"
        "      np.random.default_rng().integers(5, 2)\n"), out
    assert "  ValueError: low >= high\n" in proc.stdout and ".pyx" not in out, out
    assert "pmode layout: nosuch is not defined on the labs" in out, out
    assert "pmode layout: x is not a codistributed array on the labs" in out, out
    assert "__spmdlab" not in out and "getCodistributor" not in out and "<pmode-layout>" not in out, out


# ---- values the user sees: numpy scalars, closed pools, corners of distributed arrays ------------


@pytest.mark.nompi
def test_numpy_scalars_and_0d_arrays_show_their_value():
    assert describe(summarize(np.float64(66.0))) == "class = float64, value = 66.0"
    assert describe(summarize(np.int32(-3))) == "class = int32, value = -3"
    assert describe(summarize(np.complex128(1 + 2j))) == "class = complex128, value = (1+2j)"
    assert describe(summarize(np.bool_(True))) == "class = bool, value = True"
    assert describe(summarize(np.str_("ab"))) == "class = str_, value = 'ab'"
    assert describe(summarize(np.array(2.5))) == "class = float64, size = (), value = 2.5"
    assert describe(summarize(np.zeros(3))) == "class = float64, size = (3,)"  # arrays: no values


@pytest.mark.timeout(90)
def test_composite_of_reductions_shows_the_values(pools):
    P = pools(2)
    D = distributed(np.arange(12.0).reshape(3, 4), pool=P)
    with spmd(pool=P):
        s = D.sum()
        g = spmdlab.gplus(labindex())
        m = np.mean(D)
        z = np.array(labindex() / 4)
    assert repr(s) == "Composite with 2 elements:\nLab 1: class = float64, value = 66.0\nLab 2: class = float64, value = 66.0"
    assert repr(g).endswith("Lab 2: class = int, value = 3") or repr(g).endswith("Lab 2: class = int64, value = 3"), repr(g)
    assert "value = 5.5" in repr(m)
    assert repr(z).splitlines()[1:] == ["Lab 1: class = float64, size = (), value = 0.25",
                                        "Lab 2: class = float64, size = (), value = 0.5"]
    page = s._repr_html_()
    assert "<td>float64</td><td></td><td>66.0</td>" in page


@pytest.mark.timeout(90)
def test_composite_of_a_closed_pool_shows_no_values():
    pool = spmdlab.Pool(2)
    with spmd(pool=pool):
        s = np.float64(labindex() * 7)
        t = labindex()
    assert "value = 14.0" in repr(s)
    pool.close()
    for c in (s, t):
        assert repr(c) == "Composite with 2 elements (its pool was closed: the values are lost)"
        page = c._repr_html_()
        assert "they are lost" in page and "<table" not in page and "14.0" not in page


@pytest.mark.timeout(120)
def test_distributed_display_shows_a_corner_of_the_values(pools, monkeypatch):
    from spmdlab.client.preview import corner_part

    P = pools(2)
    fetched: list = []
    real = P.request_many

    def counting(messages, *args, **kwargs):  # the values the labs send back for the display
        replies = real(messages, *args, **kwargs)
        for lab, message in messages.items():
            if getattr(message, "fn", None) is corner_part:
                fetched.extend(values.size for _, values in replies[lab].result[1])
        return replies

    monkeypatch.setattr(P, "request_many", counting)
    cases = [
        (np.arange(2000.0).reshape(40, 50), codistributor1d(2)),            # summarised like numpy
        (np.arange(3000).reshape(60, 50) % 7, codistributor2dbc([1, 2], 4)),
        (np.arange(12.0).reshape(3, 4) / 3, codistributor1d(1)),            # small: every value
        (np.arange(5000.0), codistributor1d(1, [4999, 1])),
        (np.zeros((0, 3)), None),
    ]
    for X, codist in cases:
        D = distributed(X, codist, pool=P)
        fetched.clear()
        body = np.array2string(X, separator=", ")
        page = D._repr_html_()
        assert body in page.replace("&#x27;", "'"), (page, body)
        assert sum(fetched) <= max(36, X.size if X.size <= 1000 else 0), fetched  # only the corner travels
        assert body.replace("\n", "\n  ") in repr(D)
    with spmd(pool=P):
        E = codistributed(np.arange(40000.0).reshape(200, 200), spmdlab.codistributorChunks(
            {1: [(slice(0, 120), slice(None))], 2: [(slice(100, 200), slice(None))]}))
        F = spmdlab.changeMode(E, "sum")
    for H in (E, F):
        assert np.array2string(gather(H), separator=", ") in H._repr_html_()


@pytest.mark.nompi
def test_2dbc_display_shows_global_indices_not_counts():
    from support.fakes import FakePool

    d = distributed.__new__(distributed)
    d._bind(FakePool(2, state="running"), 9, (10, 7), "float64", codistributor2dbc([1, 2], 2, "row", (10, 7)))
    page = d._repr_html_()
    assert "<td>rows [0:10], columns [0:2, 4:6]</td><td>(10, 4)</td>" in page
    assert "<td>rows [0:10], columns [2:4, 6:7]</td><td>(10, 3)</td>" in page
    assert "elements in blocks" not in page
    e = distributed.__new__(distributed)
    e._bind(FakePool(2, state="running"), 9, (1000, 4), "float64", codistributor2dbc([2, 1], 64, "row", (1000, 4)))
    assert "rows [0:64, 128:192, ..., 896:960] (8 blocks), columns [0:4]" in e._repr_html_()


@pytest.mark.nompi
def test_layout_pictures_keep_the_aspect_ratio():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from spmdlab.layouts.pictures import layout_svg

    def box_ratio(codist) -> float:
        fig = spmdlab.plot_layout(codist)
        FigureCanvasAgg(fig).draw()
        box = fig.axes[0].get_window_extent()
        return box.height / box.width

    assert box_ratio(codistributor2dbc([1, 2], 2, "row", (10, 7))) == pytest.approx(10 / 7, rel=0.02)
    assert box_ratio(codistributor1d(2, [5, 5], (7, 10))) == pytest.approx(7 / 10, rel=0.02)
    assert box_ratio(codistributor1d(1, [500, 500], (1000, 3))) == pytest.approx(4, rel=0.02)   # bounded
    assert box_ratio(codistributor1d(2, [500, 500], (3, 1000))) == pytest.approx(1 / 4, rel=0.02)

    def svg_size(codist) -> tuple[float, float]:
        m = re.match(r'<svg [^>]*width="([\d.]+)" height="([\d.]+)"', layout_svg(codist))
        assert m is not None
        return float(m.group(1)), float(m.group(2))

    w, h = svg_size(codistributor2dbc([1, 2], 2, "row", (10, 7)))
    assert h == 240 and w == pytest.approx(240 * 7 / 10, abs=1)
    w, h = svg_size(codistributor1d(2, [5, 5], (7, 10)))
    assert w == 240 and h == pytest.approx(240 * 7 / 10, abs=1)
    w, h = svg_size(codistributor1d(1, [500, 500], (1000, 3)))
    assert h == 240 and w == pytest.approx(60, abs=1)


# ---- conversions that would move everything, handles that cannot travel, sparse input -----------


@pytest.mark.timeout(90)
def test_client_conversions_and_pickling_say_what_to_do(pools, tmp_path):
    P = pools(2)
    D = distributed(np.arange(6.0), pool=P)
    with pytest.raises(TypeError, match=r"does not convert to a numpy array implicitly: use gather\(D\)"):
        np.asarray(D)
    with pytest.raises(TypeError, match=r"use gather\(D\)"):
        np.array(D, dtype=float)
    with pytest.raises(TypeError, match=r"cannot pickle a distributed array.*gather\(D\)"):
        pickle.dumps(D)
    with spmd(pool=P):
        c = labindex()
    with pytest.raises(TypeError, match=r"cannot pickle a Composite.*list\(c\)"):
        pickle.dumps(c)
    with pytest.raises(TypeError, match=r"cannot pickle a Composite"):
        pickle.dumps({"nested": [c]})
    E = copy.copy(D)
    F = copy.deepcopy(D)
    assert E is not D and F is not D and np.array_equal(gather(E), gather(D)) and np.array_equal(gather(F), gather(D))
    np.save(tmp_path / "d.npy", gather(D))  # what the message suggests works
    assert np.array_equal(np.load(tmp_path / "d.npy"), np.arange(6.0))


@pytest.mark.timeout(90)
def test_scipy_sparse_input_builds_a_sparse_matrix_and_other_layouts_say_how(pools):
    """Issue 25 replaced the refusal of scipy.sparse input with sparse codistributed
    matrices; layouts a sparse matrix cannot have still get one clear error."""
    sparse = pytest.importorskip("scipy.sparse")
    P = pools(2)
    S = sparse.random(6, 6, density=0.5, format="csr", random_state=1)
    assert np.allclose(gather(distributed(S, pool=P)).toarray(), S.toarray())
    for case in range(3):
        with spmd(pool=P):
            if case == 0:
                E = codistributed(S)
            elif case == 1:
                E = codistributed.build(S[3 * (labindex() - 1):3 * labindex()], codistributor1d(1, [3, 3], (6, 6)))
            else:
                E = codistributed.build(S[3 * (labindex() - 1):3 * labindex()], codistributor1d(1, [3, 3], (6, 6)),
                                        "noCommunication")
        assert np.allclose(gather(E).toarray(), S.toarray())
    with pytest.raises(SpmdError, match=r"by rows \(codistributor1d\(1\)\) or by columns") as info:
        with spmd(pool=P):
            E = codistributed(S, codistributor2dbc())
    assert {e.type_name for e in info.value.errors.values()} == {"ValueError"}


# ---- MATLAB habits -----------------------------------------------------------------------------


@pytest.mark.nompi
def test_with_spmd_without_parentheses_says_how_to_write_it():
    with pytest.raises(TypeError, match=r"write `with spmd\(\):`.*`with spmd\(n\):`"):
        with spmd:
            pass
    assert isinstance(spmd(), spmd)  # still a class, called as before


@pytest.mark.timeout(120)
def test_parpool_with_a_profile_and_delete_as_in_matlab():
    assert gcp("nocreate") is None
    with pytest.raises(ValueError, match=r"'MyCluster'.*parpool\(n\)"):
        parpool("MyCluster", 2)
    with pytest.raises(ValueError, match=r"'Threads'.*processes"):
        parpool("Threads")
    p = parpool("local", 2)
    assert p.numlabs == 2 and gcp("nocreate") is p
    p.delete()
    assert p.state == "closed" and gcp("nocreate") is None
    q = parpool("Processes", 2)
    spmdlab.delete(gcp)                     # MATLAB's delete(gcp): closes the current pool
    assert q.state == "closed" and gcp("nocreate") is None
    spmdlab.delete(gcp)                     # no pool: nothing to close (none is started for it)
    spmdlab.delete(gcp("nocreate"))         # delete([]) is a no-op in MATLAB too
    assert gcp("nocreate") is None
    with pytest.raises(TypeError, match=r"delete\(\) closes a pool.*del x"):
        spmdlab.delete(np.zeros(2))
    assert "delete" in spmdlab.__all__


@pytest.mark.nompi
def test_pmode_hints_for_delete_and_spmd_without_parentheses():
    from spmdlab.pmode import commands
    from spmdlab_repl.session import lab_imports

    assert commands.lab_hint("delete(gcp)").startswith("pmode already has its pool of labs")
    assert commands.lab_hint("with spmd:\n    x = 1\n").startswith("pmode input already runs on every lab")
    assert "delete" not in lab_imports()


@pytest.mark.timeout(90)
def test_build_with_matlabs_no_communication_flag_and_the_codistributor_property(pools):
    P = pools(2)
    with spmd(pool=P):
        c = codistributor1d(1, [3, 2], (5,))
        D = codistributed.build(np.full(3 if labindex() == 1 else 2, labindex() * 1.0), c, "noCommunication")
        c2 = codistributor2dbc([1, 2], 2, "row", (4, 5))
        E = codistributed.build(np.ones(c2.localShape(labindex(), 2)), c2, "noCommunication")
        same = D.codistributor == getCodistributor(D) and E.codistributor == c2
    assert np.array_equal(gather(D), [1, 1, 1, 2, 2]) and gather(E).shape == (4, 5)
    assert list(same) == [True, True]
    assert D.codistributor.Partition == [3, 2]
    with pytest.raises(SpmdError, match=r"the third argument can only be 'noCommunication'"):
        with spmd(pool=P):
            codistributed.build(np.ones(2), codistributor1d(1, [2, 2], (4,)), "nocomm")
    with pytest.raises(SpmdError, match=r"'noCommunication' needs a complete codistributor"):
        with spmd(pool=P):
            codistributed.build(np.ones(2), codistributor1d(1), "noCommunication")
    with spmd(pool=P):  # the pool is still usable
        ok = labindex()
    assert list(ok) == [1, 2]


@pytest.mark.timeout(90)
def test_rand_of_one_size_is_square_as_in_matlab(pools):
    P = pools(2)
    with spmd(pool=P):
        R = codistributed.rand(5)
    assert R.shape == (5, 5) and distributed.rand(4, pool=P).shape == (4, 4)
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    start = readme.index("### 5. A codistributed array")
    section = readme[start:readme.index("### 6.", start)]
    assert "codistributed.rand(n)" in section and "n x n" in section
