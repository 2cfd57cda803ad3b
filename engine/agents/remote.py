"""A verifier agent behind `POST /validate`, seen by the engine as one more Verifier, and (if it is a judge)
behind `POST /read`, as one more reader of whether an answer is its passages' answer."""
from __future__ import annotations

import asyncio
from typing import Sequence

from ..errors import AgentError
from ..types import AgentSpec, Chunk
from ..verify.verifier import Judgement
from .client import AgentClient
from .schema import ReadReply, ScreenReply


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


class RemoteJudge:
    """A judge agent's `POST /read` (or an OpenAI-compatible server's completions), under its timeout_s or the
    rest of a question's deadline, whichever is shorter; a failure raises AgentError (no reading)."""

    def __init__(self, client: AgentClient, spec: AgentSpec, url: str, timeout_s: float | None = None) -> None:
        self.client, self.spec, self.url = client, spec, url
        self.name = spec.id
        self.timeout_s = spec.timeout_s if timeout_s is None else min(timeout_s, spec.timeout_s)

    async def read(self, question: str, passages: Sequence[Chunk], candidates: Sequence[str], trace_id: str = "",
                   *, own_answer: bool = False) -> ReadReply:
        try:
            return await asyncio.wait_for(self.client.read(self.spec, self.url, question, tuple(passages),
                                                           tuple(candidates), trace_id, own_answer=own_answer),
                                          self.timeout_s)
        except asyncio.TimeoutError:
            raise AgentError(self.spec.id, "no reply in time") from None

    async def screen(self, texts: Sequence[str], trace_id: str = "") -> ScreenReply:
        """P(yes) that each flagged passage holds an instruction aimed at the assistant (`POST /screen`)."""
        try:
            return await asyncio.wait_for(self.client.screen(self.spec, self.url, tuple(texts), trace_id),
                                          self.timeout_s)
        except asyncio.TimeoutError:
            raise AgentError(self.spec.id, "no reply in time") from None
