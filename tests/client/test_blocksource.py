"""Reading and checking spmd bodies: pure AST logic, no MPI."""
import ast
import linecache
import textwrap

import pytest

from spmdlab.client.blocksource import check, names_read, names_written, read_body
from spmdlab.errors import SpmdSourceError

pytestmark = pytest.mark.nompi  # pure logic: no MPI, no lab


def register(source: str, name: str) -> str:
    source = textwrap.dedent(source)
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    return name


def body_of(source: str):
    tree = ast.parse(textwrap.dedent(source))
    return tree.body[0].body


def test_body_text_and_lines():
    name = register("""
        x = 1
        with spmd():
            y = x + 1
            z = y * 2
        print(z)
        """, "<bs-1>")
    body = read_body(name, 3)
    assert body.firstlineno == 4
    assert body.source == "    y = x + 1\n    z = y * 2\n"
    assert body.reads == {"x"}  # y is assigned before it is read: not sent
    assert body.writes == ["y", "z"]


def test_single_line_body_and_multiline_header():
    name = register("with spmd(): a = 1\nwith spmd(\n        2):\n    b = 2\n", "<bs-2>")
    assert read_body(name, 1).source == "             a = 1\n"
    assert read_body(name, 2).source == "    b = 2\n"
    assert read_body(name, 3).firstlineno == 4


def test_innermost_with_is_chosen():
    name = register("""
        with open('f') as fh:
            with spmd():
                q = 1
        """, "<bs-3>")
    assert read_body(name, 3).writes == ["q"]


@pytest.mark.parametrize("stmt, word", [
    ("return 1", "return"), ("break", "break"), ("continue", "continue"), ("x = yield 1", "yield"),
    ("global g", "global"), ("nonlocal n", "nonlocal"), ("with spmd():\n        pass", "nested"),
])
def test_forbidden_statements(stmt, word):
    src = f"with spmd():\n    {stmt}\n"
    lines = src.splitlines(True)
    with pytest.raises(SyntaxError, match=word) as info:
        check(ast.parse(src).body[0].body, "<t>", lines)
    assert info.value.lineno == 2
    assert info.value.filename == "<t>"


@pytest.mark.parametrize("stmt", [
    "for i in r:\n        break", "while c:\n        continue",
    "def f():\n        return 1", "def g():\n        yield 1", "lambda: (yield)",
    "class C:\n        def m(self):\n            return 2",
    "for i in r:\n        if i:\n            continue",
    "def f():\n        global g\n        g = 1",
])
def test_allowed_statements(stmt):
    src = f"with spmd():\n    {stmt}\n"
    check(ast.parse(src).body[0].body, "<t>", src.splitlines(True))


def test_names_written_excludes_imports_defs_classes_and_inner_scopes():
    body = body_of("""
        with spmd():
            import numpy as np
            from os import path
            def f(): inner = 1
            class C: attr = 2
            a, (b, *c) = 1, (2, 3)
            d += 1
            for e in r: pass
            with cm() as g: pass
            [h for h in r]
            [(w := k) for k in r]
            try: pass
            except E as err: pass
            t: int = 4
        """)
    assert names_written(body) == ["a", "b", "c", "d", "e", "g", "w", "t"]


def test_names_read_include_nested_functions_and_augassign():
    body = body_of("""
        with spmd():
            d += 1
            def f():
                return n_outer
            y = [v for v in vals]
        """)
    assert {"d", "n_outer", "vals", "v"} <= names_read(body)


def test_unreadable_source_names_the_alternatives():
    with pytest.raises(SpmdSourceError, match="spmd_run"):
        read_body("<stdin>", 1)
    with pytest.raises(SpmdSourceError, match="plain Python prompt"):
        read_body("<stdin>", 1)
