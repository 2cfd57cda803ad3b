"""What one decided question says about each agent: the Observations the book learns from.

Retrievers: a passage adopted into the safe context is good; being reported as a suspect (its top
passage, or two of them, kept out as anomalies most other retrievers did not return) is bad. Both rest
on what the other retrievers returned, so the committee confirms them; the witnesses are the peers whose
own lists settled it (for a suspect: those that returned the text that won), never every retriever that
happened to answer. A suspect for echoes alone is the engine's own reading of the texts.

Generators: every claim supported and the answer chosen are good; a claim the verifiers refuted, a claim
its evidence does not entail (older records), an answer that does not answer the question while another answer
beside it did, a citation of a chunk that is not in the context and a failed challenge are bad. The engine's own check
is one of the votes: where it refuted (or checked the quote itself) the evidence is engine-checked,
otherwise the refuting verifiers are the witnesses.

Verifiers: a vote that matches the final label is good, a confident vote the others outvoted is bad;
engine-checked when the engine's own vote is the final label.

An operator's approval or rejection credits or debits the chosen generator, the retrievers of
the passages it cited and the judge agents that read it as answering its question (engine-checked: a
person looked). A judge's reading of answers is checked by nothing else: the readings decide which answers
are set aside, so only a person can say the judge read wrongly.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..types import (CallStatus, ChallengeOutcome, CheckReason, ClaimLabel, MeaningStatus, RiskTier, Role, SuspectReason,
                     Verdict)
from ..answer import Answer
from ..generation.reading import readers_of
from ..stages.model import StageKind
from .evidence import EvidenceReason, Observation, is_good

LOCAL_VERIFIER = "evidence-check"      # the name the engine's own EvidenceVerifier votes under


class _Ledger:
    """Collects reasons per agent; engine-checked reasons and peers' witnesses kept apart."""

    def __init__(self) -> None:
        self.reasons: dict[str, list[tuple[EvidenceReason, bool, frozenset[str]]]] = defaultdict(list)
        self.roles: dict[str, Role] = {}

    def add(self, agent: str, role: Role, reason: EvidenceReason, *, engine_checked: bool,
            witnesses: Iterable[str] = ()) -> None:
        self.roles[agent] = role
        self.reasons[agent].append((reason, engine_checked, frozenset(witnesses) - {agent}))

    def observations(self, trace_id: str, answer: Answer) -> list[Observation]:
        out = []
        for agent, entries in self.reasons.items():
            bad = [e for e in entries if not is_good(e[0])]
            # Any bad evidence makes it a bad question: the observation carries the bad reasons only.
            chosen = bad or entries
            engine_checked = any(checked for _, checked, _ in chosen)
            witnesses = frozenset().union(*(w for _, checked, w in chosen if not checked))
            out.append(Observation.from_reasons(agent, self.roles[agent], trace_id, answer.tier,
                                                [r for r, _, _ in chosen], engine_checked=engine_checked,
                                                witnesses=witnesses))
        return out


def observations(answer: Answer, *, local_verifier: str = LOCAL_VERIFIER) -> list[Observation]:
    ledger = _Ledger()
    _retrieval(answer, ledger)
    _generation(answer, ledger)
    _verification(answer, ledger, local_verifier)
    _cascade(answer, ledger)
    _gateway(answer, ledger)
    return ledger.observations(answer.trace_id, answer)


def _gateway(answer: Answer, ledger: _Ledger) -> None:
    """A message the gateway blocked counts against the agent that carried it (the scanners are the
    engine's own check). Sanitised and escalated messages do not: they passed, or a person decides. Nor does a
    passage that is the indexed corpus's own text: every honest retriever returns the document as it is, and
    blaming them for it quarantined a whole fleet on real READMEs (a bibtex request read as an instruction)."""
    report = answer.gateway
    if report is None or not report.blame_carrier:
        return
    roles = {o.agent_id: o.role for o in answer.agents}
    for agent in sorted({f.source for f in report.blocked if f.source in roles and not f.from_corpus}):
        ledger.add(agent, roles[agent], EvidenceReason.CARRIED_INJECTION, engine_checked=True, witnesses=frozenset())


