"""One question's events gathered into a timeline until its last one arrives: what its spans are made of.

Pure Python, no OpenTelemetry: `Timelines.feed` takes every engine event and hands back the timelines that
are complete (the question's QuestionAnswered or QuestionFailed arrived, or it was abandoned). Spans are
built only then, with the times the events carried, so nothing is left open in a tracer and a cascade
score that reaches a stage after it ended still lands on it.

Only what the engine itself decided goes in: ids from the fleet file, kinds, statuses, counts, scores.
Never the question, a passage, an answer or an agent's error text: they are untrusted, may be large, and
a trace leaves for another system.
"""
from __future__ import annotations

import dataclasses
import enum
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Union

from ..events import (AgentCalled, AgentsKeptOff, AlertsRaised, CascadeResolved, CascadeScored, GatewayFlagged,
                      GeneratorChallenged, QuestionAnswered, QuestionFailed, QuestionReceived, ReviewEnqueued,
                      StageProgressed, ToolCalled)
from ..types import CallStatus, Verdict
from ..answer import Answer

AttrValue = Union[str, bool, int, float, tuple]
ABANDONED = "abandoned"          # the error of a question whose events stopped (or the engine closed first)
MAX_OPEN = 1000                  # questions followed at once; beyond it the oldest is sent as abandoned
MAX_REASON_CHARS = 200
_MATCHED = re.compile(r' matched ".*"$', re.DOTALL)


@dataclass(frozen=True)
class Note:
    """A moment inside a span (an OpenTelemetry span event): a challenge, a tool call, agents kept off."""
    name: str
    at: float
    attributes: dict[str, AttrValue]


@dataclass(frozen=True)
class AgentCall:
    agent_id: str
    role: str
    status: str                  # a CallStatus value
    latency_ms: float
    items: int
    ended_at: float

    @property
    def ok(self) -> bool:
        return self.status == CallStatus.OK.value


@dataclass
class StageAttempt:
    """One run of one stage: a cascade mitigation's re-run is another attempt of the same index."""
    index: int
    attempt: int
    total: int
    started_at: float
    kind: str | None = None      # known when it ends
    ended_at: float | None = None
    confidence: float | None = None
    elapsed_ms: float = 0.0
    score: Any = None            # the cascade monitor's StageScore for this boundary
    calls: list[AgentCall] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


@dataclass
class Timeline:
    trace_id: str
    started_at: float
    attributes: dict[str, AttrValue] = field(default_factory=dict)     # the root span's
    stages: list[StageAttempt] = field(default_factory=list)
    calls: list[AgentCall] = field(default_factory=list)                # made outside any stage
    notes: list[Note] = field(default_factory=list)
    ended_at: float | None = None
    error: str = ""              # "" once answered; else an exception's type name or ABANDONED

    def running(self) -> StageAttempt | None:
        last = self.stages[-1] if self.stages else None
        return last if last is not None and last.ended_at is None else None

    def stage(self, index: int, attempt: int) -> StageAttempt | None:
        return next((s for s in reversed(self.stages) if s.index == index and s.attempt == attempt), None)

    def note(self, note: Note) -> None:
        running = self.running()
        (running.notes if running is not None else self.notes).append(note)


