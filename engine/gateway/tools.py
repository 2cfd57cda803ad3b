"""The tool broker: agents' tool calls, checked against the permission matrix, default deny.

A generator's reply may ask for tools (Generation.actions). The broker is the only way a tool runs:

1. the matrix must allow the agent that tool (permissions.py): an unknown agent or tool is refused;
2. the parameters must pass the tool's schema and validator (each error names the parameter);
3. content that leaves the agent (an e-mail, a peer message) passes the injection gateway;
4. the tool runs, or, for an outward tool (one that acts outside the system) while the agent is in
   approval mode, waits as `pending` until an operator approves or rejects it.

Every call, refused ones included, writes one tool_calls row and one audit event (`tool.done`,
`tool.refused`, `tool.failed`, `tool.pending`, then `tool.approved` / `tool.rejected`) in one
transaction. send_email never sends mail: it writes a row of the outbox table.

The tools: memory.write {key, content, namespace?}, memory.read {key?, namespace?} (through a MemoryPort,
the agent's own namespace only), send_email {to, subject, body} (outward), sql_query {sql} (a single
SELECT on a read-only connection, allow-listed tables only), message {to, content} (a peer message,
can_send_to decides). What a tool returns to the agent is external input: cut, sanitised and screened
as [external_input] says.
"""
from __future__ import annotations

import asyncio
import enum
import inspect
import json
import re
import sqlite3
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Mapping, Protocol, Sequence

from ..errors import InputError
from ..store.db import NO_LIMIT, Store
from ..text import shorten
from ..types import AgentSpec, Role, ToolRequest, TrustLevel, to_jsonable
from .decision import Action, Screening
from .envelope import Envelope, MessageKind, lowest
from .permissions import (MEMORY_READ, MEMORY_WRITE, MESSAGE, OUTWARD_TOOLS, SEND_EMAIL, SQL_QUERY, TOOL_NAMES,
                          MemoryOp, PermissionMatrix, SqlPolicy)
from .scanners.invisible import sanitise

MAX_STORED_CHARS = 20000       # a parameter string longer than this is cut in the record (a refused call's junk)
MAX_CELL_CHARS = 1000          # one SQL value in a result
SQL_MAX_VALUE_BYTES = 1_000_000   # SQLite's length limit on the query connection (no giant strings or blobs)


class ToolStatus(str, enum.Enum):
    DONE = "done"              # ran
    REFUSED = "refused"        # the matrix, the parameters or the gateway said no; nothing ran
    FAILED = "failed"          # allowed, but running it failed (no memory connected, an SQL error)
    PENDING = "pending"        # waits for an operator
    APPROVED = "approved"      # an operator approved it, and it ran
    REJECTED = "rejected"      # an operator rejected it; nothing ran


@dataclass(frozen=True)
class ToolCallResult:
    call_id: int
    agent_id: str
    tool: str
    status: ToolStatus
    why: str
    result: str = ""           # what the agent gets back ("" when refused, pending or withheld)


@dataclass(frozen=True)
class ToolCall:
    """One row of tool_calls."""
    id: int
    trace_id: str
    agent_id: str
    tool: str
    params: Mapping[str, Any]
    status: ToolStatus
    why: str
    result: str
    at: float
    decided_by: str = ""
    decided_at: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class OutboxMail:
    id: int
    tool_call_id: int
    recipient: str
    subject: str
    body: str
    at: float


class MemoryPort(Protocol):
    """What the broker needs of engine.memory (built separately; not imported here)."""

    async def write(self, author: str, namespace: str, key: str, content: str, trace_id: str) -> Any: ...

    async def read(self, reader: str, namespace: str, key: str | None, trace_id: str) -> Any: ...


ScreenFn = Callable[[Envelope], "Screening | Awaitable[Screening]"]


# --- parameters ----------------------------------------------------------------------------------
class ParamError(ValueError):
    """A tool parameter is missing, of the wrong type or not acceptable; names the parameter."""

    def __init__(self, param: str, message: str) -> None:
        self.param, self.message = param, message
        super().__init__(f"parameter {param!r}: {message}")


@dataclass(frozen=True)
class Param:
    name: str
    required: bool = True
    description: str = ""


