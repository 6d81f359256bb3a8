"""Notebooks: ``%load_ext spmdlab`` (the façade forwards here) loads the ``%%spmd``,
``%spmd`` and ``%pmode`` magics. :mod:`.cells` does the work without IPython;
:mod:`.magics` is the thin IPython adapter."""
from __future__ import annotations

from .magics import load_ipython_extension, unload_ipython_extension

__all__ = ["load_ipython_extension", "unload_ipython_extension"]
