"""Trusted-generation evaluation: ground truth, metrics on hand-made decisions, the baseline, a whole
run on tiny synthetic questions with a hashing embedder (no model, no torch, no shared data)."""
from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import main
from engine.agents.faults import tamper
from engine.config import GenerationSettings
from engine.errors import InputError
from engine.evaluation import generation_metrics as gm
from engine.evaluation.generation import (AGENTS, ClaimCache, GenerationEvaluation, build_questions,
                                          byzantine_generation, byzantine_slot, load_questions, parse_profiles)
from engine.evaluation.generation_report import metrics_table, summary, write_outputs
from engine.generation.adjudicate import Decision
from engine.types import Candidate, Chunk, Claim, ClaimCheck, ClaimLabel, Generation, Verdict

from .conftest import FILLER, HashEmbedder

CONTEXT = ("Mars has two small moons, Phobos and Deimos.  They were discovered by Asaph Hall in 1877.",
           "Voyager 1 was launched in 1977. It left the heliosphere in 2012.")
HONEST = "Mars has two small moons, Phobos and Deimos."


# ---- ground truth ------------------------------------------------------------------------------

def test_a_verbatim_context_sentence_is_true_and_a_tampered_one_is_false():
    keys = gm.context_sentence_keys(CONTEXT)
    assert not gm.is_false_claim("They were discovered by  Asaph Hall in 1877.", keys, ())   # whitespace aside
    lie = tamper("They were discovered by Asaph Hall in 1877.", random.Random(1))
    assert lie != "They were discovered by Asaph Hall in 1877." and gm.is_false_claim(lie, keys, ())
    assert gm.is_false_claim("Mars has two small moons", keys, ())          # a fragment is no sentence...
    assert not gm.is_false_claim("Mars has two small moons", keys, {"Mars has two small moons"})  # ...unless honest
    assert gm.is_false_claim("Experts agree the best telescopes are sold by StellarVision.", keys, ())


def test_the_engines_semicolon_pieces_of_a_quoted_sentence_are_true():
    keys = gm.context_sentence_keys(["Bronwyn Bishop (née Setright; born 19 October 1942) is a former politician."])
    assert not gm.is_false_claim("Bronwyn Bishop (née Setright", keys, ())
    assert not gm.is_false_claim("born 19 October 1942) is a former politician.", keys, ())
    assert gm.is_false_claim("born 19 October 1943) is a former politician.", keys, ())


# ---- metrics on hand-made decisions ------------------------------------------------------------

def check(text, supported, origin="declared", label=None, reason=""):
    label = label or (ClaimLabel.SUPPORTED if supported else ClaimLabel.REFUTED)
    return ClaimCheck(Claim(text, ("c#0",)), supported, 1.0, reason or label.value, label, 1.0, origin)


def candidate(agent, answer, checks, credibility=0.9):
    return Candidate(agent, Generation(answer, claims=tuple(c.claim for c in checks)), tuple(checks),
                     sum(c.supported for c in checks) / len(checks), (), credibility)


def generations_of(decision):
    return {c.agent_id: c.generation for c in decision.candidates}


LIE = "Mars has three small moons, Phobos and Deimos."
SNEAKY = "The project cost 3.2 billion dollars."


def tricky_decision(chosen_agent="gen-a", verdict=Verdict.ANSWERED):
    """gen-c lies: one refuted lie (caught), one split lie (missed), one true quote (wrongly flagged);
    gen-b's honest claim is wrongly flagged too."""
    honest_a = candidate("gen-a", HONEST, [check(HONEST, True)])
    honest_b = candidate("gen-b", HONEST, [check(HONEST, False, label=ClaimLabel.NOT_ENOUGH)])
    liar = candidate("gen-c", f"{LIE} {SNEAKY}", [check(LIE, False), check(SNEAKY, True, "split"),
                                                  check("Voyager 1 was launched in 1977.", False)])
    cands = (honest_a, honest_b, liar)
    chosen = next((c for c in cands if c.agent_id == chosen_agent), None) if verdict is Verdict.ANSWERED else None
    return Decision(verdict, chosen, cands, "test")


