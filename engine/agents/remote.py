"""A verifier agent behind `POST /validate`, seen by the engine as one more Verifier, and (if it reads answers)
behind `POST /answers`, as one more reader of whether an answer answers."""
from __future__ import annotations

import asyncio
from typing import Sequence

from ..errors import AgentError
from ..types import AgentSpec, Chunk
from ..verify.verifier import Judgement
from .client import AgentClient


class RemoteVerifier:
    def __init__(self, client: AgentClient, spec: AgentSpec, url: str) -> None:
        self.client, self.spec, self.url = client, spec, url
        self.name = spec.id

    async def judge(self, claim: str, evidence: Sequence[Chunk], trace_id: str = "") -> Judgement:
        try:
            label, score, reason = await asyncio.wait_for(
                self.client.validate(self.spec, self.url, claim, tuple(evidence), trace_id), self.spec.timeout_s)
        except (AgentError, asyncio.TimeoutError) as exc:
            # An absent vote, not a vote against: the voting verifier counts only answers.
            raise AgentError(self.spec.id, getattr(exc, "reason", "no reply in time")) from None
        return Judgement(label, score, reason or label.value, self.name)


class RemoteAnswerReader:
    """A judge agent's `POST /answers`, under its timeout_s; a failure raises AgentError (no reading)."""

    def __init__(self, client: AgentClient, spec: AgentSpec, url: str, timeout_s: float | None = None) -> None:
        self.client, self.spec, self.url = client, spec, url
        self.name = spec.id
        self.timeout_s = spec.timeout_s if timeout_s is None else min(timeout_s, spec.timeout_s)   # a deadline's rest

    async def read(self, question: str, answer: str, trace_id: str = "") -> tuple[float, str]:
        try:
            return await asyncio.wait_for(
                self.client.answers(self.spec, self.url, question, answer, trace_id), self.timeout_s)
        except asyncio.TimeoutError:
            raise AgentError(self.spec.id, "no reply in time") from None
