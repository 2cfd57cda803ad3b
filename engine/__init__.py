"""Quorum engine: pure Python, no Qt. This module is the engine's public API, and the console's whole view of
it (an import-linter contract in pyproject.toml says so): every module behind it is private.

Errors: see engine.errors for the one hierarchy (QuorumError and its subclasses).
"""
from engine.config import DEFAULT_FLEET, EngineSettings, FleetConfig, load_fleet, load_settings
from engine.engine import Engine, default_cache_dir, default_store
from engine.errors import (AgentError, AgentProtocolError, AgentReplyTooLarge, AgentTimeout, AgentUnavailable,
                           AuditChainBroken, ConfigError, FleetError, InputError, QuorumError, StoreError)
from engine.gateway.envelope import new_trace_id
from engine.registry import AgentView, FleetState
from engine.types import (AgentKind, AgentOutcome, AgentSpec, AgentState, CallStatus, Candidate, ChallengeOutcome,
                          CanaryState, CheckReason, Chunk, ChunkExplanation, Citation, Claim, ClaimCheck, ClaimOrigin,
                          ContextChunk, Event, FaultKind, Generation, JudgeNote, MeaningStatus, PassageFlag,
                          RetrievalMode, RiskTier, Role, ToolRequest, TrustLevel, Verdict, to_jsonable)
from engine.answer import Answer

# What the engine tells its listeners (Engine.subscribe), one class per thing that happened.
from engine.events import (AgentChanged, AlertChanged, AlertsRaised, CascadeResolved, CascadeScored,
                           CorpusIndexProgress, DemoTrafficChanged, EngineReady, GatewayFlagged, QuestionReceived,
                           ReviewEnqueued, SilencesChanged, StageProgressed, StoreChanged, StoreLink,
                           TrustUpdated)

# A question's stages and the cascade monitor's view of them.
from engine.stages.model import StageKind, StageResult
from engine.cascade.types import CascadeOutcome, StageScore
from engine.types import CascadeType
from engine.participation import summary as participation_summary

# The approval queue.
from engine.review import (APPROVE_REASONS, OTHER, REJECT_REASONS, AgentSummary, CascadeSummary, ClaimSummary,
                           DecisionOutcome, ReviewItem, ReviewStatus, ReviewerTally, ShiftTally,
                           StageScoreSummary, needs_review)

# Reputation.
from engine.reputation import AgentQuarantined, AgentReleased, ReputationSettings
from engine.alerts.kinds import AlertKind
from engine.reputation.store import ScorePoint

# Alerts and silences.
from engine.alerts import (KINDS, MAX_SILENCE_S, AlertRow, Severity, Silence, format_duration, label_of, muting,
                           parse_duration)
from engine.alerts.kinds import kind_of
from engine.alerts.plain import plain as alert_plain
from engine.alerts.silences import MAX_COMMENT_CHARS

# Agents' memory.
from engine.memory import (EntryStatus, MemoryEntry, NamespaceSummary, RollbackResult, Snapshot, Spread,
                           StatusChange)

# The gateway's record, traces, tool calls and the permission matrix.
from engine.gateway.report import GatewayFlag
from engine.gateway.traces import DecisionRow, TraceLine
from engine.gateway.tools import OutboxMail, ToolCall, ToolCallResult, ToolStatus
from engine.gateway.permissions import OUTWARD_TOOLS, SEND_EMAIL, PermissionMatrix, expand_targets

# The audit trail.
from engine.store.audit_log import AuditFilter, AuditRow, ChainStatus

# The corpus and its index.
from engine.ingest.corpus import Skipped
from engine.ingest.index import IndexPhase, IndexProgress
from engine.ingest.manifest import IndexRecord

# Demo traffic.
from engine.demo import (DEFAULT_RATE, RATE_MAX, RATE_MIN, DemoStats, check_rate, default_max_in_flight,
                         load_demo_questions)

# Text: how agents' and documents' words are shown (engine.untrusted), sentences, a quantile.
from engine.untrusted import LINE_BREAK_MARK, one_line, quoted_log_handler, visible
from engine.text import sentences
from engine.stats import quantile

# What a command's exit code says (the console's own commands, `main.py screenshot` and `bench ui`, use it too).
from engine.cli.exit_codes import ExitCode

__all__ = [
    # engine, settings, fleet
    "Engine", "EngineSettings", "FleetConfig", "load_fleet", "load_settings", "default_store", "default_cache_dir",
    "DEFAULT_FLEET", "AgentView", "FleetState", "new_trace_id",
    # vocabulary
    "AgentKind", "AgentOutcome", "AgentSpec", "AgentState", "Answer", "CallStatus", "Candidate", "ChallengeOutcome",
    "CanaryState", "JudgeNote", "MeaningStatus",
    "Chunk", "ChunkExplanation", "Citation", "Claim", "ClaimCheck", "ContextChunk", "Event", "FaultKind", "Generation",
    "RiskTier", "Role", "ToolRequest", "TrustLevel", "Verdict", "to_jsonable",
    "CheckReason", "ClaimOrigin", "PassageFlag", "RetrievalMode",
    # errors
    "QuorumError", "ConfigError", "InputError", "AgentError", "AgentUnavailable", "AgentTimeout",
    "AgentProtocolError", "AgentReplyTooLarge", "FleetError", "StoreError", "AuditChainBroken",
    # events
    "AgentChanged", "AlertChanged", "AlertsRaised", "CascadeResolved", "CascadeScored", "CorpusIndexProgress",
    "DemoTrafficChanged", "EngineReady", "GatewayFlagged", "QuestionReceived", "ReviewEnqueued", "SilencesChanged",
    "StoreChanged", "StoreLink", "StageProgressed", "TrustUpdated",
    # stages, cascade
    "StageKind", "StageResult", "CascadeOutcome", "CascadeType", "StageScore", "participation_summary",
    # review
    "APPROVE_REASONS", "OTHER", "REJECT_REASONS", "AgentSummary", "CascadeSummary", "ClaimSummary", "DecisionOutcome",
    "ReviewItem", "ReviewStatus", "ReviewerTally", "ShiftTally", "StageScoreSummary", "needs_review",
    # reputation
    "AgentQuarantined", "AgentReleased", "ReputationSettings", "AlertKind", "ScorePoint",
    # alerts
    "KINDS", "MAX_SILENCE_S", "MAX_COMMENT_CHARS", "AlertRow", "Severity", "Silence", "format_duration", "label_of",
    "muting", "parse_duration", "kind_of", "alert_plain",
    # memory
    "EntryStatus", "MemoryEntry", "NamespaceSummary", "RollbackResult", "Snapshot", "Spread", "StatusChange",
    # gateway, traces, tools
    "GatewayFlag", "DecisionRow", "TraceLine", "OutboxMail", "ToolCall", "ToolCallResult", "ToolStatus",
    "OUTWARD_TOOLS", "SEND_EMAIL", "PermissionMatrix", "expand_targets",
    # audit
    "AuditFilter", "AuditRow", "ChainStatus",
    # corpus
    "Skipped", "IndexPhase", "IndexProgress", "IndexRecord",
    # demo traffic
    "DEFAULT_RATE", "RATE_MAX", "RATE_MIN", "DemoStats", "check_rate", "default_max_in_flight", "load_demo_questions",
    # text
    "LINE_BREAK_MARK", "one_line", "quoted_log_handler", "visible", "sentences", "quantile",
    # exit codes
    "ExitCode",
]
