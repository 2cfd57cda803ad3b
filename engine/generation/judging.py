"""Meaning read by judges: where the cheap checks cannot decide, judge agents read the answers against the
passages they come from (DESIGN.md §8; docs/defences.md "Judges").

The cheap checks come first (words, embeddings, agreement between generators). A judge is asked
(why_read):
- on the high tier, about every answer;
- on the medium tier ([judge] medium), about a lone answer (no other generator's answer agrees with it),
  about a dispute (two supported answers that differ), about each claim whose words are not all in its
  evidence (whatever the word checks said), and about each claim refuted by slots alone while its evidence names
  all it names (ClaimReader: an honest paraphrase, or a claim joining two sentences of its passage, is read for
  entailment instead of refused, and one changed word is read instead of passed);
- never on the fast tier.

A judge reads all of one question's candidates against the same passages (judge_passages.shown_passages):
P(yes) that each is the answer the passages give, beside the engine's own reader's answer from the same
context (the extractive answer), read the same way; readings are compressed, so a candidate is compared with
that reference rather than held to a fixed line. Several judges' readings are averaged, each weighted by its
reputation. A candidate is the passages' answer when Reading.is_answer says so; one that is not is set aside
and never given.

When a judge should have read and none could (none in the fleet, down, late, failing its canaries), a dispute
is no answer but both positions (the cheap checks' pick of it rests on agreement, which colluders control), and
any other decision stands on the cheap checks and says so (JudgeNote NOT_READ): the answer view marks it
"meaning not read", the audit records it, and the approval queue takes it on the high tier anyway.
"""
from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

from ..config import GenerationSettings
from ..errors import AgentError
from ..settings.judge import JudgeSettings
from ..types import (Candidate, ClaimLabel, ContextChunk, Generation, JudgeNote, MeaningStatus, RiskTier, Verdict,
                     Vote)
from ..text import coverage
from ..verify.alignment import moved_within
from ..verify.verifier import Judgement, Verifier
from .adjudicate import Decision, JudgedOnce, adjudicate
from .judge_passages import agrees, shown_passages
from .reading import READ_BY, Reading

READ_FOR_MEANING = "read for meaning"    # in a claim's reason: a judge read it for entailment (ClaimReader)


class Judge(Protocol):
    """A judge agent as the engine asks it (engine.agents.remote.RemoteJudge is one)."""
    name: str

    async def read(self, question: str, passages, candidates: Sequence[str], trace_id: str = "", *,
                   own_answer: bool = False): ...


def dispute(decision: Decision, settings: GenerationSettings) -> str:
    """Why the cheap checks disagree about this decision's answers, for people; "" when they do not."""
    supported = [c for c in decision.candidates if c.support_rate >= settings.min_support]
    for n, one in enumerate(supported):
        for other in supported[n + 1:]:
            if other.agent_id not in one.agreeing and one.generation.answer.strip() != other.generation.answer.strip():
                return f"{one.agent_id} and {other.agent_id} give different supported answers"
    return ""


def why_read(decision: Decision, tier: RiskTier, settings: GenerationSettings, judge: JudgeSettings) -> str:
    """Why this question's answers must be read by a judge, for people; "" when the cheap checks decide. A lone
    answer is read even when it is the engine's own reader's answer: that reader's pick can be a true sentence
    that does not answer as well as any generator's."""
    if not decision.candidates:
        return ""
    if tier is RiskTier.HIGH:
        return "every answer is read on the high tier"
    if tier is not RiskTier.MEDIUM or not judge.medium:
        return ""
    if (why := dispute(decision, settings)):
        return why
    chosen = decision.chosen
    if decision.verdict is Verdict.ANSWERED and chosen is not None and not chosen.agreeing:
        return f"a lone answer: no other generator's answer agrees with {chosen.agent_id}'s"
    return ""


async def read_answers(question: str, answers: Mapping[str, Generation], context: Sequence[ContextChunk],
                       judges: Sequence[Judge], weights: Mapping[str, float], trace_id: str = "", *,
                       own_answer: bool = False, reference: str = "") -> tuple[Reading | None, tuple[str, ...]]:
    """Every judge reads every distinct answer, and `reference` (the engine's own reader's answer from the same
    context) beside them; (the reading, why each judge that failed failed). The reading is None when no judge
    read."""
    given = list(dict.fromkeys(g.answer.strip() for g in answers.values() if g.answer.strip()))
    if not judges or not given:
        return None, ()
    reference = reference.strip()
    texts = given + ([reference] if reference and reference not in given else [])
    cited = [c for g in answers.values() for claim in g.claims for c in claim.citations]
    chunks = shown_passages(question, [c.chunk for c in context], cited, texts)

    async def by(judge: Judge):
        try:
            return judge.name, await judge.read(question, chunks, texts, trace_id, own_answer=own_answer), ""
        except AgentError as exc:
            return judge.name, None, f"{judge.name}: {exc.reason}"
    results = await asyncio.gather(*(by(j) for j in judges))
    read = [(name, reply) for name, reply, _ in results if reply is not None]
    failed = tuple(why for _, reply, why in results if reply is None)
    if not read:
        return None, failed
    weight = {name: max(weights.get(name, 1.0), 1e-3) for name, _ in read}
    total = sum(weight.values())
    by_text = {text: sum(weight[name] * reply.scores[i] for name, reply in read) / total
               for i, text in enumerate(texts)}
    lead = max(read, key=lambda item: weight[item[0]])[1]
    own = lead.answer if own_answer else ""
    answered = {agent: g.answer.strip() for agent, g in answers.items() if g.answer.strip()}
    return Reading(
        scores={agent: round(by_text[text], 4) for agent, text in answered.items()},
        agrees={agent: agrees(own, text) if own else None for agent, text in answered.items()},
        own_answer=own, readers=tuple(name for name, _ in read), passages=tuple(c.id for c in chunks),
        reference=round(by_text[reference], 4) if reference else None,
        is_reference={agent: says_no_more(text, reference) for agent, text in answered.items()}), failed


