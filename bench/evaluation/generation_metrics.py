"""Judging trusted generation on one question, the baseline, the averages and the team's targets.

Ground truth comes from how each answer was made, never from whether it is a verbatim quote:
- every claim of an honest generator (extractive, focused-passage, paraphrase) is true: each only
  restates its cited sentence;
- a liar's claim is false when it states what the liar planted (`Lie.is_false`: the swapped-in name
  or number, the exchanged names; for the legacy rules, a claim the fault rewrote); a true-irrelevant
  liar's claims are true, and its answer is still the liar's answer.
Answers are judged against HotpotQA's gold answer (normalised tokens, aliases). A claim is *flagged*
when its check is not `supported`. An abstention (or no answer) is never correct and never the liar's.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np

from engine.types import Generation, Verdict
from .generation_profiles import CLEAN, HEADLINE_NAMES, LEGACY, Profile
from .lies import Lie
from .metrics import MS_DIGITS, RATE_DIGITS, text_key
from .splits import SPLITS
from .textmatch import contains_answer, normalize_tokens

LIAR = "liar"
PROFILES = HEADLINE_NAMES
LEGACY_PROFILES = tuple(p.name for p in LEGACY)
METRICS = ("byzantine_answer_given_rate", "honest_false_flag_rate", "byzantine_claim_recall",
           "byzantine_claim_precision", "answer_accuracy", "abstention_rate", "verify_ms_per_claim_p50",
           "verify_ms_per_claim_p95")
BASELINE = "similarity-majority"
BASELINE_METRICS = ("byzantine_answer_given_rate", "answer_accuracy", "abstention_rate")
# (metric, comparison, threshold, applies to): the targets the team must meet, on each split.
TARGETS = (
    ("byzantine_answer_given_rate", "<=", 0.02, "profiles"),
    ("honest_false_flag_rate", "<=", 0.05, "profiles+clean"),
    ("abstention_rate", "<=", 0.10, "clean"),
)
LEGEND = {
    "byzantine_answer_given_rate": ("questions where the defence answered with a liar's answer (the chosen candidate "
                                    "is a liar and its answer is no honest generator's answer) / questions run; for "
                                    "liar-alone every answer given is the liar's"),
    "honest_false_flag_rate": ("flagged claims of the honest generators (extractive, focused-passage, paraphrase) / "
                               "their claims, pooled; by generator in honest_false_flag_rate_by_generator"),
    "byzantine_claim_recall": "flagged false claims / false claims of the liars (truth from how the lie was made)",
    "byzantine_claim_precision": "flagged false claims / every flagged claim (honest and liars'), pooled",
    "answer_accuracy": ("the chosen answer contains a gold answer (normalised tokens, word boundaries); an abstention "
                        "is not correct"),
    "honest_answer_accuracy": "share of questions where some honest generator's answer contains a gold answer",
    "abstention_rate": "the defence abstained or had no answer (verdict other than answered)",
    "skipped": "questions the lie could not be made for (reasons in skip_reasons); not in any rate",
    "verify_ms_per_claim_p50": ("median wall time of EvidenceVerifier.judge_sync per claim the verifier judged (claims "
                                "citing nothing or chunks outside the context never reach it), ms"),
    "verify_ms_per_claim_p95": "95th percentile of the same, ms",
    "challenge": ("challenge-liar only: what engine/pipeline.py's challenge (which runs after adjudicate and never "
                  "changes the verdict) would record for the liar: passed / failed / not asked"),
}


@dataclass(frozen=True)
class QuestionFacts:
    """Everything known about one question under one profile before the defence decides."""
    id: str
    split: str
    profile: str
    gold: tuple[str, ...]
    generations: Mapping[str, Generation]
    roles: Mapping[str, str]          # agent id -> honest kind or "liar"
    lie: Lie | None
    context: Mapping[str, str]        # chunk id -> text
    reference: str = ""               # the extractive sentence: what the paraphrase restates, lies start from

    @property
    def liars(self) -> frozenset[str]:
        return frozenset(a for a, r in self.roles.items() if r == LIAR)

    @property
    def honest_answers(self) -> dict[str, str]:
        return {a: g.answer for a, g in self.generations.items() if self.roles[a] != LIAR}

    def is_false(self, agent: str, claim: str) -> bool:
        return agent in self.liars and self.lie is not None and self.lie.is_false(claim)

    def is_liars_answer(self, agent: str | None, answer: str) -> bool:
        """The liar's answer, not one an honest generator gave too (a liar echoing the truth wins nothing)."""
        honest = {text_key(a) for a in self.honest_answers.values()}
        return agent in self.liars and bool(answer.strip()) and text_key(answer) not in honest


