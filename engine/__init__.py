"""Quorum engine: pure Python, no Qt. The public API is re-exported here; modules behind it are private.

Errors: see engine.errors for the one hierarchy (QuorumError and its subclasses).
"""
from .config import EngineSettings, FleetConfig, load_fleet, load_settings
from .engine import Engine, default_cache_dir, default_db_path
from .errors import (AgentError, AgentProtocolError, AgentReplyTooLarge, AgentTimeout, AgentUnavailable,
                     AuditChainBroken, ConfigError, FleetError, InputError, QuorumError, StoreError)
from .gateway.envelope import new_trace_id
from .registry import AgentView, FleetState
from .types import (AgentKind, AgentOutcome, AgentSpec, AgentState, Answer, CallStatus, Candidate, ChallengeOutcome, Chunk, Citation,
                    Claim, ChunkExplanation, ClaimCheck, ContextChunk, Event, FaultKind, Generation, RiskTier, Role, TrustLevel, Verdict,
                    to_jsonable)

__all__ = [
    "Engine", "EngineSettings", "FleetConfig", "load_fleet", "load_settings", "default_db_path", "default_cache_dir",
    "AgentView", "FleetState", "AgentKind", "AgentOutcome", "AgentSpec", "AgentState", "Answer", "CallStatus", "Candidate",
    "ChallengeOutcome",
    "Chunk", "ChunkExplanation", "Citation", "Claim", "ClaimCheck", "ContextChunk", "Event", "FaultKind", "Generation", "RiskTier", "Role",
    "TrustLevel", "Verdict", "to_jsonable", "new_trace_id",
    "QuorumError", "ConfigError", "InputError", "AgentError", "AgentUnavailable", "AgentTimeout",
    "AgentProtocolError", "AgentReplyTooLarge", "FleetError", "StoreError", "AuditChainBroken",
]