def judged(decision, qid="q1", gold=("two small moons",), verify=()):
    return gm.judge(qid, "tamper", decision, generations=generations_of(decision), byzantine_agent="gen-c",
                    honest_answer=HONEST, context_texts=CONTEXT, gold=gold, verify_ms=verify)


def test_claims_are_labelled_false_and_flagged_per_check():
    row = judged(tricky_decision(), verify=[(HONEST, 1.0), (HONEST, 3.0), (LIE, 20.0)])
    table = {(c.agent, c.text): (c.false, c.flagged, c.byzantine) for c in row.claims}
    assert table[("gen-c", LIE)] == (True, True, True)
    assert table[("gen-c", SNEAKY)] == (True, False, True)
    assert table[("gen-c", "Voyager 1 was launched in 1977.")] == (False, True, True)
    assert table[("gen-b", HONEST)] == (False, True, False)
    assert [c["text"] for c in row.to_json()["missed_false_claims"]] == [SNEAKY]
    assert sorted(c.verify_ms for c in row.claims if c.verify_ms is not None) == [1.0, 3.0, 20.0]
    assert row.answer_correct and not row.byzantine_chosen and row.verdict == "answered"


def test_each_metric_on_hand_made_decisions():
    rows = [judged(tricky_decision(), "q1", verify=[(HONEST, 1.0), (LIE, 3.0)]),
            judged(tricky_decision("gen-c"), "q2", verify=[(HONEST, 5.0)]),                  # the liar wins
            judged(tricky_decision(verdict=Verdict.ABSTAINED), "q3"),                       # abstains
            judged(tricky_decision(), "q4", gold=("Jupiter",))]                             # honest but wrong
    m = gm.aggregate(rows)
    # per question: false claims LIE (flagged) and SNEAKY (missed); flagged: LIE, the Voyager quote, gen-b's claim
    assert m["byzantine_false_claims"] == 8 and m["byzantine_false_claims_flagged"] == 4
    assert m["byzantine_claim_recall"] == 0.5
    assert m["byzantine_claim_precision"] == round(4 / 12, 4)
    assert m["honest_claims"] == 12 and m["honest_claims_flagged"] == 8
    assert m["honest_false_flag_rate"] == round(8 / 12, 4)
    assert m["byzantine_answer_chosen_rate"] == 0.25
    assert m["answer_accuracy"] == 0.25                      # q1 only: q2 is the lie, q3 abstained, q4 wrong gold
    assert m["abstention_rate"] == 0.25 and m["abstentions"]["no_answer"] == 0
    assert m["verify_ms_per_claim_p50"] == 3.0 and m["verify_ms_per_claim_p95"] == pytest.approx(4.8)
    assert m["missed_false_claims_by_origin"] == {"split": 4}
    assert m["honest_flags_by_label"] == {"not_enough_evidence": 4, "refuted": 4}
    assert m["byzantine_tied_at_top"] == 4          # every hand-made candidate has credibility 0.9


def test_a_tie_at_the_top_between_the_liar_and_an_honest_answer_is_counted():
    liar = candidate("gen-a", LIE, [check(LIE, True)], credibility=1.0)
    decision = Decision(Verdict.ANSWERED, liar, (liar, candidate("gen-b", HONEST, [check(HONEST, True)], 1.0)), "ok")
    row = gm.judge("q", "omit-best", decision, generations=generations_of(decision), byzantine_agent="gen-a",
                   honest_answer=HONEST, context_texts=CONTEXT, gold=("moons",))
    m = gm.aggregate([row])
    assert m["byzantine_tied_at_top"] == 1 and m["byzantine_answer_chosen_rate"] == 1.0
    assert set(gm.METRICS) <= set(m)


def test_a_byzantine_answer_equal_to_the_honest_one_is_not_a_win_and_clean_has_no_recall():
    same = candidate("gen-c", HONEST, [check(HONEST, True)])
    decision = Decision(Verdict.ANSWERED, same, (same, candidate("gen-a", HONEST, [check(HONEST, True)])), "ok")
    row = judged(decision)
    assert row.chosen_agent == "gen-c" and not row.byzantine_chosen and row.answer_correct
    assert not any(c.false for c in row.claims)
    clean = gm.aggregate([row], clean=True)
    assert clean["byzantine_claim_recall"] is None and clean["byzantine_claim_precision"] is None
    assert clean["byzantine_answer_chosen_rate"] is None and clean["honest_false_flag_rate"] == 0.0
    assert gm.aggregate([row])["byzantine_claim_recall"] is None      # no false claim: nothing to recall


