"""The MATLAB-style ``pmode ...`` commands typed at the ``P>>`` prompt: parsing and help.

Parsing is pure: ``parse(line, numlabs)`` returns a :class:`Command`, ``None`` for
ordinary Python code, or raises :class:`CommandError` with a message for the user.
"""
from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field

SUBCOMMANDS = ("lab2client", "client2lab", "client", "layout", "help", "exit", "quit", "restart", "start")
LAYOUTS = ("stacked", "grid")
_EXIT_WORDS = {"exit", "quit", "exit()", "quit()"}
_TOKEN = re.compile(r"\[[^\]]*\]|\S+")

HELP = """\
pmode: every line you type at P>> runs on all labs; output is shown per lab.

  pmode lab2client labvar lab [clientvar]   copy labvar from one lab to the client
  pmode client2lab clientvar labs [labvar]  copy a client variable to labs (2, 1:3, [1 3])
  pmode client <code>                       run a line at the client, e.g. pmode client y
  pmode layout grid|stacked                 labs side by side in columns, or one after another
  pmode layout D                            a map of which lab owns which part of array D
  pmode restart                             start a fresh pool (lab variables are lost)
  pmode help                                this text
  pmode exit                                close the pool and leave (also Ctrl-D)

Blocks (for, def, with ...) end with a blank line. Ctrl-C interrupts the labs.
Tab completes names that exist on lab 1. On the labs, the spmdlab lab API
(labindex, numlabs, labSend, gplus, codistributed ...) and numpy as np are imported."""


class CommandError(ValueError):
    """A ``pmode`` command the user mistyped; the message says what is expected."""


@dataclass
class Command:
    """One parsed ``pmode`` command: ``name`` plus its arguments."""

    name: str
    labvar: str = ""
    clientvar: str = ""
    labs: list[int] = field(default_factory=list)
    code: str = ""
    layout: str = ""


def _identifier(word: str, what: str) -> str:
    if not word.isidentifier() or keyword.iskeyword(word):
        raise CommandError(f"{what} must be a Python variable name, got {word!r}")
    return word


def parse_labs(spec: str, numlabs: int) -> list[int]:
    """MATLAB lab lists: ``2``, ``1:3``, ``1:2:7``, ``[1 3]``, ``[1, 3:4]``, ``:`` (all).

    >>> parse_labs("[1 3:4]", 4)
    [1, 3, 4]
    """
    text = spec.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    parts = [p for p in re.split(r"[\s,]+", text.strip()) if p]
    if not parts:
        raise CommandError(f"no labs given in {spec!r}; labs are numbered 1..{numlabs} as in MATLAB")
    labs: list[int] = []
    for part in parts:
        if part == ":":
            labs.extend(range(1, numlabs + 1))
            continue
        try:
            nums = [int(x) for x in part.split(":")]
        except ValueError:
            raise CommandError(f"cannot read {part!r} as labs; write e.g. 2, 1:3 or [1 3]") from None
        if len(nums) == 1:
            labs.append(nums[0])
        elif len(nums) == 2:
            labs.extend(range(nums[0], nums[1] + 1))
        elif len(nums) == 3 and nums[1] != 0:
            step = nums[1]
            labs.extend(range(nums[0], nums[2] + (1 if step > 0 else -1), step))
        else:
            raise CommandError(f"cannot read {part!r} as labs; write e.g. 2, 1:3 or [1 3]")
    bad = [lab for lab in labs if not 1 <= lab <= numlabs]
    if bad or not labs:
        raise CommandError(f"lab {bad[0] if bad else spec!r} does not exist: labs are numbered "
                           f"1..{numlabs} as in MATLAB")
    return sorted(set(labs))


def is_command(line: str) -> bool:
    """Whether ``line`` is meant as a ``pmode`` command rather than Python code.

    ``pmode = 3`` or ``pmode.x`` stay Python; ``pmode <word>`` and bare ``pmode`` are commands.
    """
    text = line.strip()
    if text in _EXIT_WORDS:
        return True
    m = re.match(r"pmode(\s+|$)(\S*)", text)
    if not m:
        return False
    return m.group(2) == "" or bool(re.match(r"[A-Za-z_]\w*$", m.group(2)))


def parse(line: str, numlabs: int) -> Command | None:
    """Parse one input line; ``None`` if it is Python code, not a ``pmode`` command.

    >>> parse("pmode lab2client x 2", 4)
    Command(name='lab2client', labvar='x', clientvar='x', labs=[2], code='', layout='')
    """
    if "\n" in line.strip() or not is_command(line):
        return None
    text = line.strip()
    if text in _EXIT_WORDS:
        return Command("exit")
    rest = text[len("pmode"):].strip()
    if not rest:
        return Command("help")
    sub, _, args_text = rest.partition(" ")
    args_text = args_text.strip()
    if sub == "client":
        if not args_text:
            raise CommandError("usage: pmode client <code>, e.g. pmode client y  or  pmode client y = 2 * y")
        return Command("client", code=args_text)
    args = _TOKEN.findall(args_text)
    if sub == "lab2client":
        if len(args) not in (2, 3):
            raise CommandError("usage: pmode lab2client labvar lab [clientvar]")
        labvar = _identifier(args[0], "labvar")
        labs = parse_labs(args[1], numlabs)
        if len(labs) != 1:
            raise CommandError(f"lab2client copies from one lab, got labs {args[1]}")
        clientvar = _identifier(args[2], "clientvar") if len(args) == 3 else labvar
        return Command("lab2client", labvar=labvar, clientvar=clientvar, labs=labs)
    if sub == "client2lab":
        if len(args) not in (2, 3):
            raise CommandError("usage: pmode client2lab clientvar labs [labvar]")
        clientvar = _identifier(args[0], "clientvar")
        labs = parse_labs(args[1], numlabs)
        labvar = _identifier(args[2], "labvar") if len(args) == 3 else clientvar
        return Command("client2lab", labvar=labvar, clientvar=clientvar, labs=labs)
    if sub == "layout":
        if len(args) == 1 and args[0] not in LAYOUTS and args[0].isidentifier():
            return Command("layoutmap", labvar=_identifier(args[0], "array"))
        if len(args) > 1 or (args and args[0] not in LAYOUTS):
            raise CommandError("usage: pmode layout grid|stacked, or pmode layout D for a map of array D")
        return Command("layout", layout=args[0] if args else "")
    if sub in ("help", "exit", "quit", "restart", "start"):
        if sub in ("exit", "quit", "help", "restart") and args:
            raise CommandError(f"pmode {sub} takes no arguments")
        return Command("exit" if sub == "quit" else sub)
    raise CommandError(f"unknown command 'pmode {sub}'; type 'pmode help' for the list")


_SPMD_WITH = re.compile(r"^\s*with\s+(\w+\.)?spmd\s*[(:]", re.M)
_POOL_CALL = re.compile(r"^\s*(\w+\s*=\s*)?(\w+\.)?(parpool|Pool|gcp|delete\s*\(\s*gcp)\s*[()]", re.M)


def lab_hint(source: str) -> str | None:
    """A hint for client habits typed at ``P>>``, where input already runs on the labs.

    >>> lab_hint("with spmd():\\n    x = 1\\n").split(":")[0]
    'pmode input already runs on every lab'
    """
    if _SPMD_WITH.search(source):
        return ("pmode input already runs on every lab: type the body of the block without "
                "`with spmd():` (e.g. x = labindex()).")
    if _POOL_CALL.search(source):
        return ("pmode already has its pool of labs: `pmode restart` starts a fresh one; leave with "
                "`pmode exit` and run `pmode start N` for another size.")
    return None
