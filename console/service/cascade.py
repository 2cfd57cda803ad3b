"""Cascade adapter: the cascade monitor's stage scores and outcomes, live."""
from __future__ import annotations

from PySide6.QtCore import Signal

from .core import Adapter


class CascadeAdapter(Adapter):
    sig_scored = Signal(object)                # CascadeScored event: one stage boundary's scores and its trace id
    sig_resolved = Signal(object)              # CascadeResolved event: a question's outcome (before its answer)

    @property
    def threshold(self) -> float:
        """CHARM's trigger threshold θ (engine settings), drawn on the Cascade panel's plot."""
        return self.engine.cascade.theta