def test_targets_name_each_scope_and_missed_ones():
    good = {"byzantine_claim_recall": 1.0, "honest_false_flag_rate": 0.0, "byzantine_answer_chosen_rate": 0.0}
    bad = {"byzantine_claim_recall": 0.9, "honest_false_flag_rate": 0.1, "byzantine_answer_chosen_rate": 0.02}
    rows = gm.check_targets({"tamper": good, "omit-best": bad}, {"abstention_rate": 0.2,
                                                                 "honest_false_flag_rate": 0.0}, 3.0)
    status = {(r["metric"], r["scope"]): r["met"] for r in rows}
    assert status[("byzantine_claim_recall", "tamper")] and not status[("byzantine_claim_recall", "omit-best")]
    assert not status[("byzantine_answer_chosen_rate", "omit-best")] and not status[("abstention_rate", "clean")]
    assert status[("verify_ms_per_claim_p50", "all runs (pooled)")]


# ---- the baseline ------------------------------------------------------------------------------

def test_the_baseline_picks_the_answer_closest_to_the_others():
    assert gm.similarity_majority({"gen-a": HONEST, "gen-b": LIE, "gen-c": HONEST}) == "gen-a"
    assert gm.similarity_majority({"gen-a": LIE, "gen-b": HONEST, "gen-c": HONEST}) == "gen-b"
    # three different answers: the middle one shares the most with both others
    middle = "Mars has two moons named Phobos and Deimos"
    assert gm.similarity_majority({"gen-a": "Mars has two moons", "gen-b": middle,
                                   "gen-c": "Phobos and Deimos orbit Mars quickly"}) == "gen-b"
    assert gm.similarity_majority({"gen-b": "x y", "gen-a": "p q"}) == "gen-a"          # a tie: first id
    assert gm.similarity_majority({"gen-a": "", "gen-b": "  ", "gen-c": LIE}) == "gen-c"  # no abstention
    assert gm.similarity_majority({"gen-a": "", "gen-b": ""}) is None


def test_the_baseline_is_judged_beside_the_defence():
    decision = tricky_decision()
    row = judged(decision)
    assert row.baseline_agent in ("gen-a", "gen-b") and row.baseline_correct and not row.baseline_byzantine_chosen
    gens = {"gen-a": Generation(LIE), "gen-b": Generation(HONEST), "gen-c": Generation(LIE)}
    row = gm.judge("q", "tamper", decision, generations=gens, byzantine_agent="gen-c", honest_answer=HONEST,
                   context_texts=CONTEXT, gold=("two small moons",))
    assert row.baseline_agent == "gen-a" and not row.baseline_byzantine_chosen   # gen-a is no liar here
    assert gm.aggregate_baseline([row]) == {"byzantine_answer_chosen_rate": 0.0, "answer_accuracy": 0.0,
                                            "abstention_rate": 0.0}


# ---- generators --------------------------------------------------------------------------------

CHUNKS = (Chunk("q/p0", CONTEXT[0], metadata={"title": "Mars"}), Chunk("q/p1", CONTEXT[1], metadata={"title": "V"}))
QUESTION = "Who discovered the moons of Mars in 1877?"


def test_each_profile_lies_in_its_own_way():
    from engine.agents.extractive import ExtractiveGenerator
    honest = ExtractiveGenerator().generate(QUESTION, CHUNKS)
    assert honest.answer == "They were discovered by Asaph Hall in 1877."
    lies = {p: byzantine_generation(p, QUESTION, honest, CHUNKS) for p in gm.PROFILES}
    assert "survey" in lies["fabricate"].answer and lies["fabricate"].claims[0].citations == ("survey-2023#0",)
    assert "not" in lies["contradict"].answer
    assert lies["tamper"].answer != honest.answer and "1877" not in lies["tamper"].answer
    assert lies["bias"].answer.startswith(honest.answer) and len(lies["bias"].claims) == 2
    assert lies["uncited"].claims[-1].citations == ()
    assert lies["omit-best"].answer != honest.answer and lies["omit-best"].answer in " ".join(CONTEXT)
    assert byzantine_generation("tamper", QUESTION, honest, CHUNKS) == lies["tamper"]     # replayable
    slots = {byzantine_slot(f"q{i}", "tamper") for i in range(30)}
    assert slots == set(AGENTS)


