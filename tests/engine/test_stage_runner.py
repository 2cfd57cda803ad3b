"""The stage runner: steps run in order over the trajectory so far, every observer sees every boundary,
and what an observer asks is carried out (re-run without some passages, gate a confidence, halt)."""
from engine.stages.model import (Decomposition, Intervention, InterventionKind, QuestionShape, StageKind,
                                 StageResult, SubQuestion, Trajectory)
from engine.stages.runner import StageRunner
from engine.types import Chunk

QUESTION = "What nationality is the director of Sinister?"
BAD = Chunk("p-bad", "Sinister was directed by Ed Wood.")
GOOD = Chunk("p-good", "Sinister was directed by Scott Derrickson.")


def start() -> Trajectory:
    hops = (SubQuestion("Who directed Sinister?", 0), SubQuestion("What nationality is #1?", 1))
    return Trajectory(QUESTION, "t-1", Decomposition(QuestionShape.BRIDGE, hops))


class Steps:
    """Fake steps; each records what it saw: its name, the earlier stages' outputs, the exclusions."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[str, ...], object]] = []

    def make(self, name: str, kind: StageKind = StageKind.REASON, confidence: float = 0.8,
             passages: tuple[Chunk, ...] = ()):
        async def step(trajectory, exclusions):
            self.calls.append((name, tuple(s.output for s in trajectory.stages), exclusions))
            kept = tuple(c for c in passages if not exclusions.excludes(c.id, c.text))
            # index 99 and attempt 7 are wrong on purpose: the runner sets both.
            return StageResult(kind, 99, 0, (trajectory.question,), name, evidence=kept, confidence=confidence,
                               attempt=7)
        return step

    def names(self) -> list[str]:
        return [name for name, _, _ in self.calls]


class Observer:
    """Records (index, attempt, stages in the trajectory, confidences) at each boundary; `ask` decides."""

    def __init__(self, ask=lambda result: None) -> None:
        self.ask = ask
        self.seen: list[tuple[int, int]] = []

    def on_stage(self, trajectory, result):
        assert trajectory.stages[-1] is result      # the boundary's stage is already in the trajectory
        self.seen.append((result.index, result.attempt))
        return self.ask(result)


def four_steps(steps: Steps):
    return [steps.make("formulate", StageKind.FORMULATE, 1.0),
            steps.make("retrieve", StageKind.RETRIEVE, 0.8, passages=(BAD, GOOD)),
            steps.make("reason", StageKind.REASON, 0.7),
            steps.make("synthesize", StageKind.SYNTHESIZE, 0.6)]


async def test_steps_run_in_order_each_seeing_the_stages_before_it():
    steps = Steps()
    outcome = await StageRunner([Observer()]).run(start(), four_steps(steps))
    assert steps.names() == ["formulate", "retrieve", "reason", "synthesize"]
    assert [seen for _, seen, _ in steps.calls] == [(), ("formulate",), ("formulate", "retrieve"),
                                                    ("formulate", "retrieve", "reason")]
    stages = outcome.trajectory.stages
    assert [s.index for s in stages] == [0, 1, 2, 3]
    assert [s.attempt for s in stages] == [0, 0, 0, 0]
    assert outcome.halted is None and outcome.interventions == () and outcome.reruns == 0


async def test_every_observer_sees_every_boundary_and_the_first_to_ask_wins():
    gate = Intervention(InterventionKind.GATE, "too sure", 1, confidence_cap=0.3)
    halt = Intervention(InterventionKind.HALT, "stop")
    first = Observer(lambda r: gate if r.index == 1 else None)
    second = Observer(lambda r: halt if r.index == 1 else None)
    quiet = Observer()
    outcome = await StageRunner([first, second, quiet]).run(start(), four_steps(Steps()))
    for observer in (first, second, quiet):
        assert observer.seen == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert outcome.halted is None and outcome.interventions == ((1, gate),)


async def test_a_rerun_rolls_back_and_reruns_without_the_excluded_passages():
    rerun = Intervention(InterventionKind.RERUN, "bad passage", from_index=1, exclude_passages=frozenset({"p-bad"}),
                         refine_query="Who directed the horror film Sinister?")
    observer = Observer(lambda r: rerun if (r.index, r.attempt) == (2, 0) else None)
    steps = Steps()
    outcome = await StageRunner([observer], max_reruns=1).run(start(), four_steps(steps))

    assert steps.names() == ["formulate", "retrieve", "reason", "retrieve", "reason", "synthesize"]
    first_exclusions, rerun_exclusions = steps.calls[1][2], steps.calls[3][2]
    assert "p-bad" not in first_exclusions.passages
    assert "p-bad" in rerun_exclusions.passages and "p-bad" in steps.calls[4][2].passages
    assert rerun_exclusions.queries.get(1) == "Who directed the horror film Sinister?"
    assert steps.calls[3][1] == ("formulate",)           # the re-run sees the trajectory rolled back

    stages = outcome.trajectory.stages
    assert [s.output for s in stages] == ["formulate", "retrieve", "reason", "synthesize"]
    assert [s.index for s in stages] == [0, 1, 2, 3]
    assert [s.attempt for s in stages] == [0, 1, 1, 1]
    assert stages[1].evidence == (GOOD,)                  # the re-run stage, not the old one
    assert observer.seen == [(0, 0), (1, 0), (2, 0), (1, 1), (2, 1), (3, 1)]
    assert outcome.interventions == ((2, rerun),) and outcome.reruns == 1 and outcome.halted is None


async def test_a_gate_caps_the_stage_confidence_and_the_run_goes_on():
    gate = Intervention(InterventionKind.GATE, "confidence above support", 1, confidence_cap=0.3)
    steps = Steps()
    outcome = await StageRunner([Observer(lambda r: gate if r.index == 1 else None)]).run(start(), four_steps(steps))
    assert steps.names() == ["formulate", "retrieve", "reason", "synthesize"]
    assert [s.confidence for s in outcome.trajectory.stages] == [1.0, 0.3, 0.7, 0.6]
    assert outcome.halted is None and outcome.interventions == ((1, gate),)


async def test_a_gate_never_raises_a_confidence():
    gate = Intervention(InterventionKind.GATE, "cap above", 1, confidence_cap=0.95)
    outcome = await StageRunner([Observer(lambda r: gate if r.index == 1 else None)]).run(start(),
                                                                                           four_steps(Steps()))
    assert outcome.trajectory.stages[1].confidence == 0.8


async def test_the_next_stage_sees_the_gated_confidence():
    gate = Intervention(InterventionKind.GATE, "too sure", 1, confidence_cap=0.3)
    seen = []

    class Peek(Observer):
        def on_stage(self, trajectory, result):
            seen.append(tuple(s.confidence for s in trajectory.stages[:-1]))
            return gate if result.index == 1 else None

    await StageRunner([Peek()]).run(start(), four_steps(Steps()))
    assert seen[2] == (1.0, 0.3)


async def test_a_halt_stops_the_run():
    halt = Intervention(InterventionKind.HALT, "needs a person", 1)
    steps = Steps()
    outcome = await StageRunner([Observer(lambda r: halt if r.index == 1 else None)]).run(start(), four_steps(steps))
    assert steps.names() == ["formulate", "retrieve"]
    assert outcome.halted == halt
    assert [s.output for s in outcome.trajectory.stages] == ["formulate", "retrieve"]


async def test_reruns_beyond_max_reruns_halt_saying_the_cascade_survived():
    for max_reruns in (0, 1, 2):
        rerun = Intervention(InterventionKind.RERUN, "still wrong", from_index=1)
        steps = Steps()
        runner = StageRunner([Observer(lambda r: rerun if r.index == 2 else None)], max_reruns=max_reruns)
        outcome = await runner.run(start(), four_steps(steps))
        assert steps.names().count("reason") == max_reruns + 1
        assert "synthesize" not in steps.names()
        assert outcome.halted is not None and outcome.halted.kind is InterventionKind.HALT
        assert "survived" in outcome.halted.reason and "still wrong" in outcome.halted.reason
        assert outcome.interventions[-1] == (2, outcome.halted)
        assert outcome.reruns == max_reruns + 1


def _stage(index, kind, *, evidence=(), corroborated=(), candidates=()):
    return StageResult(kind, index, 0, (QUESTION,), f"stage {index}", evidence=evidence,
                       corroborated=corroborated, candidates=candidates)


def test_the_pool_gathers_corroborated_passages_of_all_stages_once_by_text():
    twin = Chunk("p-good-copy", GOOD.text)                 # same text under another id
    other = Chunk("p-other", "Scott Derrickson is an American director.")
    t = start()
    for stage in (_stage(0, StageKind.FORMULATE),
                  _stage(1, StageKind.RETRIEVE, evidence=(BAD,), corroborated=(GOOD,), candidates=(BAD, GOOD)),
                  _stage(2, StageKind.RETRIEVE, corroborated=(twin, other))):
        t = t.with_stage(stage)
    assert t.pool == (GOOD, other)
    assert BAD not in t.pool
    assert {c.text for c in t.record} == {BAD.text, GOOD.text, other.text}
    assert len(t.record) == 3


def test_record_holds_candidates_only_one_source_returned():
    lone = Chunk("p-lone", "Sinister is a 2012 supernatural horror film.")
    t = start().with_stage(_stage(0, StageKind.RETRIEVE, candidates=(lone,)))
    assert t.pool == () and t.record == (lone,)


def test_upto_drops_the_stage_and_everything_after_it():
    t = start()
    for i, kind in enumerate((StageKind.FORMULATE, StageKind.RETRIEVE, StageKind.REASON)):
        t = t.with_stage(_stage(i, kind, corroborated=(GOOD,) if kind is StageKind.RETRIEVE else ()))
    rolled = t.upto(1)
    assert [s.index for s in rolled.stages] == [0]
    assert rolled.pool == () and t.pool == (GOOD,)
    assert rolled.question == t.question and rolled.decomposition == t.decomposition
    assert len(t.stages) == 3                                # the original is untouched


async def test_progress_is_told_of_every_start_and_end_rerun_included():
    rerun = Intervention(InterventionKind.RERUN, "bad passage", from_index=1, exclude_passages=frozenset({"p-bad"}))
    observer = Observer(lambda r: rerun if (r.index, r.attempt) == (2, 0) else None)
    told = []
    runner = StageRunner([observer], max_reruns=1,
                         on_progress=lambda i, total, attempt, result: told.append(
                             (i, total, attempt, result.output if result else None)))
    await runner.run(start(), four_steps(Steps()))
    assert told == [(0, 4, 0, None), (0, 4, 0, "formulate"), (1, 4, 0, None), (1, 4, 0, "retrieve"),
                    (2, 4, 0, None), (2, 4, 0, "reason"),
                    (1, 4, 1, None), (1, 4, 1, "retrieve"), (2, 4, 1, None), (2, 4, 1, "reason"),
                    (3, 4, 1, None), (3, 4, 1, "synthesize")]
