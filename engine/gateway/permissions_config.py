"""config/permissions.toml → PermissionMatrix, validated like the fleet and engine files: every problem is a
ConfigError naming the file and the key (`agents.gen-alpha.allowed_tools[1]`), unknown keys are errors,
and a missing key takes the restrictive default (no tools, no memory, no one to send to, approval mode).

    version = 1
    [memory]          shared_pool = false                  (must be false: agents have their own memory only)
    [external_input]  trust = "EXTERNAL", sanitise = true, max_length = 20000
    [agents.<id>]     allowed_tools = [...], memory_access = "own" | "none",
                      can_send_to = ["ver-e5", "role:generator"], approval_mode = true | false
    [tools.send_email] allowed_domains = [...], max_subject_chars, max_body_chars
    [tools.sql_query]  read_only = true, tables = [...], max_rows, max_sql_chars, timeout_s
    [tools.message]    max_chars
    [tools.memory]     max_key_chars, max_content_chars
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from ..config import PROJECT_ROOT, _check_keys, _read_toml
from ..errors import ConfigError
from ..types import AGENT_ID, Role, TrustLevel
from .envelope import INSTRUCTING
from .permissions import (LISTABLE_TOOLS, MEMORY_TOOLS, MESSAGE, ROLE_PREFIX, AgentPermissions, EmailPolicy,
                          ExternalInputPolicy, MemoryAccess, MemoryPolicy, MessagePolicy, PermissionMatrix,
                          SqlPolicy, ToolPolicies)

DEFAULT_PERMISSIONS = PROJECT_ROOT / "config" / "permissions.toml"

_TOP_KEYS = {"memory", "external_input", "agents", "tools"}
_AGENT_KEYS = {"allowed_tools", "memory_access", "can_send_to", "approval_mode"}
_TOOL_TABLES = {"send_email", "sql_query", "message", "memory"}
_DOMAIN = re.compile(r"^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def load_permissions(path: Path | str | None = None, known_agents: Iterable[str] | None = None) -> PermissionMatrix:
    """Reads the permission matrix. `known_agents` (the fleet's agent ids), when given, makes an entry or
    a can_send_to id the fleet does not have an error, so a renamed agent cannot keep stale rights."""
    path = Path(path) if path else DEFAULT_PERMISSIONS
    file = str(path)
    data = _check_keys(file, "", _read_toml(path), _TOP_KEYS)
    known = None if known_agents is None else tuple(known_agents)
    _memory(file, data.get("memory", {}))
    agents_raw = data.get("agents", {})
    if not isinstance(agents_raw, dict):
        raise ConfigError(file, "agents", f"expected one table per agent ([agents.<id>]), found {agents_raw!r}")
    agents = tuple(_agent(file, agent_id, table, known) for agent_id, table in agents_raw.items())
    return PermissionMatrix(agents=agents, tools=_tools(file, data.get("tools", {})),
                            external_input=_external_input(file, data.get("external_input", {})), source=file)


# --- values --------------------------------------------------------------------------------------
def _bool(file: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(file, key, f"expected true or false, found {value!r}")
    return value


def _int(file: str, key: str, value: Any, minimum: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(file, key, f"expected a whole number, found {value!r}")
    if value < minimum:
        raise ConfigError(file, key, f"must be at least {minimum}, found {value}")
    return value


def _positive(file: str, key: str, value: Any) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ConfigError(file, key, f"expected a number, found {value!r}")
    if value <= 0:
        raise ConfigError(file, key, f"must be positive, found {value}")
    return float(value)


def _strings(file: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ConfigError(file, key, f"expected a list of strings, found {value!r}")
    seen: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(file, f"{key}[{i}]", f"expected a non-empty string, found {item!r}")
        if item in seen:
            raise ConfigError(file, f"{key}[{i}]", f"{item!r} is listed twice")
        seen.append(item)
    return tuple(seen)


# --- sections ------------------------------------------------------------------------------------
def _memory(file: str, table: Any) -> None:
    table = _check_keys(file, "memory", table, {"shared_pool"})
    if _bool(file, "memory.shared_pool", table.get("shared_pool", False)):
        raise ConfigError(file, "memory.shared_pool", "must be false: Quorum has no shared memory pool, each agent "
                                                      "may only reach its own namespace (memory_access = \"own\"), "
                                                      "so one poisoned agent cannot spread into the others' memory")


def _external_input(file: str, table: Any) -> ExternalInputPolicy:
    table = _check_keys(file, "external_input", table, {"trust", "sanitise", "max_length"})
    default = ExternalInputPolicy()
    raw = table.get("trust", default.trust.value)
    try:
        trust = TrustLevel(raw)
    except ValueError:
        raise ConfigError(file, "external_input.trust", f"expected EXTERNAL or TOOL, found {raw!r}") from None
    if trust in INSTRUCTING:
        raise ConfigError(file, "external_input.trust", f"external input may never instruct: expected EXTERNAL or "
                                                        f"TOOL, found {raw!r}")
    return ExternalInputPolicy(
        trust=trust,
        sanitise=_bool(file, "external_input.sanitise", table.get("sanitise", default.sanitise)),
        max_length=_int(file, "external_input.max_length", table.get("max_length", default.max_length)))


def _agent(file: str, agent_id: str, table: Any, known: tuple[str, ...] | None) -> AgentPermissions:
    if not AGENT_ID.fullmatch(agent_id):      # the id is a key here: named by repr, it cannot break the line
        raise ConfigError(file, f"agents.{agent_id!r}", "an agent id is 1 to 64 letters, digits, '-', '_' and '.', "
                                                         "starting with a letter or digit")
    where = f"agents.{agent_id}"
    if known is not None and agent_id not in known:
        raise ConfigError(file, where, f"no agent {agent_id!r} in the fleet (agents: {', '.join(known)})")
    table = _check_keys(file, where, table, _AGENT_KEYS)
    tools = _strings(file, f"{where}.allowed_tools", table.get("allowed_tools", []))
    for i, tool in enumerate(tools):
        if tool == MESSAGE:
            raise ConfigError(file, f"{where}.allowed_tools[{i}]", "message is not listed here: can_send_to "
                                                                   "decides whom an agent may message")
        if tool not in LISTABLE_TOOLS:
            raise ConfigError(file, f"{where}.allowed_tools[{i}]",
                              f"unknown tool {tool!r} (tools: {', '.join(LISTABLE_TOOLS)})")
    raw_access = table.get("memory_access", MemoryAccess.NONE.value)
    try:
        access = MemoryAccess(raw_access)
    except ValueError:
        if raw_access == "shared":
            raise ConfigError(file, f"{where}.memory_access", "there is no shared memory pool; expected own or none") \
                from None
        raise ConfigError(file, f"{where}.memory_access", f"expected own or none, found {raw_access!r}") from None
    if access is MemoryAccess.NONE:
        for i, tool in enumerate(tools):
            if tool in MEMORY_TOOLS:
                raise ConfigError(file, f"{where}.allowed_tools[{i}]",
                                  f"{tool} needs memory: memory_access is none (set it to \"own\" or remove {tool})")
    targets = _strings(file, f"{where}.can_send_to", table.get("can_send_to", []))
    for i, target in enumerate(targets):
        key = f"{where}.can_send_to[{i}]"
        if target.startswith(ROLE_PREFIX):
            role = target[len(ROLE_PREFIX):]
            if role not in {r.value for r in Role}:
                raise ConfigError(file, key, f"unknown role group {target!r} (role groups: "
                                             f"{', '.join(ROLE_PREFIX + r.value for r in Role)})")
        elif target == agent_id:
            raise ConfigError(file, key, "an agent does not send to itself")
        elif known is not None and target not in known:
            raise ConfigError(file, key, f"no agent {target!r} in the fleet (agents: {', '.join(known)})")
        elif not AGENT_ID.fullmatch(target):
            raise ConfigError(file, key, f"expected an agent id or a role group such as \"role:verifier\", "
                                         f"found {target!r}")
    approval = _bool(file, f"{where}.approval_mode", table.get("approval_mode", True))
    return AgentPermissions(agent_id, tools, access, targets, approval)


def _tools(file: str, table: Any) -> ToolPolicies:
    table = _check_keys(file, "tools", table, _TOOL_TABLES)
    return ToolPolicies(send_email=_email(file, table.get("send_email", {})),
                        sql_query=_sql(file, table.get("sql_query", {})),
                        message=_message(file, table.get("message", {})),
                        memory=_memory_limits(file, table.get("memory", {})))


def _email(file: str, table: Any) -> EmailPolicy:
    where, d = "tools.send_email", EmailPolicy()
    table = _check_keys(file, where, table, {"allowed_domains", "max_subject_chars", "max_body_chars"})
    domains = _strings(file, f"{where}.allowed_domains", table.get("allowed_domains", []))
    for i, domain in enumerate(domains):
        if not _DOMAIN.match(domain):
            raise ConfigError(file, f"{where}.allowed_domains[{i}]",
                              f"expected a domain in lower case such as \"example.org\" (no wildcards, no "
                              f"address), found {domain!r}")
    return EmailPolicy(allowed_domains=domains,
                       max_subject_chars=_int(file, f"{where}.max_subject_chars",
                                              table.get("max_subject_chars", d.max_subject_chars)),
                       max_body_chars=_int(file, f"{where}.max_body_chars",
                                           table.get("max_body_chars", d.max_body_chars)))


def _sql(file: str, table: Any) -> SqlPolicy:
    where, d = "tools.sql_query", SqlPolicy()
    table = _check_keys(file, where, table, {"read_only", "tables", "max_rows", "max_sql_chars", "timeout_s"})
    if not _bool(file, f"{where}.read_only", table.get("read_only", True)):
        raise ConfigError(file, f"{where}.read_only", "must be true: sql_query only ever reads (a read-only "
                                                      "connection, SELECT alone)")
    tables = _strings(file, f"{where}.tables", table.get("tables", []))
    for i, name in enumerate(tables):
        if not _IDENTIFIER.match(name) or name.lower().startswith("sqlite_"):
            raise ConfigError(file, f"{where}.tables[{i}]", f"expected a table name (letters, digits, '_'; not "
                                                            f"an sqlite_ internal table), found {name!r}")
    return SqlPolicy(read_only=True, tables=tables,
                     max_rows=_int(file, f"{where}.max_rows", table.get("max_rows", d.max_rows)),
                     max_sql_chars=_int(file, f"{where}.max_sql_chars", table.get("max_sql_chars", d.max_sql_chars)),
                     timeout_s=_positive(file, f"{where}.timeout_s", table.get("timeout_s", d.timeout_s)))


def _message(file: str, table: Any) -> MessagePolicy:
    table = _check_keys(file, "tools.message", table, {"max_chars"})
    return MessagePolicy(max_chars=_int(file, "tools.message.max_chars",
                                        table.get("max_chars", MessagePolicy().max_chars)))


def _memory_limits(file: str, table: Any) -> MemoryPolicy:
    where, d = "tools.memory", MemoryPolicy()
    table = _check_keys(file, where, table, {"max_key_chars", "max_content_chars"})
    return MemoryPolicy(max_key_chars=_int(file, f"{where}.max_key_chars", table.get("max_key_chars", d.max_key_chars)),
                        max_content_chars=_int(file, f"{where}.max_content_chars",
                                               table.get("max_content_chars", d.max_content_chars)))
