"""Rule-based question decomposition: shapes, hops, "#1" placeholders, filling them, and measuring
the rules on small JSONL files shaped like the shared MuSiQue and HotpotQA samples."""
import json

import pytest

from bench.evaluation.decomposition import decomposition_f1, measure, report_markdown
from bench.evaluation.splits import DEV, TEST, split_of
from engine.errors import InputError
from engine.stages.decompose import decompose, fill
from engine.stages.model import QuestionShape, SubQuestion


@pytest.mark.parametrize("question, entities, first_hop", [
    ("Were Scott Derrickson and Ed Wood of the same nationality?", ("Scott Derrickson", "Ed Wood"),
     "What is the nationality of Scott Derrickson?"),
    ("Who is older, Annie Morton or Terry Richardson?", ("Annie Morton", "Terry Richardson"),
     "When was Annie Morton born?"),
    ("Are Local H and For Against both from the United States?", ("Local H", "For Against"),
     "Is Local H from the United States?"),
    ("Which magazine was started first, Arthur's Magazine or First for Women?",
     ("Arthur's Magazine", "First for Women"), "When was Arthur's Magazine started?"),
    ("Are the Laleli Mosque and Esma Sultan Mansion located in the same neighborhood?",
     ("Laleli Mosque", "Esma Sultan Mansion"), "What is the neighborhood of Laleli Mosque?"),
    ("Which is taller, X or Y?", ("X", "Y"), "How tall is X?"),
])
def test_comparisons_get_one_hop_per_entity_asking_about_that_entity_alone(question, entities, first_hop):
    d = decompose(question)
    assert d.shape is QuestionShape.COMPARISON and "comparison" in d.reason
    assert tuple(h.entity for h in d.hops) == entities
    assert [h.hop for h in d.hops] == [0, 1]
    assert d.hops[0].text == first_hop
    assert entities[1] in d.hops[1].text and entities[0] not in d.hops[1].text


@pytest.mark.parametrize("question, first, second", [
    ("What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?",
     "Who portrayed Corliss Archer in the film Kiss and Tell?", "What government position was held by #1?"),
    ('The director of the romantic comedy "Big Stone Gap" is based in what New York city?',
     'Who is the director of the romantic comedy "Big Stone Gap"?', "#1 is based in what New York city?"),
    ("Who was the first president of the association which published Journal of Psychotherapy Integration?",
     "What association published Journal of Psychotherapy Integration?", "Who was the first president of #1?"),
    ("Who was the first president of Damerjog's country?",
     "What is the country of Damerjog?", "Who was the first president of #1?"),
])
def test_bridges_ask_for_the_bridge_entity_then_the_outer_question_with_a_placeholder(question, first, second):
    d = decompose(question)
    assert d.shape is QuestionShape.BRIDGE and d.reason.startswith("bridge")
    assert [h.text for h in d.hops] == [first, second]
    assert [h.hop for h in d.hops] == [0, 1] and all(h.entity == "" for h in d.hops)


def test_nested_descriptions_give_a_chain_whose_placeholders_point_at_the_previous_hop():
    d = decompose("What is the usual average snowfall in the city where the performers of Brother were formed?")
    assert d.shape is QuestionShape.BRIDGE
    assert [h.text for h in d.hops] == ["Who are the performers of Brother?", "What is the city where #1 were formed?",
                                        "What is the usual average snowfall in #2?"]


@pytest.mark.parametrize("question", [
    "When was the Eiffel Tower built?",
    "What is the capital of France?",                                    # the description is the answer
    "Who is the director of Jump for Glory?",
    "What is the name of the state where Kraus House is located?",       # "the name of X" is X
    "Who wrote Pride and Prejudice?",                                    # a title with "and", not two things
    "Is Pride and Prejudice a novel?",
    "The director of Jump for Glory is who?",
])
def test_simple_questions_stay_single_with_the_question_as_the_only_hop(question):
    d = decompose(question)
    assert d.shape is QuestionShape.SINGLE
    assert [(h.text, h.hop) for h in d.hops] == [(question, 0)]


def test_the_hops_of_a_decomposition_are_single_questions_themselves():
    for question in ("Who was the first president of the association which published Journal of "
                     "Psychotherapy Integration?", "Who is the spouse of the director of Jump for Glory?"):
        assert decompose(decompose(question).hops[0].text).shape is QuestionShape.SINGLE


