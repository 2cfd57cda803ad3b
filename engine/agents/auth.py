"""Agent authentication: one key per agent, HMAC-SHA256 over every request and every reply.

The wire format, for agents written in any language (all text UTF-8, fields joined by "\\n"):

    request  X-Quorum-Signature: v1=HEX(HMAC-SHA256(key,
                 "quorum-request-v1", agent id, method, path, trace id, nonce, timestamp, SHA256-HEX(body)))
    reply    X-Quorum-Signature: v1=HEX(HMAC-SHA256(key,
                 "quorum-reply-v1",   agent id, path, trace id, nonce, timestamp, HTTP status, SHA256-HEX(body)))

The engine sends X-Trace-Id, X-Quorum-Nonce (32 hex digits, new for every request) and
X-Quorum-Timestamp (Unix seconds); the agent signs its reply over the same three, its own id as the fleet
file names it, and the exact bytes of its body. Its reply is then bound to that one request: a reply
signed with another agent's key, replayed for another request, or with one byte changed does not match.
`path` is the operation's path below the agent's base URL ("/retrieve"). A keyed agent refuses requests
that are unsigned, badly signed, outside the timestamp window or replayed (a nonce it has seen).

Keys are never in the fleet file: it names where one comes from (`key_env`, `key_file`); the launcher
makes a new random key per built-in agent per run and hands it to the child in its environment
(CHILD_KEY_ENV). Nothing here logs a key, and a Keyring's repr shows agent ids only.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from collections import OrderedDict
from pathlib import Path

from ..errors import AgentProtocolError, ConfigError
from ..types import AgentSpec

SIGNATURE_HEADER = "X-Quorum-Signature"
NONCE_HEADER = "X-Quorum-Nonce"
TIMESTAMP_HEADER = "X-Quorum-Timestamp"
TRACE_HEADER = "X-Trace-Id"
CHILD_KEY_ENV = "QUORUM_AGENT_KEY"     # how the launcher hands a built-in agent its key (never argv)
MIN_KEY_BYTES = 32
WINDOW_S = 300.0                       # a request's timestamp may be this far from the agent's clock
UNSIGNED_PATHS = frozenset({"/health"})
_VERSION = "v1"


class AgentAuthError(AgentProtocolError):
    """A keyed agent's reply is unsigned or its signature does not match, or its TLS certificate does not
    verify: that agent's outcome (a bad reply), never a failure of the question."""


# --- signatures ------------------------------------------------------------------------------
def _message(*fields: str) -> bytes | None:
    if any("\n" in f for f in fields):      # a field with a newline could pass for two: never signed
        return None
    return "\n".join(fields).encode("utf-8")


def _sign(key: bytes, message: bytes | None) -> str:
    if message is None:
        return ""
    return f"{_VERSION}={hmac.new(key, message, hashlib.sha256).hexdigest()}"


