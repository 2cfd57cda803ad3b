"""The gateway: every envelope passes the scanners config names, in order, and gets one decision.

Decision per channel (settings.py):
- DATA: score ≥ data_block → BLOCK; ≥ data_escalate → ESCALATE; hidden characters alone → SANITISE;
- USER: score ≥ user_block → BLOCK; ≥ user_escalate → ESCALATE (the answer waits for a person).
The combined score is the highest scanner score: each scanner is calibrated on its own, and one
confident reading is enough (an attacker only needs one trick).
The seed scanner embeds text, which costs tens of milliseconds per KB where the others cost about one:
it runs only on messages the scanners before it already score at least `seeds_floor` (a second
opinion on the doubtful ones); 0 runs it on everything.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Sequence

from .decision import Action, Screening
from .envelope import Envelope
from .scanners.base import Channel, Finding, Scanner
from .scanners.invisible import sanitise
from ..settings.gateway import GatewaySettings
from ..stats import elapsed_ms

COSTLY = frozenset({"seeds"})      # scanners that run only at or above settings.seeds_floor
MEMO_SIZE = 4096                   # readings kept: retrievers return the same passages question after question


class Gateway:
    def __init__(self, settings: GatewaySettings, scanners: Sequence[Scanner]) -> None:
        self.settings = settings
        self.scanners = tuple(scanners)
        # The scanners are pure functions of (text, channel), so a reading can be reused; bounded, oldest out.
        self._memo: OrderedDict[tuple[str, str], tuple[float, tuple[Finding, ...]]] = OrderedDict()
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Pays the scanners' one-off costs (compiling patterns, loading weights) now, on the caller's thread."""
        for scanner in self.scanners:
            warm = getattr(scanner, "warm_up", None)
            if callable(warm):
                warm()

    def _block_level(self, channel: Channel) -> float:
        return self.settings.user_block if channel is Channel.USER else self.settings.data_block

    def score(self, text: str, channel: Channel) -> tuple[float, tuple[Finding, ...]]:
        """Runs the scanners in order; stops early once one alone reaches the block level."""
        key = (channel.value, text)
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        reading = self._score(text, channel)
        with self._lock:
            self._memo[key] = reading
            while len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)
        return reading

    def _score(self, text: str, channel: Channel) -> tuple[float, tuple[Finding, ...]]:
        findings: list[Finding] = []
        best, block = 0.0, self._block_level(channel)
        for scanner in self.scanners:
            if scanner.name in COSTLY and best < self.settings.seeds_floor:
                continue
            finding = scanner.scan(text, channel)
            findings.append(finding)
            best = max(best, finding.score)
            if best >= block:
                break
        return best, tuple(findings)

    def screen(self, envelope: Envelope) -> Screening:
        started = time.perf_counter()
        text = envelope.content
        cut = ""
        if envelope.channel is Channel.DATA and len(text) > self.settings.max_data_chars:
            text, cut = text[:self.settings.max_data_chars], f"cut at {self.settings.max_data_chars} characters"
        if not self.settings.enabled:
            return Screening(envelope, Action.ALLOW, 0.0, (), text, elapsed_ms(started, 3))
        score, findings = self.score(text, envelope.channel)
        if cut:
            findings += (Finding("gateway", 0.0, (f"{len(envelope.content)} characters, {cut}",)),)
        action = self._decide(envelope.channel, score)
        hidden = any(f.scanner == "invisible" and f.score > 0 for f in findings)
        if action is Action.ALLOW and hidden and self.settings.sanitise and envelope.channel is Channel.DATA:
            action, text = Action.SANITISE, sanitise(text)
        return Screening(envelope, action, round(score, 3), findings, text, elapsed_ms(started, 3))

    def _decide(self, channel: Channel, score: float) -> Action:
        s = self.settings
        if channel is Channel.USER:
            return Action.BLOCK if score >= s.user_block else Action.ESCALATE if score >= s.user_escalate \
                else Action.ALLOW
        return Action.BLOCK if score >= s.data_block else Action.ESCALATE if score >= s.data_escalate \
            else Action.ALLOW