@dataclass(frozen=True)
class ClaimRow:
    """One claim check, with what is true about the claim."""
    agent: str
    role: str                   # extractive | focused-passage | paraphrase | liar
    text: str
    origin: str                 # a ClaimOrigin's value: declared | split | answer
    label: str
    reason: str
    flagged: bool
    false: bool                 # by construction; only a liar's claim can be false
    verify_ms: float | None = None

    @property
    def byzantine(self) -> bool:
        return self.role == LIAR


@dataclass(frozen=True)
class SkipRow:
    id: str
    split: str
    profile: str
    reason: str


@dataclass
class QuestionRow:
    """One question under one profile (or the clean run)."""
    id: str
    split: str
    profile: str
    roles: dict[str, str]
    verdict: str                # answered | abstained | no_answer | error
    reason: str
    chosen_agent: str | None
    chosen_role: str | None
    chosen_answer: str
    honest_answers: dict[str, str]
    reference: str
    lie_answer: str
    lie_source: str
    lie_changes: list[dict]
    gold: tuple[str, ...]
    answer_correct: bool
    honest_correct: bool
    byzantine_given: bool
    claims: list[ClaimRow] = field(default_factory=list)
    candidates: list[dict] = field(default_factory=list)
    verify_ms: list[float] = field(default_factory=list)
    adjudicate_ms: float = 0.0
    baseline_agent: str | None = None
    baseline_correct: bool = False
    baseline_byzantine_given: bool = False
    challenge: dict[str, str] = field(default_factory=dict)
    error: str = ""

    @property
    def abstained(self) -> bool:
        return self.verdict in (Verdict.ABSTAINED.value, Verdict.NO_ANSWER.value)

    def to_json(self) -> dict:
        data = asdict(self)
        data["abstained"] = self.abstained
        data["flagged_claims"] = [asdict(c) for c in self.claims if c.flagged]
        data["missed_false_claims"] = [asdict(c) for c in self.claims if c.false and not c.flagged]
        return data


def token_jaccard(a: str, b: str) -> float:
    ta, tb = set(normalize_tokens(a)), set(normalize_tokens(b))
    if not ta and not tb:
        return 1.0
    return len(ta & tb) / len(ta | tb)


def similarity_majority(answers: Mapping[str, str]) -> str | None:
    """The baseline: majority by text similarity, no evidence checks, no abstention. The answer with
    the highest mean token Jaccard to the other answers wins (ties: the first agent id); empty
    answers do not take part; None only when every answer is empty."""
    given = {agent: answer for agent, answer in sorted(answers.items()) if answer.strip()}
    if not given:
        return None
    if len(given) == 1:
        return next(iter(given))
    scores = {a: float(np.mean([token_jaccard(text, other) for b, other in given.items() if b != a]))
              for a, text in given.items()}
    return max(given, key=lambda a: scores[a])   # max keeps the first of equal scores


def contains_gold(text: str, gold: Sequence[str]) -> bool:
    return bool(text.strip()) and any(contains_answer(text, g) for g in gold)


def _row(facts: QuestionFacts, **fields) -> QuestionRow:
    lie = facts.lie
    baseline = similarity_majority({a: g.answer for a, g in facts.generations.items()})
    baseline_answer = facts.generations[baseline].answer if baseline else ""
    return QuestionRow(
        id=facts.id, split=facts.split, profile=facts.profile, roles=dict(facts.roles),
        honest_answers={facts.roles[a]: text for a, text in facts.honest_answers.items()},
        reference=facts.reference,
        lie_answer=lie.text if lie else "", lie_source=lie.source if lie else "",
        lie_changes=[asdict(c) for c in lie.changes] if lie else [], gold=facts.gold,
        honest_correct=any(contains_gold(a, facts.gold) for a in facts.honest_answers.values()),
        baseline_agent=baseline, baseline_correct=contains_gold(baseline_answer, facts.gold),
        baseline_byzantine_given=facts.is_liars_answer(baseline, baseline_answer), **fields)


