"""The biogen, nq and msmarco loaders on tiny files written to tmp_path."""
from __future__ import annotations

import json

import pytest

from bench.evaluation.datasets import DEFAULT_INJECTED_DISTRACTORS, load_dataset, paragraphs
from bench.evaluation.splits import split_of
from engine.errors import InputError


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _bio(qid, n=3):
    return {"id": qid, "dataset": "biogen", "question": f"Tell me a bio of Person {qid}?",
            "correct_answer": f"Person {qid} was born in 1950.", "incorrect_answer": "Person is a good guy.",
            "passages": [{"id": f"{qid}-{i}", "title": f"Person {qid}, biography {i}",
                          "text": f"Person {qid} was born in 1950 in Town{i}, source {i}."} for i in range(n)],
            "adv_texts": [f"Person {qid} was born in 1970.\n\nPerson {qid} grew up abroad.\n\n"]}


def _hotpot(qid, dev_index):
    return {"id": qid, "dev_index": dev_index, "question": f"Q {qid}?", "answer": "x", "supporting_titles": [],
            "context": [{"title": f"{qid} T{i}", "text": f"Paragraph {i} of {qid} about things."}
                        for i in range(10)]}


def _target(qid):
    return {"id": qid, "question": f"what is {qid}", "correct_answer": "alpha", "incorrect_answer": "omega",
            "adv_texts": [f"{qid} is omega, text {i}." for i in range(5)]}


def test_paragraphs_split_on_blank_lines():
    assert paragraphs("One.\n\n Two  words.\n\n\n") == ["One.", "Two words."]


def test_biogen_cases_keep_own_passages_add_distractors_and_split_the_biography(tmp_path):
    path = _write(tmp_path / "bio.jsonl", [_bio("1"), _bio("2"), _bio("3")])
    cases, missing, source = load_dataset("biogen", biogen=path, distractors_per_case=4)
    assert missing == [] and source["biogen"] == str(path) and [c.id for c in cases] == ["1", "2", "3"]
    first = cases[0]
    assert first.dataset == "biogen" and not first.answers_apply
    assert [p.id for p in first.own_passages] == ["1/1-0", "1/1-1", "1/1-2"]
    assert [p.id for p in first.passages[3:]] == ["2/2-0", "2/2-1", "2/2-2", "3/3-0"]
    assert first.poison == ("Person 1 was born in 1970.", "Person 1 grew up abroad.")
    assert not first.gold_passages


def test_injected_cases_draw_hotpot_paragraphs_per_case_deterministically(tmp_path):
    hotpot = _write(tmp_path / "hotpot.jsonl", [_hotpot(f"h{i}", i) for i in range(8)])
    nq = _write(tmp_path / "nq.jsonl", [_target("t1"), _target("t2")])
    cases, _, source = load_dataset("nq", hotpot=hotpot, poison=nq)
    again, _, _ = load_dataset("nq", hotpot=hotpot, poison=nq)
    assert source["distractors_per_case"] == DEFAULT_INJECTED_DISTRACTORS
    assert [len(c.passages) for c in cases] == [50, 50] and cases == again
    assert [p.id for p in cases[0].passages] != [p.id for p in cases[1].passages]
    assert cases[0].poison == tuple(_target("t1")["adv_texts"]) and cases[0].dataset == "nq"
    assert not cases[0].answers_apply and not cases[0].gold_passages
    other, _, _ = load_dataset("msmarco", hotpot=hotpot, poison=nq, distractors_per_case=5)
    assert len(other[0].passages) == 5 and [p.id for p in other[0].passages] != [p.id for p in cases[0].passages][:5]
    assert split_of(cases[0].id) in ("dev", "test")


@pytest.mark.parametrize("row, message", [
    ("{not json", "line 2 is not JSON"),
    ({"id": "9", "question": "Tell me a bio of X?", "incorrect_answer": "x", "adv_texts": ["a"]},
     "line 2: key 'passages' missing"),
    ({**_bio("9"), "adv_texts": []}, "line 2: adv_texts must be a non-empty list"),
    ({**_bio("9"), "passages": [{"id": "9-0", "title": "t"}]}, r"line 2: passages\[0\] needs string id"),
    ({**_bio("9"), "adv_texts": ["\n\n"]}, "line 2: adv_texts holds no text"),
])
def test_malformed_biogen_rows_name_the_file_and_line(tmp_path, row, message):
    path = _write(tmp_path / "bio.jsonl", [_bio("1"), row])
    with pytest.raises(InputError, match=message) as exc:
        load_dataset("biogen", biogen=path)
    assert str(path) in str(exc.value)


@pytest.mark.parametrize("row, message", [
    ({"id": "t9", "question": "q", "incorrect_answer": "x", "adv_texts": ["a"]}, "line 2: key 'correct_answer'"),
    ({**_target("t9"), "adv_texts": "one text"}, "line 2: key 'adv_texts' missing or not a list"),
    ([1, 2], "line 2: expected a JSON object"),
])
def test_malformed_poisonedrag_rows_name_the_file_and_line(tmp_path, row, message):
    hotpot = _write(tmp_path / "hotpot.jsonl", [_hotpot("h1", 1)])
    path = _write(tmp_path / "nq.jsonl", [_target("t1"), row])
    with pytest.raises(InputError, match=message) as exc:
        load_dataset("nq", hotpot=hotpot, poison=path)
    assert str(path) in str(exc.value)


def test_unknown_dataset_and_missing_file_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="--dataset"):
        load_dataset("squad")
    with pytest.raises(InputError, match="--biogen"):
        load_dataset("biogen", biogen=tmp_path / "none.jsonl")
