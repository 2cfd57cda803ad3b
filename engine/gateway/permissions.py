"""The permission matrix: what each agent may do beyond answering, default deny.

Per agent (config/permissions.toml, parsed by permissions_config.py): the tools it may ask for, whether it
has a memory of its own, whom it may send messages to (agent ids or role groups such as "role:verifier"),
and whether its outward actions wait for an operator. An agent the matrix does not name, a tool its
`allowed_tools` does not list and a target its `can_send_to` does not cover are all refused.

Every check returns a PermissionDecision whose `why` is a sentence for an operator: it names the agent,
the tool or target, and the rule that decided.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Iterable, Mapping

from ..types import Role, TrustLevel

# The tools the broker knows (engine/gateway/tools.py runs them and checks it agrees with this list).
MEMORY_WRITE, MEMORY_READ, SEND_EMAIL, SQL_QUERY, MESSAGE = \
    "memory.write", "memory.read", "send_email", "sql_query", "message"
TOOL_NAMES: tuple[str, ...] = (MEMORY_WRITE, MEMORY_READ, SEND_EMAIL, SQL_QUERY, MESSAGE)
# Tools that act outside the system (send, modify, delete something an operator cannot roll back):
# in approval mode they wait for an operator. Memory is versioned and rolls back, so it is not outward.
OUTWARD_TOOLS: frozenset[str] = frozenset({SEND_EMAIL})
MEMORY_TOOLS: frozenset[str] = frozenset({MEMORY_WRITE, MEMORY_READ})
# `message` is governed by can_send_to alone: it is never listed in allowed_tools.
LISTABLE_TOOLS: tuple[str, ...] = tuple(t for t in TOOL_NAMES if t != MESSAGE)
ROLE_PREFIX = "role:"


class MemoryAccess(str, enum.Enum):
    OWN = "own"      # its own namespace (named after the agent), nothing else
    NONE = "none"    # no memory at all


class MemoryOp(str, enum.Enum):
    READ = "read"
    WRITE = "write"


def role_group(role: Role) -> str:
    """The can_send_to entry that stands for every agent of a role: "role:generator"."""
    return f"{ROLE_PREFIX}{role.value}"


@dataclass(frozen=True)
class PermissionDecision:
    allowed: bool
    why: str
    needs_approval: bool = False     # allowed, but only once an operator approves (approval mode, outward tool)

    def __bool__(self) -> bool:
        return self.allowed


def _deny(why: str) -> PermissionDecision:
    return PermissionDecision(False, why)


@dataclass(frozen=True)
class AgentPermissions:
    agent_id: str
    allowed_tools: tuple[str, ...] = ()
    memory_access: MemoryAccess = MemoryAccess.NONE
    can_send_to: tuple[str, ...] = ()      # agent ids and role groups ("role:verifier")
    approval_mode: bool = True             # outward tools wait for an operator

    @property
    def namespace(self) -> str:
        """The agent's own memory namespace."""
        return self.agent_id


@dataclass(frozen=True)
class ExternalInputPolicy:
    """How content from outside the fleet (documents, tool results) enters: at which trust level, with
    hidden characters removed or not, cut at how many characters."""
    trust: TrustLevel = TrustLevel.EXTERNAL
    sanitise: bool = True
    max_length: int = 20000


@dataclass(frozen=True)
class EmailPolicy:
    allowed_domains: tuple[str, ...] = ()    # recipient domains, matched exactly (list sub-domains too)
    max_subject_chars: int = 200
    max_body_chars: int = 10000


@dataclass(frozen=True)
class SqlPolicy:
    read_only: bool = True                   # must stay true: the broker never writes through sql_query
    tables: tuple[str, ...] = ()             # tables a query may read (a view reads its tables: list them)
    max_rows: int = 100
    max_sql_chars: int = 2000
    timeout_s: float = 2.0


@dataclass(frozen=True)
class MessagePolicy:
    max_chars: int = 4000


@dataclass(frozen=True)
class MemoryPolicy:
    max_key_chars: int = 200
    max_content_chars: int = 20000


@dataclass(frozen=True)
class ToolPolicies:
    send_email: EmailPolicy = EmailPolicy()
    sql_query: SqlPolicy = SqlPolicy()
    message: MessagePolicy = MessagePolicy()
    memory: MemoryPolicy = MemoryPolicy()


