"""The console's only door into the engine: EngineService and its feature adapters."""
from .core import Adapter, Attempt, Phase, ServiceCore
from .memory import SNAPSHOT_LABEL, MemoryState
from .questions import AUTO_TIER
from .service import EngineService
from .tools import PermissionsView, ToolCallsState

__all__ = ["AUTO_TIER", "SNAPSHOT_LABEL", "Adapter", "Attempt", "EngineService", "MemoryState", "Phase",
           "PermissionsView", "ServiceCore", "ToolCallsState"]
