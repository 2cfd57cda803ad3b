"""`eval generation --llm`: the LLM generator's row, on the demo questions and the HotpotQA sample.

The LLM is a real agent: the fleet file's llm-local agent launched as its own process on 127.0.0.1 (or, with
--llm-agent, any openai-chat agent at its url), called through the engine's AgentClient as in production
(its timeout_s, its dialect, the protocol's checks). Per question its context is the top k passages by the
dense retriever (HotpotQA: the question's own paragraphs; demo: the built-in corpus), and `adjudicate` decides
between it and the three honest generators of the generation evaluation, with the LLM held to every claim
(generation.free_text_min_support), as the pipeline holds it.

Reported (`llm` in the JSON): valid_reply_rate (replies that pass the protocol, of all calls), claim_support_rate
(its claims the verifier supports, of all it made in valid replies), given_rate (questions where its own answer
was the one given), given_correct_rate (of those, how many contain the gold answer), unsupported_given (given LLM
answers with a claim short of support: the target is 0), latency p50/p95 and the reply modes seen; and under
`alone` the same replies decided with no other generator (given, right, short of support), where the rule that
holds an LLM to every claim is the only thing between its answer and the operator.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from engine.agents.client import AgentClient, CallResult, outcome, with_mode
from engine.agents.protocol import generation_to_json, parse_generation
from engine.config import FleetConfig, GenerationSettings, LimitSettings
from engine.errors import AgentProtocolError, InputError
from engine.generation.adjudicate import adjudicate
from engine.types import LLM_BACKEND, AgentKind, AgentOutcome, AgentSpec, CallStatus, Generation, Role, Verdict
from engine.verify.verifier import EvidenceVerifier
from .data import Passage
from .generation import Prepared, Question
from .generation_metrics import contains_gold

LLM_ID = "llm"


@dataclass(frozen=True)
class LlmCase:
    source: str                  # demo | hotpotqa
    id: str
    split: str
    status: str                  # the call's CallStatus value
    mode: str                    # openai-chat dialect ("" for the Quorum protocol)
    latency_ms: float
    claims: int                  # claims checked in its reply (declared, and pieces of its answer)
    supported: int
    given: bool                  # its own answer was the one given
    correct: bool                # given, and it contains the gold answer
    unsupported_given: bool      # given with a claim short of support (the target is never)
    answer: str
    error: str = ""
    # The same reply decided alone (no other generator): whether it was given, right, short of support.
    alone_given: bool = False
    alone_correct: bool = False
    alone_unsupported_given: bool = False
    right: bool = False          # its answer contains the gold answer, given or not
    reply: dict[str, Any] | None = None        # what it wrote: answer, claims and their citations, confidence
    alone_checks: tuple[dict[str, Any], ...] = ()   # each claim's check in the decision alone, and why
    alone_reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def pick_llm_agent(fleet: FleetConfig, agent_id: str | None) -> AgentSpec:
    """The agent named, or the fleet's first llm-local agent, or its first openai-chat one (enabled or not:
    asking for the row is the switch)."""
    if agent_id:
        try:
            spec = fleet.agent(agent_id)
        except KeyError:
            raise InputError(f"--llm-agent {agent_id!r} is not in {fleet.path}") from None
        if not spec.free_text:
            raise InputError(f"--llm-agent {agent_id!r} is not an LLM generator (backend llm-local or kind openai-chat)")
        return dataclasses.replace(spec, enabled=True)
    for wanted in (lambda s: s.backend == LLM_BACKEND, lambda s: s.kind is AgentKind.OPENAI_CHAT):
        for spec in fleet.agents:
            if spec.role is Role.GENERATOR and wanted(spec):
                return dataclasses.replace(spec, enabled=True)
    raise InputError(f"{fleet.path} has no LLM generator (backend llm-local or kind openai-chat)")


def demo_questions(corpus_chunks, rows: Sequence[dict]) -> list[Question]:
    """The demo questions (resources/demo_questions.jsonl: id, question, answers, supporting documents) over the
    built-in corpus; a chunk of a supporting document counts as gold."""
    questions = []
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict) or not isinstance(row.get("question"), str) or not row.get("answers"):
            raise InputError(f"demo questions: record {number} needs a question and its answers")
        supporting = set(row.get("supporting") or ())
        passages = tuple(Passage(c.id, c.title, c.text, c.id.split("#")[0] in supporting) for c in corpus_chunks)
        questions.append(Question(f"demo-{row.get('id', number)}", row["question"], tuple(row["answers"]), passages))
    return questions


def _given(decision) -> bool:
    return (decision is not None and decision.verdict is Verdict.ANSWERED and decision.chosen is not None
            and decision.chosen.agent_id == LLM_ID)


def _checks_json(decision) -> tuple[dict[str, Any], ...]:
    mine = next((c for c in decision.candidates if c.agent_id == LLM_ID), None) if decision else None
    return tuple({"claim": c.claim.text, "origin": c.origin.value, "supported": c.supported, "label": c.label.value,
                  "reason": c.reason} for c in (mine.checks if mine else ()))


def judge_case(source: str, item: Prepared, gen_result, decision, alone=None) -> LlmCase:
    """One question's LLM call and the decisions it went into (beside the honest generators, and alone)."""
    out = gen_result.outcome
    base = dict(source=source, id=item.question.id, split=item.split, status=out.status.value, mode=out.mode,
                latency_ms=out.latency_ms, error=out.error)
    if gen_result.value is None or decision is None:
        return LlmCase(**base, claims=0, supported=0, given=False, correct=False, unsupported_given=False, answer="")
    mine = next((c for c in decision.candidates if c.agent_id == LLM_ID), None)
    checks = mine.checks if mine else ()
    answer = gen_result.value.answer
    right = contains_gold(answer, item.question.answers)
    given, alone_given = _given(decision), _given(alone)
    return LlmCase(**base, claims=len(checks), supported=sum(c.supported for c in checks), given=given,
                   correct=given and right, unsupported_given=given and any(not c.supported for c in checks),
                   answer=answer, alone_given=alone_given, alone_correct=alone_given and right,
                   alone_unsupported_given=alone_given and any(not c.supported for c in alone.chosen.checks),
                   right=right, reply=generation_to_json(gen_result.value), alone_checks=_checks_json(alone),
                   alone_reason=alone.reason if alone is not None else "")