def test_fill_puts_the_answers_of_earlier_hops_in_place_of_their_one_based_placeholders():
    sub = SubQuestion("Is #2 older than #1, and is #3 known?", hop=3)
    assert fill(sub, {0: "Ed Wood", 1: "Tim Burton"}) == "Is Tim Burton older than Ed Wood, and is #3 known?"
    assert fill(SubQuestion("Who was the first president of #1?", 1), {}) == "Who was the first president of #1?"


@pytest.mark.parametrize("question", ["", "   ", "?", None])
def test_an_empty_question_is_an_input_error(question):
    with pytest.raises(InputError, match="empty"):
        decompose(question)


def test_decomposition_f1_aligns_hops_and_ignores_placeholders():
    # {directed, play, brand} against {brand, director}: P 1/3, R 1/2, F1 0.4; the second pair is exact.
    assert decomposition_f1(["Who directed the play Brand?", "Where was #1 born?"],
                            ["Brand >> director", "Where was #1 born?"]) == pytest.approx((0.4 + 1.0) / 2)
    assert decomposition_f1(["Where was Brand made?"], ["Brand >> director", "Where was #1 born?"]) < 0.5


def _ids(split: str, count: int) -> list[str]:
    """Record ids that fall in the given split (the split is a hash of the id)."""
    return [i for i in (f"q{n}" for n in range(200)) if split_of(i) == split][:count]


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_measure_counts_detection_hops_and_shapes_per_split(tmp_path):
    dev, test = _ids(DEV, 3), _ids(TEST, 1)
    musique = _write(tmp_path / "musique.jsonl", [
        {"id": dev[0], "question": "Who is the spouse of the director of Jump for Glory?",
         "question_decomposition": [{"question": "Who is the director of Jump for Glory?"},
                                    {"question": "Who is the spouse of #1?"}]},
        {"id": dev[1], "question": "When was the Eiffel Tower built?",          # gold says 2 hops, we say 1
         "question_decomposition": [{"question": "Gustave >> architect"}, {"question": "When was #1 born?"}]},
        {"id": test[0], "question": "What is the country where the Bubye River is found?",
         "question_decomposition": [{"question": "Bubye River >> country"}, {"question": "x #1"}, {"question": "y"}]},
    ])
    hotpot = _write(tmp_path / "hotpot.jsonl", [
        {"id": dev[0], "type": "comparison", "question": "Who is older, Annie Morton or Terry Richardson?"},
        {"id": dev[1], "type": "bridge", "question": "Who did the Star and Dagger bass player marry?"},
        {"id": dev[2], "type": "bridge", "question": "Tysons Galleria is located in what county?"},
        {"id": test[0], "type": "comparison", "question": "Which is taller, X or Y?"},
    ])
    report = measure(musique, hotpot)
    m, h = report.dev.musique, report.dev.hotpot
    assert (m.n, m.multi_hop, m.hop_count) == (2, 0.5, 0.5)
    assert m.sub_question_f1 == pytest.approx(0.5)            # the first pair word for word, the second none
    assert (m.n_gold_steps, m.gold_steps_split) == (3, 0.0)    # the ">>" step is not a question
    assert (h.n, h.n_bridge, h.n_comparison) == (3, 2, 1)
    assert h.shape_accuracy == pytest.approx(2 / 3)
    assert (h.bridge_recall, h.comparison_recall, h.majority_baseline) == (0.5, 1.0, pytest.approx(2 / 3))
    assert (report.test.musique.n, report.test.musique.multi_hop, report.test.hotpot.shape_accuracy) == (1, 0.0, 1.0)
    assert report.dev.control is None
    table = report_markdown(report)
    assert "| HotpotQA shape accuracy |" in table and "0.667" in table and "| dev | test |" in table


def test_measure_names_the_file_and_line_of_a_malformed_record(tmp_path):
    hotpot = _write(tmp_path / "hotpot.jsonl", [{"id": "a", "type": "bridge", "question": "Who?"}])
    bad = tmp_path / "musique.jsonl"
    bad.write_text('{"id": "a", "question": "Who?", "question_decomposition": [{"question": "x"}]}\n\n'
                   '{"id": "b", "question": "Who?"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"musique\.jsonl: line 3: key 'question_decomposition'"):
        measure(bad, hotpot)
    wrong_type = _write(tmp_path / "hotpot2.jsonl", [{"id": "a", "type": "yes/no", "question": "Who?"}])
    with pytest.raises(InputError, match=r"hotpot2\.jsonl: line 1: key 'type'"):
        measure(_write(tmp_path / "empty.jsonl", []), wrong_type)
    (tmp_path / "broken.jsonl").write_text("{not json\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"broken\.jsonl: line 1"):
        measure(tmp_path / "broken.jsonl", hotpot)
