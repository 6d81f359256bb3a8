"""The pmode REPL for spmdlab (docs/design.md §5): ``pmode start 4`` and the ``spmdlab`` client REPL.

The logic lives in plain modules tested without a terminal (``commands``, ``inputs``,
``output``, ``completion``, ``session``); ``terminal`` is the thin prompt_toolkit adapter;
``pmode`` and ``client`` are the console-script entry points.
"""
