"""The reputation book: every agent's trust, moved by confirmed evidence, decay and behaviour; states and alerts.

Pure logic: no I/O, no threads, time from the injected clock. Every mutating call returns the typed events
it caused (engine.reputation.events) for the engine to audit, store and show; `to_rows` / `load` carry the
book across a restart.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from ..errors import InputError
from ..types import RiskTier, Role
from .baseline import BehaviourBaseline, BehaviourSample
from .committee import committee, confirm
from .events import (AgentQuarantined, AgentReleased, AlertRaised, BehaviourShift, ChangeRejected, ProbationEnded,
                     ReputationChanged, ReputationEvent)
from ..alerts.kinds import AlertKind
from .evidence import EvidenceReason, Observation
from .records import ROW_KEYS, AgentStanding, StandingState
from .scale import decayed, logit, sigmoid
from ..settings.reputation import ReputationSettings

AUTOMATIC = "reputation"      # the actor named on automatic quarantines
VISIBLE = 0.0005              # a score move smaller than this does not show at three decimals
_EPS = 1e-9                   # log-odds slack so that score >= start survives rounding


@dataclass
class _Agent:
    agent_id: str
    role: Role
    log_odds: float
    state: StandingState
    first_seen: float
    last_change_at: float     # log_odds is exact as of this time; decay since then is still pending
    last_change_why: str
    good_streak: int = 0
    # Not carried across a restart: rebuilt from the next calls.
    baseline: BehaviourBaseline | None = None
    errors_in_row: int = 0
    question: tuple[str, float, bool] = ("", 0.0, False)   # trace id, score before its first change, drop alerted

    @property
    def score(self) -> float:
        return sigmoid(self.log_odds)

    def trust(self) -> AgentStanding:
        return AgentStanding(self.agent_id, self.role, self.score, self.state, self.first_seen, self.last_change_at,
                          self.last_change_why, self.good_streak)


class ReputationBook:
    def __init__(self, settings: ReputationSettings | None = None, clock: Callable[[], float] = time.time) -> None:
        self._s = settings or ReputationSettings()
        self._clock = clock
        self._agents: dict[str, _Agent] = {}

    @property
    def settings(self) -> ReputationSettings:
        return self._s

    # ----- agents -------------------------------------------------------------------------------------------

    def register(self, agent_id: str, role: Role, first_seen: float | None = None) -> AgentStanding:
        """Adds an agent at the start score; registering a known agent again keeps its record (restarts)."""
        if not str(agent_id or "").strip():
            raise InputError("an agent needs a non-empty id to be registered")
        known = self._agents.get(agent_id)
        if known is not None:
            if known.role is not role:
                raise InputError(f"agent {agent_id} is registered as a {known.role.value}, not a {role.value}")
            return known.trust()
        at = self._clock() if first_seen is None else first_seen
        self._agents[agent_id] = _Agent(agent_id, role, self._s.l0, StandingState.ACTIVE, at, at, "registered")
        return self._agents[agent_id].trust()

    def __contains__(self, agent_id: object) -> bool:
        return agent_id in self._agents

    def record(self, agent_id: str) -> AgentStanding:
        return self._get(agent_id).trust()

    def all(self) -> tuple[AgentStanding, ...]:
        """Every agent, longest-standing first."""
        return tuple(a.trust() for a in sorted(self._agents.values(), key=lambda a: (a.first_seen, a.agent_id)))

    def weight(self, agent_id: str) -> float:
        """Vote weight: nothing when quarantined, at most probation_weight on probation, else the score."""
        a = self._get(agent_id)
        if a.state is StandingState.QUARANTINED:
            return 0.0
        if a.state is StandingState.PROBATION:
            return min(a.score, self._s.probation_weight)
        return a.score

    def snapshot(self) -> Mapping[str, float]:
        """Agent id to vote weight, for secure retrieval and adjudication."""
        return {agent_id: self.weight(agent_id) for agent_id in self._agents}

    def eligible(self, agent_id: str, tier: RiskTier) -> tuple[bool, str]:
        """May this agent work on a question of this tier, and why (or why not)."""
        a = self._get(agent_id)
        if a.state is StandingState.QUARANTINED:
            return False, f"quarantined ({a.last_change_why})"
        if a.state is StandingState.PROBATION and tier is not RiskTier.LOW:
            return False, f"on probation: low-risk work only ({a.good_streak} of {self._s.probation_questions} " \
                          f"good questions so far)"
        if tier is RiskTier.HIGH and a.score < self._s.high_tier_floor:
            return False, f"score {a.score:.2f} is below {self._s.high_tier_floor:.2f}, needed for high-risk work"
        return True, f"{a.state.value}, score {a.score:.2f}"

    # ----- evidence -----------------------------------------------------------------------------------------

    def observe(self, obs: Observation) -> list[ReputationEvent]:
        """One question's evidence about one agent: lands if the engine checked it or the committee confirms it."""
        a = self._get(obs.agent_id)
        if obs.role is not a.role:
            raise InputError(f"evidence about {a.agent_id} says {obs.role.value}, but it is a {a.role.value}")
        if not obs.has_evidence:
            return []
        now = self._clock()
        factor = self._s.tier_factor(obs.tier)
        delta = -self._s.down_step * factor if obs.is_bad else self._s.up_step * factor
        verdict = confirm(obs, committee((b.trust() for b in self._agents.values()), a.agent_id, self._s,
                                          role=obs.role))
        kind = "bad" if obs.is_bad else "good"
        what = f"{kind} {obs.tier.value}-risk question ({_reasons_text(obs)})"
        if not verdict.confirmed:
            base = self._decayed(a, now)
            proposed = sigmoid(self._clamp(base + delta)) - sigmoid(base)
            return [ChangeRejected(a.agent_id, proposed, obs.reasons, obs.trace_id, now,
                                   f"{what} not confirmed: {verdict.why}")]
        return self._move(a, delta, obs.reasons, obs.trace_id, now, verdict.confirmed_by, f"{what}: {verdict.why}",
                          good=not obs.is_bad)

    def observe_behaviour(self, agent_id: str, latency_ms: float, reply_bytes: int, error: bool,
                          agreement: bool | None = None, trace_id: str = "") -> list[ReputationEvent]:
        """One call's behaviour against the agent's own history; a sudden change costs trust and says why."""
        a = self._get(agent_id)
        now = self._clock()
        events: list[ReputationEvent] = []
        a.errors_in_row = a.errors_in_row + 1 if error else 0
        if a.errors_in_row == self._s.down_after_errors:
            events.append(AlertRaised(AlertKind.AGENT_DOWN, agent_id,
                                      f"{agent_id} failed {a.errors_in_row} calls in a row", trace_id, now))
        if a.baseline is None:
            a.baseline = BehaviourBaseline(self._s)
        shifts = a.baseline.add(BehaviourSample(float(latency_ms), int(reply_bytes), bool(error), agreement))
        if not shifts:
            return events
        whys = "; ".join(shift.why for shift in shifts)
        events += [BehaviourShift(agent_id, shift.metric.value, shift.why, trace_id, now) for shift in shifts]
        # The engine measured this itself, so no committee; it is a hint, so a fraction of a lie's step.
        events += self._move(a, -self._s.behaviour_step_share * self._s.down_step, (EvidenceReason.BEHAVIOUR_SHIFT,),
                             trace_id, now, (), f"behaviour shift measured by the engine: {whys}", good=False)
        events.append(AlertRaised(AlertKind.BEHAVIOUR_SHIFT, agent_id, f"{agent_id}: {whys}", trace_id, now))
        return events

    def decay(self, now: float | None = None) -> list[ReputationEvent]:
        """Moves every score toward neutral (`start`) by the time since its last change; moves smaller than
        decay_min_change wait until they add up. States do not change: a quarantined agent stays quarantined."""
        now = self._clock() if now is None else now
        events: list[ReputationEvent] = []
        for a in self._agents.values():
            target = self._decayed(a, now)
            if abs(sigmoid(target) - a.score) >= self._s.decay_min_change:
                events.append(self._apply_decay(a, target, now, ""))
        return events

    # ----- operators ----------------------------------------------------------------------------------------

    def quarantine(self, agent_id: str, reason: str, actor: str = "operator",
                   trace_id: str = "") -> list[ReputationEvent]:
        a = self._get(agent_id)
        reason = _required(reason, f"a reason is needed to quarantine {agent_id}")
        actor = _required(actor, f"an actor (who quarantines {agent_id}) is needed")
        if a.state is StandingState.QUARANTINED:
            raise InputError(f"{agent_id} is already quarantined ({a.last_change_why})")
        now = self._clock()
        events = self._settle(a, now, trace_id)
        a.state, a.good_streak = StandingState.QUARANTINED, 0
        a.last_change_at, a.last_change_why = now, f"quarantined by {actor}: {reason}"
        events.append(AgentQuarantined(agent_id, a.score, reason, actor, trace_id, now, automatic=False))
        return events

    def release(self, agent_id: str, reason: str, actor: str = "operator", trace_id: str = "") -> list[ReputationEvent]:
        """Quarantined to probation, the score raised to at least probation_start."""
        a = self._get(agent_id)
        reason = _required(reason, f"a reason is needed to release {agent_id}")
        actor = _required(actor, f"an actor (who releases {agent_id}) is needed")
        if a.state is not StandingState.QUARANTINED:
            raise InputError(f"{agent_id} is not quarantined (it is {a.state.value}); only a quarantined agent "
                             f"can be released")
        now = self._clock()
        events = self._settle(a, now, trace_id)
        old = a.score
        a.log_odds = max(a.log_odds, logit(self._s.probation_start))
        a.state, a.good_streak = StandingState.PROBATION, 0
        a.last_change_at = now
        a.last_change_why = f"released by {actor}: {reason}; on probation at {a.score:.2f}"
        events.append(AgentReleased(agent_id, reason, actor, trace_id, now))
        if a.score != old:
            events.append(ReputationChanged(agent_id, old, a.score, (), trace_id, now, (),
                                            f"released by {actor}: probation restarts at {a.score:.2f}"))
        return events

    # ----- persistence --------------------------------------------------------------------------------------

    def checkpoint(self) -> dict[str, tuple[float, StandingState, int, float, str]]:
        """Each agent's standing as the store keeps it (to_rows), as it is now: for restore()."""
        return {a.agent_id: (a.log_odds, a.state, a.good_streak, a.last_change_at, a.last_change_why)
                for a in self._agents.values()}

    def restore(self, checkpoint: Mapping[str, tuple[float, StandingState, int, float, str]]) -> None:
        """Puts each agent's standing back to `checkpoint`: a change the store refused leaves the book too."""
        for agent_id, (log_odds, state, good_streak, at, why) in checkpoint.items():
            if (a := self._agents.get(agent_id)) is not None:
                a.log_odds, a.state, a.good_streak, a.last_change_at, a.last_change_why = (log_odds, state,
                                                                                           good_streak, at, why)

    def to_rows(self) -> list[dict[str, Any]]:
        """Plain dicts (ROW_KEYS) for the store; `load` on a new book continues exactly where this one stands."""
        return [{"agent_id": a.agent_id, "role": a.role.value, "log_odds": a.log_odds, "state": a.state.value,
                 "first_seen": a.first_seen, "last_change_at": a.last_change_at,
                 "last_change_why": a.last_change_why, "good_streak": a.good_streak}
                for a in sorted(self._agents.values(), key=lambda a: (a.first_seen, a.agent_id))]

    def load(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Replaces every record with `rows` (from to_rows). Behaviour baselines start afresh."""
        agents: dict[str, _Agent] = {}
        for i, row in enumerate(rows):
            missing = [k for k in ROW_KEYS if k not in row]
            if missing:
                raise InputError(f"reputation row {i} is missing {', '.join(missing)}")
            try:
                a = _Agent(str(row["agent_id"]), Role(row["role"]), self._clamp(float(row["log_odds"])),
                           StandingState(row["state"]), float(row["first_seen"]), float(row["last_change_at"]),
                           str(row["last_change_why"]), int(row["good_streak"]))
            except (TypeError, ValueError) as exc:
                raise InputError(f"reputation row {i} ({row.get('agent_id')}): {exc}") from None
            if a.agent_id in agents:
                raise InputError(f"reputation row {i}: agent {a.agent_id} appears twice")
            agents[a.agent_id] = a
        self._agents = agents

    def merge(self, rows: Iterable[Mapping[str, Any]]) -> list[str]:
        """Takes in standings changed elsewhere (another process wrote the same file: `main.py agents
        quarantine`, a decision from the CLI): a row newer than this book's record replaces its standing,
        behaviour baseline kept; unknown agents are added. Returns the agents that changed."""
        incoming = ReputationBook(self._s, self._clock)
        incoming.load(rows)
        changed = []
        for agent_id, fresh in incoming._agents.items():
            mine = self._agents.get(agent_id)
            if mine is None:
                self._agents[agent_id] = fresh
                changed.append(agent_id)
            elif fresh.last_change_at > mine.last_change_at + _EPS and (
                    fresh.log_odds, fresh.state, fresh.good_streak) != (mine.log_odds, mine.state, mine.good_streak):
                mine.log_odds, mine.state, mine.good_streak = fresh.log_odds, fresh.state, fresh.good_streak
                mine.last_change_at, mine.last_change_why = fresh.last_change_at, fresh.last_change_why
                changed.append(agent_id)
        return changed

    # ----- inside -------------------------------------------------------------------------------------------

    def _get(self, agent_id: str) -> _Agent:
        a = self._agents.get(agent_id)
        if a is None:
            known = ", ".join(sorted(self._agents)) or "none"
            raise InputError(f"no agent {agent_id!r} in the reputation book (known: {known})")
        return a

    def _clamp(self, log_odds: float) -> float:
        return min(max(log_odds, self._s.l_min), self._s.l_max)

    def _decayed(self, a: _Agent, now: float) -> float:
        return decayed(a.log_odds, self._s.l0, now - a.last_change_at, self._s.decay_half_life_s)

    def _apply_decay(self, a: _Agent, target: float, now: float, trace_id: str) -> ReputationChanged:
        old, span = a.score, _span(now - a.last_change_at)
        a.log_odds, a.last_change_at = target, now
        a.last_change_why = f"decayed toward {self._s.start:.2f} over {span}"
        return ReputationChanged(a.agent_id, old, a.score, (), trace_id, now, (), a.last_change_why)

    def _settle(self, a: _Agent, now: float, trace_id: str) -> list[ReputationEvent]:
        """Brings the pending decay in before a state change, recorded when it shows."""
        target = self._decayed(a, now)
        if abs(sigmoid(target) - a.score) >= VISIBLE:
            return [self._apply_decay(a, target, now, trace_id)]
        a.log_odds = target
        return []

    def _move(self, a: _Agent, delta: float, reasons: tuple[EvidenceReason, ...], trace_id: str, now: float,
              confirmed_by: tuple[str, ...], why: str, good: bool) -> list[ReputationEvent]:
        """Lands a confirmed change (with the decay pending since the last one), then what follows from it."""
        old = a.score
        settled = self._decayed(a, now)
        if abs(sigmoid(settled) - old) >= VISIBLE:
            why += f"; decayed {sigmoid(settled) - old:+.3f} since {_span(now - a.last_change_at)} ago"
        # A drop is measured over all changes one question causes (its evidence, a behaviour shift, the
        # operator's later decision), from the score it had once decay was counted.
        if not trace_id or a.question[0] != trace_id:
            a.question = (trace_id, sigmoid(settled), False)
        a.log_odds = self._clamp(settled + delta)
        a.good_streak = a.good_streak + 1 if good else 0
        a.last_change_at, a.last_change_why = now, why
        events: list[ReputationEvent] = [ReputationChanged(a.agent_id, old, a.score, reasons, trace_id, now,
                                                           confirmed_by, why)]
        _, before, alerted = a.question
        drop = before - a.score
        if a.state is not StandingState.QUARANTINED and a.score < self._s.quarantine_floor:
            reason = f"score {a.score:.2f} fell below the quarantine floor {self._s.quarantine_floor:.2f}"
            a.state, a.good_streak = StandingState.QUARANTINED, 0
            a.last_change_why = f"quarantined automatically: {reason}"
            a.question = (trace_id, before, True)     # the quarantine alert says it all
            events.append(AgentQuarantined(a.agent_id, a.score, reason, AUTOMATIC, trace_id, now, automatic=True))
            events.append(AlertRaised(AlertKind.AUTO_QUARANTINE, a.agent_id,
                                      f"{a.agent_id} quarantined: {reason} (it was {before:.2f} before this question)",
                                      trace_id, now))
        elif drop > self._s.score_drop_alert and not alerted:
            a.question = (trace_id, before, True)
            events.append(AlertRaised(AlertKind.SCORE_DROP, a.agent_id,
                                      f"{a.agent_id} lost {drop:.2f} on one question ({before:.2f} to {a.score:.2f})",
                                      trace_id, now))
        elif (a.state is StandingState.PROBATION and a.good_streak >= self._s.probation_questions
              and a.log_odds >= self._s.l0 - _EPS):
            a.state = StandingState.ACTIVE
            a.last_change_why = f"probation ended after {a.good_streak} good questions in a row"
            events.append(ProbationEnded(a.agent_id, a.score, trace_id, now))
        return events


def _required(text: str, problem: str) -> str:
    text = " ".join(str(text or "").split())
    if not text:
        raise InputError(problem)
    return text


def _reasons_text(obs: Observation) -> str:
    if obs.reasons:
        return ", ".join(r.value for r in obs.reasons)
    return f"{obs.good} good, {obs.bad} bad"


def _span(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
