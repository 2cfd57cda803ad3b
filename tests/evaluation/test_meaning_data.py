"""The meaning verifier's training pairs (bench/train/meaning_data.py): split by source, never from what is
evaluated, and each negative really differs from what its premise says."""
from __future__ import annotations

import json
import random

from bench.train import meaning_data as md
from bench.train.meaning_data import (ANSWERS, DEV, ENTAILS, TRAIN, _sentence_pairs, corpus_pairs, demo_documents,
                                      musique_pairs, question_kind, split_of)


def record(i: int) -> dict:
    """A MuSiQue-shaped record (two hops, three paragraphs), written here: the suite reads no shared data."""
    return {"id": f"2hop__{i}", "question": "Who founded the observatory where Pluto was discovered?",
            "answer": "Percival Lowell", "question_decomposition": [
                {"question": "Where was Pluto discovered?", "answer": "Lowell Observatory", "paragraph_support_idx": 0},
                {"question": "Who founded #1 ?", "answer": "Percival Lowell", "paragraph_support_idx": 1}],
            "paragraphs": [
                {"idx": 0, "text": "Pluto was discovered in 1930 by Clyde Tombaugh at Lowell Observatory in Flagstaff. "
                                   "It was the first object found in the Kuiper belt, long before any other."},
                {"idx": 1, "text": "Lowell Observatory was founded by Percival Lowell in 1894 on Mars Hill. "
                                   "The observatory later built the Discovery Channel Telescope near Happy Jack."},
                {"idx": 2, "text": "The Rose Bowl is a stadium in Pasadena, California, opened in 1922 by the city."}]}


def test_musique_pairs_keep_each_record_in_one_split_and_resolve_the_hops(tmp_path):
    path = tmp_path / "musique.jsonl"
    path.write_text("\n".join(json.dumps(record(i)) for i in range(40)))
    pairs = musique_pairs(path)
    by_record = {}
    for i in range(40):
        by_record[f"2hop__{i}"] = split_of(f"musique:2hop__{i}")
    assert set(by_record.values()) == {TRAIN, DEV}          # both splits are used, each record whole
    answers = {(p.first, p.second, p.label) for p in pairs if p.task == ANSWERS}
    assert ("Who founded Lowell Observatory ?", "Percival Lowell", 1) in answers      # "#1" became the hop's answer
    assert any(label == 0 and "Rose Bowl" in second for _, second, label in answers)   # a near miss, not the answer
    qa = [p for p in pairs if p.origin == "musique-qa-entailed"]
    assert qa and all(p.second.endswith("Lowell Observatory.") or p.second.endswith("Percival Lowell.") for p in qa)


def test_no_document_a_demo_question_is_asked_of_is_trained_on():
    demo = demo_documents()
    assert "mars-moons" in demo
    from bench.train.meaning_data import CORPUS, _front_matter_body
    demo_sentences = {s for name in demo if (CORPUS / f"{name}.md").exists()
                      for s in _front_matter_body((CORPUS / f"{name}.md").read_text()).split(". ")}
    premises = {p.first for p in corpus_pairs()}
    assert not any(sentence and sentence in premise for premise in premises for sentence in demo_sentences
                   if len(sentence) > 60)


def test_each_negative_of_a_sentence_differs_from_it_and_each_copy_is_entailed():
    passage = ("Pluto was discovered in 1930 by Clyde Tombaugh at the Lowell Observatory in Flagstaff. "
               "The observatory was founded by Percival Lowell in 1894, after he left Boston.")
    pairs = _sentence_pairs(passage, ["The Rose Bowl is a stadium in Pasadena, California, opened in 1922."],
                            TRAIN, "t", random.Random(0))
    kinds = {p.origin for p in pairs}
    assert {"t-copy", "t-role-swap", "t-foreign-name", "t-number", "t-splice", "t-neighbour"} <= kinds
    for p in pairs:
        assert p.task == ENTAILS
        if p.label == 0:
            assert p.second not in p.first, p
        elif p.origin == "t-copy":
            assert p.second == p.first


def test_question_kinds_tell_a_date_from_a_person_from_a_count():
    assert question_kind("When was Pluto discovered?") == "time"
    assert question_kind("Who discovered Pluto?") == "person"
    assert question_kind("How many moons does Mars have?") == "count"
    assert question_kind("Which observatory?") == "other"



def test_questions_made_from_a_sentence_ask_for_its_subject_year_and_count_the_way_people_ask():
    pluto = "Pluto was discovered in 1930 by Clyde Tombaugh at Lowell Observatory."
    by_span = {span: (q, k) for q, span, k, _ in md.cloze_questions(pluto, random.Random(0))}
    assert by_span["1930"] == ("In what year was Pluto discovered by Clyde Tombaugh at Lowell Observatory?", "year")
    assert by_span["Pluto"][0].endswith(" was discovered in 1930 by Clyde Tombaugh at Lowell Observatory?")
    jupiter = "Jupiter has four large moons, called the Galilean moons."
    asked = {span: (q, removed) for q, span, _, removed in md.cloze_questions(jupiter, random.Random(0))}
    assert asked["four"][0] == "How many large moons does Jupiter have?"
    # The sentence with its answer taken out keeps every other word: the hardest negative of the answers task.
    assert "four" not in asked["four"][1] and asked["four"][1].startswith("Jupiter has ")


def test_no_answers_negative_shares_more_question_words_than_the_sentence_that_answers(tmp_path):
    path = tmp_path / "musique.jsonl"
    path.write_text("\n".join(json.dumps(record(i)) for i in range(6)), encoding="utf-8")
    pairs = [p for p in md.musique_pairs(path) if p.task == ANSWERS]
    answering = {}
    for p in pairs:
        if p.origin == "musique-answer-sentence":
            answering[p.first] = max(answering.get(p.first, 0), md._shared(p.first, p.second))
    near = [p for p in pairs if p.origin == "musique-near-miss"]
    assert answering and all(md._shared(p.first, p.second) <= answering[p.first] for p in near)
    labels = {p.origin: p.label for p in pairs}
    assert labels["musique-answer-removed"] == 0 and labels["musique-answer-sentence"] == 1
    removed = [p for p in pairs if p.origin == "musique-answer-removed"]
    assert all("Lowell Observatory" not in p.second for p in removed if p.first == "Where was Pluto discovered?")


def test_a_sentence_said_another_way_is_entailed_and_its_roles_exchanged_are_not():
    s = "Enceladus was discovered by William Herschel in 1789."
    assert md._active(s) == "William Herschel discovered Enceladus in 1789."
    assert md._voice_dropped(s) == "Enceladus discovered William Herschel in 1789."
    assert md._time_moved("In 1995, the Rank Group acquired the shares.") == "The Rank Group acquired the shares in 1995."
    assert md._appositive("Io (the innermost moon) is volcanic.") == "Io, the innermost moon, is volcanic."
    # A passive whose agent is a list, or is followed by another clause, is left alone: the roles would blur.
    assert md._active("It was produced by David Toop and Steve Beresford, both of them.") == ""
    labels = {p.origin: p.label for p in _sentence_pairs(s, [], TRAIN, "t", random.Random(0))}
    assert labels["t-active"] == 1 and labels["t-voice-swap"] == 0
