"""A whole evaluation run on tiny synthetic cases with a hashing embedder (no model, no shared data)."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

import main
from bench.evaluation.metrics import METRICS
from bench.evaluation.report import metrics_table, summary, write_outputs
from bench.evaluation.runner import METHODS, Evaluation, RunConfig
from engine.config import RetrievalSettings
from engine.errors import InputError

SETTINGS = {"attack": "agent", "collude": True, "retrievers": 5, "byzantine": 2, "k": 5, "form": "both"}


def test_agent_attack_run_with_the_real_defence(cases, hash_embedders, tmp_path):
    config = RunConfig(attack="agent", collude=True, retrievers=5, byzantine=2)
    result = Evaluation(RetrievalSettings(), hash_embedders).run(cases, config)
    assert set(result.metrics) == {"prefixed", "bare"} and result.form_applies
    for form, by_method in result.metrics.items():
        assert list(by_method) == list(METHODS)
        for method, metrics in by_method.items():
            assert set(METRICS) <= set(metrics)
            assert 0 <= metrics["context_asr"] <= 1 and metrics["errors"] == 0
            assert (metrics["anomaly_fpr"] is None) == (method != "defense")
        assert by_method["naive"]["context_asr"] == 0.4        # 2 of 5 equally likely picks lie
        assert by_method["majority"]["context_asr"] == 0       # 2 colluders of 5 are no majority
    rows = result.rows["prefixed"]["defense"]
    assert [r.id for r in rows] == ["q0", "q1", "q2"] and all(r.overhead_ms > 0 for r in rows)

    paths = write_outputs(result, SETTINGS, tmp_path / "run.json", {c.id: c.question for c in cases})
    data = json.loads(paths["json"].read_text())
    assert data["n_questions"] == 3 and data["settings"]["attack"] == "agent"
    assert set(data["forms"]) == {"prefixed", "bare"}
    assert set(data["forms"]["bare"]["baselines"]) == {"naive", "union", "majority", "trustrag", "trustrag-pooled"}
    assert "context_asr" in data["forms"]["bare"]["defense"]
    sizes = data["split_sizes"]
    assert sum(sizes.values()) == 3 and set(data["splits"]) == set(sizes)
    for split, by_form in data["splits"].items():
        assert set(by_form) == {"prefixed", "bare"}
        assert set(by_form["bare"]["defense"]) == set(data["forms"]["bare"]["defense"])
        assert by_form["bare"]["defense"]["n"] == sizes[split]
    ET.parse(paths["svg"])
    markdown = paths["markdown"].read_text()
    assert "run.svg" in markdown and "| defense |" in markdown and "## Form: bare" in markdown
    assert "ctx_asr dev" in markdown or "ctx_asr test" in markdown
    lines = [json.loads(x) for x in paths["cases"].read_text().splitlines()]
    assert len(lines) == 2 * len(METHODS) * 3
    assert set(lines[0]) >= {"id", "method", "context_ids", "attack_count", "answer", "verdict", "question"}


def test_single_form_json_has_defense_and_baselines_at_the_top(cases, hash_embedders):
    result = Evaluation(RetrievalSettings(), hash_embedders).run(cases[:1], RunConfig(attack="corpus", forms=("bare",)))
    data = summary(result, {"form": "bare"})
    assert set(data) >= {"n_questions", "settings", "defense", "baselines", "forms", "splits"}
    assert data["forms"]["bare"]["defense"] == data["defense"]
    assert data["baselines"]["union"]["context_asr"] == 1.0      # planted poison is what a retriever finds first


def test_attacks_without_poison_reuse_one_run_for_both_forms(cases, hash_embedders):
    result = Evaluation(RetrievalSettings(), hash_embedders).run(cases, RunConfig(attack="none"))
    assert not result.form_applies and result.rows["prefixed"] is result.rows["bare"]
    assert all(m["context_asr"] == 0 for m in result.metrics["bare"].values())
    assert result.metrics["bare"]["naive"]["clean_recall_at_k"] == 1.0


class Abstaining:
    def __init__(self, settings, embedder):
        pass

    def run(self, question, replies, *, reputations=None, kinds=None, mode="full"):
        return SimpleNamespace(context=(), excluded=(), suspects=(), positions=(), abstain_reason="conflict",
                               fallback=False, timings_ms={})


class Broken(Abstaining):
    def run(self, *args, **kwargs):
        raise RuntimeError("mid-edit")


def test_abstentions_and_defence_errors_are_counted_not_fatal(cases, hash_embedders):
    config = RunConfig(attack="agent", forms=("bare",))
    abstaining = Evaluation(RetrievalSettings(), hash_embedders, defence_factory=Abstaining).run(cases, config)
    m = abstaining.metrics["bare"]["defense"]
    assert m["abstention_rate"] == 1.0 and m["context_asr"] == 0 and m["answer_accuracy"] == 0
    broken = Evaluation(RetrievalSettings(), hash_embedders, defence_factory=Broken).run(cases, config)
    assert broken.metrics["bare"]["defense"]["errors"] == 3
    assert broken.rows["bare"]["defense"][0].detail["error"] == "RuntimeError: mid-edit"
    assert "defense" in metrics_table(broken.metrics["bare"])


@pytest.mark.parametrize("config, message", [
    (RunConfig(retrievers=3, byzantine=3), "at least one retriever is honest"),
    (RunConfig(retrievers=6), "at most 5"),
    (RunConfig(attack="tamper", variant="paraphrased"), "--variant paraphrased applies to --attack agent or corpus"),
    (RunConfig(attack="corpus", variant="name-swap"), "--variant name-swap"),
    (RunConfig(attack="corpus", poison_count=0), "--poison-count"),
    (RunConfig(attack="none", byzantine=1), "--byzantine must be 0"),
    (RunConfig(attack="omit", byzantine=0), "at least one Byzantine"),
    (RunConfig(k=0), "--k"),
])
def test_bad_run_settings_are_input_errors(config, message):
    with pytest.raises(InputError, match=message):
        config.validate()


def test_defaults_for_byzantine_depend_on_the_attack():
    assert RunConfig(attack="agent").validate().byzantine == 1
    assert RunConfig(attack="corpus").validate().byzantine == 0
    assert RunConfig(attack="none").validate().byzantine == 0


@pytest.mark.parametrize("argv", [
    ["eval", "retrieval", "--limit", "0"],
    ["eval", "retrieval", "--retrievers", "2", "--byzantine", "2"],
    ["eval", "retrieval", "--file", "/nonexistent/cases.jsonl"],
    ["eval", "retrieval", "--retrievers", "6"],
    ["eval", "retrieval", "--attack", "corpus", "--poison-count", "9"],
])
def test_cli_bad_input_exits_2_naming_the_problem(argv, capsys):
    assert main.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and any(word in err for word in ("--limit", "--byzantine", "/nonexistent",
                                                                       "--retrievers", "--poison-count"))


def test_cli_rejects_an_unknown_attack(capsys):
    with pytest.raises(SystemExit) as exc:
        main.main(["eval", "retrieval", "--attack", "bribe"])
    assert exc.value.code == 2 and "bribe" in capsys.readouterr().err


def test_split_selects_cases_and_metrics_are_reported_per_split(hash_embedders):
    from bench.evaluation.splits import split_of
    from tests.evaluation.conftest import make_case
    many = [make_case(n) for n in range(8)]
    dev = [c.id for c in many if split_of(c.id) == "dev"]
    assert 0 < len(dev) < 8
    evaluation = Evaluation(RetrievalSettings(), hash_embedders)
    result = evaluation.run(many, RunConfig(attack="corpus", forms=("bare",), split="dev"))
    assert result.n_questions == len(dev) and set(result.split_metrics) == {"dev"}
    assert [r.id for r in result.rows["bare"]["defense"]] == dev
    every = evaluation.run(many, RunConfig(attack="corpus", forms=("bare",)))
    assert set(every.split_metrics) == {"dev", "test"} and every.split_sizes["dev"] == len(dev)
    for key in ("context_asr", "clean_recall_at_k", "answer_asr", "n"):
        assert every.split_metrics["dev"]["bare"]["union"][key] == result.metrics["bare"]["union"][key]


def test_text_variants_run_the_bare_form_only_and_tamper_answers_are_null(cases, hash_embedders):
    evaluation = Evaluation(RetrievalSettings(), hash_embedders)
    para = evaluation.run(cases, RunConfig(attack="corpus", variant="paraphrased"))
    assert set(para.metrics) == {"bare"} and para.poison_similarity["bare"] is not None
    tamper = evaluation.run(cases, RunConfig(attack="tamper", variant="name-swap"))
    m = tamper.metrics["bare"]["defense"]
    assert m["answer_asr"] is None and m["answer_accuracy"] is not None