@dataclass(frozen=True)
class PermissionMatrix:
    agents: tuple[AgentPermissions, ...] = ()
    tools: ToolPolicies = ToolPolicies()
    external_input: ExternalInputPolicy = ExternalInputPolicy()
    source: str = "the permission matrix"     # the file it came from, named in refusals

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for agent in self.agents:
            if agent.agent_id in seen:
                raise ValueError(f"agent {agent.agent_id!r} appears twice in the permission matrix")
            seen.add(agent.agent_id)

    @cached_property
    def _by_id(self) -> Mapping[str, AgentPermissions]:
        return MappingProxyType({a.agent_id: a for a in self.agents})

    def get(self, agent_id: str) -> AgentPermissions | None:
        return self._by_id.get(agent_id)

    @property
    def agent_ids(self) -> tuple[str, ...]:
        return tuple(self._by_id)

    def _unknown(self, agent_id: str) -> PermissionDecision:
        return _deny(f"agent {agent_id!r} is not in {self.source}: an agent without an entry may do nothing "
                     f"(default deny)")

    # --- checks --------------------------------------------------------------------------------
    def check_tool(self, agent_id: str, tool: str) -> PermissionDecision:
        """May `agent_id` ask for `tool`? needs_approval when the tool acts outward and the agent is in
        approval mode. `message` is allowed when can_send_to names anyone; check_send decides the target."""
        agent = self.get(agent_id)
        if agent is None:
            return self._unknown(agent_id)
        if tool not in TOOL_NAMES:
            return _deny(f"agent {agent_id} asked for {tool!r}, which is not a tool "
                         f"(tools: {', '.join(TOOL_NAMES)})")
        if tool == MESSAGE:
            if not agent.can_send_to:
                return _deny(f"agent {agent_id} may not send messages: its can_send_to in {self.source} is empty")
            return PermissionDecision(True, f"agent {agent_id} may send messages to "
                                            f"{', '.join(agent.can_send_to)} (can_send_to)")
        if tool not in agent.allowed_tools:
            listed = ", ".join(agent.allowed_tools) or "nothing"
            return _deny(f"agent {agent_id} may not use {tool}: its allowed_tools in {self.source} list {listed}")
        if tool in OUTWARD_TOOLS and agent.approval_mode:
            return PermissionDecision(True, f"agent {agent_id} may use {tool}, but it is in approval mode and "
                                            f"{tool} acts outside the system: it waits for an operator",
                                      needs_approval=True)
        return PermissionDecision(True, f"agent {agent_id} may use {tool} (allowed_tools)")

    def check_send(self, agent_id: str, target_id: str, target_role: Role | str | None = None) -> PermissionDecision:
        """May `agent_id` send to `target_id`? It may if can_send_to names the target's id, or the
        group of its role ("role:generator"); `target_role` None means the role is unknown, so only
        an explicit id entry can allow it."""
        agent = self.get(agent_id)
        if agent is None:
            return self._unknown(agent_id)
        role = _role(target_role)
        what = f"{target_id} ({role.value})" if role else target_id
        if target_id == agent_id:
            return _deny(f"agent {agent_id} may not send to itself")
        if target_id in agent.can_send_to:
            return PermissionDecision(True, f"agent {agent_id} may send to {what}: can_send_to names it")
        if role is not None and role_group(role) in agent.can_send_to:
            return PermissionDecision(True, f"agent {agent_id} may send to {what}: can_send_to includes "
                                            f"{role_group(role)}")
        listed = ", ".join(agent.can_send_to) or "no one"
        return _deny(f"agent {agent_id} may not send to {what}: its can_send_to in {self.source} lists {listed}")

    def check_memory(self, agent_id: str, namespace: str, op: MemoryOp | str) -> PermissionDecision:
        """May `agent_id` read or write the memory `namespace`? Only its own (named after the agent), and
        only when its memory_access is "own": there is no shared pool."""
        agent = self.get(agent_id)
        if agent is None:
            return self._unknown(agent_id)
        try:
            op = MemoryOp(getattr(op, "value", op))
        except ValueError:
            return _deny(f"agent {agent_id} asked for memory operation {op!r}; there is only read and write")
        if agent.memory_access is MemoryAccess.NONE:
            return _deny(f"agent {agent_id} may not {op.value} memory: its memory_access in {self.source} is none")
        if namespace != agent.namespace:
            return _deny(f"agent {agent_id} may not {op.value} memory namespace {namespace!r}: an agent has its "
                         f"own namespace ({agent.namespace!r}) only, and there is no shared pool")
        return PermissionDecision(True, f"agent {agent_id} may {op.value} its own memory ({namespace!r})")


def _role(value: Role | str | None) -> Role | None:
    if value is None or isinstance(value, Role):
        return value
    text = str(value)
    text = text[len(ROLE_PREFIX):] if text.startswith(ROLE_PREFIX) else text
    try:
        return Role(text)
    except ValueError:
        return None


def expand_targets(entries: Iterable[str], roles: Mapping[str, Role]) -> tuple[str, ...]:
    """The agent ids `entries` (ids and role groups) stand for in a fleet of `roles` (agent id → role)."""
    out: list[str] = []
    for entry in entries:
        if entry.startswith(ROLE_PREFIX):
            role = _role(entry)
            out.extend(a for a, r in roles.items() if r is role and a not in out)
        elif entry not in out:
            out.append(entry)
    return tuple(out)
