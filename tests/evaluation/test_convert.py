"""The converter on a tiny synthetic HotpotQA / PoisonedRAG pair written to tmp_path."""
from __future__ import annotations

import json

import pytest

import main
from bench.evaluation.data import load_cases_from_sources, read_cases, write_cases
from engine.errors import InputError


def _question(qid, dev_index, titles, supporting, answer="Paris"):
    return {"id": qid, "dev_index": dev_index, "question": f"Question {qid}?", "answer": answer, "type": "bridge",
            "supporting_titles": supporting,
            "context": [{"title": t, "text": f"{t} is a paragraph of {qid} number {i}.",
                         "is_supporting": t in supporting} for i, t in enumerate(titles)]}


@pytest.fixture
def sources(tmp_path):
    # File order differs from dev_index order on purpose.
    hotpot = [
        _question("qC", 30, ["C1", "C2", "C3"], ["C1", "C3"]),
        _question("qA", 10, ["A1", "A2", "A3"], ["A2", "A3"], answer="The Beatles"),
        _question("qE", 50, ["E1", "E2", "E3"], ["E1", "E2"]),
        _question("qB", 20, ["B1", "B2", "B3"], ["B1", "B2"]),
        _question("qD", 40, ["D1", "D2", "D3"], ["D2", "D3"]),
    ]
    hotpot[3]["context"][2]["text"] = hotpot[1]["context"][0]["text"]     # qB/p2 duplicates qA/p0
    poison = [
        {"id": "qA", "question": "Question qA?", "correct_answer": "x", "incorrect_answer": "Rome",
         "adv_texts": [f"qA poison {i}" for i in range(5)]},
        {"id": "qMISSING", "question": "?", "correct_answer": "x", "incorrect_answer": "y", "adv_texts": ["p"]},
        {"id": "qE", "question": "Question qE?", "correct_answer": "x", "incorrect_answer": "paris",
         "adv_texts": [f"qE poison {i}" for i in range(5)]},
    ]
    h, p = tmp_path / "hotpot.jsonl", tmp_path / "poison.jsonl"
    h.write_text("".join(json.dumps(r) + "\n" for r in hotpot))
    p.write_text("".join(json.dumps(r) + "\n" for r in poison))
    return h, p


def test_cases_match_ids_flag_gold_and_take_distractors_from_the_next_questions(sources):
    cases, missing = load_cases_from_sources(*sources, distractors_per_case=4)
    assert [c.id for c in cases] == ["qA", "qE"] and missing == ["qMISSING"]
    a = cases[0]
    assert a.question == "Question qA?" and a.incorrect_answer == "Rome" and len(a.poison) == 5
    assert a.correct_answers == ("The Beatles", "Beatles")           # leading article dropped: a trivial alias
    own = [p for p in a.passages if p.id.startswith("qA/")]
    assert [p.id for p in own] == ["qA/p0", "qA/p1", "qA/p2"]
    assert [p.gold for p in own] == [False, True, True]
    distractors = [p for p in a.passages if not p.id.startswith("qA/")]
    # dev_index order: qB then qC; qB/p2 repeats qA/p0's text and is skipped.
    assert [p.id for p in distractors] == ["qB/p0", "qB/p1", "qC/p0", "qC/p1"]
    assert not any(p.gold for p in distractors)
    # The last question wraps around to the first ones; its incorrect answer equals the gold one.
    e = cases[1]
    assert [p.id for p in e.passages if not p.id.startswith("qE/")] == ["qA/p0", "qA/p1", "qA/p2", "qB/p0"]
    assert e.extra["incorrect_is_gold"] is True and a.extra["incorrect_is_gold"] is False


def test_distractor_count_is_a_parameter(sources):
    for n in (0, 2, 7):
        cases, _ = load_cases_from_sources(*sources, distractors_per_case=n)
        assert all(len(c.passages) == 3 + n for c in cases)


def test_written_cases_read_back_identically(sources, tmp_path):
    cases, _ = load_cases_from_sources(*sources, distractors_per_case=3)
    out = tmp_path / "cases.jsonl"
    assert write_cases(cases, out) == 2
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert set(rows[0]) >= {"id", "question", "correct_answers", "incorrect_answer", "passages", "poison"}
    assert set(rows[0]["passages"][0]) == {"id", "title", "text", "gold"}
    assert read_cases(out) == cases


def test_bad_cases_file_names_the_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    with pytest.raises(InputError, match="line 1"):
        read_cases(bad)


def test_cli_convert_and_missing_data_exit_codes(sources, tmp_path, capsys):
    out = tmp_path / "out" / "cases.jsonl"
    code = main.main(["eval", "convert", "--hotpot", str(sources[0]), "--poison", str(sources[1]),
                      "--out", str(out), "--distractors-per-case", "2"])
    assert code == 0 and len(out.read_text().splitlines()) == 2
    missing = tmp_path / "nowhere.jsonl"
    code = main.main(["eval", "convert", "--hotpot", str(missing), "--poison", str(sources[1]), "--out", str(out)])
    assert code == 2 and str(missing) in capsys.readouterr().err