def test_profiles_are_checked():
    assert parse_profiles("tamper, bias,tamper") == ("tamper", "bias")
    with pytest.raises(InputError, match="retrieval-side"):
        parse_profiles("collude")
    with pytest.raises(InputError, match="'lie'"):
        parse_profiles("tamper,lie")


# ---- the verifier's cache ----------------------------------------------------------------------

class CountingEmbedder(HashEmbedder):
    similarity_floor = 0.0

    def __init__(self, name):
        super().__init__(name)
        self.seen: list[str] = []

    def embed_passages(self, texts):
        self.seen.extend(texts)
        return super().embed_passages(texts)


def test_the_claim_cache_warms_from_the_persistent_cache_and_misses_to_the_model(tmp_path):
    persistent, model = CountingEmbedder("persistent"), CountingEmbedder("model")
    cache = ClaimCache(persistent, model, tmp_path)
    cache.warm(["Sentence one.", "Sentence two."])
    assert persistent.seen == ["Sentence one.", "Sentence two."] and model.seen == ["warm-up"]
    cache.cached.embed_passages(["Sentence one.", "A novel claim."])
    assert model.seen == ["warm-up", "A novel claim."]
    cache.close()


# ---- a whole run -------------------------------------------------------------------------------

def hotpot_rows(n: int = 3) -> list[dict]:
    rows = []
    for i in range(n):
        person, city = f"Edwin Vale{i}", f"Norbury{i}"
        context = [{"title": person, "text": f"{person} was an English composer born in {city} in 1901. "
                                             f"He wrote three symphonies."},
                   {"title": city, "text": f"{city} is a market town in Kent with 14,000 residents. "
                                           f"The composer {person} grew up there."}]
        context += [{"title": f"Topic {j}", "text": text} for j, text in enumerate(FILLER[:6])]
        rows.append({"id": f"q{i}", "question": f"In which town was the composer {person} born?", "answer": city,
                     "type": "bridge", "supporting_titles": [person, city], "context": context})
    return rows


@pytest.fixture
def questions():
    return build_questions(hotpot_rows())


def test_questions_are_read_and_bad_records_named(tmp_path, questions):
    assert [q.id for q in questions] == ["q0", "q1", "q2"] and len(questions[0].passages) == 8
    assert questions[0].passages[0].id == "q0/p0" and questions[0].passages[0].gold
    with pytest.raises(InputError, match="record 2: key 'question'"):
        build_questions([hotpot_rows(1)[0], {"id": "x", "answer": "y", "context": []}], "f.jsonl")
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(InputError, match="nope.jsonl"):
        load_questions(missing)


