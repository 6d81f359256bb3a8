"""MATLAB habits and plain messages: tracebacks without internals, grammar, closed pools,
modules kept between blocks, names assigned before they are read, displayed names."""
from __future__ import annotations

import re

import pytest
from support.processes import run_script

from spmdlab.errors import RemoteError, SpmdError, labs_verb, labs_words


@pytest.mark.nompi
def test_labs_in_sentences():
    assert labs_words([2]) == "lab 2"
    assert labs_words([1, 3]) == "labs 1 and 3"
    assert labs_words([1, 2, 3, 5]) == "labs 1-3 and 5"
    assert labs_words([1, 3, 5]) == "labs 1, 3 and 5"
    assert labs_words([1, 2, 3, 4]) == "labs 1-4"
    assert labs_verb([2], "had", "had") == "lab 2 had"
    assert labs_verb([1, 3], "was", "were") == "labs 1 and 3 were"


@pytest.mark.nompi
def test_error_message_names_the_stopped_labs():
    err = SpmdError.from_lab_errors({3: RemoteError("ValueError", "no")}, stopped={1: "", 2: "", 4: ""})
    assert str(err) == "Error detected on lab 3:\nValueError: no\n\nLabs 1, 2 and 4 were stopped because of this error."
    one = SpmdError.from_lab_errors({1: RemoteError("E", "x"), 3: RemoteError("E", "x")},
                                    stopped={2: "waiting in labBarrier()"})
    assert str(one) == ("Error detected on labs 1 and 3:\nE: x\n\nLab 2 was stopped because of this error:\n"
                        "  lab 2: waiting in labBarrier()")
    assert one.stopped == {2: "waiting in labBarrier()"}


SCRIPT = '''\
import os, sys
os.environ["SPMDLAB_NUM_LABS"] = "4"
import numpy as np
from spmdlab import spmd, labindex, parpool, gcp, codistributed, Composite
with parpool(4):
    with spmd():
        comm = labindex()
old = comm                     # a Composite of the pool just closed
print("CLOSED", repr(old).splitlines()[0])
with spmd():
    import math
with spmd():
    root = math.sqrt(labindex())      # math was imported by the block before
    comm = labindex() * 2             # assigned before read: the old client comm is not sent
    twice = comm + 1
print("ROOT", round(root[4], 3), "TWICE", list(twice))
with spmd(2):
    E = codistributed.zeros(6, 4)
    print(repr(E).splitlines()[0])
with spmd():
    import time
    if labindex() == 3:
        raise ValueError("lab three")
    time.sleep(20)
'''


@pytest.mark.timeout(120)
def test_script_habits_and_a_traceback_without_internals():
    result = run_script(SCRIPT, timeout=90)
    out, err = result.stdout, result.stderr
    assert "CLOSED Composite with 4 elements (its pool was closed: the values are lost)\n" in out
    assert "ROOT 2.0 TWICE [3, 5, 7, 9]" in out
    assert sorted(re.findall(r"Lab \d: This lab stores .*", out)) == [
        "Lab 1: This lab stores E[:, 0:2].", "Lab 2: This lab stores E[:, 2:4]."]
    assert result.returncode == 1
    assert err.startswith("Starting parallel pool with 4 labs ... connected in "), err
    tb = err[err.index("Traceback"):]
    assert "spmdlab/" not in tb and "pool.py" not in tb, tb
    frames = re.findall(r'  File "(.*?)", line (\d+)', tb)
    assert [(f.rsplit("/", 1)[-1], n) for f, n in frames] == [("script.py", "20"), ("script.py", "23")], tb
    assert "spmdlab.errors.SpmdError: Error detected on lab 3:\n" in tb
    assert "ValueError: lab three\n\nLabs 1, 2 and 4 were stopped because of this error:\n" in tb
    assert re.findall(r"  lab (\d): running line \d+ of (.*)", tb) == [(lab, frames[0][0]) for lab in "124"], tb


LONG = '''\
import os
os.environ["SPMDLAB_NUM_LABS"] = "2"
from spmdlab import spmd, labindex, parpool
import time
with parpool(2):
    with spmd():
        time.sleep(4.5)
        print("slept", labindex())
print("done")
'''


@pytest.mark.timeout(120)
def test_running_line_on_a_terminal_only(tmp_path):
    pexpect = pytest.importorskip("pexpect")
    import os
    import sys

    from support.processes import child_pythonpath

    script = tmp_path / "long.py"
    script.write_text(LONG)
    env = dict(os.environ, PYTHONPATH=child_pythonpath())
    env.pop("SPMDLAB_QUIET", None)
    child = pexpect.spawn(sys.executable, [str(script)], env=env, encoding="utf-8", timeout=60)
    child.expect(pexpect.EOF)
    out = child.before
    assert "running 3 s on 2 labs (Ctrl-C interrupts)" in out
    assert "running 4 s on 2 labs (Ctrl-C interrupts)\r\x1b[K" in out  # redrawn in place, then erased
    # lab output is written on a clean line, and the line is gone at the end
    assert "\r\x1b[KLab 1: slept 1\r\n" in out and "\r\x1b[KLab 2: slept 2\r\n" in out, repr(out)
    assert out.endswith("\r\x1b[Kdone\r\n"), repr(out)
    piped = run_script(LONG, timeout=60)
    assert "running" not in piped.stdout + piped.stderr and piped.stdout.endswith("done\n")
    quiet = pexpect.spawn(sys.executable, [str(script)], env=dict(env, SPMDLAB_QUIET="1"), encoding="utf-8",
                          timeout=60)
    quiet.expect(pexpect.EOF)
    assert "running" not in quiet.before


@pytest.mark.timeout(60)
def test_spmd_run_error_shows_the_users_function_not_the_generated_call():
    result = run_script("import spmdlab\n"
                        "def f():\n"
                        "    return 1 / (spmdlab.labindex() - 1)\n"
                        "with spmdlab.parpool(2):\n"
                        "    spmdlab.spmd_run(f)\n", timeout=50)
    lab_part = result.stderr[result.stderr.index("Error detected on lab 1:"):]
    assert "<spmd_run>" not in lab_part and "__spmd_fn" not in lab_part
    assert re.search(r'File ".*script\.py", line 3, in f\n    return 1 / \(spmdlab\.labindex\(\) - 1\)', lab_part)
    assert "pool.py" not in result.stderr
