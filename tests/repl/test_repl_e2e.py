"""End to end: drive the real ``pmode start N`` and ``spmdlab`` REPLs in a pseudo-terminal
(pexpect) and through piped stdin, with real labs under mpiexec."""
from __future__ import annotations

import os
import re
import subprocess
import time
from collections import defaultdict

import pytest
from support.processes import CLIENT, PMODE, environment

pexpect = pytest.importorskip("pexpect")

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[=>()][0-9A-Za-z]?|\r")


class Repl:
    """A REPL in a pty. ``expect`` searches the output with terminal escapes removed,
    from where the last match ended; prompt_toolkit's cursor-position requests are answered
    so it draws its toolbar as in a real terminal."""

    live: list[Repl] = []  # closed after each test, passed or failed (see the fixture below)

    def __init__(self, argv: list[str], env: dict[str, str], size: tuple[int, int] = (40, 120)):
        Repl.live.append(self)
        self.child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", dimensions=size,
                                   cwd=env.get("XDG_DATA_HOME", None) and os.path.dirname(env["XDG_DATA_HOME"]))
        self.raw = ""
        self.pos = 0
        self.eof = False

    def pump(self, timeout: float = 0.1) -> None:
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return
        except pexpect.EOF:
            self.eof = True
            return
        if "\x1b[6n" in data:
            self.child.send("\x1b[1;1R")
        self.raw += data

    @property
    def text(self) -> str:
        return _ANSI.sub("", self.raw)

    def expect(self, pattern: str, timeout: float = 30, regex: bool = False) -> re.Match:
        rx = re.compile(pattern if regex else re.escape(pattern))
        deadline = time.monotonic() + timeout
        while True:
            m = rx.search(self.text, self.pos)
            if m:
                self.pos = m.end()
                return m
            if self.eof or time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} not seen; output since last match:\n{self.text[self.pos:]}")
            self.pump()

    def prompt(self, word: str = "P>>") -> None:
        self.expect(word)
        self.settle()

    def settle(self, quiet: float = 0.3, limit: float = 5.0) -> None:
        """Read until the program has been quiet for ``quiet`` seconds (the prompt is drawn),
        or for ``limit`` seconds at most (a running command redraws its status line)."""
        last = len(self.raw)
        deadline = time.monotonic() + quiet
        end = time.monotonic() + limit
        while time.monotonic() < min(deadline, end):
            self.pump(0.05)
            if len(self.raw) != last:
                last, deadline = len(self.raw), time.monotonic() + quiet

    def type(self, text: str) -> None:
        """Type ``text``; each ``\\n`` is the Enter key."""
        for i, line in enumerate(text.split("\n")):
            if i:
                self.child.send("\r")
                self.settle(0.15)
            if line:
                self.child.send(line)

    def run(self, text: str) -> None:
        self.type(text + "\n")

    def finish(self, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while not self.eof and time.monotonic() < deadline:
            self.pump()
        assert self.eof, f"the REPL did not exit; output:\n{self.text[self.pos:]}"
        self.child.close()
        return self.child.exitstatus


def process_tree(root: int) -> dict[int, str]:
    """pid -> command line of every live (non-zombie) descendant of ``root``."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,stat=,args="], capture_output=True, text=True).stdout
    children: dict[int, list[int]] = defaultdict(list)
    info: dict[int, tuple[str, str]] = {}
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) < 3:
            continue
        pid, ppid = int(parts[0]), int(parts[1])
        children[ppid].append(pid)
        info[pid] = (parts[2], parts[3] if len(parts) > 3 else "")
    found, todo = {}, list(children[root])
    while todo:
        pid = todo.pop()
        if not info[pid][0].startswith("Z"):
            found[pid] = info[pid][1]
        todo.extend(children[pid])
    return found


def assert_processes_gone(pids: dict[int, str], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while True:
        out = subprocess.run(["ps", "-eo", "pid=,stat=,args="], capture_output=True, text=True).stdout
        alive = {int(p[0]): p[2] for p in (line.split(None, 2) for line in out.splitlines())
                 if len(p) == 3 and int(p[0]) in pids and not p[1].startswith("Z")}
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not alive, f"left behind: {alive}"


@pytest.fixture(autouse=True)
def close_repls():
    """A failed test must not leave its REPL (and so its labs) running: hang up on it."""
    yield
    while Repl.live:
        repl = Repl.live.pop()
        if repl.child.isalive():
            tree = process_tree(repl.child.pid)
            repl.child.close(force=True)  # SIGHUP: pmode closes its pool
            assert_processes_gone(tree)


def start_pmode(tmp_path, n: int = 4, *extra: str) -> Repl:
    repl = Repl([*PMODE, "start", str(n), *extra], environment(tmp_path))
    repl.expect(f"Connected to {n} lab{'s' if n > 1 else ''} in")
    repl.prompt()
    return repl


def lab_tree(repl: Repl, n: int) -> dict[int, str]:
    tree = process_tree(repl.child.pid)
    assert sum("spmdlab.lab" in args for args in tree.values()) >= n, tree
    assert any("mpiexec" in args for args in tree.values()), tree
    return tree


# ---- pmode in a terminal -------------------------------------------------------------------


@pytest.mark.timeout(90)
def test_pmode_session_output_collapsed_and_distinct(tmp_path):
    repl = start_pmode(tmp_path)
    repl.expect("pool: 4 labs | idle")  # the toolbar
    repl.run("print('hello')")
    repl.expect("Labs 1-4:\n  hello\n")
    repl.prompt()
    repl.run("x = labindex()")
    repl.prompt()
    repl.run("x * 10")
    repl.expect("Lab 1:\n  10\nLab 2:\n  20\nLab 3:\n  30\nLab 4:\n  40\n")
    repl.prompt()
    # a block: Enter auto-indents the body; the empty line that ends it runs it
    typed_from = len(repl.raw)
    repl.type("for i in range(2):\nprint(i + x)\n\n")
    repl.expect("Lab 1:\n  1\n  2\nLab 2:\n  2\n  3\nLab 3:\n  3\n  4\nLab 4:\n  4\n  5\n")
    # the input was highlighted by pygments (a colour code around the keyword `for`)
    assert re.search(r"\x1b\[[0-9;]+mfor\x1b\[0m", repl.raw[typed_from:]), repr(repl.raw[typed_from:][:300])
    repl.prompt()
    repl.run("print('same' if x < 3 else 'other')")
    repl.expect("Labs 1-2:\n  same\nLabs 3-4:\n  other\n")
    repl.prompt()
    # `else:` typed where Enter left the cursor (the body's indentation) moves under its `if`
    repl.type("for i in range(x):\nif i % 2:\nprint('odd', i)\nelse:\nprint('even', i)\n\n")
    repl.expect("...     else:\n")
    repl.expect("Lab 1:\n  even 0\nLab 2:\n  even 0\n  odd 1\nLab 3:\n  even 0\n  odd 1\n  even 2\n")
    repl.prompt()
    repl.run("pmode exit")
    assert repl.finish() == 0


@pytest.mark.timeout(90)
def test_pmode_error_per_lab_then_continue(tmp_path):
    repl = start_pmode(tmp_path)
    repl.run("x = labindex()")
    repl.prompt()
    repl.type("def f(v):\nreturn 1 / (v - 2)\n\n")
    repl.prompt()
    repl.run("y = f(x)")
    m = repl.expect(r"(?s)Lab 2:\n(.*?)ZeroDivisionError: division by zero\n", regex=True)
    tb = m.group(1)
    assert 'File "<pmode-3>", line 1, in <module>' in tb and "y = f(x)" in tb
    assert 'File "<pmode-2>", line 2, in f' in tb and "return 1 / (v - 2)" in tb
    assert "spmdlab/" not in tb  # the user's lines only
    repl.prompt()
    repl.run("undefined_thing")
    repl.expect("Labs 1-4:\n  Traceback (most recent call last):\n")
    repl.expect("NameError: name 'undefined_thing' is not defined\n")
    repl.prompt()
    repl.run("x + 100")
    repl.expect("Lab 4:\n  104\n")
    repl.prompt()
    tree = lab_tree(repl, 4)
    repl.child.sendeof()  # Ctrl-D leaves too, with nothing left behind
    assert repl.finish() == 0
    assert_processes_gone(tree)


@pytest.mark.timeout(90)
def test_pmode_ctrl_c_interrupts_the_labs_and_keeps_the_session(tmp_path):
    repl = start_pmode(tmp_path)
    repl.run("x = labindex() * 2")
    repl.prompt()
    repl.type("while True: pass\n\n")  # a compound statement: the empty line runs it
    repl.settle(1.0)
    started = time.monotonic()
    repl.child.sendintr()
    repl.expect("KeyboardInterrupt")
    repl.prompt()
    assert time.monotonic() - started < 10
    repl.run("x")
    repl.expect("Lab 1:\n  2\nLab 2:\n  4\nLab 3:\n  6\nLab 4:\n  8\n")  # variables survive
    repl.prompt()
    repl.run("pmode exit")
    assert repl.finish() == 0


@pytest.mark.timeout(120)
def test_pmode_ctrl_c_wakes_sleeping_labs_and_restarts_stuck_ones(tmp_path):
    repl = start_pmode(tmp_path, 2)
    repl.run("x = labindex() * 2")
    repl.prompt()
    repl.run("import time; time.sleep(60)")
    repl.expect(" pool: 2 labs | running 1 s | Ctrl-C interrupts")  # the status line under a long command
    started = time.monotonic()
    repl.child.sendintr()
    repl.expect("KeyboardInterrupt: the labs were interrupted; their variables are kept.\n")
    repl.prompt()
    assert time.monotonic() - started < 10  # time.sleep was woken, not waited out
    repl.run("x")
    repl.expect("Lab 1:\n  2\nLab 2:\n  4\n")
    repl.prompt()
    # labs that cannot be interrupted (SIGINT blocked: like a long call into C) are replaced
    repl.run("import signal; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}); time.sleep(60)")
    repl.settle(1.0)
    repl.child.sendintr()
    repl.expect("Warning: labs 1 and 2 did not stop after Ctrl-C (busy in compiled code); restarting the pool.\n",
                timeout=40)
    repl.expect("KeyboardInterrupt: the pool was restarted; variables on the labs were lost.\n", timeout=40)
    repl.prompt()
    repl.run("print(numlabs())")
    repl.expect("Labs 1-2:\n  2\n")
    repl.prompt()
    tree = lab_tree(repl, 2)
    repl.run("pmode exit")
    assert repl.finish() == 0
    assert_processes_gone(tree)


@pytest.mark.timeout(90)
def test_pmode_lab2client_client2lab_round_trip(tmp_path):
    repl = start_pmode(tmp_path)
    repl.run("x = labindex() * 10")
    repl.prompt()
    repl.run("pmode lab2client x 3 y")
    repl.expect("x from lab 3 is now client variable y.")
    repl.prompt()
    repl.run("pmode client y")
    repl.expect("\n30\n")
    repl.prompt()
    repl.run("pmode client z = y + 5")
    repl.prompt()
    repl.run("pmode client2lab z [1 3] w")
    repl.expect("Client variable z is now w on labs 1 and 3.")
    repl.prompt()
    repl.run("print('w' in globals() and w)")
    repl.expect("Labs 1, 3:\n  35\nLabs 2, 4:\n  False\n")
    repl.prompt()
    repl.run("pmode client2lab z 9")
    repl.expect("labs are numbered 1..4 as in MATLAB")
    repl.prompt()
    repl.run("E = codistributed.zeros(4, 8)")
    repl.prompt()
    repl.run("E")
    repl.expect("Lab 1:\n  This lab stores E[:, 0:2].\n")
    repl.prompt()
    repl.run("pmode layout E")
    repl.expect("shape (4, 8), codistributor1d over 4 labs\n  lab 1: columns 0:2\n  lab 2: columns 2:4\n"
                "  lab 3: columns 4:6\n  lab 4: columns 6:8\n")
    repl.prompt()
    repl.run("pool = parpool(2)")
    repl.expect("pmode already has its pool of labs: `pmode restart` starts a fresh one")
    repl.prompt()
    repl.run("pmode exit")
    assert repl.finish() == 0


@pytest.mark.timeout(90)
def test_pmode_exit_leaves_no_process_behind(tmp_path):
    repl = start_pmode(tmp_path)
    tree = lab_tree(repl, 4)
    repl.run("pmode exit")
    assert repl.finish() == 0
    assert_processes_gone(tree)


@pytest.mark.timeout(90)
def test_pmode_hangup_leaves_no_process_behind(tmp_path):
    repl = start_pmode(tmp_path, 2)
    tree = lab_tree(repl, 2)
    repl.child.close(force=True)  # the terminal goes away: SIGHUP
    assert_processes_gone(tree)


@pytest.mark.timeout(90)
def test_pmode_tab_completion_grid_layout_streaming_and_history(tmp_path):
    repl = start_pmode(tmp_path)
    repl.run("alpha_value = labindex()")
    repl.prompt()
    repl.type("alpha_v")
    repl.settle(0.2)
    repl.child.send("\t")  # asks lab 1 for its names
    repl.expect("alpha_value")
    repl.settle(0.5)
    repl.type("\n")
    repl.expect("Lab 1:\n  1\nLab 2:\n  2\n")
    repl.prompt()
    repl.run("pmode layout grid")
    repl.expect("layout: grid")
    repl.prompt()
    repl.run("print(f'lab {labindex()}')")
    repl.expect(re.escape("Lab 1") + r" +\u2502 Lab 2 +\u2502 Lab 3 +\u2502 Lab 4\n", regex=True)
    repl.expect(r"lab 1 +\u2502 lab 2 +\u2502 lab 3 +\u2502 lab 4\n", regex=True)
    repl.prompt()
    repl.run("pmode layout stacked")
    repl.prompt()
    # a command still running after a second streams its lines as they come
    repl.type("import time\nfor i in range(3):\nprint('step', i, flush=True); time.sleep(0.7)\n\n")
    repl.expect("Lab 1: step 0\n")
    repl.expect("Lab 4: step 2\n")
    repl.prompt()
    repl.run("pmode exit")
    assert repl.finish() == 0
    history = (tmp_path / "xdg" / "spmdlab" / "pmode_history").read_text()
    assert "alpha_value = labindex()" in history and "pmode layout grid" in history
    # the next session (same user) recalls it with the Up arrow
    again = start_pmode(tmp_path, 1)
    again.child.send("\x1b[A")
    again.expect("pmode exit")
    again.child.send("\x1b[A")
    again.expect("print('step', i, flush=True)")  # a multi-line entry comes back whole
    again.child.sendintr()  # drop the recalled input
    again.prompt()
    again.child.sendeof()
    assert again.finish() == 0


# ---- pmode with piped stdin ------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_pmode_piped_stdin_plain_output(tmp_path):
    script = ("x = labindex()\nprint('hello')\nfor i in range(2):\n    print(i * x)\n\nx\n"
              "pmode lab2client x 2 y\npmode client y * 100\n1 / (x - 1)\nprint('still here')\nx;\n"
              "np.linalg.inv(np.zeros((2, 2)))\n")
    proc = subprocess.run(" ".join(PMODE) + " start 2", shell=True, input=script, capture_output=True,
                          text=True, timeout=50, env=environment(tmp_path))
    assert "\x1b" not in proc.stdout  # plain, uncoloured
    assert proc.stdout == (
        "Labs 1-2:\n  hello\n"
        "Lab 1:\n  0\n  1\nLab 2:\n  0\n  2\n"
        "Lab 1:\n  1\nLab 2:\n  2\n"
        "x from lab 2 is now client variable y.\n200\n"
        "Lab 1:\n  Traceback (most recent call last):\n    File \"<pmode-5>\", line 1, in <module>\n"
        "      1 / (x - 1)\n      ~~^~~~~~~~~\n  ZeroDivisionError: division by zero\n"  # ^ under its column
        "Lab 2:\n  1.0\n"  # a lab that finished still shows its value
        "Labs 1-2:\n  still here\n"
        "Labs 1-2:\n  Traceback (most recent call last):\n    File \"<pmode-8>\", line 1, in <module>\n"
        "      np.linalg.inv(np.zeros((2, 2)))\n  LinAlgError: Singular matrix\n"  # numpy's insides hidden
    ), proc.stdout + proc.stderr
    assert proc.returncode == 1  # an input failed


@pytest.mark.timeout(60)
def test_pmode_start_without_n_uses_the_default_size(tmp_path):
    env = dict(environment(tmp_path), SPMDLAB_NUM_LABS="3")
    proc = subprocess.run([*PMODE, "start"], input="print(numlabs())\n", capture_output=True, text=True,
                          timeout=50, env=env)
    assert proc.stdout == "Labs 1-3:\n  3\n", proc.stdout + proc.stderr
    assert proc.returncode == 0


def grid_example() -> tuple[str, str]:
    """The README's grid capture (repl/GRID_EXAMPLE.txt): its input and its output."""
    import spmdlab_repl  # repl/ in a checkout, spmdlab_repl/ when installed

    with open(os.path.join(os.path.dirname(spmdlab_repl.__file__), "GRID_EXAMPLE.txt"), encoding="utf-8") as f:
        lines = f.read().splitlines()[1:]  # line 1 is the command that made it
    typed = [line[4:] if line.startswith(("P>> ", "... ")) else "" for line in lines
             if line.startswith(("P>> ", "... ")) or line == "..."]
    return "\n".join(typed) + "\n", "\n".join(lines) + "\n"


@pytest.mark.timeout(90)
def test_grid_example_is_real_output(tmp_path):
    typed, shown = grid_example()
    env = dict(environment(tmp_path), COLUMNS="100")
    proc = subprocess.run([*PMODE, "start", "4", "--layout", "grid", "--echo"], input=typed, capture_output=True,
                          text=True, timeout=80, env=env)
    assert proc.stdout == shown, proc.stdout + proc.stderr


@pytest.mark.timeout(60)
def test_pmode_piped_codistributed_shows_local_parts(tmp_path):
    script = "D = codistributed(np.arange(8.0))\nD\ngetLocalPart(D)\n"
    proc = subprocess.run([*PMODE, "start", "2"], input=script, capture_output=True, text=True, timeout=50,
                          env=environment(tmp_path))
    out = proc.stdout
    assert "Lab 1:\n  This lab stores D[0:4]" in out and "Lab 2:\n  This lab stores D[4:8]" in out, out + proc.stderr
    assert out.endswith("Lab 1:\n  array([0., 1., 2., 3.])\nLab 2:\n  array([4., 5., 6., 7.])\n"), out
    assert proc.returncode == 0


@pytest.mark.timeout(60)
def test_pmode_piped_lab_death_restarts_the_pool(tmp_path):
    script = "import os\nif labindex() == 2:\n    os.kill(os.getpid(), 9)\n\nprint('after', labindex())\n"
    proc = subprocess.run([*PMODE, "start", "3"], input=script, capture_output=True, text=True, timeout=50,
                          env=environment(tmp_path))
    out = proc.stdout
    assert "Lab 2 died (killed by SIGKILL" in out and "The pool is running again" in out, out + proc.stderr
    assert out.endswith("Lab 1:\n  after 1\nLab 2:\n  after 2\nLab 3:\n  after 3\n"), out


# ---- the spmdlab client-mode REPL -----------------------------------------------------------


@pytest.mark.timeout(60)
def test_client_repl_piped_with_spmd(tmp_path):
    script = ("n = 10\nwith spmd():\n    x = labindex() * n\n    print('on lab', labindex())\n\n"
              "print(x[2], list(x))\nwith spmd():\n    y = 1 / (labindex() - 2)\n\nprint('survived')\n")
    proc = subprocess.run([*CLIENT, "-n", "2"], input=script, capture_output=True, text=True, timeout=50,
                          env=environment(tmp_path))
    lines = proc.stdout.splitlines()
    assert sorted(lines[:2]) == ["Lab 1: on lab 1", "Lab 2: on lab 2"], proc.stdout + proc.stderr
    assert lines[2:] == ["20 [10, 20]", "survived"]
    assert "Error detected on lab 2" in proc.stderr and "y = 1 / (labindex() - 2)" in proc.stderr
    assert 'File "<spmdlab-4>", line 1, in <module>' in proc.stderr
    assert proc.returncode == 1


@pytest.mark.timeout(90)
def test_client_repl_in_a_terminal(tmp_path):
    repl = Repl([*CLIENT, "-n", "3"], environment(tmp_path))
    repl.expect("with spmd():` blocks run on the labs")
    repl.prompt(">>>")
    repl.type("with spmd():\nz = labindex() ** 2\n\n")
    repl.prompt(">>>")
    repl.run("list(z)")
    repl.expect("[1, 4, 9]")
    repl.prompt(">>>")
    repl.type("with spmd():\nprint('hi from', labindex())\n\n")
    repl.expect("Lab 3: hi from 3")
    repl.prompt(">>>")
    tree = lab_tree(repl, 3)
    repl.child.sendeof()
    assert repl.finish() == 0
    assert_processes_gone(tree)