@dataclass(frozen=True)
class Tool:
    name: str
    params: tuple[Param, ...]
    outward: bool              # sends, modifies or deletes something outside the system
    description: str
    validate: Callable[[dict[str, str], PermissionMatrix], dict[str, str]]   # raises ParamError

    def check(self, params: Any, matrix: PermissionMatrix) -> dict[str, str]:
        """The schema (names, required, strings), then the tool's own validator; returns clean params."""
        if not isinstance(params, Mapping):
            raise ParamError("params", f"expected an object of parameters, found {type(params).__name__}")
        known = {p.name for p in self.params}
        for name in params:
            if name not in known:
                raise ParamError(str(name)[:100], f"{self.name} has no such parameter "
                                            f"(parameters: {', '.join(p.name for p in self.params)})")
        clean: dict[str, str] = {}
        for p in self.params:
            value = params.get(p.name)
            if value is None:
                if p.required:
                    raise ParamError(p.name, "missing")
                continue
            if not isinstance(value, str):
                raise ParamError(p.name, f"expected a string, found {type(value).__name__}")
            clean[p.name] = value
        return self.validate(clean, matrix)


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _line_breaks(text: str) -> bool:
    return any(ch in "\r\n\x0b\x0c\x85\u2028\u2029" for ch in text)


def _no_controls(name: str, text: str) -> None:
    if any(unicodedata.category(ch) == "Cc" for ch in text):
        raise ParamError(name, "control characters and line breaks are not allowed")


def _text(name: str, text: str, limit: int, *, allow_empty: bool = False) -> str:
    if not allow_empty and not text.strip():
        raise ParamError(name, "empty")
    if len(text) > limit:
        raise ParamError(name, f"{len(text)} characters; at most {limit}")
    if _CONTROL.search(text):
        raise ParamError(name, "control characters are not allowed")
    return text


def _namespace(params: dict[str, str]) -> dict[str, str]:
    if "namespace" in params:
        _no_controls("namespace", params["namespace"])
        if not params["namespace"].strip():
            raise ParamError("namespace", "empty")
    return params


def _v_memory_write(params: dict[str, str], matrix: PermissionMatrix) -> dict[str, str]:
    limits = matrix.tools.memory
    _text("key", params["key"], limits.max_key_chars)
    _no_controls("key", params["key"])
    _text("content", params["content"], limits.max_content_chars)
    return _namespace(params)


def _v_memory_read(params: dict[str, str], matrix: PermissionMatrix) -> dict[str, str]:
    if "key" in params:
        _text("key", params["key"], matrix.tools.memory.max_key_chars)
        _no_controls("key", params["key"])
    return _namespace(params)


_LOCAL = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_ADDRESS = re.compile(rf"^{_LOCAL}@({_LABEL}(?:\.{_LABEL})+)$")


def _v_send_email(params: dict[str, str], matrix: PermissionMatrix) -> dict[str, str]:
    policy = matrix.tools.send_email
    to = params["to"]
    if _line_breaks(to):
        raise ParamError("to", "line breaks are not allowed (header injection)")
    to = to.strip()
    if to.count("@") > 1 or any(sep in to for sep in ",;"):
        raise ParamError("to", f"exactly one recipient address, found {to!r}")
    if len(to) > 254:
        raise ParamError("to", f"{len(to)} characters; an address has at most 254")
    match = _ADDRESS.match(to)
    if not match:
        raise ParamError("to", f"not a plain address such as name@example.org (no display name, no <>), "
                               f"found {to!r}")
    domain = match.group(1).lower()
    if domain not in policy.allowed_domains:
        allowed = ", ".join(policy.allowed_domains) or "none"
        raise ParamError("to", f"domain {domain!r} is not in tools.send_email.allowed_domains ({allowed})")
    subject = params["subject"]
    if _line_breaks(subject):
        raise ParamError("subject", "line breaks are not allowed (header injection)")
    _no_controls("subject", subject)
    _text("subject", subject, policy.max_subject_chars)
    _text("body", params["body"], policy.max_body_chars)
    return {"to": to, "subject": subject, "body": params["body"]}


def check_select(sql: str, policy: SqlPolicy, param: str = "sql") -> str:
    """The text checks on a query (the read-only connection and its authorizer are the real fence): one
    statement, no comments, starting with SELECT. Returns the query without a trailing ';'."""
    if len(sql) > policy.max_sql_chars:
        raise ParamError(param, f"{len(sql)} characters; at most {policy.max_sql_chars}")
    if "\x00" in sql:
        raise ParamError(param, "NUL characters are not allowed")
    text = sql.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    if not text:
        raise ParamError(param, "empty")
    if "--" in text or "/*" in text:
        raise ParamError(param, "comments are not allowed")
    if ";" in text:
        raise ParamError(param, "a single statement only (found ';' inside the query)")
    if not re.match(r"select\b", text, re.IGNORECASE):
        first = text.split(None, 1)[0]
        raise ParamError(param, f"only a single SELECT is allowed, found {first.upper()!r}")
    return text


def _v_sql_query(params: dict[str, str], matrix: PermissionMatrix) -> dict[str, str]:
    return {"sql": check_select(params["sql"], matrix.tools.sql_query)}


