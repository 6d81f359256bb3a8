"""The pmode REPL's logic without a terminal or MPI: command parsing, input completeness,
grouping and grid layout, completion, and a session driven against an in-process fake pool."""
from __future__ import annotations

import ast
import contextlib
import io
import traceback

import pytest

from spmdlab.errors import LabDiedError, RemoteError, SpmdError
from spmdlab.pmode import commands, inputs, output
from spmdlab.pmode.commands import Command, CommandError
from spmdlab.pmode.output import Collector, Printer
from spmdlab_repl import completion
from spmdlab_repl.session import PmodeSession, lab_imports

pytestmark = pytest.mark.nompi  # pure logic: no MPI, no lab

# ---- command parsing ---------------------------------------------------------------------


@pytest.mark.parametrize("line, expected", [
    ("pmode lab2client x 2 y", Command("lab2client", labvar="x", clientvar="y", labs=[2])),
    ("pmode lab2client x 3", Command("lab2client", labvar="x", clientvar="x", labs=[3])),
    ("pmode client2lab y 1:3 x", Command("client2lab", labvar="x", clientvar="y", labs=[1, 2, 3])),
    ("pmode client2lab y [1 3]", Command("client2lab", labvar="y", clientvar="y", labs=[1, 3])),
    ("  pmode client2lab y [2, 4] z ", Command("client2lab", labvar="z", clientvar="y", labs=[2, 4])),
    ("pmode exit", Command("exit")),
    ("pmode quit", Command("exit")),
    ("exit()", Command("exit")),
    ("quit", Command("exit")),
    ("pmode help", Command("help")),
    ("pmode", Command("help")),
    ("pmode layout grid", Command("layout", layout="grid")),
    ("pmode layout", Command("layout")),
    ("pmode layout D", Command("layoutmap", labvar="D")),
    ("pmode restart", Command("restart")),
    ("pmode client y = [1, 2]  ", Command("client", code="y = [1, 2]")),
    ("pmode client x", Command("client", code="x")),
])
def test_parse_commands(line, expected):
    assert commands.parse(line, 4) == expected


@pytest.mark.parametrize("line", ["x = 1", "pmode = 3", "pmode.x", "pmode(1)", "print('pmode exit')",
                                  "for i in x:\n    pmode exit", "exit = 2", "pmodes exit"])
def test_python_code_is_not_a_command(line):
    assert commands.parse(line, 4) is None


@pytest.mark.parametrize("line, message", [
    ("pmode lab2client x 5", "labs are numbered 1..4 as in MATLAB"),
    ("pmode lab2client x 0", "labs are numbered 1..4"),
    ("pmode lab2client x 1:2", "from one lab"),
    ("pmode lab2client x", "usage: pmode lab2client"),
    ("pmode lab2client 1x 2", "Python variable name"),
    ("pmode client2lab y a:b", "cannot read 'a:b' as labs"),
    ("pmode client2lab y 2 for", "Python variable name"),
    ("pmode layout grid D", "usage: pmode layout grid|stacked"),
    ("pmode layout 3x", "usage: pmode layout grid|stacked"),
    ("pmode frobnicate", "unknown command 'pmode frobnicate'"),
    ("pmode client", "usage: pmode client"),
    ("pmode exit now", "takes no arguments"),
])
def test_command_errors(line, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace("|", r"\|").replace(".", r"\.")):
        commands.parse(line, 4)


@pytest.mark.parametrize("spec, labs", [
    ("2", [2]), ("1:3", [1, 2, 3]), ("[1 3]", [1, 3]), ("[1,3]", [1, 3]), ("1:2:7", [1, 3, 5, 7]),
    (":", list(range(1, 9))), ("[3 1 3]", [1, 3]), ("[1:2, 6]", [1, 2, 6]), ("8:-2:5", [6, 8]),
])
def test_parse_labs(spec, labs):
    assert commands.parse_labs(spec, 8) == labs


def test_help_mentions_every_command():
    for word in ("lab2client", "client2lab", "client", "layout", "exit", "restart"):
        assert f"pmode {word}" in commands.HELP


# ---- input completeness, indentation, piped blocks ----------------------------------------


@pytest.mark.parametrize("text, more", [
    ("x = 1", False), ("", False), ("   ", False), ("for i in range(3):", True),
    ("for i in range(3):\n    print(i)", True), ("for i in range(3):\n    print(i)\n", False),
    ("for i in range(3):\n    print(i)\n    ", False), ("x = [1,", True), ("x = [1,\n 2]", False),
    ('s = """abc', True), ('s = """abc\n   def"""', False), ("if x:\n    a\nelse:", True),
    ("x = 1 +", False), ("def f(:", False), ("@dec", True), ("x = 1; y = 2", False),
    ("if x: pass", True), ("x = \\", True), ("class A:\n    pass\n\n", False),
])
def test_needs_more(text, more):
    assert inputs.needs_more(text) is more


