"""Codistributed arrays (lab side of MATLAB's distributed arrays), kept at this import path
for code that used it; the implementation is the ``spmdlab.arrays`` package."""
from __future__ import annotations

from .arrays import (
    changeMode,
    codistributed,
    gather,
    getCodistributor,
    getLocalPart,
    globalIndices,
    iscodistributed,
    redistribute,
    updateHalos,
)

__all__ = ["codistributed", "getLocalPart", "getCodistributor", "globalIndices", "redistribute",
           "gather", "iscodistributed", "updateHalos", "changeMode"]
