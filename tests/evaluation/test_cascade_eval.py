"""The cascade evaluation's pieces: loading both formats, injections, and the metrics' arithmetic."""
from __future__ import annotations

import dataclasses
import json

import pytest

from bench.evaluation.cascade_data import load_records
from bench.evaluation.cascade_eval import Row, detected, metrics, propagation
from bench.evaluation.cascade_inject import Injection, swap_fact, wrong_inference
from bench.evaluation.cascade_run import RecordRun
from engine.cascade.types import StageScore
from engine.errors import InputError
from engine.settings.cascade import CascadeSettings
from engine.stages.model import StageKind
from engine.types import CascadeType
from engine.types import Chunk

from .conftest import HashEmbedder

HOTPOT = {"id": "h1", "question": "Were Scott Derrickson and Ed Wood of the same nationality?", "answer": "yes",
          "type": "comparison", "supporting_titles": ["Scott Derrickson", "Ed Wood"],
          "context": [{"title": "Scott Derrickson", "text": "Scott Derrickson (born July 16, 1966) is an American "
                                                            "director, screenwriter and producer."},
                      {"title": "Ed Wood", "text": "Edward Davis Wood Jr. (October 10, 1924 – December 10, 1978) "
                                                   "was an American filmmaker, actor, writer, producer, and director."},
                      {"title": "Tim Burton", "text": "Timothy Walter Burton (born August 25, 1958) is an American "
                                                      "filmmaker and artist from Burbank."}]}
MUSIQUE = {"id": "2hop__1", "question": "Who was the first president of the association which published "
                                        "Journal of Psychotherapy Integration?",
           "answer": [273, 282], "answer_aliases": ["G. Stanley Hall"], "answerable": True,
           "question_decomposition": [{"question": "What company published Journal of Psychotherapy Integration?"},
                                      {"question": "Who was the first president of #1 ?"}],
           "paragraphs": [{"idx": 0, "title": "Journal of Psychotherapy Integration", "is_supporting": True,
                           "text": "The Journal of Psychotherapy Integration is published by the American "
                                   "Psychological Association."},
                          {"idx": 1, "title": "Adolescence", "is_supporting": True,
                           "text": "G. Stanley Hall was the first president of the American Psychological "
                                   "Association."}]}


