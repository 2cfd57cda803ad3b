"""The retrieve stage's fetch for the live question: the retrievers' fan-out, the gateway over every
passage, then secure retrieval (engine/retrieval/secure.py). The retrieve step (stages/steps.py) makes the
stage result from what it returns; the result carries a RetrievalPayload and the fetch's timings."""
from __future__ import annotations

import asyncio
import functools
import time
from typing import Callable

from ..config import EngineSettings
from ..events import Emit, RetrievalMerged
from ..gateway.envelope import lowest
from ..retrieval.secure import SecureRetrieval
from ..stages import steps
from ..stages.model import Timings
from ..stages.runner import Exclusions
from ..stats import elapsed_ms
from ..types import RetrievalMode, Role, TrustLevel
from .asked import Asked
from .calls import AgentCalls
from .corpus import CorpusHashes
from .payloads import RetrievalPayload


class SecureFetch:
    def __init__(self, settings: EngineSettings, calls: AgentCalls, secure: SecureRetrieval, corpus: CorpusHashes,
                 emit: Emit, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.calls = calls
        self.secure = secure
        self.corpus = corpus
        self.emit = emit
        self.clock = clock

    def for_question(self, asked: Asked) -> steps.Fetch:
        return functools.partial(self.fetch, asked)

    async def fetch(self, asked: Asked, query: str, index: int, exclusions: Exclusions) -> steps.Fetched:
        """Retrieval for one (sub-)question of `asked`."""
        policy, trace_id, session = asked.policy, asked.trace_id, asked.session
        timings = Timings()
        started = time.perf_counter()
        retrievers = [v for v in self.calls.pick(Role.RETRIEVER, policy.retrievers, asked.tier, trace_id)
                      if v.spec.id not in exclusions.agents]
        k = self.settings.retrieval.k_per_agent
        # The question's vector is computed while the retrievers work (secure retrieval takes it).
        ahead = (asyncio.create_task(asyncio.to_thread(self.secure.embed_question, query))
                 if policy.retrieval_mode is not RetrievalMode.OPTIMISTIC and retrievers else None)
        retrieved = await self.calls.fan_out(trace_id, retrievers, lambda v: self.calls.client.retrieve(
            v.spec, v.url, query, k, trace_id), asked.deadline)
        timings = timings.plus("retrieve", elapsed_ms(started))
        if ahead is not None:
            await ahead
        started = time.perf_counter()
        # Every passage passes the gateway as data from outside, whatever its retriever claims.
        trust = {v.spec.id: lowest(v.spec.trust, TrustLevel.EXTERNAL) for v in retrievers}
        hashes = self.corpus.hashes
        screened = await asyncio.to_thread(lambda: {
            r.outcome.agent_id: session.passages(r.outcome.agent_id, r.value, trust[r.outcome.agent_id], hashes)
            for r in retrieved if r.value is not None})
        timings = timings.plus("gateway_passages", elapsed_ms(started))
        started = time.perf_counter()
        replies = {agent: [c for c in chunks if not exclusions.excludes(c.id, c.text)]
                   for agent, chunks in screened.items()}
        kinds = {v.spec.id: v.spec.backend or v.spec.kind.value for v in retrievers}
        # CPU work (embedding, clustering) runs off the loop so the console stays responsive.
        report = await asyncio.to_thread(self.secure.run, query, replies, kinds=kinds,
                                         mode=policy.retrieval_mode, reputations=self.calls.reputations())
        timings = timings.plus("secure_retrieval", elapsed_ms(started))
        self.emit(RetrievalMerged(query, tuple(c.chunk.id for c in report.context),
                                  tuple((c.chunk.id, c.explanation.flags if c.explanation else ())
                                        for c in report.excluded),
                                  tuple((x.agent_id, x.reason) for x in report.suspects), report.fallback,
                                  trace_id, self.clock()))
        context = tuple(c.chunk for c in report.context)
        return steps.Fetched(
            forwarded=context,
            support=tuple(c.explanation.support_share if c.explanation else 0.0 for c in report.context),
            # Single-agent passages used as a fallback are nobody's consensus.
            corroborated=() if report.fallback else context,
            candidates=tuple({c.text: c for chunks in replies.values() for c in chunks}.values()),
            agents=tuple(replies), note="fallback: no passage had a quorum" if report.fallback else "",
            payload=RetrievalPayload(report, tuple(r.outcome for r in retrieved)), timings=timings)