class LlmRow:
    """Runs the LLM on prepared questions (context and honest answers made by GenerationEvaluation.prepare)."""

    def __init__(self, spec: AgentSpec, url: str, settings: GenerationSettings, verifier_embedder,
                 limits: LimitSettings = LimitSettings(), progress: Callable[..., None] = lambda *a, **k: None,
                 replies: Mapping[str, Generation] | None = None) -> None:
        """replies: recorded replies by question id (--llm-replay): decided again without calling the model."""
        self.spec, self.url = spec, url
        self.replies = replies
        self.settings = settings
        self.verifier_embedder = verifier_embedder
        self.limits = limits
        self.progress = progress

    async def _decide(self, item: Prepared, generations):
        verifier = EvidenceVerifier(self.verifier_embedder, coverage=self.settings.claim_coverage,
                                    alignment=self.settings.alignment)
        return await adjudicate(item.question.question, generations, item.context, self.settings, verifier,
                                embedder=self.verifier_embedder, free_text=frozenset({LLM_ID}))

    async def run(self, items: Sequence[tuple[str, Prepared]]) -> list[LlmCase]:
        client = AgentClient(self.limits)
        spec = dataclasses.replace(self.spec, id=LLM_ID)    # one id for the row, whichever agent it is
        cases = []
        try:
            for number, (source, item) in enumerate(items, start=1):
                started = time.perf_counter()
                if self.replies is not None:
                    result = replayed(spec, self.replies.get(item.question.id))
                else:
                    result = await outcome(spec, client.generate(spec, self.url, item.question.question, item.chunks,
                                                                 f"eval-llm-{item.question.id}"))
                    result = with_mode(result, client.mode_of(spec))
                decision = alone = None
                if result.value is not None:
                    generations = {kind.value: gen for kind, gen in item.honest.items()} | {LLM_ID: result.value}
                    decision = await self._decide(item, generations)
                    alone = await self._decide(item, {LLM_ID: result.value})
                cases.append(judge_case(source, item, result, decision, alone))
                self.progress(f"LLM row: question {number}/{len(items)} ({source}), {result.outcome.status.value} "
                              f"in {time.perf_counter() - started:.1f} s")
        finally:
            await client.aclose()
        return cases