def _write(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_both_formats_load_and_the_format_is_detected_per_record(tmp_path):
    hotpot = load_records(_write(tmp_path, "h.jsonl", [HOTPOT]), poison_path=None)[0]
    musique = load_records(_write(tmp_path, "m.jsonl", [MUSIQUE]), poison_path=None)[0]
    assert hotpot.dataset == "hotpotqa" and len(hotpot.paragraphs) == 3 and hotpot.answers[0] == "yes"
    assert hotpot.paragraphs[1].title == "Ed Wood" and hotpot.paragraphs[1].id == "h1/p1"
    assert musique.dataset == "musique" and musique.gold_hops[1] == "Who was the first president of #1 ?"
    # A list answer (MuSiQue has a few) gives each element as an accepted answer, aliases kept.
    assert {"273", "282", "G. Stanley Hall"} <= set(musique.answers)


@pytest.mark.parametrize("row, expected", [
    ({"question": "q?"}, "neither a HotpotQA record"),
    ({**HOTPOT, "context": "not a list"}, "'context' must be a non-empty list"),
    ({**HOTPOT, "answer": ""}, "'answer' missing"),
])
def test_a_malformed_record_names_the_file_line_and_problem(tmp_path, row, expected):
    path = _write(tmp_path, "bad.jsonl", [HOTPOT, row])
    with pytest.raises(InputError, match=expected) as caught:
        load_records(path, poison_path=None)
    assert f"{path}: line 2" in str(caught.value)


def test_a_fact_swap_changes_one_fact_for_another_of_the_same_kind_and_is_the_same_in_every_draw():
    from bench.evaluation.attacks import seeded
    sentence = "Scott Derrickson (born July 16, 1966) is an American director from Denver."
    draws = {swap_fact(sentence, ["Timothy Burton lives in Burbank."], "Who is Scott Derrickson?", seeded("x", 1))
             for _ in range(3)}
    assert len(draws) == 1
    old, new, kind = draws.pop()
    assert old in sentence and new not in sentence and kind in ("name", "year", "number")
    assert swap_fact("nothing to swap here", [], "q", seeded("x", 1)) is None


def test_a_wrong_inference_never_carries_a_marker_and_names_its_wrong_entity():
    from bench.evaluation.attacks import seeded
    paragraphs = [Chunk("p1", "Timothy Burton lives in Burbank with Helena Carter.")]
    for seed in range(8):
        wrong = wrong_inference("The film was directed by Scott Derrickson in Denver.", "Sinister",
                                "Who directed the film?", paragraphs, seeded("w", seed))
        assert wrong is not None
        text, entity = wrong
        assert entity in text and "Note" not in text and "Scott Derrickson in Denver" not in text


def _score(index, fired, stage=StageKind.REASON, a=(0.0, 0.0, 0.0)):
    return StageScore(index, stage, 0, *a, p=0.0, fired=fired)


def _row(kind, scores, **kw):
    base = dict(record_id="r", dataset="hotpotqa", split="dev", shape="bridge", injected=kind, took_effect=True,
                scores=tuple(scores), propagated_without=False, propagated_with=False, halted_with=False,
                escalated_with=False, mitigated=False, mitigation_success=False, baseline_fired=False, gold_clean=False, gold_with=False)
    return Row(**{**base, **kw})


def test_detection_counts_only_a_flag_by_the_stage_after_the_injection():
    settings = CascadeSettings()
    hit = (0.0, 1.0, 1.0)     # p = 0.6
    on_time = _row(CascadeType.INFERENCE, [_score(1, False), _score(3, True, a=hit)])       # injected at 2: 3 counts
    too_late = _row(CascadeType.INFERENCE, [_score(1, False), _score(4, True, a=hit)])
    clean_flagged = _row(None, [_score(2, True, a=hit)])
    clean_quiet = _row(None, [_score(2, False)])
    assert detected(on_time.scores, CascadeType.INFERENCE, settings) == 3
    found = metrics([on_time, too_late, clean_flagged, clean_quiet], settings)
    assert found["by_type"]["inference"] == {"n": 2, "cdr": 0.5, "cdd": 4}
    assert found["fpr"] == 0.5 and found["n_injected"] == 2 and found["n_clean"] == 2


def test_error_propagation_reduction_is_one_minus_the_ratio_of_errors_reaching_the_output():
    rows = [_row(CascadeType.RETRIEVAL, [], propagated_without=True, propagated_with=False, mitigated=True,
                 mitigation_success=True),
            _row(CascadeType.RETRIEVAL, [], propagated_without=True, propagated_with=True, mitigated=True),
            _row(CascadeType.RETRIEVAL, [], propagated_without=False, propagated_with=False),
            _row(CascadeType.RETRIEVAL, [], propagated_without=True, took_effect=False)]   # not counted
    spread = propagation(rows)
    assert spread["err_without"] == pytest.approx(2 / 3, abs=1e-3)
    assert spread["epr"] == 0.5 and spread["msr"] == 0.5


def test_an_injected_trajectory_differs_from_the_clean_one_only_from_its_stage_on():
    from bench.evaluation.cascade_data import CascadeRecord
    record = CascadeRecord(
        "r1", "Were Scott Derrickson and Ed Wood of the same nationality?", ("yes",),
        tuple(Chunk(f"r1/p{i}", p["text"], source=p["title"], metadata={"title": p["title"]})
              for i, p in enumerate(HOTPOT["context"])), "hotpotqa")
    run = RecordRun(record, HashEmbedder())
    clean = run.run(None, None)
    injected = run.run(Injection(CascadeType.CONTEXT_POISONING, 0), None)
    assert injected.injected and not clean.injected
    untouched = [(s.output, s.confidence) for s in (clean.trajectory.stages[0], injected.trajectory.stages[0])]
    assert untouched[0] == untouched[1]                                          # formulate: untouched
    assert injected.trajectory.stages[1].evidence[0].id.endswith("~cf")         # retrieve: a near-copy on top
    assert injected.trajectory.stages[1].evidence[0].text != clean.trajectory.stages[1].evidence[0].text


def _hotpot_run():
    from bench.evaluation.cascade_data import CascadeRecord
    record = CascadeRecord(
        "r1", "Were Scott Derrickson and Ed Wood of the same nationality?", ("yes",),
        tuple(Chunk(f"r1/p{i}", p["text"], source=p["title"], metadata={"title": p["title"]})
              for i, p in enumerate(HOTPOT["context"])), "hotpotqa")
    return RecordRun(record, HashEmbedder())


def test_the_independent_reasoner_quotes_another_sentence_of_its_passages_as_sure_as_the_honest_stage():
    run = _hotpot_run()
    clean = run.run(None, None)
    injected = run.run(Injection(CascadeType.INFERENCE, 0, "independent"), None)
    assert injected.injected
    honest, faulty = clean.trajectory.stages[2], injected.trajectory.stages[2]
    claim = faulty.claims[0]
    cited = next(c for c in faulty.evidence if c.id == claim.citations[0])
    assert claim.text != honest.claims[0].text and claim.text in cited.text        # a verbatim quote
    # Its confidence is its own statement, computed with no defence formula: the one the honest stage stated.
    assert faulty.confidence == honest.confidence


def test_a_halt_prevents_the_error_only_when_it_reaches_the_operator():
    from bench.evaluation.cascade_eval import _propagated, escalated
    from bench.evaluation.cascade_run import RunResult
    from engine.cascade.types import CascadeOutcome
    run = _hotpot_run()
    clean = run.run(None, None)
    silent = RunResult("", 0.0, clean.trajectory, None, True, True)
    held = RunResult("", 0.0, clean.trajectory, CascadeOutcome(True, 2, CascadeType.INFERENCE, resolved=False), True, True)
    assert not escalated(silent) and _propagated(CascadeType.INFERENCE, silent, clean)
    assert escalated(held) and not _propagated(CascadeType.INFERENCE, held, clean)


def test_the_escalated_row_counts_what_the_real_approval_queue_holds():
    from bench.evaluation.cascade_queue import OperatorQueue
    from bench.evaluation.cascade_run import RunResult
    from engine.cascade.types import CascadeOutcome
    trajectory = _hotpot_run().run(None, None).trajectory
    held = RunResult("", 0.0, trajectory, CascadeOutcome(True, 2, CascadeType.INFERENCE, resolved=False), True, True)
    resolved = RunResult("Paris", 0.5, trajectory, CascadeOutcome(True, 2, CascadeType.INFERENCE), False, True)
    answered = RunResult("Paris", 0.5, trajectory, None, False, True)      # no cascade and an answer: nobody asked
    unanswered = RunResult("", 0.0, trajectory, None, True, True)  # a medium-tier abstention waits for a person too
    with OperatorQueue() as queue:
        assert queue.reached("r1/inference", "Who?", held)
        assert queue.reached("r1/inference", "Who?", held)             # asked twice, one item, still pending
        assert not queue.reached("r2/inference", "Who?", resolved)
        assert not queue.reached("r3/inference", "Who?", answered)
        assert queue.reached("r4/inference", "Who?", unanswered)


def test_the_cold_overhead_reads_the_clean_runs_or_the_injected_ones():
    from bench.evaluation.cascade_eval import cold_overhead
    clean = _row(None, [dataclasses.replace(_score(1, False), elapsed_ms=4.0),
                        dataclasses.replace(_score(2, False), elapsed_ms=8.0)])
    injected = _row(CascadeType.RETRIEVAL, [dataclasses.replace(_score(1, False), elapsed_ms=1.0)])
    assert cold_overhead([clean, injected]) == (6.0, 6.0) and cold_overhead([injected]) == (None, None)
    assert cold_overhead([clean, injected], injected=True) == (1.0, 1.0)


class _Recording(HashEmbedder):
    """Remembers every text it was asked to embed, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def embed_passages(self, texts):
        self.asked += list(texts)
        return super().embed_passages(texts)


def test_each_record_is_indexed_before_its_first_run_as_the_product_indexes_its_corpus(tmp_path):
    from bench.evaluation.cascade_eval import collect
    from engine.ingest.corpus import embedding_texts
    record = load_records(_write(tmp_path, "h.jsonl", [HOTPOT]))[0]
    indexed = embedding_texts(record.paragraphs)
    embedder = _Recording()
    collected = collect([record], embedder, CascadeSettings(), retriever_embedder=HashEmbedder())
    assert embedder.asked[:len(indexed)] == indexed
    assert len(collected.clean) == 1 and collected.clean[0] is collected.trajectories[0]
    bare = _Recording()
    collect([record], bare, CascadeSettings(), retriever_embedder=HashEmbedder(), index=False)
    assert bare.asked[:len(indexed)] != indexed


def test_the_unindexed_overhead_replays_the_clean_runs_on_the_embedder_it_is_given(tmp_path):
    from bench.evaluation.cascade_eval import collect, unindexed_overhead
    record = load_records(_write(tmp_path, "h.jsonl", [HOTPOT]))[0]
    collected = collect([record], HashEmbedder(), CascadeSettings(), retriever_embedder=HashEmbedder())
    fresh = _Recording()
    p50, mean = unindexed_overhead(collected.clean, fresh, CascadeSettings())
    assert p50 is not None and mean is not None and p50 >= 0.0
    # nothing indexed: the monitors embed the pool's sentences themselves, on the embedder they were given
    pooled = " ".join(c.text for c in collected.clean[0].pool)
    assert collected.clean[0].pool and any(text in pooled for text in fresh.asked)
    assert unindexed_overhead([], _Recording(), CascadeSettings()) == (None, None)



class _Verifier:
    """Stands in for the evidence verifier at its boundary: every claim gets one label."""

    def __init__(self, label) -> None:
        self.label = label

    def judge_sync(self, text, evidence):
        from types import SimpleNamespace
        return SimpleNamespace(label=self.label)


def test_the_output_level_baseline_sees_the_final_confidence_as_the_monitors_do():
    from bench.evaluation.cascade_eval import answered_share, output_level_fires
    from engine.types import Claim, ClaimLabel
    run = _hotpot_run()
    clean = run.run(None, None)
    claim = Claim("Scott Derrickson is an American director.", ("r1/p0",))
    titles = {"r1/p0": "Scott Derrickson"}
    share = answered_share(clean.trajectory.question, (claim,), titles)
    assert 0.0 < share < 0.7          # it names one of the two people and neither nationality word
    assert answered_share(clean.trajectory.question, (claim,), {}) == share    # the title repeats the claim's name
    assert answered_share("", (claim,), titles) == 1.0

    def with_final(confidence: float):
        final = dataclasses.replace(clean.trajectory.stages[-1], claims=(claim,), confidence=confidence)
        trajectory = dataclasses.replace(clean.trajectory, stages=clean.trajectory.stages[:-1] + (final,))
        return dataclasses.replace(clean, trajectory=trajectory)

    supported, refuted = _Verifier(ClaimLabel.SUPPORTED), _Verifier(ClaimLabel.REFUTED)
    assert not output_level_fires(with_final(share + 0.04), supported, margin=0.05)
    assert output_level_fires(with_final(share + 0.06), supported, margin=0.05)     # surer than its claims answer
    assert output_level_fires(with_final(share), refuted, margin=0.05)              # a claim the pool does not back