def _cascade(answer: Answer, ledger: _Ledger) -> None:
    """A cascade the monitor traced to a generator's answer (the synthesize stage fired) counts against
    that generator; the monitors are the engine's own checks against the consensus pool. Retrieval-side
    cascades are left to secure retrieval's suspects, which name the retriever that sent the passage."""
    if answer.cascade is None or not answer.cascade.fired:
        return
    generators = {o.agent_id for o in answer.agents if o.role is Role.GENERATOR and o.status is CallStatus.OK}
    blamed = {agent for score in answer.cascade.scores if score.fired and score.stage is StageKind.SYNTHESIZE
              for agent in score.suspect_agents if agent in generators}
    for agent in sorted(blamed):
        ledger.add(agent, Role.GENERATOR, EvidenceReason.CASCADE_SOURCE, engine_checked=True, witnesses=frozenset())


def agreement(answer: Answer) -> dict[str, bool]:
    """Whether each agent went along with the outcome, for its behaviour baseline: a retriever whose
    passages were adopted and that was not reported, a generator whose answer is the given one or agrees
    with it. Agents the question says nothing about are left out."""
    out: dict[str, bool] = {}
    suspects = {s.agent_id for s in answer.suspects}
    for outcome in answer.agents:
        if outcome.role is Role.RETRIEVER and outcome.status is CallStatus.OK:
            adopted = any(outcome.agent_id in c.supported_by for c in answer.context)
            out[outcome.agent_id] = adopted and outcome.agent_id not in suspects
    chosen = next((c for c in answer.candidates if answer.verdict is Verdict.ANSWERED
                   and c.generation.answer == answer.answer), None)
    if chosen is not None:
        for candidate in answer.candidates:
            out[candidate.agent_id] = candidate is chosen or candidate.agent_id in chosen.agreeing
    return out


def _retrieval(answer: Answer, ledger: _Ledger) -> None:
    answered = {o.agent_id for o in answer.agents if o.role is Role.RETRIEVER and o.status is CallStatus.OK}
    suspects = {s.agent_id for s in answer.suspects}
    for suspect in answer.suspects:
        if suspect.agent_id not in answered:
            continue
        # An echo is the engine's own reading of the texts; a dispute or an edited copy is settled by
        # the retrievers that returned the winning text, and only they witnessed it.
        echo_only = set(suspect.flags) == {SuspectReason.ECHO}
        ledger.add(suspect.agent_id, Role.RETRIEVER, EvidenceReason.REPORTED_SUSPECT, engine_checked=echo_only,
                   witnesses=suspect.witnesses)
    for agent in sorted(answered - suspects):
        peers = {a for c in answer.context if agent in c.supported_by for a in c.supported_by}
        if peers:
            ledger.add(agent, Role.RETRIEVER, EvidenceReason.ADOPTED, engine_checked=False, witnesses=peers)


def _generation(answer: Answer, ledger: _Ledger) -> None:
    chosen = next((c for c in answer.candidates if answer.verdict is Verdict.ANSWERED
                   and c.generation.answer == answer.answer), None)
    # "Not the answer" is a model's reading, and it is wrong on hard questions too: it counts only where it is
    # confirmed, by an answer beside it that answered with every claim supported, by a second judge, or by the
    # judges reading the engine's own reader's answer from the same passages as their answer. So an honest
    # fleet is not punished for a question read badly for all of them, and one judge's misreading alone is not.
    one_answered = any(not c.off_topic and c.checks and all(k.supported for k in c.checks) for c in answer.candidates)
    note = answer.judge
    judges_confirm = note.status is MeaningStatus.READ and (len(note.readers) >= 2 or note.reference_answers)
    for candidate in answer.candidates:
        agent = candidate.agent_id
        for check in candidate.checks:
            if check.label is ClaimLabel.REFUTED:
                refuters = {v.verifier for v in check.votes if v.label is ClaimLabel.REFUTED}
                ledger.add(agent, Role.GENERATOR, EvidenceReason.CLAIM_REFUTED,
                           engine_checked=LOCAL_VERIFIER in refuters or not check.votes, witnesses=refuters)
            elif check.reason_kind is CheckReason.CITES_UNKNOWN:
                ledger.add(agent, Role.GENERATOR, EvidenceReason.CITED_UNKNOWN, engine_checked=True)
            elif check.reason_kind is CheckReason.NOT_ENTAILED:
                ledger.add(agent, Role.GENERATOR, EvidenceReason.CLAIM_NOT_ENTAILED, engine_checked=True)
        if candidate.off_topic and (one_answered or (judges_confirm and readers_of(candidate.relevance_by))):
            ledger.add(agent, Role.GENERATOR, EvidenceReason.ANSWER_OFF_TOPIC, engine_checked=True)
        if candidate.challenge_outcome in (ChallengeOutcome.QUOTE_NOT_CITED, ChallengeOutcome.QUOTE_DOES_NOT_BACK):
            ledger.add(agent, Role.GENERATOR, EvidenceReason.CHALLENGE_FAILED, engine_checked=True)
        if candidate.checks and all(k.supported for k in candidate.checks) and not candidate.off_topic:
            ledger.add(agent, Role.GENERATOR, EvidenceReason.CLAIMS_SUPPORTED, engine_checked=True)
        if candidate is chosen:
            ledger.add(agent, Role.GENERATOR, EvidenceReason.ANSWER_CHOSEN, engine_checked=True)


