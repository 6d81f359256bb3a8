"""Code the client ships to the labs keeps its file and lines: every traceback and every
"running line N of ..." line names the user's file (functions defined in a script, given
to ``spmd_run``, spmdlab's MATLAB-named numerics used in a body; notebook cells are in
test_kernel.py), whatever cloudpickle ships it. cloudpickle 3.1 names the code of every
function it pickles by value ``<dynamic-code>``; ``.ci/run`` runs this file again with the
oldest cloudpickle ``pyproject.toml`` allows."""
from __future__ import annotations

import linecache
import os
import re
import subprocess
import sys
import textwrap

import pytest
from support.processes import child_pythonpath, run_script

from spmdlab.protocol import messages as protocol

# Run in a fresh interpreter: unpickle a function from stdin, call it, print the traceback.
LOAD_AND_CALL = """
import pickle, sys, traceback
fn = pickle.loads(sys.stdin.buffer.read())
try:
    fn()
except ZeroDivisionError:
    print(traceback.format_exc())
print("FILES", *sorted({fn.__code__.co_filename, *(c.co_filename for c in fn.__code__.co_consts
                                                 if hasattr(c, "co_filename"))}))
"""

HELPER = """\
def outer():
    def inner():
        return 1 / 0
    return inner()
"""


def ship_and_call(filename: str) -> str:
    """Compile ``HELPER`` as ``filename`` (a module the labs cannot import, so cloudpickle
    ships it by value), send ``outer`` as the client sends values, call it elsewhere."""
    namespace = {"__name__": "not_importable"}
    exec(compile(HELPER, filename, "exec"), namespace)
    head, payload, *buffers = protocol.dumps(namespace["outer"], user=True)
    assert not buffers
    result = subprocess.run([sys.executable, "-c", LOAD_AND_CALL], input=payload, capture_output=True,
                            env=dict(os.environ, PYTHONPATH=child_pythonpath()), timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


@pytest.mark.nompi
def test_shipped_functions_keep_their_file_and_lines(tmp_path):
    path = tmp_path / "helpers.py"
    path.write_text(HELPER)
    out = ship_and_call(str(path))
    assert f'  File "{path}", line 4, in outer\n    return inner()\n' in out, out
    assert f'  File "{path}", line 3, in inner\n    return 1 / 0\n' in out, out
    assert f"FILES {path}\n" in out and "dynamic-code" not in out, out


@pytest.mark.nompi
def test_shipped_functions_bring_the_lines_of_a_file_the_labs_cannot_read():
    # a notebook cell or a line typed at a prompt: its lines live in the client's linecache
    name = "/nonexistent/ipykernel_0/1234.py"
    linecache.cache[name] = (len(HELPER), None, HELPER.splitlines(True), name)
    try:
        out = ship_and_call(name)
    finally:
        del linecache.cache[name]
    assert f'  File "{name}", line 4, in outer\n    return inner()\n' in out, out
    assert f'  File "{name}", line 3, in inner\n    return 1 / 0\n' in out, out


HELPER_SCRIPT = """\
import os, time
import spmdlab
from spmdlab import spmd, labindex

def helper(x):
    def inner(y):
        return 1 / y
    if x == 2:
        open("napping", "w").close()
        time.sleep(60)  # where lab 2 is when lab 1 fails
    while not os.path.exists("napping"):
        time.sleep(0.02)
    return inner(x - 1)

with spmdlab.parpool(2):
    with spmd():
        z = helper(labindex())
"""


@pytest.mark.timeout(120)
def test_an_error_in_a_helper_of_the_script_names_the_script():
    result = run_script(HELPER_SCRIPT, timeout=90)
    err = result.stderr
    lab_part = err[err.index("Error detected on lab 1:"):]
    frames = re.findall(r'  File "(.*?)", line (\d+), in (\S+)\n    (.*)\n', lab_part)
    assert [(os.path.basename(f), *rest) for f, *rest in frames] == [
        ("script.py", "17", "<module>", "z = helper(labindex())"),
        ("script.py", "13", "helper", "return inner(x - 1)"),
        ("script.py", "7", "inner", "return 1 / y")], err
    script = frames[0][0]
    assert lab_part.endswith("Lab 2 was stopped because of this error:\n"
                             f"  lab 2: running line 10 of {script}\n"), err
    assert "dynamic-code" not in err and "spmdlab/" not in err, err


NUMERICS_SCRIPT = """\
import numpy as np
import spmdlab
from spmdlab import spmd, chol, codistributed, codistributor2dbc

with spmdlab.parpool(2):
    with spmd():
        D = codistributed(-np.eye(4), codistributor2dbc())
        R = chol(D)
"""


@pytest.mark.timeout(120)
def test_an_error_in_spmdlab_numerics_ends_at_the_users_line():
    result = run_script(NUMERICS_SCRIPT, timeout=90)
    err = result.stderr
    lab_part = err[err.index("Error detected on labs 1 and 2:"):]
    frames = re.findall(r'  File "(.*?)", line (\d+), in (\S+)\n', lab_part)
    assert [(os.path.basename(f), n, where) for f, n, where in frames] == [("script.py", "8", "<module>")], err
    assert "LinAlgError: chol: Matrix must be positive definite" in lab_part, err
    assert "dynamic-code" not in err and "spmdlab/" not in err, err


CTRL_C_SCRIPT = """\
import os, signal, threading, time
import spmdlab
from spmdlab import spmd, labindex

def nap():
    open(f"ready{labindex()}", "w").close()
    time.sleep(60)

def press_ctrl_c_when_both_nap():
    while not (os.path.exists("ready1") and os.path.exists("ready2")):
        time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGINT)

with spmdlab.parpool(2):
    threading.Thread(target=press_ctrl_c_when_both_nap, daemon=True).start()
    try:
        with spmd():
            nap()
    except KeyboardInterrupt as exc:
        print("INTERRUPTED", exc)
"""


@pytest.mark.timeout(120)
def test_ctrl_c_says_which_line_of_the_script_each_lab_ran():
    result = run_script(CTRL_C_SCRIPT, timeout=90)
    script = re.search(r"running line \d+ of (.*)", result.stdout)
    assert script and os.path.basename(script.group(1)) == "script.py", result.stdout + result.stderr
    assert result.stdout == textwrap.dedent(f"""\
        INTERRUPTED the labs were interrupted:
          lab 1: running line 7 of {script.group(1)}
          lab 2: running line 7 of {script.group(1)}
        """), result.stdout + result.stderr


@pytest.mark.timeout(120)
def test_a_function_typed_at_the_spmdlab_prompt_shows_its_lines_on_the_labs(pools, capsys):
    from spmdlab_repl.client import ClientConsole

    pools(2, current=True)
    console = ClientConsole()
    console.preload()
    console.run_source("def f(x):\n    return 1 / (x - 1)\n")
    console.run_source("with spmd():\n    y = f(labindex())\n")
    err = capsys.readouterr().err
    assert ('Error detected on lab 1:\nTraceback (most recent call last):\n'
            '  File "<spmdlab-2>", line 2, in <module>\n    y = f(labindex())\n') in err, err
    assert '  File "<spmdlab-1>", line 2, in f\n    return 1 / (x - 1)\n' in err, err
    assert "dynamic-code" not in err, err
