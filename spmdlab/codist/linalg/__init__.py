"""Dense linear algebra on codistributed matrices (issue 12).

Public functions under MATLAB's names (``mldivide``, ``lu``, ``chol``, ...) and a
handler table mapping numpy functions (``np.linalg.solve``, ...) to implementations,
looked up from ``CodistOps.__array_function__``.
"""
from __future__ import annotations

from typing import Any, Callable, Dict

from .grid import DEFAULT_BLOCKSIZE, ProcessGrid, to_2dbc

__all__ = ["ProcessGrid", "to_2dbc", "DEFAULT_BLOCKSIZE", "HANDLERS"]

# numpy function -> implementation (same signature), for codistributed arguments
HANDLERS: Dict[Callable[..., Any], Callable[..., Any]] = {}