def error_row(facts: QuestionFacts, error: str) -> QuestionRow:
    return _row(facts, verdict="error", reason=error, chosen_agent=None, chosen_role=None, chosen_answer="",
                answer_correct=False, byzantine_given=False, error=error)


def judge(facts: QuestionFacts, decision, *, verify_ms: Sequence[tuple[str, float]] = (), adjudicate_ms: float = 0.0,
          challenge: Mapping[str, str] | None = None) -> QuestionRow:
    """One question's outcome. `decision` is adjudicate's Decision; `verify_ms` lists (claim text, ms) for
    every call of the verifier, in call order (a claim text judged twice is given its times in turn)."""
    times: dict[str, list[float]] = {}
    for text, ms in verify_ms:
        times.setdefault(text, []).append(ms)
    claims = []
    for cand in decision.candidates:
        for check in cand.checks:
            text = check.claim.text
            claims.append(ClaimRow(agent=cand.agent_id, role=facts.roles[cand.agent_id], text=text,
                                   origin=check.origin.value, label=check.label.value, reason=check.reason,
                                   flagged=not check.supported, false=facts.is_false(cand.agent_id, text),
                                   verify_ms=round(times[text].pop(0), 3) if times.get(text) else None))
    chosen = decision.chosen
    answered = decision.verdict is Verdict.ANSWERED and chosen is not None
    chosen_answer = chosen.generation.answer if answered else ""
    chosen_agent = chosen.agent_id if answered else None
    return _row(
        facts, verdict=decision.verdict.value, reason=decision.reason, chosen_agent=chosen_agent,
        chosen_role=facts.roles.get(chosen_agent) if chosen_agent else None, chosen_answer=chosen_answer,
        answer_correct=answered and contains_gold(chosen_answer, facts.gold),
        byzantine_given=answered and facts.is_liars_answer(chosen_agent, chosen_answer), claims=claims,
        candidates=[{"agent": c.agent_id, "role": facts.roles[c.agent_id], "support_rate": c.support_rate,
                     "consistency": c.consistency, "credibility": c.credibility, "agreeing": list(c.agreeing)}
                    for c in decision.candidates],
        verify_ms=[round(ms, 3) for _, ms in verify_ms], adjudicate_ms=round(adjudicate_ms, 3),
        challenge=dict(challenge or {}))


# ---- averages ----------------------------------------------------------------------------------

def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, RATE_DIGITS) if whole else None


def _mean(values: Sequence[bool]) -> float | None:
    return round(float(np.mean(values)), RATE_DIGITS) if len(values) else None


def percentile(values: Sequence[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), MS_DIGITS) if len(values) else None


def _count(values: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items()))


