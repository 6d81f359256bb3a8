"""What the pmode REPL and the notebook's ``%pmode`` share, with no terminal and no IPython:
the ``pmode`` commands (:mod:`.commands`), typed input (:mod:`.inputs`), grouped per-lab
output (:mod:`.output`), lab tracebacks cut to the user's lines (:mod:`.tracebacks`), and
``lab2client`` / ``client2lab`` (:mod:`.copies`)."""
