"""The cascade monitor as the console draws it (engine.cascade)."""
from __future__ import annotations

from ..settings.cascade import CascadeSettings


class CascadeFacade:
    def __init__(self, settings: CascadeSettings) -> None:
        self._settings = settings

    @property
    def theta(self) -> float:
        """The score above which the cascade resolution trigger fires (the line on the stage plot)."""
        return self._settings.theta
