"""The Engine's faces, one per concern an operator (or the console's adapter of the same name) works with.

    fleet       FleetFacade: the agents as the registry sees them; stop and start the built-in fleet
    questions   QuestionsFacade: ask a question; the trace of one
    reviews     ReviewsFacade: the approval queue; decide one item or several
    reputation  ReputationFacade: scores over time, its settings; quarantine and release an agent
    alerts      AlertsFacade: alerts and silences; acknowledge, silence, end a silence
    memory      MemoryFacade: agents' memory; snapshot, roll back, quarantine and release entries
    audit       the audit trail (engine.store.audit_log.AuditLog): query, verify, export
    corpus      CorpusFacade: the corpus index's progress; index the folder again
    tools       ToolsFacade: agents' tool calls, the outbox, the permission matrix; decide a pending call
    gateway     GatewayFacade: what the gateway blocked, sanitised or escalated
    cascade     CascadeFacade: the cascade monitor's settings the console draws

Each takes the parts it needs when the Engine is built and returns frozen read models; none does I/O in
its constructor. Every change an operator makes goes through one of them, audited by the part behind it.
"""
from .alerts import AlertsFacade
from .cascade import CascadeFacade
from .corpus import CorpusFacade
from .fleet import FleetFacade
from .gateway import GatewayFacade
from .memory import MemoryFacade
from .questions import QuestionsFacade
from .reputation import ReputationFacade
from .reviews import ReviewsFacade
from .tools import ToolsFacade

__all__ = ["AlertsFacade", "CascadeFacade", "CorpusFacade", "FleetFacade", "GatewayFacade", "MemoryFacade",
           "QuestionsFacade", "ReputationFacade", "ReviewsFacade", "ToolsFacade"]