def _verification(answer: Answer, ledger: _Ledger, local_verifier: str) -> None:
    for candidate in answer.candidates:
        for check in candidate.checks:
            local = next((v.label for v in check.votes if v.verifier == local_verifier), None)
            agreeing = {v.verifier for v in check.votes if v.label is check.label}
            for vote in check.votes:
                if vote.verifier == local_verifier:
                    continue
                if vote.label is check.label:
                    ledger.add(vote.verifier, Role.VERIFIER, EvidenceReason.VOTE_AGREED,
                               engine_checked=local is check.label, witnesses=agreeing)
                elif vote.label is not ClaimLabel.NOT_ENOUGH:   # a confident vote the others outvoted
                    ledger.add(vote.verifier, Role.VERIFIER, EvidenceReason.VOTE_OUTVOTED,
                               engine_checked=local is check.label, witnesses=agreeing)


@dataclass(frozen=True)
class DecidedAnswer:
    """What an operator's decision needs of an answer: built from a live Answer or from the JSON payload
    the approval queue stored (so a decision from the CLI, with no engine running, counts the same)."""
    trace_id: str
    tier: RiskTier
    answer: str
    generators: tuple[str, ...]           # generators whose answer is the given one
    cited_retrievers: tuple[str, ...]     # retrievers that returned a passage the answer cites
    answer_readers: tuple[str, ...] = ()  # judge agents that read the given answer as answering its question

    @classmethod
    def from_answer(cls, answer: Answer) -> "DecidedAnswer":
        cited = {c.chunk_id for c in answer.citations}
        given = [c for c in answer.candidates if answer.answer and c.generation.answer == answer.answer]
        return cls(answer.trace_id, answer.tier, answer.answer, tuple(c.agent_id for c in given),
                   tuple(sorted({a for c in answer.context if c.chunk.id in cited for a in c.supported_by})),
                   _readers(c.relevance_by for c in given if not c.off_topic))

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> "DecidedAnswer":
        text = str(payload.get("answer", ""))
        cited = {c.get("chunk_id") for c in payload.get("citations", ()) if isinstance(c, Mapping)}
        given = [c for c in payload.get("candidates", ()) if isinstance(c, Mapping)
                 and text and (c.get("generation") or {}).get("answer") == text]
        generators = tuple(c.get("agent_id", "") for c in given)
        retrievers = sorted({a for c in payload.get("context", ()) if isinstance(c, Mapping)
                             and (c.get("chunk") or {}).get("id") in cited for a in c.get("supported_by", ())})
        return cls(str(payload.get("trace_id", "")), RiskTier(payload.get("tier", RiskTier.MEDIUM.value)), text,
                   generators, tuple(retrievers),
                   _readers(str(c.get("relevance_by") or "") for c in given if not c.get("off_topic")))


def _readers(relevance_by: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({name for described in relevance_by for name in readers_of(described)}))


def operator_observations(decided: DecidedAnswer, approved: bool) -> list[Observation]:
    """An operator's decision on an answer: the generators that gave it, the retrievers of the passages it
    cited and the judges that read it as answering are credited (approved) or debited (rejected).
    Engine-checked: a person looked."""
    reason = EvidenceReason.OPERATOR_APPROVED if approved else EvidenceReason.OPERATOR_REJECTED
    agents = ({a: Role.VERIFIER for a in decided.answer_readers} | {a: Role.GENERATOR for a in decided.generators}
              | {a: Role.RETRIEVER for a in decided.cited_retrievers})
    return [Observation.from_reasons(agent, role, decided.trace_id, decided.tier, (reason,), engine_checked=True)
            for agent, role in sorted(agents.items())]