class Timelines:
    """The questions in flight, by trace id: bounded in number, and each closed after timeout_s without an event."""

    def __init__(self, timeout_s: float, max_open: int = MAX_OPEN) -> None:
        self.timeout_s = timeout_s
        self.max_open = max_open
        self._open: OrderedDict[str, Timeline] = OrderedDict()     # least recently heard of first
        self._heard: dict[str, float] = {}
        self._typed: dict[type, Callable[[Any], list[Timeline]]] = {
            QuestionReceived: self._received, StageProgressed: self._progressed, CascadeScored: self._scored,
            CascadeResolved: self._resolved, GatewayFlagged: self._flagged, ReviewEnqueued: self._review,
            AlertsRaised: self._alerts, QuestionAnswered: self._answered, QuestionFailed: self._failed,
        }
        self._inside: dict[type, Callable[[Timeline, Any], None]] = {     # moments inside a question's spans
            AgentCalled: self._agent_call, GeneratorChallenged: self._challenge,
            ToolCalled: self._tool_call, AgentsKeptOff: self._kept_off,
        }

    def __len__(self) -> int:
        return len(self._open)

    def feed(self, event: object) -> list[Timeline]:
        """The timelines this event completes: its own question's, and any it shows to be abandoned."""
        done: list[Timeline] = []
        handle, inside = self._typed.get(type(event)), self._inside.get(type(event))
        if handle is not None:
            done = handle(event)
        elif inside is not None:
            timeline = self._heard_of(event.trace_id, event.at)
            if timeline is not None:
                inside(timeline, event)
        at = getattr(event, "at", None)     # after: a question's own late event keeps it from the sweep
        return done + (self._sweep(at) if isinstance(at, (int, float)) else [])

    def close(self, at: float) -> list[Timeline]:
        """Every question still open, as abandoned (the engine is closing)."""
        return [self._finish(trace_id, at, ABANDONED) for trace_id in list(self._open)]

    # --- the table --------------------------------------------------------------------------
    def _heard_of(self, trace_id: str, at: float) -> Timeline | None:
        timeline = self._open.get(trace_id)
        if timeline is not None:
            self._open.move_to_end(trace_id)
            self._heard[trace_id] = at
        return timeline

    def _sweep(self, now: float) -> list[Timeline]:
        done = []
        while self._open:
            trace_id = next(iter(self._open))
            if now - self._heard[trace_id] < self.timeout_s:
                break
            done.append(self._finish(trace_id, self._heard[trace_id], ABANDONED))
        return done

    def _finish(self, trace_id: str, at: float, error: str) -> Timeline:
        timeline = self._open.pop(trace_id)
        del self._heard[trace_id]
        timeline.ended_at, timeline.error = max(at, timeline.started_at), error
        return timeline

    def _ending(self, trace_id: str, asked_at: float) -> Timeline:
        """The question's own timeline, or a new one if its start was never heard (blocked before it ran)."""
        if trace_id not in self._open:
            self._open[trace_id] = Timeline(trace_id, asked_at, {"quorum.trace_id": trace_id})
            self._heard[trace_id] = asked_at
        return self._open[trace_id]

    # --- typed events -----------------------------------------------------------------------
    def _received(self, event: QuestionReceived) -> list[Timeline]:
        done = []
        if event.trace_id in self._open:      # the same id asked again: the earlier one is over
            done.append(self._finish(event.trace_id, event.at, ABANDONED))
        while len(self._open) >= self.max_open:
            done.append(self._finish(next(iter(self._open)), event.at, ABANDONED))
        self._open[event.trace_id] = Timeline(event.trace_id, event.at, {
            "quorum.trace_id": event.trace_id, "quorum.tier": event.tier.value,
            "quorum.tier_reason": tier_reason(event.tier_reason)})
        self._heard[event.trace_id] = event.at
        return done

    def _progressed(self, event: StageProgressed) -> list[Timeline]:
        timeline = self._heard_of(event.trace_id, event.at)
        if timeline is None:
            return []
        if event.kind is None:            # a start
            timeline.stages.append(StageAttempt(event.index, event.attempt, event.total, event.at))
            return []
        stage = timeline.stage(event.index, event.attempt)
        if stage is None:                 # its start was not heard: the span covers what the stage measured
            stage = StageAttempt(event.index, event.attempt, event.total, event.at - event.elapsed_ms / 1000)
            timeline.stages.append(stage)
        stage.kind, stage.ended_at = _value(event.kind), event.at
        stage.confidence, stage.elapsed_ms = event.confidence, event.elapsed_ms
        return []

    def _scored(self, event: CascadeScored) -> list[Timeline]:
        timeline = self._heard_of(event.trace_id, event.at)
        stage = timeline.stage(event.score.index, event.score.attempt) if timeline is not None else None
        if stage is not None:
            stage.score = event.score
        return []

    def _resolved(self, event: CascadeResolved) -> list[Timeline]:
        timeline = self._heard_of(event.trace_id, event.at)
        if timeline is not None:
            timeline.attributes.update(cascade_attributes(event.outcome))
        return []

    def _flagged(self, event: GatewayFlagged) -> list[Timeline]:
        timeline = self._heard_of(event.trace_id, event.at)
        if timeline is not None:
            actions = [_value(f.action) for f in event.flags]
            timeline.attributes["quorum.gateway.flags"] = len(actions)
            for action in sorted(set(actions)):
                timeline.attributes[f"quorum.gateway.{action}"] = actions.count(action)
        return []

    def _review(self, event: ReviewEnqueued) -> list[Timeline]:
        timeline = self._heard_of(event.trace_id, event.at)
        if timeline is not None:
            timeline.attributes["quorum.review.enqueued"] = True
        return []

    def _alerts(self, event: AlertsRaised) -> list[Timeline]:
        timeline = self._heard_of(event.trace_id, event.at) if event.trace_id else None
        if timeline is not None:
            kinds = tuple(sorted({str(a.kind) for a in event.alerts}))
            timeline.attributes["quorum.alerts"] = int(timeline.attributes.get("quorum.alerts", 0)) + len(event.alerts)
            timeline.attributes["quorum.alerts.kinds"] = tuple(
                sorted(set(timeline.attributes.get("quorum.alerts.kinds", ())) | set(kinds)))
        return []

    def _answered(self, event: QuestionAnswered) -> list[Timeline]:
        timeline = self._ending(event.trace_id, event.answer.asked_at)
        timeline.attributes.update(answer_attributes(event.answer))
        for score in (event.answer.cascade.scores if event.answer.cascade is not None else ()):
            stage = timeline.stage(score.index, score.attempt)
            if stage is not None and stage.score is None:
                stage.score = score
        return [self._finish(event.trace_id, event.at, "")]

    def _failed(self, event: QuestionFailed) -> list[Timeline]:
        timeline = self._ending(event.trace_id, event.asked_at)
        timeline.attributes["error.type"] = event.error
        return [self._finish(event.trace_id, event.at, event.error)]

    # --- the pipeline's trace events ---------------------------------------------------------
    def _agent_call(self, timeline: Timeline, event: AgentCalled) -> None:
        outcome = event.outcome
        call = AgentCall(outcome.agent_id, _value(outcome.role), _value(outcome.status), float(outcome.latency_ms),
                         int(outcome.n_items), event.at)
        running = timeline.running()
        (running.calls if running is not None else timeline.calls).append(call)

    def _challenge(self, timeline: Timeline, event: GeneratorChallenged) -> None:
        # detail is the generator's own quote: left out
        timeline.note(Note("quorum.challenge", event.at, {
            "quorum.agent.id": str(event.agent), "quorum.challenge.outcome": _value(event.outcome)}))

    def _tool_call(self, timeline: Timeline, event: ToolCalled) -> None:
        # the tool's name is what the agent asked for, and why may quote it: only who and the broker's status
        timeline.note(Note("quorum.tool_call", event.at, {
            "quorum.agent.id": str(event.agent), "quorum.tool.status": _value(event.status)}))

    def _kept_off(self, timeline: Timeline, event: AgentsKeptOff) -> None:
        agents = tuple(str(agent) for agent, _why in event.agents)
        timeline.note(Note("quorum.agents_kept_off", event.at, {"quorum.role": _value(event.role),
                                                                "quorum.agents": agents}))


