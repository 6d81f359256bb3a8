"""Reading and checking the body of a ``with spmd():`` block from the caller's source.

Pure AST work, no pool: find the ``with`` statement a frame is executing, reject what
cannot run on the labs, and list the names the body reads and assigns.
"""
from __future__ import annotations

import ast
import linecache
from dataclasses import dataclass

from ..errors import SpmdSourceError

__all__ = ["Body", "find_with", "check", "names_read", "names_written", "read_body"]

_UNREADABLE_HELP = (
    "spmd reads the body of a `with spmd():` block from its source file, and the source of "
    "{where} cannot be read (as with `python -c` or the plain Python prompt). Put the code "
    "in a file, use IPython/Jupyter or the `spmdlab` REPL, or use the function form "
    "`spmd_run(fn, *args)`."
)
_FORBIDDEN_ANYWHERE = (ast.Global, ast.Nonlocal)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


@dataclass
class Body:
    filename: str
    source: str  # the body's lines, indentation kept
    firstlineno: int
    reads: set[str]
    writes: list[str]  # in order of first assignment; imports, def and class excluded


_parsed: dict[tuple[str, int], ast.Module] = {}
# (filename, lineno) -> (the linecache lines list it was read from, Body). linecache
# returns the same list object until the file changes, so identity means "unchanged".
_bodies: dict[tuple[str, int], tuple[list[str], Body]] = {}


def _parse(filename: str, text: str) -> ast.Module:
    key = (filename, hash(text))
    tree = _parsed.get(key)
    if tree is None:
        tree = ast.parse(text, filename)
        if len(_parsed) > 64:
            _parsed.clear()
        _parsed[key] = tree
    return tree


def _is_spmd_call(node: ast.expr) -> bool:
    func = node.func if isinstance(node, ast.Call) else node
    return (isinstance(func, ast.Name) and func.id == "spmd") or (
        isinstance(func, ast.Attribute) and func.attr == "spmd")


def find_with(tree: ast.Module, lineno: int) -> ast.With | None:
    """The innermost ``with`` statement whose header spans ``lineno``."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.With) and node.body:
            head_end = max(item.context_expr.end_lineno for item in node.items)
            if node.lineno <= lineno <= head_end and (best is None or node.lineno >= best.lineno):
                best = node
    return best


def _syntax_error(message: str, filename: str, node: ast.AST, lines: list[str]) -> SyntaxError:
    text = lines[node.lineno - 1] if 0 < node.lineno <= len(lines) else None
    return SyntaxError(message, (filename, node.lineno, node.col_offset + 1, text))


def check(body: list[ast.stmt], filename: str, lines: list[str]) -> None:
    """Raise SyntaxError for what an spmd body may not contain (docs/design.md §3)."""

    def visit(node: ast.AST, in_loop: bool) -> None:
        if isinstance(node, _FORBIDDEN_ANYWHERE):
            kind = "global" if isinstance(node, ast.Global) else "nonlocal"
            raise _syntax_error(f"'{kind}' is not allowed in an spmd block: the body runs on the labs, "
                                "which cannot rebind the client's names", filename, node, lines)
        if isinstance(node, ast.Return):
            raise _syntax_error("'return' is not allowed in an spmd block", filename, node, lines)
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            word = {ast.Yield: "yield", ast.YieldFrom: "yield from", ast.Await: "await"}[type(node)]
            raise _syntax_error(f"'{word}' is not allowed in an spmd block", filename, node, lines)
        if isinstance(node, (ast.Break, ast.Continue)) and not in_loop:
            word = "break" if isinstance(node, ast.Break) else "continue"
            raise _syntax_error(f"'{word}' is not allowed in an spmd block (outside a loop inside it)",
                                filename, node, lines)
        if isinstance(node, ast.With) and any(_is_spmd_call(i.context_expr) for i in node.items):
            raise _syntax_error("spmd blocks cannot be nested", filename, node, lines)
        if isinstance(node, _SCOPES):
            return  # return/yield/global are theirs to use
        for child in ast.iter_child_nodes(node):
            loop = in_loop or (isinstance(node, _LOOPS) and child in node.body)
            visit(child, loop)

    for stmt in body:
        visit(stmt, False)


def _loads(node: ast.AST) -> set[str]:
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            found.add(sub.id)
        elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
            found.add(sub.target.id)
    return found


def _binds(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement surely binds once it completes."""
    if isinstance(stmt, ast.Assign):
        return {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
        return {stmt.target.id}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"}
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    return set()


def names_read(body: list[ast.stmt]) -> set[str]:
    """Every name the body (nested functions included) may load before the body itself
    surely assigned it: ``comm = MPI.COMM_WORLD`` then ``comm.Barrier()`` reads ``MPI``,
    not the client's ``comm``. Only plain top-level statements count as sure assignments
    (not those under ``if``/``for``/``try``); an assignment's value is read before its
    targets are bound."""
    reads: set[str] = set()
    bound: set[str] = set()
    for stmt in body:
        reads |= _loads(stmt) - bound
        bound |= _binds(stmt)
    return reads


def names_written(body: list[ast.stmt]) -> list[str]:
    """Names the body binds in its own scope, except imports, functions and classes."""
    found: dict[str, None] = {}

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.setdefault(node.id, None)
        elif isinstance(node, ast.NamedExpr):
            found.setdefault(node.target.id, None)
        elif isinstance(node, ast.ExceptHandler):
            pass  # `except E as e` unbinds e at the end of the handler
        if isinstance(node, _SCOPES + (ast.Import, ast.ImportFrom)):
            return
        if isinstance(node, _COMPREHENSIONS):
            for sub in ast.walk(node):  # only walrus targets leak out of comprehensions
                if isinstance(sub, ast.NamedExpr):
                    found.setdefault(sub.target.id, None)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    for stmt in body:
        visit(stmt)
    return list(found)


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", [])
    return min([stmt.lineno] + [d.lineno for d in decorators])


def read_body(filename: str, lineno: int, module_globals: dict | None = None) -> Body:
    """The checked body of the ``with`` statement at ``filename:lineno``."""
    lines = linecache.getlines(filename, module_globals)
    cached = _bodies.get((filename, lineno))
    if cached is not None and cached[0] is lines:
        return cached[1]
    if not lines:
        where = "code typed at the plain Python prompt" if filename == "<stdin>" else filename
        raise SpmdSourceError(_UNREADABLE_HELP.format(where=where))
    tree = _parse(filename, "".join(lines))
    node = find_with(tree, lineno)
    if node is None:
        raise SpmdSourceError(f"cannot find the `with spmd():` statement at {filename}:{lineno}; "
                              "was the file changed while it ran? " + _UNREADABLE_HELP.format(where="it"))
    check(node.body, filename, lines)
    first = _first_line(node.body[0])
    last = node.body[-1].end_lineno
    body_lines = lines[first - 1:last]
    if first == node.lineno:  # `with spmd(): x = 1`
        col = node.body[0].col_offset
        body_lines[0] = " " * col + body_lines[0][col:]
    body = Body(filename, "".join(body_lines), first, names_read(node.body), names_written(node.body))
    if len(_bodies) > 256:
        _bodies.clear()
    _bodies[(filename, lineno)] = (lines, body)
    return body
