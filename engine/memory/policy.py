"""Who may touch which memory, and the checks on what callers hand in.

Default deny: an agent reads and writes only its own namespace (namespace == agent id). The permission
matrix checks this too, but the store must not rely on it: a bug or a forged tool call upstream
would otherwise let one agent poison another's memory.
"""
from __future__ import annotations

from typing import Any

from ..errors import InputError

MAX_KEY_CHARS = 200


class MemoryAccessDenied(InputError):
    """An agent asked for a namespace that is not its own (audited as memory.refused)."""

    def __init__(self, actor: str, op: str, namespace: str) -> None:
        self.actor, self.op, self.namespace = actor, op, namespace
        super().__init__(f"{actor!r} may not {op} memory namespace {namespace!r}: "
                         f"an agent may only {op} its own namespace ({actor!r})")


def name(value: Any, what: str) -> str:
    """An agent, namespace or operator name: one line, surrounding whitespace dropped, not empty."""
    text = " ".join(str(value or "").split())
    if not text:
        raise InputError(f"memory: {what} is empty")
    return text


def key(value: Any) -> str:
    text = str(value or "").strip()
    if not text:
        raise InputError("memory: the key is empty")
    if len(text) > MAX_KEY_CHARS:
        raise InputError(f"memory: key {text[:40]!r}... is longer than {MAX_KEY_CHARS} characters")
    return text


def trace(value: Any, what: str) -> str:
    text = str(value or "").strip()
    if not text:
        raise InputError(f"memory: {what} needs the trace id it belongs to (the spread query follows it)")
    return text


def reason(value: Any, what: str) -> str:
    text = " ".join(str(value or "").split())
    if not text:
        raise InputError(f"memory: an empty reason; say why you {what}, it goes into the audit trail")
    return text


def own_namespace(actor: str, namespace: str) -> bool:
    return actor == namespace
