"""Fleet adapter: the agents as the registry sees them, live."""
from __future__ import annotations

from PySide6.QtCore import Signal

from engine import AgentView
from engine.events import AgentChanged

from .core import Adapter


class FleetAdapter(Adapter):
    sig_agent_changed = Signal(object)         # AgentView: state, call record or standing changed

    def agents(self) -> tuple[AgentView, ...]:
        """A snapshot of the fleet, for panels that start before the first event."""
        return self.engine.agents()

    def on_agent_changed(self, event: AgentChanged) -> None:
        self.sig_agent_changed.emit(event.view)
