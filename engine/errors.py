"""One exception hierarchy for the whole engine.

QuorumError
├── ConfigError          a config or fleet file is missing, unparsable or invalid (names file, key, reason)
├── InputError           a question or other user input is unusable (empty, too long)
├── AgentError           one agent call failed; carries the agent id
│   ├── AgentUnavailable     connection refused / process gone
│   ├── AgentTimeout         no reply within the agent's deadline
│   ├── AgentProtocolError   reply is not the protocol's JSON (malformed, wrong types)
│   │   └── AgentHttpStatus      the agent answered with an HTTP status other than 200
│   └── AgentReplyTooLarge   reply is bigger than the response cap
├── FleetError           the local fleet could not be started or stopped
└── StoreError           the store failed (disk full, locked, corrupt, its server away)
    ├── StoreRefused         the team store's server refused this role the write (a viewer deciding)
    └── AuditChainBroken     a row of the audit chain does not hash to what follows it
"""
from __future__ import annotations


class QuorumError(Exception):
    """Base of every error the engine raises on purpose."""


class ConfigError(QuorumError):
    def __init__(self, file: str, key: str, reason: str) -> None:
        self.file, self.key, self.reason = file, key, reason
        where = f"{file}: {key}" if key else file
        super().__init__(f"{where}: {reason}")


class InputError(QuorumError):
    pass


class AgentError(QuorumError):
    status = "error"

    def __init__(self, agent_id: str, reason: str) -> None:
        self.agent_id, self.reason = agent_id, reason
        super().__init__(f"agent {agent_id}: {reason}")


class AgentUnavailable(AgentError):
    status = "down"


class AgentTimeout(AgentError):
    status = "timeout"


class AgentProtocolError(AgentError):
    status = "malformed"


class AgentHttpStatus(AgentProtocolError):
    """An HTTP status other than 200: no reply to read (an adapter may try another request form on some)."""

    def __init__(self, agent_id: str, http_status: int, body: str) -> None:
        self.http_status = http_status
        super().__init__(agent_id, f"HTTP {http_status}: {body}")


class AgentReplyTooLarge(AgentError):
    status = "too_large"


class FleetError(QuorumError):
    pass


class StoreError(QuorumError):
    pass


class StoreRefused(StoreError):
    """The database refused the signed-in role a write it has no grant for; `action` names the statement (its
    verb and table), `reason` is the server's own word."""

    def __init__(self, message: str, action: str, reason: str) -> None:
        self.action, self.reason = action, reason
        super().__init__(message)


class AuditChainBroken(StoreError):
    def __init__(self, seq: int, reason: str) -> None:
        self.seq = seq
        super().__init__(f"audit chain broken at event {seq}: {reason}")
