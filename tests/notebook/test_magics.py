"""The notebook magics: their logic without IPython, then IPython's terminal in a pty."""
from __future__ import annotations

import os
import re
import sys
import time

import pytest
from support.processes import child_pythonpath

from spmdlab.notebook import cells as magic_logic
from spmdlab.notebook.cells import SpmdOptions, parse_cell, parse_options, pmode_transform


@pytest.mark.nompi
@pytest.mark.parametrize("line, opts", [
    ("", SpmdOptions()),
    ("-n 2", SpmdOptions(n=2)),
    ("-m 2 -n 4 --timeout 1.5", SpmdOptions(m=2, n=4, timeout=1.5)),
    ("--timeout=3", SpmdOptions(timeout=3.0)),
    ("--pmode", SpmdOptions(pmode=True)),
])
def test_parse_options(line, opts):
    assert parse_options(line) == opts


@pytest.mark.nompi
@pytest.mark.parametrize("line, message", [
    ("-x", "unknown option '-x'"), ("-n", "-n needs a value"), ("-n two", "-n takes a number"),
    ("-m 3 -n 2", "-m 3 is more than -n 2"), ("--timeout 0", "--timeout must be positive"),
])
def test_parse_options_errors(line, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_options(line)


@pytest.mark.nompi
def test_notebook_tracebacks_hide_the_librarys_frames(tmp_path):
    """Frames of spmdlab's code (any subpackage: pmode's shared code runs in the notebook
    too) are cut from a notebook traceback; the user's frames around them stay."""
    pytest.importorskip("IPython")
    from spmdlab.notebook import magics
    from spmdlab.protocol.calls import map_leaves

    user = {"__name__": "__main__", "map_leaves": map_leaves}
    exec(compile("def cell():\n    return map_leaves([1], lambda v: 1 / 0)\n", str(tmp_path / "cell.py"), "exec"), user)
    try:
        user["cell"]()
    except ZeroDivisionError as exc:
        tb = magics._user_traceback(exc.__traceback__)
    names = []
    while tb is not None:
        names.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    assert names == ["test_notebook_tracebacks_hide_the_librarys_frames", "cell", "<lambda>"]


@pytest.mark.nompi
def test_spmd_args_follow_matlab():
    assert SpmdOptions(n=2).spmd_args() == (2, None)
    assert SpmdOptions(m=2, n=4).spmd_args() == (2, 4)
    assert SpmdOptions(m=2).spmd_args() == (2, None)


@pytest.mark.nompi
def test_parse_cell_reads_writes_and_line_numbers():
    body = parse_cell("import numpy as np\ncomm = MPI.COMM_WORLD\ny = comm.rank + x\n", "<c>", 2)
    assert body.reads == {"MPI", "x"}  # comm is assigned before it is read: not sent
    assert body.writes == ["comm", "y"] and body.firstlineno == 2
    with pytest.raises(SyntaxError, match="'return' is not allowed in an spmd block") as info:
        parse_cell("x = 1\nreturn x\n", "<c>", 2)
    assert info.value.lineno == 3


@pytest.mark.nompi
def test_pmode_transform():
    assert pmode_transform(["x = 1\n"]) == ["%%spmd --pmode\n", "x = 1\n"]
    assert pmode_transform(["%pmode exit\n"]) == ["%pmode exit\n"]
    assert pmode_transform(["pmode exit\n"]) == ["%pmode exit\n"]
    assert pmode_transform(["pmode lab2client x 2 y\n"]) == ["%pmode lab2client x 2 y\n"]
    assert pmode_transform(["pmode = 3\n"]) == ["%%spmd --pmode\n", "pmode = 3\n"]
    assert pmode_transform(["%%time\n", "x = 1\n"]) == ["%%time\n", "x = 1\n"]
    assert pmode_transform(["\n"]) == ["\n"]


@pytest.mark.nompi
def test_lab_defaults_are_the_lab_api_and_numpy():
    names = magic_logic.lab_defaults()
    assert {"np", "labindex", "gplus", "codistributed"} <= set(names)
    assert not {"spmd", "parpool", "Composite", "distributed", "plot_layout"} & set(names)


# ---- IPython's terminal in a pseudo-terminal ----------------------------------------------
pexpect = pytest.importorskip("pexpect")
pytest.importorskip("IPython")


def ipython():
    env = dict(os.environ, PYTHONPATH=child_pythonpath(), SPMDLAB_NUM_LABS="2", TERM="dumb")
    child = pexpect.spawn(sys.executable, ["-m", "IPython", "--simple-prompt", "--no-banner",
                                           "--colors=NoColor", "--HistoryManager.enabled=False"],
                          env=env, encoding="utf-8", timeout=60, dimensions=(40, 200))
    child.expect(r"In \[1\]: ")
    return child


def run(child, text: str, n: int) -> str:
    child.send(text)
    child.expect(rf"In \[{n}\]: ")
    return child.before.replace("\r\n", "\n")


@pytest.mark.timeout(120)
def test_ipython_terminal_spmd_magic_and_ctrl_c():
    child = ipython()
    try:
        run(child, "%load_ext spmdlab\n", 2)
        out = run(child, "%%spmd\nfrom spmdlab import labindex\nx = labindex() * 10\nprint('hi', x)\n\n\n", 3)
        assert re.search(r"Starting parallel pool with 2 labs \.\.\. connected in \d+\.\d s\n", out)
        assert sorted(re.findall(r"Lab \d: hi \d+", out)) == ["Lab 1: hi 10", "Lab 2: hi 20"]
        out = run(child, "print(x[1] + x[2])\n", 4)
        assert "30\n" in out
        child.send("%%spmd\nimport time\ntime.sleep(30)\n\n\n")
        time.sleep(3)
        child.sendintr()
        child.expect(r"In \[5\]: ")
        out = child.before.replace("\r\n", "\n")
        assert "KeyboardInterrupt" in out and "spmdlab/" not in out and "pool.py" not in out
        report = [line for line in out[out.index("KeyboardInterrupt"):].splitlines() if line.strip()]
        assert report[0].startswith("KeyboardInterrupt") and report[1] == "Cell In[4], line 1", out
        assert report[-3:] == ["KeyboardInterrupt: the labs were interrupted:",
                               "  lab 1: running line 3 of Cell In[4]",
                               "  lab 2: running line 3 of Cell In[4]"] and len(report) == 6, out
        out = run(child, "from spmdlab import spmd, labindex\n", 6)
        out = run(child, "%spmd y = labindex() + 1\n", 7)
        out = run(child, "print(list(y))\n", 8)
        assert "[2, 3]\n" in out
        out = run(child, "with spmd():\n    w = 2\n    z = w / (labindex() - 1)\n\n", 9)
        assert "Error detected on lab 1:" in out and "Cell In[8], line 3, in <module>" in out
        assert "ZeroDivisionError: division by zero" in out and "spmdlab/" not in out
        child.sendline("exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


USAGE_SCRIPT = r'''
from IPython.core.interactiveshell import InteractiveShell
sh = InteractiveShell.instance()
sh.run_line_magic("load_ext", "spmdlab")
for cell in ["%pmode", "%pmode bogus", "%pmode start two", "%%spmd -x\nx = 1\n", "%spmd", "%pmode exit"]:
    print("CELL", cell.split("\n")[0])
    sh.run_cell(cell)
'''


@pytest.mark.nompi
@pytest.mark.timeout(60)
def test_magic_usage_errors_need_no_pool():
    import subprocess

    env = dict(os.environ, PYTHONPATH=child_pythonpath())
    result = subprocess.run([sys.executable, "-c", USAGE_SCRIPT], capture_output=True, text=True, timeout=50, env=env)
    text = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)
    assert "UsageError: usage: %pmode start [N] | exit | lab2client" in text
    assert "UsageError: unknown command '%pmode bogus'; use start, exit, lab2client or client2lab" in text
    assert "UsageError: usage: %pmode start [N]  (N labs, a positive whole number)" in text
    assert "UsageError: unknown option '-x'; usage: %%spmd [-n N] [-m M] [--timeout SECONDS]" in text
    assert "UsageError: usage: %spmd <statement>" in text
    assert "pmode is not running." in text
    assert "Starting parallel pool" not in text


@pytest.mark.timeout(240)
def test_notebook_lab2client_and_client2lab_share_the_repls_copies(pool4):
    """%pmode lab2client / client2lab (the REPL's copies in spmdlab.pmode): a lab's value to
    the client, a client value onto some labs (the others keep theirs), and the refusals."""
    from spmdlab import Composite, distributed, gather
    from spmdlab.pmode.copies import CopyError

    ns: dict = {"labindex": __import__("spmdlab").labindex}
    magic_logic.run_cell("x = labindex() * 10\n", ns, SpmdOptions(), "<cell-1>", 1)
    assert magic_logic.lab2client(ns, "x", 3, "y") == "x from lab 3 is now client variable y."
    assert ns["y"] == 30
    assert magic_logic.client2lab(ns, "y", [1, 2], "x") == "Client variable y is now x on labs 1 and 2."
    assert isinstance(ns["x"], Composite) and list(ns["x"]) == [30, 30, 30, 40]
    assert magic_logic.client2lab(ns, "y", [4], "fresh") == "Client variable y is now fresh on lab 4."
    assert [ns["fresh"].exist(lab) for lab in (1, 4)] == [False, True] and ns["fresh"][4] == 30
    with pytest.raises(CopyError, match="there is no lab variable 'nothing'"):
        magic_logic.lab2client(ns, "nothing", 1, "z")
    with pytest.raises(CopyError, match="there is no client variable 'q'"):
        magic_logic.client2lab(ns, "q", [1], "z")
    ns["D"] = distributed(__import__("numpy").arange(8.0))
    with pytest.raises(CopyError, match=r"D is a distributed array: use gather\(D\)"):
        magic_logic.lab2client(ns, "D", 1, "z")
    assert gather(ns["D"]).tolist() == list(range(8))