@pytest.mark.parametrize("before, indent", [
    ("for i in x:", "    "), ("    y = 2", "    "), ("        return y", "    "), ("    pass", ""),
    ("x = 1", ""), ("if a:  # comment", "    "), ("def f():\n    if y:", "        "),
])
def test_next_indent(before, indent):
    assert inputs.next_indent(before) == indent


def test_dedent_width():
    assert inputs.dedent_width("for x:\n        ") == 4
    assert inputs.dedent_width("      ") == 2
    assert inputs.dedent_width("  ") == 0
    assert inputs.dedent_width("  x") == 0


def test_iter_blocks_like_the_python_repl():
    text = ("x = 1\n\n\nfor i in range(2):\n    print(i)\n\nif x:\n    a = 1\nelse:\n    a = 2\n\n"
            "def f():\n    return 1\nf()\ny = [1,\n\n 2]\npmode exit\nz = (\n")
    assert list(inputs.iter_blocks(io.StringIO(text))) == [
        "x = 1", "for i in range(2):\n    print(i)", "if x:\n    a = 1\nelse:\n    a = 2",
        "def f():\n    return 1", "f()", "y = [1,\n\n 2]", "pmode exit", "z = (",
    ]


@pytest.mark.parametrize("before, fixed", [
    ("if a:\n    b()\n    else:", "else:"),
    ("for i in x:\n    if a:\n        b()\n        else:", "    else:"),
    ("for i in x:\n    if a:\n        b()\n    else:", None),  # already lined up with its `if`
    ("if a:\n    b()\nelse:", None),
    ("if a:\n    b()\n    elif c:  # note", "elif c:  # note"),
    ("try:\n    with f:\n        g()\n        except ValueError as e:", "except ValueError as e:"),
    ("try:\n    g()\nexcept E:\n    h()\n    finally:", "finally:"),
    ("for i in x:\n    g()\n    else:", "else:"),  # for ... else
    ("while 1:\n    g()\n    elif x:", None),  # no `if` to belong to
    ("def f():\n    return 1\n    else:", None),
    ("x = 1\n    else:", None), ("    y = 2", None), ("if a:\n    b()\n    else_x = 1", None),
])
def test_keyword_indent_moves_else_to_its_if(before, fixed):
    assert inputs.keyword_indent(before) == fixed


@pytest.mark.parametrize("source, suppressed", [
    ("x;", True), ("x = 1\nx ;  # quiet", True), ("x", False), ("x = 1;", True), ("s = ';'", False),
    ("x  # ;", False), ("for i in y:\n    i;", True), ("(1,\n", False), ("", False),
])
def test_a_trailing_semicolon_suppresses_the_echo(source, suppressed):
    assert inputs.echo_suppressed(source) is suppressed


# ---- grouping and layouts ---------------------------------------------------------------


def plain(frags):
    return "".join(text for _, text in frags)


def test_header_reuses_the_library_labels():
    assert output.header([1, 2, 3, 4]) == "Labs 1-4:"
    assert output.header([3]) == "Lab 3:"
    assert output.header([1, 2, 4]) == "Labs 1-2, 4:"


def test_identical_output_collapses():
    contents = {lab: [("stdout", "hello\n")] for lab in range(1, 5)}
    assert plain(output.render_stacked(contents)) == "Labs 1-4:\n  hello\n"


def test_distinct_output_in_lab_order_and_silent_labs_left_out():
    contents = {1: [("stdout", "a\n")], 2: [("stdout", "b\nc\n")], 3: [("stdout", "a\n")], 4: []}
    assert plain(output.render_stacked(contents)) == "Labs 1, 3:\n  a\nLab 2:\n  b\n  c\n"


def test_segments_merge_and_keep_kinds():
    contents = {1: [("stdout", "a"), ("stdout", "b\n"), ("stderr", "warn\n"), ("echo", "42\n")]}
    frags = output.render_stacked(contents)
    assert frags == [("header", "Lab 1:\n"), ("stdout", "  ab\n"), ("stderr", "  warn\n"), ("echo", "  42\n")]


def test_printer_colours_only_when_asked():
    buf = io.StringIO()
    Printer(buf, color=False).write([("header", "Lab 1:\n"), ("error", "boom\n")])
    assert buf.getvalue() == "Lab 1:\nboom\n"
    buf = io.StringIO()
    Printer(buf, color=True).write([("header", "Lab 1:\n")])
    assert buf.getvalue() == "\x1b[1;36mLab 1:\x1b[0m\n"


def test_grid_puts_labs_side_by_side():
    contents = {1: [("stdout", "one\n")], 2: [("stdout", "two\nlines\n")], 3: [], 4: [("echo", "4\n")]}
    text = plain(output.render_grid(contents, [1, 2, 3, 4], width=45, min_column=8, ascii_only=True))
    assert text.splitlines() == [
        "Lab 1     | Lab 2     | Lab 3     | Lab 4",
        "----------+-----------+-----------+----------",
        "one       | two       |           | 4",
        "          | lines",
    ]


