"""The Answer of a question, built from its run alone: the latest run of each stage (rolled-back runs count
for the calls they made and the time they took), the cascade monitor's outcome and the gateway's report."""
from __future__ import annotations

from dataclasses import dataclass

from ..answer import Answer
from ..cascade.types import CascadeOutcome
from ..gateway.report import TraceKind
from ..participation import participation as participation_of, shortfall
from ..retrieval.secure import RetrievalResult
from ..stages.runner import RunOutcome
from ..types import Citation, ContextChunk, JudgeNote, RetrievalMode, Verdict
from .asked import Asked
from .payloads import RetrievalPayload, SynthesisPayload
from .synthesize import union


@dataclass(frozen=True)
class _Stages:
    """What the run's stages carried: each retrieve stage's latest payload (stage order) and the synthesis."""
    retrievals: tuple[RetrievalPayload, ...]
    synthesis: SynthesisPayload | None          # the latest run of the synthesize stage
    generated: tuple | None                     # the generators' outcomes of the latest synthesis that asked them
    timings: dict[str, float]

    @classmethod
    def of(cls, run: RunOutcome) -> "_Stages":
        retrievals: dict[int, RetrievalPayload] = {}
        synthesis, generated, timings = None, None, {}
        for stage in run.ran or run.trajectory.stages:
            if isinstance(stage.payload, RetrievalPayload):
                retrievals[stage.index] = stage.payload
                for name, ms in stage.timings.parts:     # retrieval's time adds up over hops and re-runs
                    timings[name] = timings.get(name, 0.0) + ms
            elif isinstance(stage.payload, SynthesisPayload):
                synthesis = stage.payload
                if synthesis.reached_generators:
                    generated = synthesis.generated
                timings.update(stage.timings.parts)     # synthesis's: the latest that asked the generators
        return cls(tuple(retrievals[i] for i in sorted(retrievals)), synthesis, generated, timings)

    def merged(self) -> RetrievalResult:
        """Every retrieve stage's report as one (the tool stage's finding first in the context)."""
        reports = [r.report for r in self.retrievals]
        if not reports:
            return RetrievalResult((), (), (), (), (), {}, RetrievalMode.FULL, False)
        finding = self.synthesis.finding if self.synthesis is not None else None
        context = union(reports, (finding,) if finding else ())
        return RetrievalResult(context, tuple(c for r in reports for c in r.excluded),
                               tuple(d for r in reports for d in r.dropped),
                               tuple({s.agent_id: s for r in reports for s in r.suspects}.values()),
                               tuple(p for r in reports for p in r.positions), reports[-1].agreement,
                               reports[-1].mode, any(r.fallback for r in reports))

    def outcomes(self) -> tuple:
        return tuple(o for r in self.retrievals for o in r.calls) + (self.generated or ())


def answer_from(run: RunOutcome, asked: Asked, *, tier_reason: str, asked_at: float, unavailable,
                cascade: CascadeOutcome | None) -> Answer:
    """unavailable: the agents not up to be asked as the question started (participation.unavailable_counts).
    Notes the decision in the question's trace."""
    session, policy = asked.session, asked.policy
    stages = _Stages.of(run)
    report = stages.merged()
    decision = stages.synthesis.decision if stages.synthesis is not None else None
    outcomes = stages.outcomes()
    if run.halted is not None:
        verdict, text, reason, citations = Verdict.ABSTAINED, "", f"held for review: {run.halted.reason}", ()
        candidates = decision.candidates if decision is not None else ()
    elif decision is None:
        why = ("no retriever returned usable evidence" if outcomes else
               "no agent answered: no retriever is up and eligible (down, stopped or kept off this tier)")
        verdict, text, reason, candidates, citations = (Verdict.NO_ANSWER, "", why, (), ())
    else:
        verdict, reason, candidates = decision.verdict, decision.reason, decision.candidates
        text = decision.chosen.generation.answer if decision.chosen else ""
        citations = _citations(decision, report.context)
    session.note(TraceKind.DECISION, "engine", "operator", f"{verdict.value}: {text or reason}",
                 data={"verdict": verdict.value})
    gateway = session.report()
    if gateway.blocked:
        reason += f"; the gateway blocked {len(gateway.blocked)} message(s) carrying instructions"
    if gateway.escalated:
        reason += f"; {len(gateway.escalated)} message(s) held for a person by the gateway"
    timings = stages.timings
    if cascade is not None:
        timings["cascade"] = round(sum(s.elapsed_ms for s in cascade.scores), 1)   # the monitors' own time
    timings["gateway"] = gateway.scan_ms
    participation = participation_of([list(r.calls) for r in stages.retrievals],
                                     list(stages.generated) if stages.generated is not None else None,
                                     retrieval_mode=policy.retrieval_mode, policy_generators=policy.generators,
                                     unavailable=unavailable)
    if not participation.quorum_held:
        reason += f"; {shortfall(participation)}"
    if report.fallback:
        reason += "; retrievers did not agree on any passage, so single-agent passages were used"
    if report.positions:
        reason += "; kept out: " + "; ".join(f"{p.reason} pushing '{' '.join(p.claim[:5])}'"
                                              for p in report.positions)
    return Answer(trace_id=asked.trace_id, question=asked.question, tier=asked.tier, verdict=verdict, answer=text,
                  reason=reason, citations=citations, agents=outcomes, context=report.context,
                  candidates=candidates, timings_ms=timings, asked_at=asked_at, excluded=report.excluded,
                  suspects=report.suspects, tier_reason=tier_reason, stages=run.trajectory.stages,
                  cascade=cascade, gateway=gateway, participation=participation,
                  judge=decision.judge if decision is not None and run.halted is None else JudgeNote())


def _citations(decision, context: tuple[ContextChunk, ...]) -> tuple[Citation, ...]:
    """The context passages the chosen answer's claims cite."""
    cited = ({cid for claim in decision.chosen.generation.claims for cid in claim.citations}
             if decision.chosen else set())
    return tuple(Citation(c.chunk.id, c.chunk.source, c.chunk.title, c.chunk.text,
                          kind=str(c.chunk.metadata.get("kind") or ""),
                          section=str(c.chunk.metadata.get("section") or ""))
                 for c in context if c.chunk.id in cited)