def replayed(spec: AgentSpec, reply: Generation | None) -> CallResult:
    """A recorded reply as the call's result (no reply recorded: the call failed then)."""
    status = CallStatus.OK if reply is not None else CallStatus.ERROR
    return CallResult(AgentOutcome(spec.id, spec.role, status, 0.0, error="" if reply else "no reply recorded"),
                       reply)


def read_replies(path: Path) -> dict[str, Generation]:
    """The replies of an earlier run's LLM cases (<report>.llm.jsonl), by question id."""
    replies = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"--llm-replay: cannot read {path}: {exc.strerror}") from None
    for number, line in enumerate(lines, start=1):
        try:
            row = json.loads(line)
            if row.get("reply"):
                replies[str(row["id"])] = parse_generation(LLM_ID, row["reply"])
        except (ValueError, KeyError, TypeError, AgentProtocolError) as exc:
            raise InputError(f"--llm-replay {path}, line {number}: not an LLM case with its reply ({exc})") from None
    if not replies:
        raise InputError(f"--llm-replay {path}: no recorded replies (written by a run before replies were kept?)")
    return replies


def _decided_alone(cases: Sequence[LlmCase]) -> dict[str, Any]:
    given = [c for c in cases if c.alone_given]
    right = [c for c in cases if c.right]
    return {"given_rate": round(len(given) / len(cases), 4) if cases else None,
            # the honest-LLM target (#28): of the answers it got right, the share given
            "right_answers": len(right),
            "right_given_rate": round(sum(c.alone_given for c in right) / len(right), 4) if right else None,
            "given_correct_rate": round(sum(c.alone_correct for c in given) / len(given), 4) if given else None,
            "unsupported_given": sum(c.alone_unsupported_given for c in cases)}


def summarise(cases: Sequence[LlmCase], spec: AgentSpec) -> dict[str, Any]:
    calls = len(cases)
    valid = [c for c in cases if c.status == CallStatus.OK.value]
    claims = sum(c.claims for c in valid)
    given = [c for c in valid if c.given]
    latencies = sorted(c.latency_ms for c in cases if c.status in (CallStatus.OK.value, CallStatus.MALFORMED.value))

    def share(part: int, whole: int) -> float | None:
        return round(part / whole, 4) if whole else None

    def pct(q: float) -> float | None:
        if not latencies:
            return None
        return round(statistics.quantiles(latencies, n=100, method="inclusive")[int(q) - 1], 1) \
            if len(latencies) > 1 else latencies[0]

    return {
        "agent": spec.id, "kind": spec.kind.value, "backend": spec.backend, "model": spec.model,
        "calls": calls, "by_source": dict(Counter(c.source for c in cases)),
        "statuses": dict(Counter(c.status for c in cases)), "modes": dict(Counter(c.mode or "protocol" for c in cases)),
        "valid_reply_rate": share(len(valid), calls),
        "claim_support_rate": share(sum(c.supported for c in valid), claims),
        "given_rate": share(len(given), calls),
        "given_correct_rate": share(sum(c.correct for c in given), len(given)),
        "unsupported_given": sum(c.unsupported_given for c in cases),
        "latency_ms_p50": pct(50), "latency_ms_p95": pct(95),
        "errors": dict(Counter(c.error.split(":")[0][:80] for c in cases if c.error).most_common(5)),
        "alone": _decided_alone(cases),
    }


