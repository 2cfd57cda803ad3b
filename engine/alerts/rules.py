"""The alerts a decided answer raises: pure functions of the Answer, recorded by the engine after it.

injection_blocked   the gateway BLOCKED at least one message of the question. One alert per carrier
                    agent: a flag's source when it names an agent that took part in the question (a
                    stage's output names its agents comma-separated). Blocked messages no agent carried
                    (a tool's result, the engine's own stage) raise one alert with agent "" that names
                    their sources, and so do blocked passages that are the indexed corpus's own text
                    (GatewayFlag.from_corpus: the document says it, whoever returned it). Sanitised and
                    escalated messages raise none: they passed, or a person
                    decides them in the approval queue. A blocked question never makes an Answer (the
                    operator is told at once), so it raises nothing here.
cascade_triggered   the cascade monitor fired. One alert per agent the monitors blamed at the stage
                    where it fired (the fired scores' suspect_agents), else per agent whose work that
                    stage was; one with agent "" when it was the engine's own stage.
consensus_failed    the verdict is ABSTAINED or NO_ANSWER because agents did not agree:
                    - generators: at least two answers supported by their evidence (support_rate >=
                      min_support, adjudicate's bar) that do not agree with each other, which is
                      adjudicate's "no consistent conclusion";
                    - retrievers: retrievers returned passages yet none was left to answer from (every
                      one kept out: below quorum, echo, tampered ...).
                    Agent "": a disagreement is nobody's fault by itself. Not raised for weak support
                    with no rival (the reputation book weighs that), for agents that did not reply
                    (agent_down), nor when the cascade monitor halted the question (cascade_triggered).
quorum_lost         the answer's participation says a quorum did not hold (engine.participation: fewer
                    retrievers or generators answered than the tier needs), whatever the verdict. Agent "":
                    the agents that failed each raise agent_down from the reputation book after
                    down_after_errors failures in a row; the message says how many of each role answered
                    and how the others failed. Answers without participation (built by hand) raise none.
Messages quote agents' text only as a short excerpt, made plain (engine.alerts.plain).
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from ..cascade.types import Mitigation
from ..config import GenerationSettings
from ..gateway.report import GatewayFlag
from ..participation import shortfall
from .kinds import AlertKind
from ..types import CallStatus, Verdict
from ..answer import Answer
from .plain import plain
from .row import NewAlert

DEFAULT_MIN_SUPPORT = GenerationSettings().min_support
EXCERPT_CHARS = 80
REASON_CHARS = 160
MAX_ITEMS = 3


def alerts_for(answer: Answer, at: float, min_support: float = DEFAULT_MIN_SUPPORT) -> tuple[NewAlert, ...]:
    """Every alert the answer raises, in the order: injections, cascade, consensus, quorum."""
    return (*injection_alerts(answer, at), *cascade_alerts(answer, at),
            *consensus_alerts(answer, at, min_support), *quorum_alerts(answer, at))


# --- injection_blocked -------------------------------------------------------------------------
def injection_alerts(answer: Answer, at: float) -> tuple[NewAlert, ...]:
    report = answer.gateway
    if report is None or not report.blocked:
        return ()
    agents = {o.agent_id for o in answer.agents}
    by_carrier: dict[str, list[GatewayFlag]] = {}
    for flag in report.blocked:
        # The corpus's own text is the document's doing: one alert with no agent, whoever returned it.
        carriers = [] if flag.from_corpus else [s for s in (p.strip() for p in flag.source.split(",")) if s in agents]
        carriers = carriers or [""]
        for carrier in carriers:
            by_carrier.setdefault(carrier, []).append(flag)
    return tuple(NewAlert(AlertKind.INJECTION_BLOCKED, carrier, _injection_message(carrier, flags),
                          answer.trace_id, at)
                 for carrier, flags in sorted(by_carrier.items()))


def _injection_message(carrier: str, flags: list[GatewayFlag]) -> str:
    kinds = Counter(f.kind for f in flags)
    what = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    channels = "/".join(sorted({f.channel for f in flags}))
    top = max(flags, key=lambda f: f.score)
    sources = ", ".join(sorted({plain(f.source, 40) for f in flags}))
    who = plain(carrier) if carrier else f"no agent (from {sources})"
    items = _unique(plain(f.item, 60) for f in flags if f.item)
    shown = f"; items {', '.join(items[:MAX_ITEMS])}{' …' if len(items) > MAX_ITEMS else ''}" if items else ""
    if not carrier and all(f.from_corpus for f in flags):
        return (f"the gateway blocked {len(items) or len(flags)} passage(s) of the corpus's own documents that read "
                f"like instructions ({', '.join(items[:MAX_ITEMS])}{' …' if len(items) > MAX_ITEMS else ''}); "
                f"{sources} returned them as they are, so no agent is blamed. Top score {top.score:.2f}: "
                f"“{plain(top.excerpt, EXCERPT_CHARS)}”")
    return (f"the gateway blocked {len(flags)} message(s) carried by {who} ({what}; {channels} channel{shown}), "
            f"top score {top.score:.2f}: “{plain(top.excerpt, EXCERPT_CHARS)}”")


# --- cascade_triggered -------------------------------------------------------------------------
def cascade_alerts(answer: Answer, at: float) -> tuple[NewAlert, ...]:
    cascade = answer.cascade
    if cascade is None or not cascade.fired:
        return ()
    fired = [s for s in cascade.scores if s.fired and (cascade.stage is None or s.index == cascade.stage)]
    agents = _unique(a for s in fired for a in s.suspect_agents)
    if not agents:
        attempts = {s.attempt for s in fired}
        agents = _unique(a for r in answer.stages
                         if r.index == cascade.stage and (not attempts or r.attempt in attempts) for a in r.agents)
    stage = fired[0].stage.value if fired else next(
        (r.kind.value for r in answer.stages if r.index == cascade.stage), "")
    where = f"stage {cascade.stage + 1}" if cascade.stage is not None else "a stage"
    what = cascade.cascade_type.value.replace("_", " ") if cascade.cascade_type else "unclassified"
    mitigation = cascade.mitigation.value if cascade.mitigation is not Mitigation.NONE else "no mitigation"
    outcome = "resolved" if cascade.resolved else "not resolved, the answer was held for review"
    if cascade.resolved and cascade.review:
        outcome += ", sent to review"
    message = (f"{what} cascade at {where}{f' ({stage})' if stage else ''}; {mitigation}, {outcome}"
               + (f": {plain(cascade.reason, REASON_CHARS)}" if cascade.reason else ""))
    return tuple(NewAlert(AlertKind.CASCADE_TRIGGERED, agent, message, answer.trace_id, at)
                 for agent in (agents or [""]))


# --- consensus_failed --------------------------------------------------------------------------
def consensus_alerts(answer: Answer, at: float, min_support: float = DEFAULT_MIN_SUPPORT) -> tuple[NewAlert, ...]:
    if answer.verdict not in (Verdict.ABSTAINED, Verdict.NO_ANSWER):
        return ()
    if answer.cascade is not None and answer.cascade.halted:
        return ()
    message = _generators_disagree(answer, min_support) or _retrievers_disagree(answer)
    return (NewAlert(AlertKind.CONSENSUS_FAILED, "", message, answer.trace_id, at),) if message else ()


def _generators_disagree(answer: Answer, min_support: float) -> str:
    supported = [c for c in answer.candidates if c.support_rate >= min_support]
    apart = _unique(x for a in supported for b in supported if a is not b
                    and b.agent_id not in a.agreeing and a.agent_id not in b.agreeing
                    for x in (a.agent_id, b.agent_id))
    if len(apart) < 2:
        return ""
    return (f"{answer.verdict.value}: {len(apart)} generators gave answers supported by their evidence that "
            f"disagree ({', '.join(plain(a, 40) for a in sorted(apart))})")


def _retrievers_disagree(answer: Answer) -> str:
    if answer.context or not answer.excluded:
        return ""
    # A passage kept out with no anomaly flag was kept out for want of a quorum.
    flags = Counter(flag for c in answer.excluded
                    for flag in [f.value for f in (c.explanation.flags if c.explanation else ())] or ["no quorum"])
    why = ", ".join(f"{n} {flag}" for flag, n in sorted(flags.items(), key=lambda kv: (-kv[1], kv[0])))
    suspects = ", ".join(plain(s.agent_id, 40) for s in answer.suspects)
    return (f"{answer.verdict.value}: the retrievers returned {len(answer.excluded)} passage(s) but none was "
            f"corroborated enough to use ({why})" + (f"; reported: {suspects}" if suspects else ""))


# --- quorum_lost -------------------------------------------------------------------------------
def quorum_alerts(answer: Answer, at: float) -> tuple[NewAlert, ...]:
    part = answer.participation
    if part is None or part.quorum_held:
        return ()
    failing = _unique(plain(o.agent_id, 40) for o in answer.agents if o.status is not CallStatus.OK)
    who = f"; no reply from {', '.join(failing[:MAX_ITEMS * 2])}{' …' if len(failing) > MAX_ITEMS * 2 else ''}" \
        if failing else ""
    return (NewAlert(AlertKind.QUORUM_LOST, "", f"{answer.verdict.value}, {shortfall(part)}{who}",
                     answer.trace_id, at),)


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(v for v in values if v))
