"""The gateway for one question: screens every message the question's trace carries and keeps the
trace (every message with its parent) and the flags (what was blocked, sanitised or escalated).

Used from the event loop and from worker threads (the stage observer runs off the loop), so the
log is guarded by a lock. Identical texts are scanned once per question: five retrievers often return
the same passage.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from typing import Callable, Iterable, Mapping, Any

from ..text import content_hash
from ..text import shorten
from ..types import Chunk, Generation, TrustLevel
from .decision import Action, Screening
from .envelope import Envelope, MessageKind
from .gateway import Gateway
from .report import GatewayFlag, GatewayReport, TraceEvent, TraceKind
from .scanners.base import Finding

# Metadata only the engine may set on a passage: a retriever that sets them is ignored, so it cannot
# promote its passage to a higher trust level or pass it off as the engine's own computation.
RESERVED_METADATA = frozenset({"trust", "carrier", "computed"})


def generation_text(gen: Generation) -> str:
    """Everything a generator says that another stage or a person will read."""
    return "\n".join([gen.answer, *gen.reasoning, *(c.text for c in gen.claims)])


class GatewaySession:
    def __init__(self, gateway: Gateway | None, trace_id: str, clock: Callable[[], float] = time.time) -> None:
        self.gateway = gateway
        self.blame_carrier = gateway.settings.blame_carrier if gateway else False
        self.trace_id = trace_id
        self.clock = clock
        self._lock = threading.Lock()
        self._flags: list[GatewayFlag] = []
        self._events: list[TraceEvent] = []
        self._seen: dict[tuple[str, str], Screening] = {}
        self._passages: dict[str, tuple[float, bool]] = {}   # chunk id → (its scanners' score, the corpus's own)
        self._scanned = 0
        self._scan_ms = 0.0

    # --- screening -------------------------------------------------------------------------
    def _screen(self, env: Envelope) -> Screening:
        if self.gateway is None:
            return Screening(env, Action.ALLOW, 0.0, (), env.content)
        key = (env.channel.value, env.content)
        with self._lock:
            known = self._seen.get(key)
        if known is not None:
            return dataclasses.replace(known, envelope=env, elapsed_ms=0.0)
        screening = self.gateway.screen(env)
        with self._lock:
            self._seen[key] = screening
            self._scanned += 1
            self._scan_ms += screening.elapsed_ms
        return screening

    def message(self, source: str, target: str, content: str, trust: TrustLevel, kind: MessageKind, *,
                item: str = "", parent: str = "", from_corpus: bool = False) -> Screening:
        """Screens one message and logs it in the trace (and as a flag when it did not pass unchanged)."""
        env = Envelope(source, target, content, trust, kind, parent_trace_id=parent or self.trace_id,
                       meta={"item": item} if item else {})
        return self.screen(env, from_corpus=from_corpus)

    def screen(self, env: Envelope, *, from_corpus: bool = False) -> Screening:
        """Screens an envelope built elsewhere (the memory store's writes, the tool broker's messages) and
        logs it in this question's trace like the pipeline's own. from_corpus: see GatewayFlag."""
        return self._log(self._screen(env), TraceKind.MESSAGE, from_corpus)

    def _log(self, screening: Screening, kind: TraceKind, from_corpus: bool) -> Screening:
        """A screening's line in the trace, and its flag when it did not pass unchanged."""
        env, now = screening.envelope, self.clock()
        item = str(env.meta.get("item") or env.meta.get("key") or "")
        summary = f"{env.kind.value}{' ' + item if item else ''}: {shorten(env.content, 100)}"
        if screening.flagged:
            summary = f"{screening.action.value.upper()} ({screening.score:.2f}) {summary}"
        event = TraceEvent(env.trace_id, env.parent_trace_id, kind, env.source, env.target, env.trust.value,
                           summary, now, {"kind": env.kind.value, "item": item, "action": screening.action.value,
                                          "score": screening.score, "evidence": list(screening.evidence),
                                          "chars": len(env.content)})
        with self._lock:
            self._events.append(event)
            if screening.flagged:
                self._flags.append(GatewayFlag.of(screening, now, from_corpus))
        return screening

    def question(self, text: str, operator: str = "operator") -> Screening:
        return self.message(operator, "engine", text, TrustLevel.USER, MessageKind.QUESTION)

    def passages(self, agent_id: str, chunks: Iterable[Chunk], trust: TrustLevel,
                 corpus: Mapping[str, str] | None = None) -> tuple[Chunk, ...]:
        """A retriever's chunks as the engine will use them: blocked ones dropped, sanitised ones
        cleaned, every one stamped with its trust level and carrier (and nothing else the engine reserves).
        corpus: the indexed corpus's passages (id → content hash), to tell a document's own text from what an
        agent wrote into it."""
        kept = []
        for chunk in chunks:
            own = corpus is not None and corpus.get(chunk.id) == content_hash(chunk.text)
            screening = self.message(agent_id, "engine", chunk.text, trust, MessageKind.PASSAGE, item=chunk.id,
                                     from_corpus=own)
            if not screening.passes:
                continue
            with self._lock:
                self._passages[chunk.id] = (max(screening.score, self._passages.get(chunk.id, (0.0, own))[0]), own)
            metadata = {k: v for k, v in chunk.metadata.items() if k not in RESERVED_METADATA}
            metadata.update(trust=trust.value, carrier=agent_id)
            kept.append(dataclasses.replace(chunk, text=screening.text, metadata=metadata))
        return tuple(kept)

    def passage_score(self, chunk_id: str) -> float | None:
        """The scanners' score of a passage that passed them this question (the highest over its carriers)."""
        with self._lock:
            known = self._passages.get(chunk_id)
        return None if known is None else known[0]

    def confirmed(self, chunk: Chunk, score: float, p_yes: float, readers: str) -> Screening:
        """A passage the judges read as holding an instruction aimed at the assistant: blocked after the fact,
        logged in the trace and flagged against its carrier like any blocked message."""
        with self._lock:
            own = self._passages.get(chunk.id, (0.0, False))[1]
        carrier = str(chunk.metadata.get("carrier") or chunk.source or "engine")
        stamped = {level.value: level for level in TrustLevel}.get(str(chunk.metadata.get("trust")), TrustLevel.EXTERNAL)
        env = Envelope(carrier, "engine", chunk.text, stamped, MessageKind.PASSAGE, parent_trace_id=self.trace_id,
                       meta={"item": chunk.id})
        finding = Finding("judge", round(p_yes, 4), (f"{readers} read an instruction aimed at the assistant in it "
                                                     f"(P(yes) = {p_yes:.2f}; the scanners scored it {score:.2f})",))
        return self._log(Screening(env, Action.BLOCK, round(p_yes, 4), (finding,), chunk.text), TraceKind.SCAN, own)

    def generation(self, agent_id: str, gen: Generation, trust: TrustLevel) -> Screening:
        return self.message(agent_id, "engine", generation_text(gen), trust, MessageKind.GENERATION)

    # --- what the engine did ------------------------------------------------------------------
    def note(self, kind: TraceKind, source: str, target: str, summary: str, *, trust: str = "",
             data: Mapping[str, Any] | None = None, trace_id: str = "") -> None:
        """A line of the trace that is not a screened message: a tool call, a memory read or write,
        a model output, a decision."""
        from .envelope import new_trace_id
        event = TraceEvent(trace_id or new_trace_id(), self.trace_id, kind, source, target, trust,
                           shorten(summary, 200), self.clock(), dict(data or {}))
        with self._lock:
            self._events.append(event)

    def flag(self, screening: Screening) -> None:
        """A screening made elsewhere (a tool's parameters, a memory write) that belongs to this trace."""
        if screening.flagged:
            with self._lock:
                self._flags.append(GatewayFlag.of(screening, self.clock()))

    def report(self) -> GatewayReport:
        with self._lock:
            return GatewayReport(tuple(self._flags), tuple(self._events), self._scanned, round(self._scan_ms, 1),
                                 self.blame_carrier)