def answer_attributes(answer: Answer) -> dict[str, AttrValue]:
    """The root span's attributes from the answer: verdict, who answered, who took part; never its text."""
    out: dict[str, AttrValue] = {
        "quorum.tier": _value(answer.tier), "quorum.tier_reason": tier_reason(answer.tier_reason),
        "quorum.verdict": _value(answer.verdict), "quorum.context.passages": len(answer.context),
        "quorum.context.excluded": len(answer.excluded), "quorum.citations": len(answer.citations),
        "quorum.candidates": len(answer.candidates),
    }
    chosen = next((c for c in answer.candidates if answer.verdict is Verdict.ANSWERED
                   and c.generation.answer == answer.answer), None)
    if chosen is not None:
        out["quorum.answered_by"] = chosen.agent_id
        out["quorum.agreeing"] = tuple(chosen.agreeing)
    if answer.suspects:
        out["quorum.suspects"] = tuple(sorted({s.agent_id for s in answer.suspects}))
    for role in sorted({_value(a.role) for a in answer.agents}):
        calls = [a for a in answer.agents if _value(a.role) == role]
        out[f"quorum.{role}s.asked"] = len(calls)
        out[f"quorum.{role}s.ok"] = sum(a.status is CallStatus.OK for a in calls)
    for name, ms in answer.timings_ms.items():
        if isinstance(ms, (int, float)):
            out[f"quorum.timing.{name}_ms"] = float(ms)
    participation = getattr(answer, "participation", None)
    if participation is not None:
        out.update(_scalars("quorum.participation", participation))
    return out


def tier_reason(reason: str) -> str:
    """Which rule, default or choice set the tier, without what a rule matched (a piece of the question)."""
    return _MATCHED.sub("", reason)[:MAX_REASON_CHARS]


def cascade_attributes(outcome) -> dict[str, AttrValue]:
    out: dict[str, AttrValue] = {"quorum.cascade.fired": bool(outcome.fired),
                                 "quorum.cascade.mitigation": _value(outcome.mitigation),
                                 "quorum.cascade.resolved": bool(outcome.resolved)}
    if outcome.cascade_type is not None:
        out["quorum.cascade.type"] = _value(outcome.cascade_type)
    if outcome.stage is not None:
        out["quorum.cascade.stage"] = int(outcome.stage)
    return out


def score_attributes(score) -> dict[str, AttrValue]:
    out: dict[str, AttrValue] = {
        "quorum.cascade.p": float(score.p), "quorum.cascade.a_sfv": float(score.a_sfv),
        "quorum.cascade.a_csct": float(score.a_csct), "quorum.cascade.a_cpm": float(score.a_cpm),
        "quorum.cascade.fired": bool(score.fired), "quorum.stage.hop": int(score.hop)}
    if score.cascade_type is not None:
        out["quorum.cascade.type"] = _value(score.cascade_type)
    if score.suspect_agents:
        out["quorum.cascade.suspect_agents"] = tuple(score.suspect_agents)
    return out


def _scalars(prefix: str, value: Any, depth: int = 3) -> dict[str, AttrValue]:
    """A dataclass's numbers, flags, enums and short engine-made words (an answer's participation),
    flattened: nested dataclasses and mappings get dotted names."""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= 64):
        return {prefix: value}
    if depth == 0:
        return {}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
    elif isinstance(value, Mapping):
        items = ((str(k), v) for k, v in value.items())
    else:
        return {}
    out: dict[str, AttrValue] = {}
    for name, item in items:
        out.update(_scalars(f"{prefix}.{name}", item, depth - 1))
    return out


def _value(item: Any) -> str:
    return item.value if isinstance(item, enum.Enum) else str(item)
