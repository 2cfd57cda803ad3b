"""Silences, as Alertmanager has them: a silence mutes notification, never detection.

An alert raised while a matching silence is active is still recorded, audited and listed; it is only
marked muted, so it does not notify (no count in the tab title, no sound). Muting is decided when an
alert is read, against the silences active at that moment: a silence also mutes matching alerts raised
before it, and when it expires (or an operator ends it early) every matching alert that is still
unacknowledged notifies again. Nothing is deleted or rewritten when a silence starts or ends.

A silence matches on a kind, an agent, or both (both must then match). It is active from created_at
up to, not including, expires_at, or until it was ended early.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from ..errors import InputError
from .kinds import AlertKind
from .kinds import parse_kind

if TYPE_CHECKING:
    from .row import AlertRow

MAX_SILENCE_S = 30 * 86400          # a month at most: a forgotten silence must not hide an attack for ever
MAX_COMMENT_CHARS = 1000


@dataclass(frozen=True)
class Silence:
    id: int
    kind: AlertKind | None               # None: any kind
    agent_id: str | None                 # None: any agent (at least one of kind and agent_id is set)
    created_by: str
    comment: str
    created_at: float
    expires_at: float
    ended_at: float | None = None        # an operator ended it before it expired
    ended_by: str | None = None

    @property
    def ends_at(self) -> float:
        """When it stops muting: its expiry, or the moment it was ended if that came first."""
        return min(self.expires_at, self.ended_at) if self.ended_at is not None else self.expires_at

    def active(self, now: float) -> bool:
        return self.created_at <= now < self.ends_at


def matches(silence: Silence, alert: "AlertRow", now: float) -> bool:
    """Whether this silence mutes this alert at `now`."""
    return (silence.active(now)
            and (silence.kind is None or alert.kind == silence.kind.value)
            and (silence.agent_id is None or alert.agent_id == silence.agent_id))


def muting(alert: "AlertRow", silences: Iterable[Silence], now: float) -> Silence | None:
    """The silence that mutes the alert at `now` (the oldest of several), or None: it notifies."""
    return next((s for s in sorted(silences, key=lambda s: s.id) if matches(s, alert, now)), None)


@dataclass(frozen=True)
class SilenceRequest:
    """A silence as asked for, checked: what the book stores."""
    kind: AlertKind | None
    agent_id: str | None
    duration_s: float
    created_by: str
    comment: str


def check_request(kind: str | AlertKind | None, agent_id: str | None, duration_s: float, by: str,
                  comment: str) -> SilenceRequest:
    """InputError naming the problem when a silence cannot be made as asked."""
    kind = parse_kind(kind, "silence") if kind not in (None, "") else None
    agent_id = (agent_id or "").strip() or None
    if kind is None and agent_id is None:
        raise InputError("silence: give a kind, an agent or both (a silence of everything is not allowed)")
    if agent_id is not None and not _printable_id(agent_id):
        raise InputError(f"silence: agent id {agent_id!r} holds control characters or spaces")
    try:
        duration = float(duration_s)
    except (TypeError, ValueError):
        raise InputError(f"silence: duration {duration_s!r} is not a number of seconds") from None
    if not duration > 0:        # also refuses NaN
        raise InputError(f"silence: the duration must be positive (got {duration_s!r} s)")
    if duration > MAX_SILENCE_S:
        raise InputError(f"silence: {format_duration(duration)} is longer than the limit of "
                         f"{format_duration(MAX_SILENCE_S)}")
    by = (by or "").strip()
    if not by:
        raise InputError("silence: who silences is missing (the operator)")
    comment = (comment or "").strip()
    if not comment:
        raise InputError("silence: a comment is required (why, so the next operator knows)")
    if len(comment) > MAX_COMMENT_CHARS:
        raise InputError(f"silence: the comment is {len(comment)} characters long; the limit is {MAX_COMMENT_CHARS}")
    return SilenceRequest(kind, agent_id, duration, by, comment)


def _printable_id(text: str) -> bool:
    return all(ch.isprintable() and not ch.isspace() for ch in text)


# --- durations as people type them -----------------------------------------------------------
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhd])")


def parse_duration(text: str) -> float:
    """'30m', '2h', '1d', '1h30m' -> seconds. A bare number is refused: minutes or hours? say which."""
    raw = str(text).strip().lower().replace(" ", "")
    parts = _PART.findall(raw)
    if not raw or "".join(n + u for n, u in parts) != raw:
        raise InputError(f"duration {text!r}: write it as a number and a unit, like 30m, 2h, 1d or 1h30m "
                         "(s, m, h, d)")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def format_duration(seconds: float) -> str:
    """The largest whole units, for people: 5400 -> '1h30m', 86400 -> '1d'."""
    left = int(round(seconds))
    if left <= 0:
        return "0s"
    out = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size:
            out.append(f"{left // size}{unit}")
            left %= size
    return "".join(out)
