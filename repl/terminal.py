"""The thin prompt_toolkit adapter: a prompt with Python highlighting (pygments), history
under the XDG data directory, auto-indent for blocks, Tab completion and a toolbar.

All decisions (when input is complete, how to indent, what to complete) come from the
plain modules; this file only wires them into prompt_toolkit.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion, ThreadedCompleter
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import FormattedText
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.lexers import PygmentsLexer
from pygments.lexers.python import PythonLexer

from spmdlab.pmode import inputs

CompleteFn = Callable[[str], "tuple[str, list[str]]"]


def data_dir() -> Path:
    """``$XDG_DATA_HOME/spmdlab``, else ``~/.local/share/spmdlab``."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "spmdlab"


def _history(name: str):
    try:
        folder = data_dir()
        folder.mkdir(parents=True, exist_ok=True)
        return FileHistory(str(folder / name))
    except OSError:  # a read-only home must not stop the REPL
        return InMemoryHistory()


class _Completer(Completer):
    """Adapts ``complete(text_before_cursor) -> (prefix, names)`` to prompt_toolkit."""

    def __init__(self, complete: CompleteFn):
        self._complete = complete

    def get_completions(self, document, complete_event) -> Iterable[Completion]:
        try:
            prefix, names = self._complete(document.text_before_cursor)
        except Exception:  # completion must never break the prompt
            return
        for name in names:
            yield Completion(name, start_position=-len(prefix))


def _bindings() -> KeyBindings:
    kb = KeyBindings()

    @Condition
    def at_line_start() -> bool:
        from prompt_toolkit.application import get_app

        line = get_app().current_buffer.document.current_line_before_cursor
        return not line.strip()

    @kb.add("enter")
    def _enter(event) -> None:
        buf = event.current_buffer
        if buf.complete_state is not None and buf.complete_state.current_completion is not None:
            buf.complete_state = None  # Enter picks the highlighted completion
            return
        doc = buf.document
        if doc.is_cursor_at_the_end_of_line:  # `else:` typed at the body's indentation moves left
            fixed = inputs.keyword_indent(doc.text_before_cursor)
            if fixed is not None:
                buf.delete_before_cursor(len(doc.current_line_before_cursor))
                buf.insert_text(fixed)
                doc = buf.document
        if doc.is_cursor_at_the_end and not inputs.needs_more(buf.text):
            buf.validate_and_handle()
            return
        buf.insert_text("\n" + inputs.next_indent(doc.text_before_cursor))

    @kb.add("escape", "enter")
    def _accept(event) -> None:
        event.current_buffer.validate_and_handle()

    @kb.add("tab", filter=at_line_start)
    def _indent(event) -> None:
        event.current_buffer.insert_text(inputs.INDENT)

    @kb.add("backspace", filter=at_line_start)
    def _dedent(event) -> None:
        buf = event.current_buffer
        width = inputs.dedent_width(buf.document.text_before_cursor)
        buf.delete_before_cursor(width or 1)

    return kb


def make_prompt(message: str, history_name: str, complete: CompleteFn | None = None,
                toolbar: Callable[[], str] | None = None) -> PromptSession:
    """A PromptSession for one REPL: ``message`` is the prompt (``P>> `` or ``>>> ``)."""
    cont = "." * len(message.rstrip()) + " " * (len(message) - len(message.rstrip()))

    def continuation(width: int, line_number: int, is_soft_wrap: bool) -> str:
        return cont.rjust(width)

    def bottom() -> FormattedText:
        return FormattedText([("class:bottom-toolbar.text", toolbar())]) if toolbar else FormattedText([])

    return PromptSession(
        message=message,
        multiline=True,
        prompt_continuation=continuation,
        lexer=PygmentsLexer(PythonLexer),
        history=_history(history_name),
        completer=ThreadedCompleter(_Completer(complete)) if complete else None,
        complete_while_typing=False,
        key_bindings=_bindings(),
        bottom_toolbar=bottom if toolbar else None,
        enable_history_search=False,
        include_default_pygments_style=True,
    )


def prompt_loop(session: PromptSession, handle: Callable[[str], None], finished: Callable[[], bool]) -> None:
    """Read inputs and ``handle`` them until Ctrl-D or ``finished()``.

    Ctrl-C at the prompt discards the line being typed, as in the Python REPL.
    """
    while not finished():
        try:
            text = session.prompt()
        except KeyboardInterrupt:
            continue
        except EOFError:
            return
        handle(text)