def says_no_more(answer: str, reference: str) -> bool:
    """Whether an answer states nothing the engine's own reader's answer does not: that very text, or its key
    words all within it ("Five" beside "Pluto has five known moons: Charon, Nix, Hydra, Kerberos and Styx"). A
    short answer reads lower than the sentence it comes from, so it is held to the fixed line, not to the
    sentence's reading."""
    return bool(reference) and (answer == reference or agrees(answer, reference) is True)


def words_cannot_decide(label: ClaimLabel, claim: str, evidence: Sequence[str]) -> bool:
    """Whether the word checks' verdict on a claim is one only meaning can settle (ClaimReader's docstring)."""
    if label is ClaimLabel.NOT_ENOUGH:
        return True
    if label is ClaimLabel.REFUTED:
        return moved_within(claim, evidence)
    return coverage(claim, " ".join(evidence)) < 1.0


class ClaimReader:
    """A verifier that asks the judges about the claims the word checks could not place: where the cheap
    verdict is not_enough_evidence for want of words (an honest paraphrase, a pronoun resolved), supported while
    some of the claim's words are not in its evidence (one changed word, "the first spacecraft to orbit another
    planet" from "... to fly past another planet", passes a coverage threshold), or refuted by slots alone while
    every name and number the claim states is in its evidence (alignment.moved_within: a claim joining two
    sentences of its passage), the judges' entailment reading decides, supported or refuted. Every other verdict
    stands: a quote, a name or number brought in from outside the evidence, two names exchanged in one sentence.
    `unread` collects the claims no judge could read."""

    def __init__(self, verifier: Verifier, judges: Sequence[Verifier]) -> None:
        self.verifier, self.judges = verifier, list(judges)
        self.name = verifier.name
        self.unread: list[str] = []
        self.read: set[str] = set()
        self.read_ms = 0.0          # wall time spent waiting on the judges, summed over the claims they read
        self.claims_read = 0

    async def judge(self, claim: str, evidence, trace_id: str = "") -> Judgement:
        first = await self.verifier.judge(claim, evidence, trace_id)
        if not evidence or not self.judges or not words_cannot_decide(first.label, claim,
                                                                      [c.text for c in evidence]):
            return first

        async def ask(judge: Verifier) -> Judgement | None:
            try:
                return await judge.judge(claim, evidence, trace_id)
            except AgentError:
                return None
        started = time.perf_counter()
        readings = [j for j in await asyncio.gather(*(ask(j) for j in self.judges))
                    if j is not None and j.label is not ClaimLabel.NOT_ENOUGH]
        self.read_ms += (time.perf_counter() - started) * 1000
        self.claims_read += 1
        if not readings:
            self.unread.append(claim)
            return first
        self.read.update(j.verifier for j in readings)
        counts = Counter(j.label for j in readings)
        label = ClaimLabel.SUPPORTED if counts[ClaimLabel.SUPPORTED] * 2 > len(readings) else ClaimLabel.REFUTED
        chosen = [j for j in readings if j.label is label]
        votes = first.ballots + tuple(Vote(j.verifier, j.label) for j in readings)
        reason = f"{first.reason}; {READ_FOR_MEANING}: " + "; ".join(f"{j.verifier}: {j.reason}" for j in chosen)
        return Judgement(label, round(sum(j.score for j in chosen) / len(chosen), 3), reason, self.name, votes)


@dataclass(frozen=True)
class Judges:
    """The judges one question may ask: readers of answers (POST /read) and of claims (POST /validate)."""
    answers: Sequence[Judge] = ()
    claims: Sequence[Verifier] = ()
    reference: str = ""              # the engine's own reader's answer from the context, read beside the candidates
    weights: Mapping[str, float] = dataclasses.field(default_factory=dict)
    unavailable: str = ""            # why there are none, for the answer's mark ("no judge in the fleet")