def _v_message(params: dict[str, str], matrix: PermissionMatrix) -> dict[str, str]:
    to = params["to"].strip()
    if not to or _CONTROL.search(to) or _line_breaks(to) or " " in to:
        raise ParamError("to", f"expected one agent id, found {params['to']!r}")
    _text("content", params["content"], matrix.tools.message.max_chars)
    return {"to": to, "content": params["content"]}


TOOLS: Mapping[str, Tool] = {t.name: t for t in (
    Tool(MEMORY_WRITE, (Param("key", description="entry name"), Param("content", description="what to keep"),
                        Param("namespace", False, "defaults to the agent's own; any other is refused")),
         False, "write an entry in the agent's own memory (versioned, can be rolled back)", _v_memory_write),
    Tool(MEMORY_READ, (Param("key", False, "entry name; left out: the namespace's entries"),
                       Param("namespace", False, "defaults to the agent's own; any other is refused")),
         False, "read the agent's own memory", _v_memory_read),
    Tool(SEND_EMAIL, (Param("to", description="one address in an allowed domain"),
                      Param("subject", description="one line"), Param("body")),
         True, "send an e-mail (written to the outbox; screened by the gateway)", _v_send_email),
    Tool(SQL_QUERY, (Param("sql", description="a single SELECT on the allowed tables"),),
         False, "query allow-listed tables, read-only", _v_sql_query),
    Tool(MESSAGE, (Param("to", description="an agent id that can_send_to covers"), Param("content")),
         False, "pass a message to another agent (screened by the gateway)", _v_message),
)}
assert tuple(TOOLS) == TOOL_NAMES, "tools.py and permissions.TOOL_NAMES disagree"
assert {t.name for t in TOOLS.values() if t.outward} == OUTWARD_TOOLS, "outward tools disagree"


def validate_params(tool: str, params: Any, matrix: PermissionMatrix) -> dict[str, str]:
    """Clean parameters for `tool`, or ParamError naming the parameter."""
    if tool not in TOOLS:
        raise ParamError("tool", f"no tool {tool!r}")
    return TOOLS[tool].check(params, matrix)


# --- read-only SQL -------------------------------------------------------------------------------
class SqlRefused(Exception):
    """The query asked for something the read-only fence does not allow."""


class SqlFailed(Exception):
    """The query was allowed but did not run (a syntax error, a missing column, the time limit)."""


_ACTION_NAMES = {getattr(sqlite3, f"SQLITE_{n}"): n for n in (
    "CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE", "CREATE_TEMP_TRIGGER",
    "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "DELETE", "DROP_INDEX", "DROP_TABLE", "DROP_TEMP_INDEX",
    "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER", "DROP_TEMP_VIEW", "DROP_TRIGGER", "DROP_VIEW", "INSERT", "PRAGMA",
    "READ", "SELECT", "TRANSACTION", "UPDATE", "ATTACH", "DETACH", "ALTER_TABLE", "REINDEX", "ANALYZE",
    "CREATE_VTABLE", "DROP_VTABLE", "FUNCTION", "SAVEPOINT", "RECURSIVE") if hasattr(sqlite3, f"SQLITE_{n}")}
# Functions that allocate without bound or reach outside the database.
DENIED_FUNCTIONS = frozenset({"load_extension", "randomblob", "zeroblob", "fts3_tokenizer", "readfile",
                              "writefile", "edit", "sqlite_dbpage"})


@dataclass(frozen=True)
class SqlRows:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    truncated: bool            # more rows matched than max_rows

    def to_text(self) -> str:
        return json.dumps({"columns": list(self.columns), "rows": [[_cell(v) for v in r] for r in self.rows],
                           "truncated": self.truncated}, ensure_ascii=False)


def _cell(value: Any) -> Any:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, str) and len(value) > MAX_CELL_CHARS:
        return value[:MAX_CELL_CHARS] + "…"
    return value


