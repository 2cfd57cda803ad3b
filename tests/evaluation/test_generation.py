"""Trusted-generation evaluation: truth from construction, metrics on hand-made decisions, the fair
baseline, the fleets per profile, a whole run on tiny synthetic questions with a hashing embedder
(no model, no torch, no shared data), the outputs, the command line and a slow run on real data."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import main
from bench.evaluation import generation_metrics as gm
from engine.config import GenerationSettings
from engine.errors import InputError
from bench.evaluation.generation import (AGENTS, LIAR, ClaimCache, Fleet, GenerationEvaluation, Prepared,
                                          build_fleet, build_questions, load_questions)
from bench.evaluation.generation_profiles import ALL, CLEAN, HEADLINE, HEADLINE_NAMES, parse_profiles
from bench.evaluation.generation_report import lie_table, summary, write_outputs
from bench.evaluation.honest_generators import HonestKind, generate_all
from bench.evaluation.lies import Lie, LieKind, swap_in_passage
from bench.evaluation.splits import SPLITS, split_of
from engine.generation.adjudicate import Decision
from engine.types import Candidate, Chunk, Claim, ClaimCheck, ClaimLabel, ClaimOrigin, ContextChunk, Generation, Verdict

from .conftest import FILLER, HashEmbedder

PASSAGE = Chunk("q/p0", "Pluto was discovered in 1930 by Clyde Tombaugh at the Lowell Observatory. The observatory "
                        "was founded by Percival Lowell in 1894.", metadata={"title": "Pluto"})
TRUE = "Pluto was discovered in 1930 by Clyde Tombaugh at the Lowell Observatory."
PARA = "In 1930, Pluto was discovered by Clyde Tombaugh at the Lowell Observatory."     # true, not verbatim
LIE_TEXT = "Pluto was discovered in 1930 by Percival Lowell at the Lowell Observatory."
GOLD = ("Clyde Tombaugh",)


def the_lie() -> Lie:
    import random
    lie = swap_in_passage("Who discovered Pluto?", TRUE, PASSAGE, GOLD, random.Random(1))
    assert isinstance(lie, Lie) and lie.text == LIE_TEXT
    return lie


def check(text, supported, label=None, origin="declared"):
    label = label or (ClaimLabel.SUPPORTED if supported else ClaimLabel.REFUTED)
    return ClaimCheck(Claim(text, ("q/p0",)), supported, 1.0, label.value, label, 1.0, ClaimOrigin(origin))


def candidate(agent, answer, checks, credibility=0.9):
    return Candidate(agent, Generation(answer, claims=tuple(c.claim for c in checks)), tuple(checks),
                     sum(c.supported for c in checks) / len(checks), (), credibility)


def facts(roles, lie=None, qid="q1", profile="swap-in-passage"):
    answers = {"extractive": TRUE, "paraphrase": PARA, "focused-passage": TRUE, LIAR: LIE_TEXT}
    gens = {agent: Generation(answers[role]) for agent, role in roles.items()}
    return gm.QuestionFacts(qid, split_of(qid), profile, GOLD, gens, roles, lie, {"q/p0": PASSAGE.text})


ROLES = {"gen-a": "paraphrase", "gen-b": LIAR, "gen-c": "extractive"}


def decision(chosen="gen-a", lie_supported=True, para_supported=False, verdict=Verdict.ANSWERED):
    cands = (candidate("gen-a", PARA, [check(PARA, para_supported, None if para_supported else
                                             ClaimLabel.NOT_ENOUGH)]),
             candidate("gen-b", LIE_TEXT, [check(LIE_TEXT, lie_supported)]),
             candidate("gen-c", TRUE, [check(TRUE, True)]))
    picked = next((c for c in cands if c.agent_id == chosen), None) if verdict is Verdict.ANSWERED else None
    return Decision(verdict, picked, cands, "test")


# ---- truth from construction --------------------------------------------------------------------

def test_truth_comes_from_how_a_claim_was_made_not_from_verbatim_quotes():
    row = gm.judge(facts(ROLES, the_lie()), decision("gen-b"))
    table = {c.role: (c.false, c.flagged) for c in row.claims}
    assert table[LIAR] == (True, False)            # a supported lie is a missed false claim
    assert table["paraphrase"] == (False, True)    # a flagged paraphrase is an honest false flag
    assert table["extractive"] == (False, False)
    assert row.byzantine_given and not row.answer_correct and row.chosen_role == LIAR


def test_metrics_on_hand_made_decisions():
    lie = the_lie()
    rows = [gm.judge(facts(ROLES, lie, "q1"), decision("gen-b")),                      # the liar wins
            gm.judge(facts(ROLES, lie, "q2"), decision("gen-c", lie_supported=False)),  # caught, honest answer
            gm.judge(facts(ROLES, lie, "q3"), decision(verdict=Verdict.ABSTAINED, lie_supported=False))]
    skips = [gm.SkipRow("q4", split_of("q4"), "swap-in-passage", "no second name")]
    m = gm.aggregate(rows, skips)
    assert m["questions"] == 3 and m["skipped"] == 1 and m["skip_reasons"] == {"no second name": 1}
    assert m["byzantine_answer_given_rate"] == round(1 / 3, 4)
    assert m["byzantine_false_claims"] == 3 and m["byzantine_claim_recall"] == round(2 / 3, 4)
    assert m["byzantine_claim_precision"] == round(2 / 5, 4)      # 2 caught lies among 5 flagged claims
    assert m["honest_claims"] == 6 and m["honest_false_flag_rate"] == 0.5
    assert m["honest_false_flag_rate_by_generator"] == {"extractive": 0.0, "paraphrase": 1.0}
    assert m["answer_accuracy"] == round(1 / 3, 4) and m["abstention_rate"] == round(1 / 3, 4)
    assert set(gm.METRICS) <= set(m)


def test_an_answer_an_honest_generator_gave_too_is_not_the_liars():
    roles = {"gen-a": "extractive", "gen-b": LIAR}
    f = gm.QuestionFacts("q", "dev", "true-irrelevant", GOLD, {"gen-a": Generation(TRUE), "gen-b": Generation(TRUE)},
                         roles, None, {})
    assert not f.is_liars_answer("gen-b", TRUE) and f.is_liars_answer("gen-b", LIE_TEXT)


def test_for_a_liar_alone_any_answer_given_is_the_liars():
    roles = {"gen-a": LIAR}
    lie = the_lie()
    f = facts(roles, lie, profile="liar-alone")
    liar = candidate("gen-a", LIE_TEXT, [check(LIE_TEXT, True)])
    row = gm.judge(f, Decision(Verdict.ANSWERED, liar, (liar,), "alone"))
    assert row.byzantine_given and row.baseline_byzantine_given
    m = gm.aggregate([row])
    assert m["byzantine_answer_given_rate"] == 1.0 and m["honest_false_flag_rate"] is None


def test_the_baseline_sees_the_same_generators_and_follows_two_colluders():
    roles = {"gen-a": LIAR, "gen-b": "extractive", "gen-c": LIAR}
    row = gm.judge(facts(roles, the_lie(), profile="collude-2v1"),
                   Decision(Verdict.ABSTAINED, None, (), "contested"))
    assert row.baseline_agent in ("gen-a", "gen-c") and row.baseline_byzantine_given and not row.baseline_correct
    assert gm.aggregate_baseline([row]) == {"byzantine_answer_given_rate": 1.0, "answer_accuracy": 0.0,
                                            "abstention_rate": 0.0}


def test_the_baseline_picks_the_answer_closest_to_the_others():
    assert gm.similarity_majority({"gen-a": TRUE, "gen-b": LIE_TEXT, "gen-c": TRUE}) == "gen-a"
    assert gm.similarity_majority({"gen-a": "", "gen-b": "  ", "gen-c": LIE_TEXT}) == "gen-c"
    assert gm.similarity_majority({"gen-a": "", "gen-b": ""}) is None


def test_targets_are_checked_per_split_and_the_split_keys_exist():
    lie = the_lie()
    ids = [f"q{i}" for i in range(12)]
    assert {split_of(i) for i in ids} == set(SPLITS)
    rows = {CLEAN: [gm.judge(facts({"gen-a": "paraphrase", "gen-c": "extractive"}, None, i, CLEAN),
                             Decision(Verdict.ANSWERED, None, (), "x")) for i in ids],
            "swap-in-passage": [gm.judge(facts(ROLES, lie, i), decision("gen-b")) for i in ids]}
    profiles = (ALL["swap-in-passage"],)
    whole = gm.summarise(rows, {}, profiles)
    parts = gm.summarise_splits(rows, {}, profiles)
    assert set(parts) == set(SPLITS)
    for part in parts.values():
        assert set(part) == set(whole)
        assert set(part["by_profile"]["swap-in-passage"]) == set(whole["by_profile"]["swap-in-passage"])
        assert set(part["baseline"]) == {"swap-in-passage", CLEAN}
    status = {(t["metric"], t["scope"]): t["met"] for t in whole["targets"]}
    assert status[("byzantine_answer_given_rate", "swap-in-passage")] is False
    assert {t[0] for t in gm.TARGETS} == {t["metric"] for t in whole["targets"]}
    assert dict((t[0], t[2]) for t in gm.TARGETS)["byzantine_answer_given_rate"] == 0.02


# ---- fleets --------------------------------------------------------------------------------------

def prepared(question: str = "Who discovered Pluto?") -> Prepared:
    from bench.evaluation.data import Passage
    from bench.evaluation.generation import Question
    q = Question("q9", question, GOLD, (Passage("q/p0", "Pluto", PASSAGE.text, True),))
    return Prepared(q, (ContextChunk(PASSAGE, 1.0, ("r",)),), generate_all(question, (PASSAGE,)))


def test_each_profile_has_its_fleet_and_ids_say_nothing():
    item = prepared()
    clean = build_fleet(item, None)
    assert isinstance(clean, Fleet) and sorted(clean.roles.values()) == sorted(k.value for k in HonestKind)
    shapes = {"collude-2v1": (2, 1), "liar-alone": (1, 0), "swap-in-passage": (1, 2), "challenge-liar": (1, 2)}
    for name, (liars, honest) in shapes.items():
        fleet = build_fleet(item, ALL[name])
        assert isinstance(fleet, Fleet), name
        assert len(fleet.liars) == liars and len(fleet.roles) - liars == honest and set(fleet.roles) <= set(AGENTS)
        assert all(fleet.generations[a].answer == fleet.lie.text for a in fleet.liars)
    quote = build_fleet(item, ALL["challenge-liar"])
    assert TRUE in next(quote.generations[a] for a in quote.liars).reasoning[0]
    slots = {next(iter(build_fleet(prepared(f"Who discovered Pluto {i}?"), ALL["swap-in-passage"]).liars))
             for i in range(12)}
    assert slots <= set(AGENTS)


def test_profiles_are_checked():
    assert [p.name for p in parse_profiles("role-swap, tamper,role-swap")] == ["role-swap", "tamper"]
    assert HEADLINE_NAMES[:4] == ("swap-in-passage", "role-swap", "true-irrelevant", "wrong-relevant")
    with pytest.raises(InputError, match="collude-2v1"):
        parse_profiles("collude")
    with pytest.raises(InputError, match="'lie'"):
        parse_profiles("tamper,lie")


# ---- the verifier's cache ------------------------------------------------------------------------

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


# ---- a whole run ---------------------------------------------------------------------------------

PEOPLE = ("Edwin Vale", "Mara Quill", "Otto Brenner", "Ines Carrow")
TOWNS = ("Norbury", "Ashcombe", "Kelsey", "Thornbury")


def hotpot_rows(n: int = 4) -> list[dict]:
    rows = []
    for i in range(n):
        person, town, teacher = PEOPLE[i % 4], TOWNS[i % 4], PEOPLE[(i + 1) % 4]
        context = [{"title": person, "text": f"{person} was an English composer born in {town} in {1901 + i}, "
                                             f"who studied with {teacher} in London. He wrote three symphonies and "
                                             f"moved to Bristol in {1930 + i}."},
                   {"title": town, "text": f"{town} is a market town in Kent with 14,000 residents. "
                                           f"The composer {person} grew up there, not in Dover."}]
        context += [{"title": f"Topic {j}", "text": text} for j, text in enumerate(FILLER[:6])]
        rows.append({"id": f"q{i}", "question": f"In which town was the composer {person} born?", "answer": town,
                     "type": "bridge", "supporting_titles": [person, town], "context": context})
    return rows


@pytest.fixture
def questions():
    return build_questions(hotpot_rows())


def test_questions_are_read_and_bad_records_named(tmp_path, questions):
    assert [q.id for q in questions] == ["q0", "q1", "q2", "q3"] and len(questions[0].passages) == 8
    assert questions[0].passages[0].id == "q0/p0" and questions[0].passages[0].gold
    with pytest.raises(InputError, match="record 2: key 'question'"):
        build_questions([hotpot_rows(1)[0], {"id": "x", "answer": "y", "context": []}], "f.jsonl")
    with pytest.raises(InputError, match="nope.jsonl"):
        load_questions(tmp_path / "nope.jsonl")


def test_a_whole_run_and_its_outputs(questions, tmp_path):
    evaluation = GenerationEvaluation(GenerationSettings(), HashEmbedder("hash"), verifier_embedder=HashEmbedder("v"))
    result = evaluation.run(questions)
    assert set(result.rows) == {CLEAN, *HEADLINE_NAMES}
    for name in HEADLINE_NAMES:
        m = result.by_profile[name]
        assert m["questions"] + m["skipped"] == 4 and m["errors"] == 0, name
    assert result.by_profile["swap-in-passage"]["questions"] >= 1
    assert result.by_profile["swap-in-passage"]["byzantine_false_claims"] >= 1
    assert result.clean["byzantine_claim_recall"] is None and result.clean["questions"] == 4
    assert set(result.clean["honest_false_flag_rate_by_generator"]) == {k.value for k in HonestKind}

    settings = {"profiles": list(HEADLINE_NAMES), "seed": 0, "k": 5}
    paths = write_outputs(result, settings, tmp_path / "out" / "gen.json", {q.id: q.question for q in questions})
    data = json.loads(paths["json"].read_text())
    assert data["n_questions"] == 4 and set(data["by_profile"]) == set(HEADLINE_NAMES)
    for metrics in [*data["by_profile"].values(), data["clean"]]:
        assert set(gm.METRICS) <= set(metrics)
    assert set(data["baseline"]) == {*HEADLINE_NAMES, CLEAN}
    assert set(data["splits"]) == {"dev", "test"}
    for part in data["splits"].values():
        assert set(part["by_profile"]) == set(data["by_profile"]) and set(part["clean"]) == set(data["clean"])
        assert set(part["baseline"]) == set(data["baseline"])
    assert set(data["targets_met"]) == {"dev", "test"} and {t["split"] for t in data["targets"]} == {"dev", "test"}
    assert "after it" in data["challenge_note"]
    cases = [json.loads(line) for line in paths["cases"].read_text().splitlines()]
    assert len(cases) == 4 * (len(HEADLINE) + 1)
    assert {"id", "split", "profile", "roles", "verdict", "question"} <= set(cases[0])
    svg = ET.fromstring(paths["svg"].read_text())
    bars = [e for e in svg.iter() if e.get("class") == "bar"]
    assert {b.get("data-group") for b in bars} <= set(HEADLINE_NAMES) and bars
    markdown = paths["markdown"].read_text()
    for name in HEADLINE_NAMES:
        assert f"## {name}" in markdown
    assert "defence dev" in markdown and "baseline test" in markdown and "gen.svg" in markdown
    assert lie_table(result, "role-swap").splitlines()[0].startswith("| metric | defence dev | defence test")
    assert summary(result, settings)["by_profile"] == data["by_profile"]


def test_a_defence_that_raises_is_recorded_not_fatal(questions):
    async def broken(*args, **kwargs):
        raise RuntimeError("boom")
    evaluation = GenerationEvaluation(GenerationSettings(), HashEmbedder("hash"), profiles=(ALL["liar-alone"],),
                                      adjudicator=broken)
    result = evaluation.run(questions[:1])
    rows = result.rows["liar-alone"] + result.rows[CLEAN]
    assert all(r.verdict == "error" and "boom" in r.error for r in rows) and result.clean["errors"] == 1


def test_legacy_profiles_still_run(questions):
    evaluation = GenerationEvaluation(GenerationSettings(), HashEmbedder("hash"),
                                      profiles=(ALL["fabricate"], ALL["omit-best"]))
    result = evaluation.run(questions[:2])
    assert result.by_profile["fabricate"]["byzantine_claim_recall"] == 1.0    # cites a chunk not in the context
    assert result.by_profile["omit-best"]["byzantine_false_claims"] == 0      # quotes the context verbatim
    assert LieKind("fabricate").legacy


# ---- the command line ----------------------------------------------------------------------------

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


# ---- the real data -------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(not (SHARED / "hotpotqa_dev_sample.jsonl").is_file(),
                    reason=f"the shared evaluation data is not at {SHARED}")
def test_generation_eval_on_twenty_real_questions(tmp_path):
    import subprocess
    import sys
    out = tmp_path / "gen.json"
    done = subprocess.run([sys.executable, "main.py", "eval", "generation", "--limit", "20", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=850)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["n_questions"] == 20 and set(data["by_profile"]) == set(HEADLINE_NAMES)
    for metrics in [*data["by_profile"].values(), data["clean"]]:
        assert set(gm.METRICS) <= set(metrics)
        assert metrics["questions"] + metrics["skipped"] == 20
    assert set(data["baseline"]) == {*HEADLINE_NAMES, CLEAN}
    assert set(data["splits"]) == {"dev", "test"}
    assert sum(part["n_questions"] for part in data["splits"].values()) == 20
    for part in data["splits"].values():
        assert set(part["by_profile"]) == set(HEADLINE_NAMES) and "clean" in part and "targets" in part
    assert data["settings"]["embedder"] == "dense-minilm"
    # the baseline follows two colluders whenever they outnumber the honest generator
    assert data["baseline"]["collude-2v1"]["byzantine_answer_given_rate"] >= 0.9
    for suffix in (".md", ".svg"):
        assert out.with_suffix(suffix).is_file()
