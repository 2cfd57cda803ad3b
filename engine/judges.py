"""The judges' canaries, kept: each judge answers its known pairs (engine.generation.canaries) when it comes up
and every [judge] canary_every_s after. One that misreads them, or cannot answer them, is not asked (the
registry's reads_meaning) until it reads them right again; the engine audits each result and raises an alert
when a judge starts failing."""
from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable

from .agents.client import AgentClient
from .agents.remote import RemoteJudge, RemoteVerifier
from .generation.canaries import CanaryResult, run_canaries
from .registry import AgentRegistry, AgentView
from .settings.judge import JudgeSettings
from .types import AgentState, CanaryState

Report = Callable[[AgentView, CanaryResult, CanaryState | None], Awaitable[None]]


class JudgeWatch:
    """report(view after, result, state before) is awaited after each check."""

    def __init__(self, client: AgentClient, registry: AgentRegistry, settings: JudgeSettings, report: Report,
                 clock: Callable[[], float] = time.time) -> None:
        self.client, self.registry, self.settings, self.report, self.clock = client, registry, settings, report, clock
        self._running: set[str] = set()

    def judges(self) -> list[AgentView]:
        return [v for v in self.registry.all() if v.spec.judge and v.state is AgentState.UP and v.url]

    async def check(self, agent_id: str) -> CanaryResult | None:
        """Asks one judge its canaries now (not twice at once); None when it is not up."""
        view = self.registry.get(agent_id)
        if not view.spec.judge or view.state is not AgentState.UP or not view.url or agent_id in self._running:
            return None
        self._running.add(agent_id)
        before = view.canaries
        try:
            if before is None:
                self.registry.set_canaries(agent_id, CanaryState.PENDING, "answering its canaries")
            judge = RemoteJudge(self.client, view.spec, view.url)
            result = await run_canaries(judge, RemoteVerifier(self.client, view.spec, view.url), self.settings,
                                        self.clock)
            now = self.registry.get(agent_id)
            if now.state is not AgentState.UP or now.stopped or now.url != view.url:
                # It went away (or came back elsewhere) while it answered: no reading of it, and no alert.
                self.registry.set_canaries(agent_id, CanaryState.PENDING, "answering its canaries")
                return None
            after = self.registry.set_canaries(agent_id, CanaryState.PASSED if result.passed else CanaryState.FAILED,
                                               result.detail)
        finally:
            self._running.discard(agent_id)
        await self.report(after, result, before)
        return result

    async def run(self) -> None:
        """Every canary_every_s, each judge that is up answers its canaries again (until cancelled)."""
        if self.settings.canary_every_s <= 0:
            return
        while True:
            await asyncio.sleep(self.settings.canary_every_s)
            await asyncio.gather(*(self.check(v.spec.id) for v in self.judges()))