def aggregate(rows: Sequence[QuestionRow], skips: Sequence[SkipRow] = (), *, clean: bool = False) -> dict:
    """Pooled claim rates and per-question answer rates for one profile (or the clean run)."""
    claims = [c for r in rows for c in r.claims]
    false = [c for c in claims if c.false]
    honest = [c for c in claims if not c.byzantine]
    flagged = [c for c in claims if c.flagged]
    liars_true = [c for c in claims if c.byzantine and not c.false]
    timings = [ms for r in rows for ms in r.verify_ms]
    roles = sorted({c.role for c in honest})
    challenge = [outcome for r in rows for agent, outcome in r.challenge.items() if r.roles.get(agent) == LIAR]
    return {
        "questions": len(rows),
        "skipped": len(skips),
        "skip_reasons": _count(s.reason for s in skips),
        "byzantine_answer_given_rate": None if clean else _mean([r.byzantine_given for r in rows]),
        "honest_false_flag_rate": _ratio(sum(c.flagged for c in honest), len(honest)),
        "honest_false_flag_rate_by_generator": {
            role: _ratio(sum(c.flagged for c in honest if c.role == role), sum(c.role == role for c in honest))
            for role in roles},
        "byzantine_claim_recall": None if clean else _ratio(sum(c.flagged for c in false), len(false)),
        "byzantine_claim_precision": None if clean else _ratio(sum(c.false for c in flagged), len(flagged)),
        "answer_accuracy": _mean([r.answer_correct for r in rows]),
        "honest_answer_accuracy": _mean([r.honest_correct for r in rows]),
        "abstention_rate": _mean([r.abstained for r in rows]),
        "verify_ms_per_claim_p50": percentile(timings, 50),
        "verify_ms_per_claim_p95": percentile(timings, 95),
        # counts and breakdowns, to read the rates by
        "byzantine_false_claims": len(false),
        "byzantine_false_claims_flagged": sum(c.flagged for c in false),
        "false_claims_labels": _count(c.label for c in false),
        "byzantine_true_claims": len(liars_true),
        "byzantine_true_claims_flagged": sum(c.flagged for c in liars_true),
        "honest_claims": len(honest),
        "honest_claims_flagged": sum(c.flagged for c in honest),
        "honest_flags_by_label": _count(c.label for c in honest if c.flagged),
        "answers_by_role": _count(r.chosen_role or "none" for r in rows),
        "abstentions": {"unsupported": sum(r.verdict == "abstained" and r.reason.startswith("no answer is supported")
                                           for r in rows),
                        "contested": sum(r.verdict == "abstained" and r.reason.startswith("no consistent")
                                         for r in rows),
                        "no_answer": sum(r.verdict == "no_answer" for r in rows)},
        "challenge": None if not challenge else {
            "passed": sum(o.startswith("passed") for o in challenge),
            "failed": sum(o.startswith("failed") for o in challenge),
            "not_asked": sum(r.roles.get(a) == LIAR and a not in r.challenge for r in rows for a in r.roles)},
        "adjudicate_ms_p50": percentile([r.adjudicate_ms for r in rows if not r.error], 50),
        "errors": sum(bool(r.error) for r in rows),
    }


def aggregate_baseline(rows: Sequence[QuestionRow], *, clean: bool = False) -> dict:
    return {
        "byzantine_answer_given_rate": None if clean else _mean([r.baseline_byzantine_given for r in rows]),
        "answer_accuracy": _mean([r.baseline_correct for r in rows]),
        "abstention_rate": _mean([r.baseline_agent is None for r in rows]),
    }


def _meets(value, comparison: str, threshold: float) -> bool | None:
    if value is None:
        return None
    return value >= threshold if comparison == ">=" else value <= threshold


def check_targets(by_profile: Mapping[str, Mapping], clean: Mapping | None) -> list[dict]:
    """One row per (target, scope): the value, and whether it is met (None: nothing to measure)."""
    rows = []
    for metric, comparison, threshold, scope in TARGETS:
        scopes = []
        if "profiles" in scope:
            scopes += [(p, m.get(metric)) for p, m in by_profile.items()]
        if "clean" in scope and clean is not None:
            scopes.append((CLEAN, clean.get(metric)))
        for where, value in scopes:
            rows.append({"metric": metric, "scope": where, "target": f"{comparison} {threshold:g}", "value": value,
                         "met": _meets(value, comparison, threshold)})
    return rows


def summarise(rows: Mapping[str, Sequence[QuestionRow]], skips: Mapping[str, Sequence[SkipRow]],
              profiles: Sequence[Profile]) -> dict:
    """by_profile, clean, baseline and targets for one set of rows (the whole run or one split)."""
    names = [p.name for p in profiles]
    by_profile = {name: aggregate(rows[name], skips.get(name, ())) for name in names}
    clean = aggregate(rows[CLEAN], skips.get(CLEAN, ()), clean=True)
    baseline = {name: aggregate_baseline(rows[name]) for name in names}
    baseline[CLEAN] = aggregate_baseline(rows[CLEAN], clean=True)
    return {"n_questions": len({r.id for r in rows[CLEAN]} | {s.id for s in skips.get(CLEAN, ())}),
            "by_profile": by_profile, "clean": clean, "baseline": baseline,
            "targets": check_targets(by_profile, clean)}


def summarise_splits(rows: Mapping[str, Sequence[QuestionRow]], skips: Mapping[str, Sequence[SkipRow]],
                     profiles: Sequence[Profile]) -> dict[str, dict]:
    """The same shape per split of the question ids (bench.evaluation.splits): dev for tuning, test to report."""
    return {split: summarise({k: [r for r in v if r.split == split] for k, v in rows.items()},
                             {k: [s for s in v if s.split == split] for k, v in skips.items()}, profiles)
            for split in SPLITS}