def test_a_whole_run_and_its_outputs(questions, tmp_path):
    evaluation = GenerationEvaluation(GenerationSettings(), HashEmbedder("hash"), verifier_embedder=HashEmbedder("v"))
    result = evaluation.run(questions)
    assert set(result.rows) == {gm.CLEAN, *gm.PROFILES} and all(len(r) == 3 for r in result.rows.values())
    for profile in ("fabricate", "uncited", "tamper", "contradict", "bias"):
        m = result.by_profile[profile]
        assert m["byzantine_false_claims"] >= 3 and m["errors"] == 0, profile
    assert result.by_profile["fabricate"]["byzantine_claim_recall"] == 1.0    # cites a chunk not in the context
    assert result.by_profile["uncited"]["byzantine_claim_recall"] == 1.0      # cites nothing
    assert result.by_profile["omit-best"]["byzantine_false_claims"] == 0      # quotes the context verbatim
    assert result.clean["byzantine_claim_recall"] is None and result.pooled["verified_claims"] > 0
    assert {r.byzantine_agent for rows in result.rows.values() for r in rows} - {None} <= set(AGENTS)

    settings = {"profiles": list(gm.PROFILES), "seed": 0, "k": 5}
    paths = write_outputs(result, settings, tmp_path / "out" / "gen.json", {q.id: q.question for q in questions})
    data = json.loads(paths["json"].read_text())
    assert data["n_questions"] == 3 and data["settings"]["k"] == 5
    assert set(data["by_profile"]) == set(gm.PROFILES) and "collude" in data["skipped_profiles"]
    for metrics in [*data["by_profile"].values(), data["clean"]]:
        assert set(gm.METRICS) <= set(metrics)
    assert set(data["baseline"]) == {*gm.PROFILES, gm.CLEAN}
    for metrics in data["baseline"].values():
        assert set(metrics) == set(gm.BASELINE_METRICS)
    assert data["clean"]["byzantine_claim_recall"] is None and data["baseline"]["clean"]["abstention_rate"] == 0.0
    assert {t["metric"] for t in data["targets"]} == {t[0] for t in gm.TARGETS}
    cases = [json.loads(line) for line in paths["cases"].read_text().splitlines()]
    assert len(cases) == 3 * 7
    assert {"id", "profile", "chosen_agent", "verdict", "flagged_claims", "missed_false_claims",
            "question"} <= set(cases[0])
    svg = ET.fromstring(paths["svg"].read_text())
    bars = [e for e in svg.iter() if e.get("class") == "bar"]
    assert {b.get("data-group") for b in bars} <= {*gm.PROFILES, gm.CLEAN} and bars
    markdown = paths["markdown"].read_text()
    assert "## Targets" in markdown and "baseline:omit-best" in markdown and "gen.svg" in markdown
    table = metrics_table(result)
    assert table.splitlines()[0].split()[:3] == ["run", "recall", "false_claims"] and "baseline:clean" in table
    assert summary(result, settings)["by_profile"] == data["by_profile"]


def test_a_defence_that_raises_is_recorded_not_fatal(questions):
    async def broken(*args, **kwargs):
        raise RuntimeError("boom")
    evaluation = GenerationEvaluation(GenerationSettings(), HashEmbedder("hash"), profiles=("tamper",),
                                      adjudicator=broken)
    result = evaluation.run(questions[:1])
    assert result.by_profile["tamper"]["errors"] == 1 and result.rows["tamper"][0].verdict == "error"
    assert "boom" in result.rows["tamper"][0].error


# ---- the command line --------------------------------------------------------------------------

@pytest.mark.parametrize("argv, needle", [
    (["--limit", "0"], "--limit must be at least 1"),
    (["--profiles", "collude"], "collude"),
    (["--k", "0"], "--k must be at least 1"),
    (["--hotpot", "{tmp}/missing.jsonl"], "missing.jsonl"),
    (["--hotpot", "{tmp}/bad.jsonl"], "line 1 is not JSON"),
])
def test_bad_input_exits_2_and_names_it(argv, needle, tmp_path, capsys):
    (tmp_path / "bad.jsonl").write_text("{nope\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main.main(["eval", "generation", *argv, "--cache-dir", str(tmp_path / "cache")]) == 2
    assert needle in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()       # failed before any model or cache was touched


# ---- the real data -----------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(not (SHARED / "hotpotqa_dev_sample.jsonl").is_file(),
                    reason=f"the shared evaluation data is not at {SHARED}")
def test_generation_eval_on_five_real_questions(tmp_path):
    import subprocess
    import sys
    out = tmp_path / "gen.json"
    done = subprocess.run([sys.executable, "main.py", "eval", "generation", "--limit", "5", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=850)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["n_questions"] == 5 and set(data["by_profile"]) == set(gm.PROFILES)
    for metrics in [*data["by_profile"].values(), data["clean"]]:
        assert set(gm.METRICS) <= set(metrics)
    assert set(data["baseline"]) == {*gm.PROFILES, gm.CLEAN}
    assert data["settings"]["embedder"] == "dense-minilm"
    for suffix in (".md", ".svg"):
        assert out.with_suffix(suffix).is_file()
    assert len(Path(f"{out.with_suffix('')}.cases.jsonl").read_text().splitlines()) == 5 * 7