def print_row(summary: dict[str, Any], stream) -> None:
    def cell(value) -> str:
        return "-" if value is None else (f"{value:.2f}" if isinstance(value, float) else str(value))
    stream.write(f"\nLLM generator {summary['agent']} ({summary['backend'] or summary['kind']}"
                 f"{', ' + summary['model'] if summary['model'] else ''}), {summary['calls']} questions "
                 f"{summary['by_source']}\n")
    stream.write(f"  valid replies {cell(summary['valid_reply_rate'])} · claims supported "
                 f"{cell(summary['claim_support_rate'])} · its answer given {cell(summary['given_rate'])} · given and "
                 f"right {cell(summary['given_correct_rate'])} · given with an unsupported claim "
                 f"{summary['unsupported_given']} · latency p50 {cell(summary['latency_ms_p50'])} ms, p95 "
                 f"{cell(summary['latency_ms_p95'])} ms\n")
    alone = summary["alone"]
    stream.write(f"  decided alone (no other generator): given {cell(alone['given_rate'])} · given and right "
                 f"{cell(alone['given_correct_rate'])} · given with an unsupported claim {alone['unsupported_given']} · "
                 f"of its {alone['right_answers']} right answers, given {cell(alone['right_given_rate'])}\n")
    stream.write(f"  statuses {summary['statuses']} · modes {summary['modes']}\n")


def markdown_lines(summary: dict[str, Any]) -> list[str]:
    rows = [("valid_reply_rate", "replies that pass the protocol, of all calls"),
            ("claim_support_rate", "its claims the verifier supports, of all it made in valid replies"),
            ("given_rate", "questions where its own answer was the one given"),
            ("given_correct_rate", "of those, the share that contain the gold answer"),
            ("unsupported_given", "given LLM answers with a claim short of support (target 0)"),
            ("latency_ms_p50", "its reply's latency, median"), ("latency_ms_p95", "95th percentile")]
    return ["## LLM generator", "",
            f"Agent `{summary['agent']}` ({summary['backend'] or summary['kind']}"
            f"{', ' + summary['model'] if summary['model'] else ''}) on {summary['calls']} questions "
            f"(`{summary['by_source']}`), beside the three honest generators; it is held to every claim. "
            f"Statuses `{summary['statuses']}`, modes `{summary['modes']}`.", "",
            "| metric | value | meaning |", "|---|---|---|"] + \
        [f"| {key} | {summary[key]} | {text} |" for key, text in rows] + \
        [f"| alone.{key} | {summary['alone'][key]} | the same reply decided alone, with no other generator |"
         for key in ("given_rate", "given_correct_rate", "unsupported_given")] + \
        [f"| alone.right_given_rate | {summary['alone']['right_given_rate']} | of its "
         f"{summary['alone']['right_answers']} answers holding the gold answer, the share given alone (target ≥ 0.8) |", ""]


def launch_and_run(fleet: FleetConfig, spec: AgentSpec, cache_dir: Path, run: Callable[[str], Any]) -> Any:
    """Starts the agent's own process when it is built in (else uses its url), runs `run(url)` (a coroutine
    function), and stops the process."""
    from engine.agents.launcher import FleetLauncher

    async def main():
        if not spec.builtin:
            return await run(spec.url)
        launcher = FleetLauncher(dataclasses.replace(fleet, agents=(spec,)), cache_dir, ready_timeout_s=120.0)
        try:
            urls = await launcher.start()
            if spec.id not in urls:
                raise InputError(f"the LLM agent {spec.id} did not start (see {cache_dir / 'logs' / spec.id}.log; "
                                 "for llm-local, run `make llm` first)")
            return await run(urls[spec.id])
        finally:
            await launcher.stop()
    return asyncio.run(main())
