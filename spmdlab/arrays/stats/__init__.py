"""Statistics of codistributed arrays: distributed selection (``selection``) for
``median``/``percentile``/``quantile`` and their NaN forms (``quantiles``), ``histogram``
and ``bincount`` (``histogram``), ``diff``/``ptp``/``average``/``cov``/``corrcoef``
(``moments``), registered with ``registry.implements``."""
from __future__ import annotations

from . import histogram, matlab, moments, quantiles, selection

__all__ = ["histogram", "matlab", "moments", "quantiles", "selection"]
