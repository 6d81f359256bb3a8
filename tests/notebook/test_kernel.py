"""A real Jupyter kernel driven message by message: Ctrl-C (the stop button) during a
block, and the live "running" line that disappears when the block ends."""
from __future__ import annotations

import json
import os
import queue
import re
import sys
import threading
import time

import pytest
from support.processes import child_pythonpath

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def kernel(tmp_path):
    spec_dir = tmp_path / "kernels" / "spmdlab-test"
    spec_dir.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "spmdlab test", "language": "python", "interrupt_mode": "signal",
            "env": {"PYTHONPATH": child_pythonpath(), "SPMDLAB_NUM_LABS": "2",
                    "SPMDLAB_TEST_SESSION": os.environ.get("SPMDLAB_TEST_SESSION", "")}}
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    ksm = jupyter_client.kernelspec.KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")])
    km = jupyter_client.KernelManager(kernel_name="spmdlab-test", kernel_spec_manager=ksm)
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def execute(kc, code: str, timeout: float = 60, during=None) -> list[dict]:
    """Run ``code``; the iopub messages of that execution, until the kernel is idle."""
    msg_id = kc.execute(code)
    if during is not None:
        threading.Thread(target=during, daemon=True).start()
    messages = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return messages
        messages.append(msg)
    raise AssertionError(f"no idle after {timeout} s: {[m['msg_type'] for m in messages]}")


def streams(messages) -> str:
    return "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")


@pytest.mark.timeout(180)
def test_stop_button_interrupts_the_labs_and_running_line_comes_and_goes(kernel):
    km, kc = kernel
    execute(kc, "import spmdlab\nfrom spmdlab import labindex\n%load_ext spmdlab\npool = spmdlab.parpool(2)")
    # a block of 4.5 s shows the running line (after 3 s) and empties it at the end
    msgs = execute(kc, "%%spmd\nimport time\ntime.sleep(4.5)\nx = labindex()")
    shown = [m for m in msgs if m["msg_type"] in ("display_data", "update_display_data")]
    assert shown, [m["msg_type"] for m in msgs]
    texts = [m["content"]["data"]["text/plain"] for m in shown]
    assert texts[0] == "running 3 s on 2 labs (Ctrl-C interrupts)" and texts[-1] == ""
    assert shown[0]["msg_type"] == "display_data" and shown[-1]["msg_type"] == "update_display_data"
    # the stop button: an interrupt while the labs sleep
    msgs = execute(kc, "%%spmd\nimport time\ntime.sleep(60)", during=lambda: (time.sleep(2), km.interrupt_kernel()))
    errors = [m for m in msgs if m["msg_type"] == "error"]
    assert len(errors) == 1 and errors[0]["content"]["ename"] == "KeyboardInterrupt"
    tb = ANSI.sub("", "\n".join(errors[0]["content"]["traceback"]))
    assert "spmdlab/" not in tb and "pool.py" not in tb and "Cell In[" in tb, tb
    # the KeyboardInterrupt says where each lab was stopped, in the cell's IPython name
    assert tb.rstrip().endswith("KeyboardInterrupt: the labs were interrupted:\n"
                                "  lab 1: running line 3 of Cell In[3]\n  lab 2: running line 3 of Cell In[3]"), tb
    assert len([line for line in tb.splitlines() if line.strip()]) <= 8, tb
    # --timeout and -n as spmd(n, timeout=...)
    msgs = execute(kc, "%%spmd -n 1 --timeout 1\nimport time\ntime.sleep(30)")
    errors = [m for m in msgs if m["msg_type"] == "error"]
    assert len(errors) == 1 and errors[0]["content"]["ename"] == "SpmdTimeoutError"
    assert errors[0]["content"]["evalue"].startswith("the spmd block timed out after 1 s; lab 1 had not finished:")
    # the pool is still there and usable
    msgs = execute(kc, "%spmd y = labindex() * 3\nprint(list(y), list(x))")
    assert streams(msgs) == "[3, 6] [1, 2]\n"
    execute(kc, "pool.close()")


def error_text(messages) -> str:
    errors = [m for m in messages if m["msg_type"] == "error"]
    assert len(errors) == 1, [m["msg_type"] for m in messages]
    return ANSI.sub("", "\n".join(errors[0]["content"]["traceback"]))


def execution_count(messages) -> int:
    return next(m["content"]["execution_count"] for m in messages if m["msg_type"] == "execute_input")


@pytest.mark.timeout(180)
def test_helpers_defined_in_a_cell_are_named_as_ipython_names_the_cell(kernel, tmp_path):
    km, kc = kernel
    execute(kc, "import time\nimport spmdlab\nfrom spmdlab import labindex\n%load_ext spmdlab\npool = spmdlab.parpool(2)")
    cell = execution_count(execute(kc, "def helper(x):\n    return 1 / (x - 1)\n\n"
                                       "def nap():\n    open(f'ready{labindex()}', 'w').close()\n    time.sleep(60)"))
    in_helper = f"  Cell In[{cell}], line 2, in helper\n    return 1 / (x - 1)\n"
    tb = error_text(execute(kc, "%%spmd\ny = helper(labindex())"))
    assert "Error detected on lab 1:\nTraceback (most recent call last):\n" in tb and in_helper in tb, tb
    assert "dynamic-code" not in tb and "ipykernel_" not in tb, tb
    tb = error_text(execute(kc, "spmdlab.spmd_run(helper, 1)"))
    assert "Error detected on labs 1 and 2:\nTraceback (most recent call last):\n" + in_helper in tb, tb
    assert "dynamic-code" not in tb and "ipykernel_" not in tb, tb

    def interrupt_when_both_nap():
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"ready{lab}").exists() for lab in (1, 2)) and time.monotonic() < deadline:
            time.sleep(0.02)
        km.interrupt_kernel()

    tb = error_text(execute(kc, "%%spmd\nnap()", during=interrupt_when_both_nap))
    assert tb.rstrip().endswith("KeyboardInterrupt: the labs were interrupted:\n"
                                f"  lab 1: running line 6 of Cell In[{cell}]\n"
                                f"  lab 2: running line 6 of Cell In[{cell}]"), tb
    execute(kc, "pool.close()")