def test_grid_wraps_long_lines_and_many_labs():
    contents = {lab: [("stdout", "x" * 30 + "\n")] for lab in range(1, 7)}
    text = plain(output.render_grid(contents, list(range(1, 7)), width=40, min_column=16, ascii_only=True))
    lines = text.splitlines()
    assert lines[0] == "Lab 1              | Lab 2"
    assert "Lab 3              | Lab 4" in lines and "Lab 5              | Lab 6" in lines
    assert lines[2] == "x" * 18 + " | " + "x" * 18
    assert lines[3] == "x" * 12 + "       | " + "x" * 12
    assert all(len(line) <= 40 for line in lines)


def test_grid_shows_nothing_for_silent_labs():
    assert output.render_grid({1: [], 2: []}, [1, 2], width=80) == []


@pytest.mark.parametrize("line, width, pieces", [
    ("short", 10, ["short"]),
    ("  global: shape (4, 4), codistributor1d(Dimension=2)", 24,
     ["  global: shape (4, 4),", "  codistributor1d(Dimens", "  ion=2)"]),
    ("x" * 25, 10, ["x" * 10, "x" * 10, "x" * 5]),
    ("a b" + "c" * 20, 10, ["a b" + "c" * 7, "c" * 10, "c" * 3]),  # a space too early: cut mid-word
    ("          deep indent words here", 12, ["          de", "ep indent", "words here"]),
])
def test_wrap_prefers_spaces_and_keeps_indentation(line, width, pieces):
    assert output.wrap(line, width) == pieces
    assert all(len(p) <= width for p in pieces)


def test_grid_columns_are_the_same_width_on_every_row():
    assert output.grid_columns(4, 100) == (4, 22)
    assert output.grid_columns(6, 40) == (2, 18)
    assert output.grid_columns(1, 80) == (1, 80)
    contents = {lab: [("stdout", f"lab {lab}\n")] for lab in range(1, 4)}
    lines = plain(output.render_grid(contents, [1, 2, 3], width=40, ascii_only=True)).splitlines()
    assert lines[0] == "Lab 1              | Lab 2" and lines[4] == "Lab 3"
    assert lines[5] == "-" * 18  # the last row's one column is as wide as the others


def test_printer_status_line_is_erased_around_output():
    buf = io.StringIO()
    p = Printer(buf, live=True, width=lambda: 30)
    p.status(" running 2 s")
    p.line("Lab 1: tick")
    p.status(None)
    assert buf.getvalue() == " running 2 s\r\x1b[KLab 1: tick\n running 2 s\r\x1b[K"
    quiet = io.StringIO()
    p = Printer(quiet)  # not live (piped): no status line at all
    p.status(" running 2 s")
    p.line("x")
    assert quiet.getvalue() == "x\n"


def test_ticker_shows_the_running_time_until_stopped():
    import time

    buf = io.StringIO()
    printer = Printer(buf, live=True, width=lambda: 80)
    ticker = output.Ticker(printer, lambda t: f"running {t:.0f} s", after=0.05, every=0.05)
    time.sleep(0.4)
    ticker.stop()
    text = buf.getvalue()
    assert text.startswith("running 0 s") and text.endswith("\r\x1b[K")
    time.sleep(0.2)
    assert buf.getvalue() == text  # nothing drawn after stop
    nothing = Printer(io.StringIO())
    output.Ticker(nothing, lambda t: "x", after=0.01).stop()
    assert nothing.stream.getvalue() == ""


def test_collector_groups_when_quick():
    buf = io.StringIO()
    col = Collector(Printer(buf), [1, 2], stream_after=None)
    col.sink(1, "stdout", "hi\n")
    col.sink(2, "stdout", "hi\n")
    col.add(2, "echo", "2")
    col.finish()
    assert buf.getvalue() == "Lab 1:\n  hi\nLab 2:\n  hi\n  2\n"


def test_grid_shows_tracebacks_below_the_columns():
    buf = io.StringIO()
    col = Collector(Printer(buf, width=lambda: 40), [1, 2], layout="grid", stream_after=None)
    col.add(1, "echo", "1.0")
    col.add(2, "error", "Traceback (most recent call last):\nZeroDivisionError: division by zero")
    col.finish()
    assert buf.getvalue().splitlines() == [
        "Lab 1              \u2502 Lab 2",
        "\u2500" * 19 + "\u253c" + "\u2500" * 19,
        "1.0                \u2502 ZeroDivisionError:",  # the error's last line in the column
        "                   \u2502 division by zero",
        "Lab 2:", "  Traceback (most recent call last):", "  ZeroDivisionError: division by zero"]