def run_readonly_sql(path: Path | str, sql: str, policy: SqlPolicy) -> SqlRows:
    """Runs one query on `path` opened read-only (`file:...?mode=ro`, query_only, no attached databases),
    with an authorizer that allows SELECT, READ of the allow-listed tables (a view reads its own tables,
    so they must be listed too) and ordinary functions, and denies everything else; at most policy.max_rows rows and
    policy.timeout_s seconds. Raises SqlRefused (the fence said no) or SqlFailed (it did not run)."""
    sql = check_select(sql, policy)     # also here: the function is safe on its own
    tables = {t.lower() for t in policy.tables}
    denied: list[str] = []

    def authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
        if action == sqlite3.SQLITE_SELECT:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ:
            if db not in (None, "main"):
                denied.append(f"reading database {db!r}")
            elif (arg1 or "").lower() in tables:    # never by `source`: a CTE can take a listed name
                return sqlite3.SQLITE_OK
            else:
                denied.append(f"reading table {arg1!r} (not in tools.sql_query.tables)")
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            if (arg2 or "").lower() not in DENIED_FUNCTIONS:
                return sqlite3.SQLITE_OK
            denied.append(f"function {arg2}()")
            return sqlite3.SQLITE_DENY
        what = _ACTION_NAMES.get(action, f"action {action}")
        denied.append(f"{what} {arg1}" if arg1 else what)
        return sqlite3.SQLITE_DENY

    file = Path(path)
    if not file.is_file():
        raise SqlFailed(f"no database at {file}")
    try:
        conn = sqlite3.connect(file.resolve().as_uri() + "?mode=ro", uri=True, timeout=policy.timeout_s,
                               check_same_thread=False)
    except sqlite3.Error as exc:
        raise SqlFailed(f"cannot open {file} read-only ({exc})") from None
    try:
        conn.execute("PRAGMA query_only = ON")
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQL_MAX_VALUE_BYTES)
        conn.set_authorizer(authorize)
        deadline = time.monotonic() + policy.timeout_s
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
        try:
            cursor = conn.execute(sql)
            rows = cursor.fetchmany(policy.max_rows + 1)
        except (sqlite3.Error, sqlite3.Warning) as exc:
            if denied:
                raise SqlRefused("the read-only fence denied " + "; ".join(dict.fromkeys(denied))) from None
            if "interrupted" in str(exc):
                raise SqlFailed(f"stopped after {policy.timeout_s:g} s (tools.sql_query.timeout_s)") from None
            raise SqlFailed(str(exc)) from None
        columns = tuple(d[0] for d in cursor.description or ())
        return SqlRows(columns, tuple(tuple(r) for r in rows[:policy.max_rows]), len(rows) > policy.max_rows)
    finally:
        conn.close()


# --- records -------------------------------------------------------------------------------------
def _storable(value: Any, depth: int = 0) -> Any:
    """JSON for the record, bounded: an agent's junk parameters must not fill the audit trail."""
    if isinstance(value, str):
        return value if len(value) <= MAX_STORED_CHARS else \
            value[:MAX_STORED_CHARS] + f"…[cut: {len(value)} characters]"
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if depth >= 4:
        return "…"
    if isinstance(value, Mapping):
        return {str(k)[:200]: _storable(v, depth + 1) for k, v in list(value.items())[:50]}
    if isinstance(value, (list, tuple)):
        return [_storable(v, depth + 1) for v in list(value)[:50]]
    return _storable(repr(to_jsonable(value)), depth + 1)


_CALL_COLUMNS = ("id", "trace_id", "agent_id", "tool", "params", "status", "why", "result", "at", "decided_by",
                 "decided_at", "reason")
_CALL_SELECT = f"SELECT {', '.join(_CALL_COLUMNS)} FROM tool_calls"


def _call(row: Sequence[Any]) -> ToolCall:
    v = dict(zip(_CALL_COLUMNS, row))
    try:
        params = json.loads(v["params"])
    except ValueError:
        params = {}
    return ToolCall(id=v["id"], trace_id=v["trace_id"], agent_id=v["agent_id"], tool=v["tool"],
                    params=params if isinstance(params, dict) else {}, status=ToolStatus(v["status"]), why=v["why"],
                    result=v["result"], at=v["at"], decided_by=v["decided_by"] or "", decided_at=v["decided_at"],
                    reason=v["reason"] or "")


def _call_id(call_id: Any) -> int:
    if isinstance(call_id, bool):
        raise InputError(f"tool call id {call_id!r} is not a number")
    try:
        return int(str(call_id).strip().lstrip("#"))
    except ValueError:
        raise InputError(f"tool call id {call_id!r} is not a number") from None


def _write_outbox(store: Store, call_id: int, params: Mapping[str, Any]) -> tuple[int, str]:
    """send_email's effect, inside the caller's transaction: one outbox row."""
    outbox_id = store.insert(
        "INSERT INTO outbox (tool_call_id, recipient, subject, body, at) VALUES (?, ?, ?, ?, ?)",
        (call_id, params["to"], params["subject"], params["body"], store.clock()))
    return outbox_id, f"e-mail to {params['to']} written to the outbox (#{outbox_id}); not sent"


# Outward tools' effects, run in the same transaction as the row that records them.
_OUTWARD_EFFECTS: Mapping[str, Callable[[Store, int, Mapping[str, Any]], tuple[int, str]]] = {
    SEND_EMAIL: _write_outbox}
