"""Input handling without a terminal: when is a typed block complete, how far to indent
the next line, and how to cut a stream of piped lines into blocks.

The rules follow the stock Python REPL: a statement that opens a compound block (``for``,
``def``, ``with`` ...) continues until a blank line; an unfinished bracket, string or
backslash continuation keeps reading; anything else (including a syntax error, which is
then reported) is complete.
"""
from __future__ import annotations

import ast
import codeop
import io
import re
import tokenize
import warnings
from collections.abc import Iterable, Iterator

INDENT = "    "
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.FunctionDef,
             ast.AsyncFunctionDef, ast.ClassDef, ast.Try) + ((ast.Match,) if hasattr(ast, "Match") else ()) \
    + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
_DEDENT_AFTER = re.compile(r"^\s*(return|pass|break|continue|raise)\b")


def _compiles(text: str) -> bool | None:
    """True if ``text`` compiles, None if it is unfinished, False on a syntax error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return codeop.compile_command(text, "<input>", "exec") is not None or None
        except (SyntaxError, OverflowError, ValueError):
            return False


def needs_more(text: str) -> bool:
    """Whether the REPL should read another line before running ``text``.

    >>> needs_more("x = 1"), needs_more("for i in x:"), needs_more("for i in x:\\n    f(i)")
    (False, True, True)
    >>> needs_more("for i in x:\\n    f(i)\\n")
    False
    """
    if not text.strip():
        return False
    state = _compiles(text)
    if state is None:
        return True
    if state is False:
        return False
    last = text.split("\n")[-1]
    if not last.strip():
        return False
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    return bool(tree.body) and isinstance(tree.body[-1], _COMPOUND)


def next_indent(text_before: str) -> str:
    """The indentation for the line after ``text_before`` (auto-indent).

    >>> next_indent("for i in x:"), next_indent("    return 1"), next_indent("    y = 2")
    ('    ', '', '    ')
    """
    line = text_before.split("\n")[-1]
    indent = line[: len(line) - len(line.lstrip())]
    code = line.split("#", 1)[0].rstrip()
    if code.endswith(":"):
        return indent + INDENT
    if _DEDENT_AFTER.match(line):
        return indent[: max(0, len(indent) - len(INDENT))]
    return indent


def dedent_width(text_before: str) -> int:
    """How many spaces Backspace should remove in the leading whitespace of a line (0: one char)."""
    line = text_before.split("\n")[-1]
    if line and not line.strip(" ") and len(line) >= len(INDENT):
        return len(line) - (len(line) - 1) // len(INDENT) * len(INDENT)
    return 0


_CONTINUES = re.compile(r"(else|elif\b.*|except\b.*|finally)\s*:\s*(#.*)?$")
_OPENERS = {"else": ("if", "elif", "for", "async for", "while", "try", "except"), "elif": ("if", "elif"),
            "except": ("try", "except"), "finally": ("try", "except", "else")}


def _opener(line: str) -> str:
    m = re.match(r"(async\s+for|[a-z]+)\b", line.strip())
    return re.sub(r"\s+", " ", m.group(1)) if m and line.rstrip().endswith(":") else ""


def keyword_indent(text_before: str) -> str | None:
    """The line being finished, re-indented, when it is ``else:``, ``elif ...:``,
    ``except ...:`` or ``finally:`` left at the body's indentation; None if it is fine.

    >>> keyword_indent("if a:\\n    b()\\n    else:")
    'else:'
    >>> keyword_indent("if a:\\n    b()\\nelse:") is None
    True
    """
    *before, line = text_before.split("\n")
    stripped = line.strip()
    if not line.startswith((" ", "\t")) or not _CONTINUES.match(stripped):
        return None
    keyword = re.match(r"[a-z]+", stripped)
    assert keyword is not None  # _CONTINUES matched: it starts with a keyword
    word = keyword.group(0)
    current = len(line) - len(line.lstrip())
    limit = current
    for prev in reversed(before):
        code = prev.split("#", 1)[0]
        if not code.strip():
            continue
        indent = len(prev) - len(prev.lstrip())
        if indent == current and _opener(prev) in _OPENERS[word]:
            return None  # already lined up with its `if` / `try`
        if indent < limit:
            if _opener(prev) in _OPENERS[word]:
                return prev[:indent] + stripped
            limit = indent
            if indent == 0:
                return None
    return None


def echo_suppressed(source: str) -> bool:
    """A trailing ``;`` hides the value of the last expression (MATLAB's and IPython's habit).

    >>> echo_suppressed("x = 1\\nx;"), echo_suppressed("x  # a;"), echo_suppressed("s = ';'")
    (True, False, False)
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    skip = {tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER, tokenize.INDENT,
            tokenize.DEDENT}
    significant = [t for t in tokens if t.type not in skip]
    return bool(significant) and significant[-1].type == tokenize.OP and significant[-1].string == ";"


def iter_blocks(lines: Iterable[str]) -> Iterator[str]:
    """Cut piped input into the blocks the REPL runs, as the stock REPL reads them.

    A blank line ends a compound block; blank lines between blocks are skipped; the text
    left at end of input is run too.

    >>> list(iter_blocks(["x = 1\\n", "for i in range(2):\\n", "    print(i)\\n", "\\n", "y = 2\\n"]))
    ['x = 1', 'for i in range(2):\\n    print(i)', 'y = 2']
    """
    buf: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not buf and not line.strip():
            continue
        if buf and not line.strip():
            text = "\n".join(buf)
            if needs_more(text) and _compiles(text + "\n") is None:
                buf.append(line)  # inside an unfinished bracket or string: keep the blank line
                continue
            yield text
            buf = []
            continue
        if buf and line[:1] not in (" ", "\t") and _ends_block("\n".join(buf), line):
            yield "\n".join(buf)
            buf = []
        buf.append(line)
        text = "\n".join(buf)
        if not needs_more(text):
            yield text
            buf = []
    if buf:
        yield "\n".join(buf)


def _ends_block(text: str, line: str) -> bool:
    """A new unindented statement after a finished compound block starts the next block
    (the stock REPL would call this a syntax error; we are kinder)."""
    if _compiles(text) is not True:
        return False
    if re.match(r"(else|elif|except|finally|case)\b", line.strip()):
        return False
    return True