def test_collector_streams_when_slow():
    buf = io.StringIO()
    col = Collector(Printer(buf), [1, 2], stream_after=None)
    col.sink(1, "stdout", "early\n")
    col.start_streaming()  # what the timer does after stream_after seconds
    assert buf.getvalue() == "Lab 1: early\n"
    col.sink(2, "stderr", "late\nlater\n")
    assert buf.getvalue() == "Lab 1: early\nLab 2: late\nLab 2: later\n"
    col.add(1, "echo", "5")
    col.add(2, "echo", "5")
    col.finish()
    assert buf.getvalue().endswith("Labs 1-2:\n  5\n")


def test_collector_arm_restarts_the_streaming_clock():
    import time

    buf = io.StringIO()
    col = Collector(Printer(buf), [1], stream_after=0.3)
    time.sleep(0.2)
    col.arm()  # e.g. a pool restart took the first 0.2 s
    col.sink(1, "stdout", "tick\n")
    time.sleep(0.2)
    assert buf.getvalue() == ""  # 0.4 s since creation but only 0.2 s since arm
    time.sleep(0.4)
    assert buf.getvalue() == "Lab 1: tick\n"
    col.finish()


def test_collector_timer_starts_streaming():
    import time

    buf = io.StringIO()
    col = Collector(Printer(buf), [1], stream_after=0.05)
    col.sink(1, "stdout", "tick\n")
    time.sleep(0.3)
    assert buf.getvalue() == "Lab 1: tick\n"
    col.finish()


# ---- completion --------------------------------------------------------------------------


@pytest.mark.parametrize("text, parts", [
    ("np.lin", ("np", "lin")), ("x = np.linalg.no", ("np.linalg", "no")), ("pri", ("", "pri")),
    ("x.", ("x", "")), ("a[0].b", None), ("f(x).y", None), ("", None), ("x = ", None),
    ("print('abc.de", None), ("3.1", None), ("_x", ("", "_x")),
])
def test_split(text, parts):
    assert completion.split(text) == parts


def test_matches_hides_private_names_unless_asked():
    names = ["_private", "__dict__", "alpha", "alpine", "beta"]
    assert completion.matches(names, "al", "x") == ["alpha", "alpine"]
    assert completion.matches(names, "", "x") == ["alpha", "alpine", "beta"]
    assert completion.matches(names, "_", "x") == ["__dict__", "_private"]
    assert "for" in completion.matches(names, "f", "")


def test_name_cache_asks_once_per_object_until_cleared():
    asked = []

    def fetch(obj):
        asked.append(obj)
        return {"": ["numlabs", "np", "labindex"], "np": ["linspace", "linalg", "log"]}.get(obj, [])

    cache = completion.NameCache(fetch)
    assert cache.complete("y = np.li") == ("li", ["linalg", "linspace"])
    assert cache.complete("np.l") == ("l", ["linalg", "linspace", "log"])
    assert cache.complete("lab") == ("lab", ["labindex"])
    assert asked == ["np", ""]
    cache.clear()
    cache.complete("np.")
    assert asked == ["np", "", "np"]


def test_name_cache_retries_when_busy():
    answers = [None, ["x1"]]
    cache = completion.NameCache(lambda obj: answers.pop(0))
    assert cache.complete("x") == ("x", [])
    assert cache.complete("x") == ("x", ["x1"])


def test_pmode_command_completion():
    cache = completion.NameCache(lambda obj: [])
    assert cache.complete("pmode cl") == ("cl", ["client2lab", "client"])
    assert cache.complete("pmode layout g") == ("g", ["grid"])


def test_lab_query_and_echo_round_trip():
    ns = {"np": __import__("numpy"), "__builtins__": __builtins__}
    names = eval(completion.lab_query("np"), ns)
    assert completion.parse_echo(repr(names)) == names and "linspace" in names
    assert "np" in eval(completion.lab_query(""), ns)
    assert completion.parse_echo(None) is None and completion.parse_echo("<object>") is None


def test_local_names():
    import math

    assert "pi" in completion.local_names({"m": math}, "m")
    assert "m" in completion.local_names({"m": math}, "")
    assert completion.local_names({}, "nothing.here") == []


# ---- the session, against an in-process fake pool ----------------------------------------


