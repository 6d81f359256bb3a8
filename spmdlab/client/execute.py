"""The one way the client runs something on the labs: build a ``Block``, run it, decode
the replies into client handles. ``spmd``, ``spmd_run``, ``distributed`` and the pmode
REPL all go through :func:`run_block`.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..protocol.messages import Block, Input, Reply, Summary
from ..protocol.seam import Pool
from ..protocol.values import input_spec
from .composite import Composite

__all__ = ["Outcome", "run_block", "register_handle", "result_handle"]

_handles: dict[str, Callable[[Any, int, Summary], Any]] = {}


def register_handle(kind: str, factory: Callable[[Any, int, Summary], Any]) -> None:
    """Client handles for names whose every lab's value has summaries of ``kind``:
    ``factory(pool, key, lab 1's summary)``."""
    _handles[kind] = factory


def result_handle(pool: Pool, key: int, summaries: dict[int, Summary], nlabs: int,
                  composite: bool = False) -> Any:
    """The client handle for the value a block stored under ``key``: a registered
    handle when every one of its ``nlabs`` labs holds that kind, else a Composite."""
    kinds = {s.kind for s in summaries.values()}
    if not composite and len(summaries) == nlabs and len(kinds) == 1:
        factory = _handles.get(kinds.pop())
        if factory is not None:
            return factory(pool, key, summaries[min(summaries)])
    return Composite._from_labs(pool, key, summaries)


@dataclass
class Outcome:
    """What a block left: ``values`` maps each output name some lab assigned to its
    client handle (a Composite, or a registered handle such as ``distributed``);
    ``replies`` maps lab -> its ``done`` Reply; ``echoes`` lab -> a trailing
    expression's repr (pmode)."""

    values: dict[str, Any] = field(default_factory=dict)
    replies: dict[int, Reply] = field(default_factory=dict)

    @property
    def echoes(self) -> dict[int, str]:
        return {lab: r.result.echo for lab, r in self.replies.items()
                if r.kind == "done" and r.result.echo is not None}


def run_block(pool: Pool, *, source: str = "", call: tuple | None = None, inputs: dict[str, Any] | None = None,
              refs: dict[str, int] | None = None, outputs: Iterable[str] = (), nlabs: int | None = None,
              filename: str = "<spmd>", firstlineno: int = 1, workspace: str | None = None, echo: bool = False,
              timeout: float | None = None, sink: Callable[[int, str, str], None] | None = None,
              composites: bool = False) -> Outcome:
    """Run ``source`` (or ``call``, see ``Block``) on labs 1..``nlabs`` (default all).

    ``inputs`` are client values by name (sent as ``values.input_spec`` says), ``refs``
    names for values already stored on the labs under a key. Each name of ``outputs``
    some lab assigns comes back in ``Outcome.values`` (``composites``: always as a
    Composite); the others are freed. Raises what ``Pool.run`` raises.
    """
    nlabs = pool.numlabs if nlabs is None else nlabs
    specs = {name: input_spec(value, pool) for name, value in (inputs or {}).items()}
    specs.update({name: Input("ref", key) for name, key in (refs or {}).items()})
    keys = {name: pool.new_key() for name in outputs}
    block = Block(source=source, filename=filename, firstlineno=firstlineno, inputs=specs, outputs=keys,
                  nlabs=nlabs if nlabs < pool.numlabs else 0, workspace=workspace, echo=echo, call=call)
    generation = pool.generation
    try:
        replies = pool.run(block, sink=sink, timeout=timeout)
    except BaseException:
        for key in keys.values():
            pool.free_later(key, generation)
        raise
    outcome = Outcome(replies=replies)
    for name, key in keys.items():
        summaries = {lab: r.result.summaries[name] for lab, r in replies.items()
                     if r.kind == "done" and name in r.result.summaries}
        if summaries:
            outcome.values[name] = result_handle(pool, key, summaries, nlabs, composites)
        else:
            pool.free_later(key, pool.generation)
    return outcome