async def adjudicate_judged(question: str, generations: Mapping[str, Generation], context: tuple[ContextChunk, ...],
                            settings: GenerationSettings, verifier: Verifier, tier: RiskTier,
                            judge_settings: JudgeSettings, judges: Judges, trace_id: str = "", **options) -> Decision:
    """adjudicate on the cheap checks (claims the words could not place read by the judges), then, where
    why_read says so, again with the judges' reading of the answers."""
    reads_claims = tier is RiskTier.HIGH or (tier is RiskTier.MEDIUM and judge_settings.medium)
    reader = ClaimReader(verifier, judges.claims) if reads_claims else None
    once = JudgedOnce(reader or verifier)
    first = await adjudicate(question, generations, context, settings, once, trace_id=trace_id, **options)
    why = why_read(first, tier, settings, judge_settings)
    claims_note = _claims_note(reader)
    if not why:
        return _noted(first, claims_note) if claims_note else first
    # On a dispute, the cheap checks' pick rests on agreement between generators, which two colluders control:
    # unread, it is no answer but both positions.
    disputed = dispute(first, settings) == why
    if not judges.answers:
        return _not_read(first, why, judges.unavailable or "no judge is up for this tier", disputed)
    answered = {a: g for a, g in generations.items() if g.answer.strip()}
    started = time.perf_counter()
    reading, failed = await read_answers(question, answered, context, judges.answers, judges.weights, trace_id,
                                         own_answer=judge_settings.own_answer, reference=judges.reference)
    read_ms = round((time.perf_counter() - started) * 1000, 1)
    if reading is None:
        return _not_read(first, why, "; ".join(failed) or "no judge answered", disputed)
    judged = await adjudicate(question, generations, context, settings, once, trace_id=trace_id,
                              reading=reading, judge_settings=judge_settings, **options)
    beside = (f"; the engine's own reader's answer read at P = {reading.reference:.2f}"
              if reading.reference is not None else "")
    note = JudgeNote(MeaningStatus.READ, why, f"{reading.describe()} against "
                                             f"{', '.join(f'[{p}]' for p in reading.passages)}{beside}",
                     reading.readers, reading.own_answer,
                     reference_answers=reading.reference is not None and reading.reference >= judge_settings.answers_at,
                     read_ms=read_ms, readings=len({g.answer.strip() for g in answered.values()}
                                                   | ({judges.reference.strip()} - {""})))
    rivals = standing_rivals(judged, settings)
    if rivals:
        names = ", ".join(c.agent_id for c in [judged.chosen, *rivals])
        return Decision(Verdict.ABSTAINED, None, judged.candidates,
                        f"no consistent conclusion: the judges read the different supported answers of {names} "
                        f"all as the passages' answer, and agreement between generators does not settle it; "
                        f"the judges were asked because {why}", note)
    return dataclasses.replace(judged, reason=f"{judged.reason}; the judges were asked because {why}", judge=note)


def standing_rivals(decision: Decision, settings: GenerationSettings) -> list[Candidate]:
    """The supported answers, read by a judge as the passages' answer, that say something else than the chosen."""
    chosen = decision.chosen
    if decision.verdict is not Verdict.ANSWERED or chosen is None:
        return []
    return [c for c in decision.candidates
            if c.agent_id != chosen.agent_id and c.agent_id not in chosen.agreeing and not c.off_topic
            and c.relevance_by.startswith(READ_BY) and c.support_rate >= settings.min_support
            and c.generation.answer.strip() != chosen.generation.answer.strip()]


def _claims_note(reader: ClaimReader | None) -> JudgeNote | None:
    if reader is None:
        return None
    if reader.unread:
        return JudgeNote(MeaningStatus.NOT_READ, "a claim is no quote of its evidence",
                         f"no judge could read {len(reader.unread)} claim(s)")
    if reader.read:
        return JudgeNote(MeaningStatus.READ, "a claim is no quote of its evidence",
                         f"claims read by {', '.join(sorted(reader.read))}", tuple(sorted(reader.read)),
                         read_ms=round(reader.read_ms, 1), readings=reader.claims_read)
    return None


def _noted(decision: Decision, note: JudgeNote) -> Decision:
    if note.not_read and decision.verdict is Verdict.ANSWERED:
        return dataclasses.replace(decision, reason=f"{decision.reason}; meaning not read: {note.detail}", judge=note)
    return dataclasses.replace(decision, judge=note)


def _not_read(decision: Decision, why: str, detail: str, disputed: bool = False) -> Decision:
    note = JudgeNote(MeaningStatus.NOT_READ, why, detail)
    if disputed and decision.verdict is Verdict.ANSWERED:
        return Decision(Verdict.ABSTAINED, None, decision.candidates,
                        f"no consistent conclusion: {why}, and no judge could read them ({detail}); agreement "
                        f"between generators does not settle a dispute", note)
    return dataclasses.replace(decision, reason=f"{decision.reason}; meaning not read ({why}): {detail}", judge=note)