class FakePool:
    """Runs blocks in per-lab namespaces in this process, with the Pool methods pmode uses."""

    def __init__(self, n: int = 4):
        self.numlabs = n
        self.state = "idle"
        self.generation = 1
        self.store: dict[int, dict] = {lab: {} for lab in range(1, n + 1)}
        self.ws: dict[int, dict] = {lab: {} for lab in range(1, n + 1)}
        self.keys = 0
        self.freed: list[int] = []
        self.blocks: list = []
        self.die_next = False
        self.interrupt_next = False
        self.stuck_next = False  # Ctrl-C meets labs busy in compiled code: restart on next use
        self._draining = False
        self.error_replies = False  # hand the finished labs' replies over with SpmdError

    def ensure_running(self):
        if self._draining:
            import warnings

            self._draining = False
            warnings.warn("labs 1-4 did not stop after Ctrl-C (busy in compiled code); restarting the pool.",
                          RuntimeWarning)
            self.generation += 1
            self.ws = {lab: {} for lab in self.ws}
        if self.state == "dead":
            import warnings

            warnings.warn("the previous lab pool died; starting a new one.", RuntimeWarning)
            self.state = "idle"
            self.generation += 1
            self.ws = {lab: {} for lab in self.ws}

    def new_key(self):
        self.keys += 1
        return self.keys

    def free_later(self, key, generation):
        self.freed.append(key)

    def close(self):
        self.state = "closed"

    def request(self, lab, message):
        return self.request_many({lab: message})[lab]

    def request_many(self, messages):
        from spmdlab.protocol.messages import Get, Reply, Set

        replies = {}
        for lab, msg in messages.items():
            if isinstance(msg, Get):
                replies[lab] = (Reply("value", lab, 1, self.store[lab][msg.key]) if msg.key in self.store[lab]
                                else Reply("missing", lab, 1, msg.key))
            elif isinstance(msg, Set):
                self.store[lab][msg.key] = msg.value
                replies[lab] = Reply("ok", lab, 1, None)
        return replies

    def run(self, block, labs=None, sink=None, timeout=None):
        from spmdlab.protocol.messages import Done, Reply, Summary

        self.blocks.append(block)
        if self.die_next:
            self.die_next = False
            self.state = "dead"
            raise LabDiedError("Lab 3 died (killed by SIGKILL, exit status -9). The pool is gone.", {3: -9})
        if self.interrupt_next or self.stuck_next:
            self._draining, self.stuck_next = self.stuck_next, False
            self.interrupt_next = False
            sink(1, "stdout", "partial\n")
            raise KeyboardInterrupt
        replies, errors = {}, {}
        for lab in labs or range(1, self.numlabs + 1):
            ns = self.ws[lab]
            ns["labindex"] = lambda lab=lab: lab
            for name, spec in block.inputs.items():
                kind, value = spec.kind, spec.value
                if kind == "ref":
                    if value in self.store[lab]:
                        ns[name] = self.store[lab][value]
                    else:
                        ns.pop(name, None)
                else:
                    ns[name] = value
            tree = ast.parse(block.source)
            last = None
            if block.echo and tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            buf = io.StringIO()
            try:
                with contextlib.redirect_stdout(buf):
                    exec(compile(tree, block.filename, "exec"), ns)
                    value = eval(compile(last, block.filename, "eval"), ns) if last else None
            except Exception as exc:
                frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == block.filename]
                errors[lab] = RemoteError(type(exc).__name__, str(exc),
                                          "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)))
                continue
            finally:
                if buf.getvalue():
                    sink(lab, "stdout", buf.getvalue())
            summaries = {}
            for name, key in block.outputs.items():
                if name in ns:
                    self.store[lab][key] = ns[name]
                    summaries[name] = Summary("scalar", "object")
            replies[lab] = Reply("done", lab, 1, Done(summaries, repr(value) if value is not None else None))
        if errors:
            exc = SpmdError.from_lab_errors(errors)
            if self.error_replies:
                exc.replies = replies
            raise exc
        return replies


@pytest.fixture
def session():
    buf = io.StringIO()
    s = PmodeSession(FakePool(4), Printer(buf), stream_after=None, pool_factory=lambda n: FakePool(n))
    s.out = buf
    s.start()
    return s


def run(session, text):
    start = session.out.tell()
    session.handle(text)
    return session.out.getvalue()[start:]


def test_lab_imports_leave_out_client_only_names():
    src = lab_imports()
    assert "import numpy as np" in src and "labindex" in src
    assert " spmd," not in src and "parpool" not in src


def test_session_runs_on_all_labs_and_collapses(session):
    assert session.pool.blocks[0].filename == "<pmode-init>"
    assert run(session, "print('hello')") == "Labs 1-4:\n  hello\n"
    assert run(session, "x = labindex()\nx * 10") == "Lab 1:\n  10\nLab 2:\n  20\nLab 3:\n  30\nLab 4:\n  40\n"
    assert session.pool.blocks[-1].workspace == "pmode" and session.pool.blocks[-1].echo
    assert session.pool.blocks[-1].filename == "<pmode-2>"
    import linecache

    assert linecache.getline("<pmode-2>", 2) == "x * 10\n"


def test_session_errors_per_lab(session):
    out = run(session, "x = labindex()\n1 / (x - 2)")
    assert out.startswith("Lab 2:\n  Traceback (most recent call last):\n")
    assert "    1 / (x - 2)" in out and "ZeroDivisionError: division by zero" in out
    assert session.had_error
    out = run(session, "undefined_name")
    assert out.startswith("Labs 1-4:\n") and "NameError" in out


def test_session_shows_values_of_labs_that_finished_before_an_error(session):
    session.pool.error_replies = True
    out = run(session, "x = labindex()\n1 / (x - 2)")
    assert out.startswith("Lab 1:\n  -1.0\nLab 2:\n  Traceback")
    assert out.endswith("Lab 3:\n  1.0\nLab 4:\n  0.5\n")


def test_session_syntax_error_stays_at_the_client(session):
    n = len(session.pool.blocks)
    out = run(session, "x = = 1")
    assert "SyntaxError" in out and len(session.pool.blocks) == n


def test_session_interrupt_keeps_going(session):
    run(session, "x = labindex()")
    session.pool.interrupt_next = True
    out = run(session, "while True: pass")
    assert out == "Lab 1:\n  partial\nKeyboardInterrupt: the labs were interrupted; their variables are kept.\n"
    assert run(session, "x") == "Lab 1:\n  1\nLab 2:\n  2\nLab 3:\n  3\nLab 4:\n  4\n"


def test_session_interrupt_of_stuck_labs_says_the_pool_was_restarted(session):
    run(session, "x = labindex()")
    session.pool.stuck_next = True
    out = run(session, "import time; time.sleep(100)")
    assert out == ("Lab 1:\n  partial\n"
                   "Warning: labs 1-4 did not stop after Ctrl-C (busy in compiled code); restarting the pool.\n"
                   "KeyboardInterrupt: the pool was restarted; variables on the labs were lost.\n")
    assert session.pool.blocks[-1].filename == "<pmode-init>"  # made ready before the prompt returns
    assert "NameError" in run(session, "x")


def test_session_sends_sources_with_a_final_newline(session):
    run(session, "1 + 1")
    assert session.pool.blocks[-1].source == "1 + 1\n"  # else the lab's ^^^ markers are one column off


def test_session_trailing_semicolon_hides_the_value(session):
    assert run(session, "x = labindex()\nx;") == ""
    assert session.pool.blocks[-1].echo is False
    assert run(session, "x; print('shown')") == "Labs 1-4:\n  shown\n"
    assert run(session, "x * 2") == "Lab 1:\n  2\nLab 2:\n  4\nLab 3:\n  6\nLab 4:\n  8\n"


def test_session_lab_tracebacks_hide_installed_code(session):
    import sysconfig

    numpy_file = sysconfig.get_paths()["purelib"] + "/numpy/linalg/_linalg.py"
    tb = ('Traceback (most recent call last):\n  File "<pmode-1>", line 1, in <module>\n'
          f'    np.linalg.inv(A)\n  File "{numpy_file}", line 9, in inv\n    raise LinAlgError("Singular matrix")\n')
    err = SpmdError.from_lab_errors({lab: RemoteError("LinAlgError", "Singular matrix", tb) for lab in (1, 2, 3, 4)})

    def failing_run(block, labs=None, sink=None, timeout=None):
        raise err

    session.pool.run = failing_run
    assert run(session, "np.linalg.inv(A)") == (
        'Labs 1-4:\n  Traceback (most recent call last):\n    File "<pmode-1>", line 1, in <module>\n'
        "      np.linalg.inv(A)\n  LinAlgError: Singular matrix\n")


def test_user_frames_keep_user_files_and_syntax_errors():
    from spmdlab.pmode.tracebacks import user_frames

    hidden = ("/usr/lib/python3.11", "/venv/site-packages")
    tb = ('Traceback (most recent call last):\n'
          '  File "<pmode-2>", line 1, in <module>\n    run()\n'
          '  File "/venv/site-packages/numpy/x.py", line 5, in apply\n    f(a)\n    ^^^^\n'
          '  File "/home/me/mine.py", line 3, in cb\n    import broken\n'
          '  File "/usr/lib/python3.11/importlib/__init__.py", line 126, in import_module\n    return x\n'
          '  File "<frozen importlib._bootstrap>", line 1204, in _gcd_import\n'
          '  File "/home/me/broken.py", line 1\n    def (:\n')
    assert user_frames(tb, hidden) == (
        'Traceback (most recent call last):\n'
        '  File "<pmode-2>", line 1, in <module>\n    run()\n'
        '  File "/home/me/mine.py", line 3, in cb\n    import broken\n'
        '  File "/home/me/broken.py", line 1\n    def (:\n')
    assert user_frames(tb.replace("/venv/site-packages", "/venv/site-packages-not"), hidden).count("File") == 4


def test_session_restarts_a_dead_pool(session):
    session.pool.die_next = True
    out = run(session, "x = 1")
    assert "Lab 3 died" in out and "Restarting the pool with 4 labs" in out and "running again" in out
    assert session.pool.blocks[-1].filename == "<pmode-init>"  # the lab API is imported again
    assert run(session, "2") == "Labs 1-4:\n  2\n"


def test_session_reports_a_death_seen_while_completing(session):
    run(session, "x = 1")
    session.pool.die_next = True
    before = session.out.getvalue()
    assert session.names.complete("x") == ("x", [])  # the lookup met the dead pool: nothing, no output
    assert session.out.getvalue() == before and session.pool.state == "dead"
    assert "| dead |" in session.status()  # the toolbar shows it at once
    assert run(session, "1") == ("Lab 3 died (killed by SIGKILL, exit status -9).\n"
                                 "Restarting the pool with 4 labs ...\n"
                                 "The pool is running again; variables on the labs were lost.\n"
                                 "Labs 1-4:\n  1\n")
    session.pool.state = "dead"  # died with nobody looking: still reported before the restart
    assert run(session, "2").startswith("The labs stopped while pmode was idle.\nRestarting the pool")


def test_lab2client_and_client2lab_round_trip(session):
    run(session, "x = labindex() * 10")
    assert "x from lab 3 is now client variable y" in run(session, "pmode lab2client x 3 y")
    assert session.client_ns["y"] == 30
    assert run(session, "pmode client y") == "30\n"
    run(session, "pmode client z = y + 1")
    assert "Client variable z is now w on labs 1 and 2" in run(session, "pmode client2lab z 1:2 w")
    assert session.pool.ws[1]["w"] == 31 and session.pool.ws[2]["w"] == 31
    assert "w" not in session.pool.ws[3] and "__spmdlab_client2lab" not in session.pool.ws[3]
    assert "__spmdlab_client2lab" not in session.pool.ws[1]
    assert len(session.pool.freed) == 2


def test_lab2client_of_a_missing_variable(session):
    out = run(session, "pmode lab2client nothing 2")
    assert "'nothing' is not defined on lab 2" in out and "nothing" not in session.client_ns


def test_client2lab_of_a_missing_variable(session):
    assert "there is no client variable 'q'" in run(session, "pmode client2lab q 1")


def test_pmode_client_errors_show_the_users_line(session):
    out = run(session, "pmode client 1/0")
    assert 'File "<pmode-client-1>", line 1' in out and "ZeroDivisionError" in out


def test_grid_layout_narrows_numpy_on_the_labs(session):
    session.printer._width = lambda: 100
    run(session, "pmode layout grid")
    assert session.numpy_linewidth() == 22
    run(session, "x = 1")
    sync = session.pool.blocks[-2]
    assert sync.filename == "<pmode-layout>" and "set_printoptions(linewidth=22)" in sync.source
    n = len(session.pool.blocks)
    run(session, "x = 2")
    assert len(session.pool.blocks) == n + 1  # set once, not before every command
    session.printer._width = lambda: 60  # the terminal got narrower
    run(session, "x = 3")
    assert "linewidth=18" in session.pool.blocks[-2].source  # 3 columns per row now
    run(session, "pmode layout stacked")
    run(session, "x = 4")
    assert "linewidth=75" in session.pool.blocks[-2].source  # numpy's default again


def test_layout_switch_and_grid_output(session):
    assert run(session, "pmode layout grid") == "layout: grid\n"
    session.printer._width = lambda: 47
    out = run(session, "print(labindex())")
    assert out.splitlines()[0].startswith("Lab 1") and "\u2502" in out
    assert run(session, "pmode layout") == "layout: grid\n"
    run(session, "pmode layout stacked")
    assert session.layout == "stacked"


def test_exit_help_and_bad_commands(session):
    assert "lab2client" in run(session, "pmode help")
    assert "unknown command" in run(session, "pmode nope")
    run(session, "exit")
    assert session.finished


def test_restart_makes_a_fresh_pool(session):
    old = session.pool
    out = run(session, "pmode restart")
    assert old.state == "closed" and session.pool is not old and "variables on the labs were cleared" in out
    assert session.pool.blocks[0].filename == "<pmode-init>"


def test_completion_through_the_session(session):
    run(session, "alpha = 1\nalphabet = 2")
    session.pool.run = _echo_names(session.pool.run)
    prefix, names = session.names.complete("alp")
    assert prefix == "alp" and names == ["alpha", "alphabet"]


def _echo_names(run_fn):
    def run(block, labs=None, sink=None, timeout=None):
        assert timeout is not None and block.echo
        return run_fn(block, labs, sink, timeout)

    return run


def test_status_line(session):
    assert session.status() == " pool: 4 labs | idle | layout stacked | pmode help "
    assert session.status(12.4) == " pool: 4 labs | running 12 s | Ctrl-C interrupts "
    session.pool.state = "dead"
    assert "| dead |" in session.status()


# ---- the client-mode REPL (spmdlab), without labs ----------------------------------------


def test_client_console_registers_inputs_so_spmd_can_read_them(capsys):
    from spmdlab_repl.client import ClientConsole

    console = ClientConsole()
    console.preload()
    console.run_source("with spmd(0):\n    v = labindex() + 41\n")  # spmd(0): the body runs here
    console.run_source("v[1]")
    console.run_source("def f():\n    return 1 / 0\n")
    console.run_source("f()")
    out, err = capsys.readouterr()
    assert out == "42\n"
    assert 'File "<spmdlab-4>", line 1, in <module>' in err and 'File "<spmdlab-3>", line 2, in f' in err
    assert "return 1 / 0" in err and "spmdlab_repl" not in err and err.endswith("ZeroDivisionError: division by zero\n")
    assert console.had_error


def test_client_console_syntax_errors_and_completion(capsys):
    from spmdlab_repl.client import ClientConsole

    console = ClientConsole()
    console.run_source("import math\nx = = 2")
    assert "SyntaxError" in capsys.readouterr().err
    console.run_source("import math")
    assert console.complete("math.fl") == ("fl", ["floor"])
    assert console.complete("mat") == ("mat", ["math"])


def test_client_console_hides_the_library_frames_of_a_misuse(capsys):
    from spmdlab_repl.client import ClientConsole

    console = ClientConsole()
    console.preload()
    console.run_source("c = codistributor1d(0)")
    err = capsys.readouterr().err
    assert err == ('Traceback (most recent call last):\n  File "<spmdlab-1>", line 1, in <module>\n'
                   "    c = codistributor1d(0)\n        ^^^^^^^^^^^^^^^^^^\n"
                   "ValueError: invalid dimension 0: dimensions are numbered from 1 as in MATLAB "
                   "(or use axis= for 0-based)\n")


# ---- the pmode console script's arguments (no pool is started) ------------------------------


@pytest.mark.parametrize("argv, message", [
    (["start", "0"], "pmode: the number of labs must be one whole number, at least 1 (e.g. pmode start 4); got '0'"),
    (["start", "four"], "got 'four'"),
    (["start", "2", "3"], "got '2 3'"),
    (["start", "4", "--layout", "columns"], "pmode: argument --layout: invalid choice: 'columns'"),
    (["stop"], "pmode: unknown action 'stop'; use pmode start [N]"),
    (["exit"], "pmode: no session to end here; type `pmode exit` at the P>> prompt"),
])
def test_pmode_argument_errors_are_short_and_clear(argv, message, capsys):
    from spmdlab_repl import pmode

    try:
        code = pmode.main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert message in err and err.endswith("\n(pmode help lists the commands)\n") or argv == ["exit"], err
    assert "usage:" not in err and len(err.splitlines()) <= 2


def test_client_console_drops_the_librarys_chained_exceptions():
    import os

    from spmdlab.protocol.messages import ChannelClosed
    from spmdlab_repl.client import _trim

    def library_recv():
        raise ChannelClosed("connection closed")

    def library_run():
        try:
            library_recv()
        except ChannelClosed:
            raise LabDiedError("Lab 2 died (exit status 3).", {2: 3})

    def user_code():
        try:
            library_run()
        except LabDiedError as exc:
            raise ValueError("mine") from exc

    here = (os.path.dirname(os.path.abspath(__file__)) + os.sep,)
    try:
        library_run()
    except LabDiedError as exc:
        tb = traceback.TracebackException.from_exception(exc)
    assert tb.__context__ is not None and not _trim(tb, here)
    assert tb.__context__ is None  # "During handling ... ChannelClosed" is gone
    assert "".join(tb.format()).endswith("LabDiedError: Lab 2 died (exit status 3).\n")
    try:
        user_code()
    except ValueError as exc:
        tb = traceback.TracebackException.from_exception(exc)
    _trim(tb, here)
    assert tb.__cause__ is not None  # an spmdlab error the user chained stays, without frames


def test_client_console_warnings_about_typed_input_are_one_line():
    from spmdlab_repl.client import ClientConsole

    buf = io.StringIO()
    ClientConsole.show_warning(RuntimeWarning("the previous lab pool died; starting a new one."), RuntimeWarning,
                               "<spmdlab-3>", 1, buf)
    assert buf.getvalue() == "RuntimeWarning: the previous lab pool died; starting a new one.\n"
    buf = io.StringIO()
    ClientConsole.show_warning(UserWarning("x"), UserWarning, "/tmp/mine.py", 7, buf, "warn()")
    assert buf.getvalue() == "/tmp/mine.py:7: UserWarning: x\n  warn()\n"  # other warnings as Python shows them


@pytest.mark.parametrize("source, start", [
    ("with spmd():\n    x = 1\n", "pmode input already runs on every lab"),
    ("with spmdlab.spmd(2):\n    x = 1\n", "pmode input already runs on every lab"),
    ("parpool(4)", "pmode already has its pool of labs"),
    ("pool = spmdlab.parpool(2)", "pmode already has its pool of labs"),
    ("x = spmd_result + 1", None),
    ("print('with spmd():')", None),
])
def test_lab_hint_for_client_habits(source, start):
    hint = commands.lab_hint(source)
    assert (hint is None) if start is None else hint.startswith(start)


def test_the_fake_pool_is_a_pool_at_the_seams():
    """The REPL's fake pool implements the Pool Protocol the seams are typed with, as the
    client's Pool does (mypy checks that one where gcp()'s pool is passed)."""
    from spmdlab.protocol.seam import Pool

    assert isinstance(FakePool(), Pool)
    assert not isinstance(object(), Pool)
