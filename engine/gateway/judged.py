"""The judges' second opinion at the retrieval boundary (#50 item 4): cheap scanners flag, the judge confirms.

A passage the scanners scored at [gateway] judge_flag or more, but under data_block, passes them; if it then
reaches a question's context, this observer asks the judges whether it holds an instruction aimed at the
assistant (engine.verify.judge_prompt.instructs: P(yes), the passage as plain data). One they read at
judge_line or more is blocked after the fact (traced, flagged against its carrier) and retrieval is run
again without it. Only flagged passages that made it into the context are read, so clean traffic costs no
reading. Where no judge can read, the passage stays and the trace says why: the scanners' own decision holds.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..settings.gateway import GatewaySettings
from ..types import Chunk
from ..stages.model import Intervention, InterventionKind, StageKind, StageResult, Trajectory
from .report import TraceKind
from .session import GatewaySession

# P(yes) per text from the judges up, and who read them; None when none could (down, not trusted, no time left).
ReadInstructions = Callable[[Sequence[str]], "tuple[tuple[float, ...], str] | None"]


class JudgedPassages:
    def __init__(self, session: GatewaySession, settings: GatewaySettings, read: ReadInstructions) -> None:
        self.session, self.settings, self.read = session, settings, read

    def flagged(self, result: StageResult) -> list[tuple[Chunk, float]]:
        """The context's passages the scanners flagged: (chunk, score), each id once."""
        out, seen = [], set()
        for chunk in result.evidence:
            score = self.session.passage_score(chunk.id)
            if chunk.id in seen or score is None or score < self.settings.judge_flag:
                continue
            seen.add(chunk.id)
            out.append((chunk, score))
        return out

    def on_stage(self, trajectory: Trajectory, result: StageResult) -> Intervention | None:
        if result.kind is not StageKind.RETRIEVE:
            return None
        flagged = self.flagged(result)
        if not flagged:
            return None
        read = self.read([chunk.text for chunk, _ in flagged])
        if read is None:
            self.session.note(TraceKind.SCAN, "judges", "engine",
                              f"{len(flagged)} flagged passage(s) not read: no judge could read them; the scanners' "
                              "decision holds", data={"items": [c.id for c, _ in flagged]})
            return None
        scores, readers = read
        self.session.note(TraceKind.SCAN, readers, "engine",
                          f"read {len(flagged)} flagged passage(s) for instructions aimed at the assistant",
                          data={"items": [c.id for c, _ in flagged], "p_yes": list(scores)})
        confirmed = [(chunk, score, p) for (chunk, score), p in zip(flagged, scores) if p >= self.settings.judge_line]
        if not confirmed:
            return None
        for chunk, score, p in confirmed:
            self.session.confirmed(chunk, score, p, readers)
        names = ", ".join(chunk.id for chunk, _, _ in confirmed)
        return Intervention(InterventionKind.RERUN, f"the judges read an instruction aimed at the assistant in "
                                                    f"{names}: retrieval again without it",
                            from_index=result.index, exclude_passages=frozenset(c.id for c, _, _ in confirmed))