assert set(_OUTWARD_EFFECTS) == OUTWARD_TOOLS


# --- the broker ----------------------------------------------------------------------------------
class ToolBroker:
    """Runs agents' tool calls under the permission matrix. `gateway_screen` (Gateway.screen) screens
    what an agent sends out and what a tool returns; without it, send_email and message are refused (the
    broker can still list and decide pending calls). `agents` (the fleet) gives targets' roles for role
    groups and each agent's trust level; without it a message target must be named by id in can_send_to."""

    def __init__(self, matrix: PermissionMatrix, store: Store, gateway_screen: ScreenFn | None,
                 memory: MemoryPort | None = None, sql_path: Path | str | None = None, *,
                 agents: Iterable[AgentSpec] | None = None) -> None:
        self.matrix = matrix
        self._store = store
        self._screen_fn = gateway_screen
        self._memory = memory
        self._sql_path = Path(sql_path) if sql_path else None
        specs = None if agents is None else tuple(agents)
        self._roles: dict[str, Role] | None = None if specs is None else {a.id: a.role for a in specs}
        self._trust: dict[str, TrustLevel] = {a.id: lowest(a.trust, TrustLevel.TOOL) for a in specs or ()}

    # --- an agent's call -----------------------------------------------------------------------
    async def handle(self, agent_id: str, request: ToolRequest, trace_id: str) -> ToolCallResult:
        """Never raises for what the agent asked (that is refused and recorded); store errors propagate."""
        tool = (request.tool if isinstance(request.tool, str) else repr(request.tool))[:200]
        raw = request.params
        decision = self.matrix.check_tool(agent_id, tool)
        if not decision.allowed:
            return await self._refuse(trace_id, agent_id, tool, raw, decision.why)
        try:
            params = validate_params(tool, raw, self.matrix)
        except ParamError as exc:
            return await self._refuse(trace_id, agent_id, tool, raw, f"{tool} refused for {agent_id}: {exc}")
        runner = {MEMORY_WRITE: self._memory_write, MEMORY_READ: self._memory_read, SEND_EMAIL: self._send_email,
                  SQL_QUERY: self._sql_query, MESSAGE: self._message}[tool]
        return await runner(agent_id, params, trace_id, decision.needs_approval)

    async def _memory_write(self, agent: str, params: dict, trace_id: str, _: bool) -> ToolCallResult:
        namespace = params.get("namespace", agent)
        decision = self.matrix.check_memory(agent, namespace, MemoryOp.WRITE)
        if not decision.allowed:
            return await self._refuse(trace_id, agent, MEMORY_WRITE, params, decision.why)
        if self._memory is None:
            return await self._finish(trace_id, agent, MEMORY_WRITE, params, ToolStatus.FAILED,
                                      "no memory store is connected to the tool broker")
        try:
            outcome = await self._memory.write(agent, namespace, params["key"], params["content"], trace_id)
        except Exception as exc:   # the memory's own refusal or failure, recorded with the call
            return await self._finish(trace_id, agent, MEMORY_WRITE, params, ToolStatus.FAILED,
                                      f"memory.write of {params['key']!r} failed: {exc}")
        if getattr(outcome, "stored", True) is False:    # engine.memory's WriteResult: screened out, not stored
            evidence = "; ".join(tuple(getattr(outcome, "evidence", ()))[:3]) or "no detail"
            action = getattr(getattr(outcome, "action", None), "value", "blocked")
            return await self._refuse(trace_id, agent, MEMORY_WRITE, params,
                                      f"memory.write of {params['key']!r} by {agent} was not stored: the gateway "
                                      f"said {action} (score {float(getattr(outcome, 'score', 0.0)):.2f}: {evidence})")
        version = getattr(getattr(outcome, "entry", None), "version", None)
        stored = f"stored {params['key']!r}" + (f" as version {version}" if version is not None else "")
        return await self._finish(trace_id, agent, MEMORY_WRITE, params, ToolStatus.DONE,
                                  f"{agent} wrote {params['key']!r} in its own memory",
                                  stored if outcome is None or hasattr(outcome, "stored") else _render(outcome))

    async def _memory_read(self, agent: str, params: dict, trace_id: str, _: bool) -> ToolCallResult:
        namespace = params.get("namespace", agent)
        decision = self.matrix.check_memory(agent, namespace, MemoryOp.READ)
        if not decision.allowed:
            return await self._refuse(trace_id, agent, MEMORY_READ, params, decision.why)
        if self._memory is None:
            return await self._finish(trace_id, agent, MEMORY_READ, params, ToolStatus.FAILED,
                                      "no memory store is connected to the tool broker")
        key = params.get("key")
        try:
            outcome = await self._memory.read(agent, namespace, key, trace_id)
        except Exception as exc:
            return await self._finish(trace_id, agent, MEMORY_READ, params, ToolStatus.FAILED,
                                      f"memory.read failed: {exc}")
        what = f"{key!r}" if key else "its entries"
        text, note = await self._external(agent, MEMORY_READ, _render(outcome), trace_id)
        return await self._finish(trace_id, agent, MEMORY_READ, params, ToolStatus.DONE,
                                  f"{agent} read {what} from its own memory{note}", text)

    async def _sql_query(self, agent: str, params: dict, trace_id: str, _: bool) -> ToolCallResult:
        if self._sql_path is None:
            return await self._finish(trace_id, agent, SQL_QUERY, params, ToolStatus.FAILED,
                                      "no database is configured for sql_query")
        try:
            rows = await asyncio.to_thread(run_readonly_sql, self._sql_path, params["sql"], self.matrix.tools.sql_query)
        except SqlRefused as exc:
            return await self._refuse(trace_id, agent, SQL_QUERY, params, f"sql_query refused for {agent}: {exc}")
        except SqlFailed as exc:
            return await self._finish(trace_id, agent, SQL_QUERY, params, ToolStatus.FAILED,
                                      f"sql_query failed: {exc}")
        more = f" (the first {len(rows.rows)}; more matched)" if rows.truncated else ""
        text, note = await self._external(agent, SQL_QUERY, rows.to_text(), trace_id)
        return await self._finish(trace_id, agent, SQL_QUERY, params, ToolStatus.DONE,
                                  f"{agent} read {len(rows.rows)} rows{more}, read-only{note}", text)

    async def _message(self, agent: str, params: dict, trace_id: str, _: bool) -> ToolCallResult:
        target = params["to"]
        if self._roles is not None and target not in self._roles:
            return await self._refuse(trace_id, agent, MESSAGE, params,
                                      f"agent {agent} may not send to {target!r}: no such agent in the fleet")
        decision = self.matrix.check_send(agent, target, (self._roles or {}).get(target))
        if not decision.allowed:
            return await self._refuse(trace_id, agent, MESSAGE, params, decision.why)
        screening = await self._screen(agent, target, params["content"], MessageKind.PEER_MESSAGE, trace_id, MESSAGE)
        if screening is None:
            return await self._refuse(trace_id, agent, MESSAGE, params,
                                      "no gateway is connected to screen the message: refused (fail closed)")
        if not screening.passes:
            return await self._refuse(trace_id, agent, MESSAGE, params,
                                      f"message from {agent} to {target} was {_stopped(screening)}",
                                      screening=screening)
        return await self._finish(trace_id, agent, MESSAGE, params, ToolStatus.DONE,
                                  f"{decision.why}; the gateway let it pass ({screening.action.value})",
                                  screening.text, screening=screening)

    async def _send_email(self, agent: str, params: dict, trace_id: str, needs_approval: bool) -> ToolCallResult:
        content = f"{params['subject']}\n\n{params['body']}"
        screening = await self._screen(agent, params["to"], content, MessageKind.TOOL_CALL, trace_id, SEND_EMAIL)
        if screening is None:
            return await self._refuse(trace_id, agent, SEND_EMAIL, params,
                                      "no gateway is connected to screen the e-mail: refused (fail closed)")
        if screening.action is Action.BLOCK:
            return await self._refuse(trace_id, agent, SEND_EMAIL, params,
                                      f"e-mail from {agent} to {params['to']} was {_stopped(screening)}",
                                      screening=screening)
        if screening.action is Action.SANITISE:
            params = {**params, "subject": sanitise(params["subject"]), "body": sanitise(params["body"])}
        if needs_approval or screening.action is Action.ESCALATE:
            why = (f"{agent} is in approval mode: send_email acts outside the system and waits for an operator"
                   if needs_approval else
                   f"the gateway holds the e-mail for a person (score {screening.score:.2f}: "
                   f"{'; '.join(screening.evidence[:3]) or 'no detail'})")
            return await self._finish(trace_id, agent, SEND_EMAIL, params, ToolStatus.PENDING, why,
                                      screening=screening)
        return await self._finish(trace_id, agent, SEND_EMAIL, params, ToolStatus.DONE,
                                  f"{agent} may use send_email without approval (approval_mode = false)",
                                  screening=screening, effect=_OUTWARD_EFFECTS[SEND_EMAIL])

    # --- screening -------------------------------------------------------------------------------
    async def _screen(self, source: str, target: str, content: str, kind: MessageKind, trace_id: str,
                      item: str, trust: TrustLevel | None = None) -> Screening | None:
        if self._screen_fn is None:
            return None
        envelope = Envelope(source=source, target=target, content=content,
                            trust=trust or self._trust.get(source, TrustLevel.TOOL), kind=kind,
                            parent_trace_id=trace_id, meta={"item": item})
        if inspect.iscoroutinefunction(self._screen_fn):
            return await self._screen_fn(envelope)
        # Scanners may be slow (a classifier): not on the event loop.
        screening = await asyncio.to_thread(self._screen_fn, envelope)
        return await screening if inspect.isawaitable(screening) else screening

    async def _external(self, agent: str, tool: str, text: str, trace_id: str) -> tuple[str, str]:
        """What a tool returns is external input: cut at max_length, hidden characters removed, screened.
        Returns the text the agent gets and a note for `why` ("" when it passed unchanged)."""
        policy = self.matrix.external_input
        notes = []
        if len(text) > policy.max_length:
            text = text[:policy.max_length]
            notes.append(f"cut at {policy.max_length} characters")
        if policy.sanitise:
            clean = sanitise(text)
            if clean != text:
                text = clean
                notes.append("hidden characters removed")
        screening = await self._screen(f"tool:{tool}", agent, text, MessageKind.TOOL_RESULT, trace_id, tool,
                                       trust=policy.trust)
        if screening is not None and not screening.passes:
            return "", f"; the result was withheld: {_stopped(screening)}"
        if screening is not None and screening.action is Action.SANITISE:
            text = screening.text
        return text, f" ({', '.join(notes)})" if notes else ""

    # --- records ---------------------------------------------------------------------------------
    async def _refuse(self, trace_id: str, agent: str, tool: str, params: Any, why: str,
                      screening: Screening | None = None) -> ToolCallResult:
        return await self._finish(trace_id, agent, tool, params, ToolStatus.REFUSED, why, screening=screening)

    async def _finish(self, trace_id: str, agent: str, tool: str, params: Any, status: ToolStatus, why: str,
                      result: str = "", *, screening: Screening | None = None,
                      effect: Callable[[Store, int, Mapping[str, Any]], tuple[int, str]] | None = None
                      ) -> ToolCallResult:
        """One tool_calls row and its audit event in one transaction (with the outward effect, if any)."""
        stored = _storable(params if isinstance(params, Mapping) else {"params": params})
        params_json = json.dumps(stored, ensure_ascii=False, sort_keys=True, default=str)
        store = self._store

        def write() -> tuple[int, str]:
            call_id = store.insert("INSERT INTO tool_calls (trace_id, agent_id, tool, params, status, why, result, at) "
                                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                   (trace_id, agent, tool, params_json, status.value, why, result, store.clock()))
            payload: dict[str, Any] = {"call_id": call_id, "agent": agent, "tool": tool, "params": stored,
                                       "status": status.value, "why": why}
            final = result
            if effect is not None:
                effect_id, final = effect(store, call_id, params)
                store.execute("UPDATE tool_calls SET result = ? WHERE id = ?", (final, call_id))
                payload["effect_id"] = effect_id
            if final:
                payload["result"] = shorten(final, 300)
            if screening is not None:
                payload["gateway"] = {"action": screening.action.value, "score": screening.score,
                                      "evidence": list(screening.evidence[:5])}
            store.append_audit(trace_id, agent, f"tool.{status.value}", payload)
            return call_id, final

        call_id, final = await store.call(store.transaction, write)
        return ToolCallResult(call_id, agent, tool, status, why, final)

    # --- the operator ----------------------------------------------------------------------------
    async def approve(self, call_id: int | str, by: str, reason: str) -> ToolCallResult:
        """Runs a pending call (send_email: writes the outbox row) and records who approved it and why.
        The matrix is checked again: an approval cannot grant what the matrix no longer allows."""
        return await self._decide(call_id, by, reason, approve=True)

    async def reject(self, call_id: int | str, by: str, reason: str) -> ToolCallResult:
        """Drops a pending call; nothing runs."""
        return await self._decide(call_id, by, reason, approve=False)

    async def _decide(self, call_id: int | str, by: str, reason: str, *, approve: bool) -> ToolCallResult:
        number = _call_id(call_id)
        by = " ".join(str(by or "").split())
        reason = str(reason or "").strip()
        if not by:
            raise InputError("a decision needs the operator's name")
        if not reason:
            raise InputError(f"an empty reason: say why tool call #{number} is "
                             f"{'approved' if approve else 'rejected'}, it goes into the audit trail")
        store = self._store

        def write() -> ToolCallResult:
            row = store.execute(f"{_CALL_SELECT} WHERE id = ?", (number,)).fetchone()
            if row is None:
                raise InputError(f"tool call #{number} does not exist")
            call = _call(row)
            if call.status is not ToolStatus.PENDING:
                by_whom = f" by {call.decided_by}" if call.decided_by else ""
                raise InputError(f"tool call #{number} is {call.status.value}{by_whom}, not pending; "
                                 f"a decision is final")
            payload: dict[str, Any] = {"call_id": number, "agent": call.agent_id, "tool": call.tool,
                                       "reason": reason}
            if approve:
                allowed = self.matrix.check_tool(call.agent_id, call.tool)
                if not allowed.allowed:
                    raise InputError(f"cannot approve tool call #{number}: {allowed.why}; reject it instead")
                try:
                    params = validate_params(call.tool, call.params, self.matrix)
                except ParamError as exc:
                    raise InputError(f"cannot approve tool call #{number}: {call.tool} {exc}; "
                                     f"reject it instead") from None
                effect = _OUTWARD_EFFECTS.get(call.tool)
                if effect is None:
                    raise InputError(f"tool call #{number} ({call.tool}) cannot be run on approval")
            status = ToolStatus.APPROVED if approve else ToolStatus.REJECTED
            # The decision first: a desk that decided the same call meanwhile leaves no row to change, and then
            # nothing runs twice.
            taken = store.execute("UPDATE tool_calls SET status = ?, decided_by = ?, decided_at = ?, reason = ? "
                                  "WHERE id = ? AND status = 'pending'",
                                  (status.value, by, store.clock(), reason, number)).rowcount
            if taken != 1:
                raise InputError(f"tool call #{number} was just decided at another desk; a decision is final")
            result = ""
            if approve:
                effect_id, result = effect(store, number, params)   # the stored, screened parameters
                payload["effect_id"] = effect_id
                store.execute("UPDATE tool_calls SET result = ? WHERE id = ?", (result, number))
            store.append_audit(call.trace_id, by, f"tool.{status.value}", payload)
            why = f"{status.value} by {by}: {reason}"
            return ToolCallResult(number, call.agent_id, call.tool, status, why, result)

        return await store.call(store.transaction, write)

    # --- reads -----------------------------------------------------------------------------------
    async def pending(self) -> list[ToolCall]:
        """Calls waiting for an operator, oldest first."""
        return await self.calls(ToolStatus.PENDING, limit=None)

    async def calls(self, status: ToolStatus | str | None = None, limit: int | None = 100) -> list[ToolCall]:
        """Calls with `status` (None: all), oldest first for pending, newest first otherwise."""
        try:
            status = None if status in (None, "all") else ToolStatus(getattr(status, "value", status))
        except ValueError:
            raise InputError(f"unknown tool call status {status!r}; expected one of "
                             f"{', '.join(s.value for s in ToolStatus)} or all") from None
        where, args = ("WHERE status = ?", [status.value]) if status else ("", [])
        order = "ORDER BY at, id" if status is ToolStatus.PENDING else "ORDER BY at DESC, id DESC"
        sql = f"{_CALL_SELECT} {where} {order} LIMIT ?"
        rows = await self._store.call(
            lambda: self._store.execute(sql, [*args, NO_LIMIT if limit is None else int(limit)]).fetchall())
        return [_call(r) for r in rows]

    async def get(self, call_id: int | str) -> ToolCall | None:
        number = _call_id(call_id)
        row = await self._store.call(
            lambda: self._store.execute(f"{_CALL_SELECT} WHERE id = ?", (number,)).fetchone())
        return _call(row) if row else None

    async def outbox(self, limit: int = 100) -> list[OutboxMail]:
        """What send_email "sent", newest first."""
        rows = await self._store.call(lambda: self._store.execute(
            "SELECT id, tool_call_id, recipient, subject, body, at FROM outbox ORDER BY id DESC LIMIT ?",
            (limit,)).fetchall())
        return [OutboxMail(*r) for r in rows]


def _render(value: Any) -> str:
    """A memory read's outcome as text for the agent: entries (anything with key and content) as a JSON
    list of {key, content}, a string as it is, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(hasattr(e, "key") and hasattr(e, "content") for e in value):
        value = [{"key": e.key, "content": e.content} for e in value]
    return json.dumps(to_jsonable(value), ensure_ascii=False, default=str)


def _stopped(screening: Screening) -> str:
    verb = {Action.BLOCK: "blocked", Action.ESCALATE: "held for a person"}.get(screening.action, screening.action.value)
    evidence = "; ".join(screening.evidence[:3]) or "no detail"
    return f"{verb} by the gateway (score {screening.score:.2f}: {evidence})"