def _body_hash(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def request_signature(key: bytes, agent_id: str, method: str, path: str, trace_id: str, nonce: str,
                      timestamp: str, body: bytes) -> str:
    return _sign(key, _message("quorum-request-v1", agent_id, method.upper(), path, trace_id, nonce, timestamp,
                               _body_hash(body)))


def reply_signature(key: bytes, agent_id: str, path: str, trace_id: str, nonce: str, timestamp: str,
                    status: int, body: bytes) -> str:
    return _sign(key, _message("quorum-reply-v1", agent_id, path, trace_id, nonce, timestamp, str(status),
                               _body_hash(body)))


def matches(expected: str, presented: str | None) -> bool:
    """Constant-time comparison of a computed signature with the header's."""
    if not expected or not presented:
        return False
    return hmac.compare_digest(expected.encode("ascii"), presented.strip().encode("ascii", "replace"))


def new_nonce() -> str:
    return secrets.token_hex(16)


def check_reply(key: bytes, agent_id: str, path: str, trace_id: str, nonce: str, timestamp: str,
                status: int, body: bytes, presented: str | None) -> None:
    """Raises AgentAuthError unless the reply's signature is the one its agent's key makes for this request."""
    if not presented:
        raise AgentAuthError(agent_id, "reply is not signed (the agent has a key)")
    expected = reply_signature(key, agent_id, path, trace_id, nonce, timestamp, status, body)
    if not matches(expected, presented):
        raise AgentAuthError(agent_id, "signature does not match (another agent's key, a replayed reply "
                                       "or a changed body)")


class ReplayGuard:
    """An agent's side: a request must carry a timestamp within the window and a nonce not seen in it."""

    def __init__(self, window_s: float = WINDOW_S, max_nonces: int = 200_000) -> None:
        self.window_s = window_s
        self.max_nonces = max_nonces
        self._seen: OrderedDict[str, float] = OrderedDict()

    def refusal(self, nonce: str, timestamp: str, now: float) -> str:
        """Why this request must be refused, or "" (and then its nonce is remembered)."""
        try:
            sent = float(timestamp)
        except ValueError:
            return "request timestamp is not a number"
        if abs(now - sent) > self.window_s:
            return f"request timestamp outside the {self.window_s:g} s window"
        while self._seen and (len(self._seen) >= self.max_nonces
                              or next(iter(self._seen.values())) < now - 2 * self.window_s):
            self._seen.popitem(last=False)
        if nonce in self._seen:
            return "request replayed (nonce already seen)"
        self._seen[nonce] = now
        return ""


# --- keys ------------------------------------------------------------------------------------
def parse_key(text: str) -> bytes:
    """A key as fleet operators write it: hex digits, at least MIN_KEY_BYTES bytes. The message never
    repeats the text (it is a secret, or close to one)."""
    cleaned = text.strip()
    try:
        key = bytes.fromhex(cleaned)
    except ValueError:
        raise ValueError(f"expected hex digits (for example `openssl rand -hex {MIN_KEY_BYTES}`)") from None
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"expected at least {MIN_KEY_BYTES} bytes ({2 * MIN_KEY_BYTES} hex digits), "
                         f"found {len(key)} bytes")
    return key


def load_key(file: str, where: str, spec: AgentSpec, environ=None) -> bytes:
    """The key the fleet file says `spec` has; ConfigError (naming file and key, never the value) if it
    is missing or unusable."""
    environ = os.environ if environ is None else environ
    security = spec.security
    if security.key_env:
        text = environ.get(security.key_env)
        if text is None:
            raise ConfigError(file, f"{where}.key_env", f"environment variable {security.key_env} is not set")
        source_key = f"{where}.key_env"
    else:
        path = Path(security.key_file)
        source_key = f"{where}.key_file"
        try:
            mode = path.stat().st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise ConfigError(file, source_key, f"{path} is readable by other users; chmod 600 it")
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(file, source_key, f"cannot read {path} ({exc.strerror})") from None
        except UnicodeDecodeError:
            raise ConfigError(file, source_key, f"{path} is not text") from None
    try:
        return parse_key(text)
    except ValueError as exc:
        raise ConfigError(file, source_key, str(exc)) from None


class Keyring:
    """Each agent's key for this run: loaded from where the fleet file says (external agents, and built-in
    ones given a source), or made new at every launch (built-in agents without one)."""

    def __init__(self, per_run: bool = True) -> None:
        """per_run=False: built-in agents without a configured key run unsigned (`main.py fleet up --unsigned`,
        so other clients on this machine can call them)."""
        self._keys: dict[str, bytes] = {}
        self.per_run = per_run

    def __repr__(self) -> str:      # ids only: a keyring in a log or a traceback shows no key
        return f"Keyring(agents={sorted(self._keys)})"

    def load(self, fleet, environ=None) -> None:
        """Reads every enabled agent's configured key (ConfigError naming the file and key if one is unusable)."""
        for index, spec in enumerate(fleet.agents):
            if spec.enabled and spec.security.keyed:
                self._keys[spec.id] = load_key(str(fleet.path), f"agents[{index}] ({spec.id})", spec, environ)

    def key_for_launch(self, fleet, spec: AgentSpec) -> bytes | None:
        """A built-in agent's key for the process about to start: its configured one, else a new random one
        (None, unsigned, when keys are not made per run)."""
        if spec.security.keyed:
            if spec.id not in self._keys:
                index = fleet.agents.index(spec)
                self._keys[spec.id] = load_key(str(fleet.path), f"agents[{index}] ({spec.id})", spec)
            return self._keys[spec.id]
        if not self.per_run:
            return None
        self._keys[spec.id] = secrets.token_bytes(MIN_KEY_BYTES)
        return self._keys[spec.id]

    def get(self, agent_id: str) -> bytes | None:
        return self._keys.get(agent_id)

    def forget(self, agent_id: str) -> None:
        self._keys.pop(agent_id, None)

    def __contains__(self, agent_id: str) -> bool:
        return agent_id in self._keys
