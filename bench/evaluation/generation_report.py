"""Printing and writing a trusted-generation run: a text table, the JSON summary, a Markdown report
(one table per lie kind, the defence beside the baseline, dev and test columns; the targets per
split; examples of lies given as answers and honest claims flagged), an SVG chart and the
per-question rows (`<stem>.cases.jsonl`)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from . import generation_metrics as gm
from .generation import GenerationResult
from .generation_profiles import CLEAN, NOT_GENERATION_FAULTS
from .plot import write_grouped_bars
from .report import cell, format_table, output_paths, settings_lines
from .splits import SPLITS

DEFENCE_ROWS = ("byzantine_answer_given_rate", "honest_false_flag_rate", "byzantine_claim_recall",
                "byzantine_claim_precision", "answer_accuracy", "honest_answer_accuracy", "abstention_rate",
                "questions", "skipped", "verify_ms_per_claim_p50")
EXAMPLES = 3
BASELINE_METHOD = ("majority by text similarity without evidence checks over the same generators: the answer with "
                   "the highest mean token Jaccard to the other answers, no abstention")
CHALLENGE_NOTE = ("Challenge-response is not part of `adjudicate`: engine/pipeline.py `Pipeline._challenge` runs after "
                  "it, asks only candidates with an unsupported claim for a quote, and records the outcome on the "
                  "candidate without changing the verdict. So a challenge-liar whose lie is supported is never "
                  "asked, and one that is asked cannot change the answer. The evaluation calls `adjudicate` alone and "
                  "replays the challenge beside it for challenge-liar (the liar quotes the real sentence).")


def _cell(metrics: Mapping[str, Any] | None, key: str) -> str:
    if metrics is None or key not in metrics:
        return "-"
    return cell(metrics[key], "_ms_p50" if key.startswith("verify_ms") else key)


def _views(result: GenerationResult) -> list[tuple[str, Mapping]]:
    """(column label, summary) for dev, test and all questions."""
    whole = {"by_profile": result.by_profile, "clean": result.clean, "baseline": result.baseline}
    return [(split, result.splits[split]) for split in SPLITS] + [("all", whole)]


def lie_table(result: GenerationResult, run: str, markdown: bool = True) -> str:
    """Metric rows; defence dev | test | all, then the baseline's dev | test | all."""
    views = _views(result)
    header = ["metric"] + [f"defence {label}" for label, _ in views] + [f"baseline {label}" for label, _ in views]
    rows = []
    for key in DEFENCE_ROWS:
        defence = [_cell(v["clean"] if run == CLEAN else v["by_profile"][run], key) for _, v in views]
        baseline = [_cell(v["baseline"][run], key) if key in gm.BASELINE_METRICS else "-" for _, v in views]
        rows.append([key] + defence + baseline)
    return format_table(header, rows, markdown)


def overview_table(result: GenerationResult, markdown: bool = False) -> str:
    """One row per run: the headline rates, dev/test."""
    header = ["run", "byz_given dev", "test", "baseline dev", "test", "honest_ffr dev", "test", "recall",
              "acc", "abstain", "skipped"]
    rows = []
    for run in result.profile_names + (CLEAN,):
        pick = (lambda part: part["clean"]) if run == CLEAN else (lambda part, r=run: part["by_profile"][r])  # noqa
        dev, test = pick(result.splits["dev"]), pick(result.splits["test"])
        whole = result.clean if run == CLEAN else result.by_profile[run]
        rows.append([run, _cell(dev, "byzantine_answer_given_rate"), _cell(test, "byzantine_answer_given_rate"),
                     _cell(result.splits["dev"]["baseline"][run], "byzantine_answer_given_rate"),
                     _cell(result.splits["test"]["baseline"][run], "byzantine_answer_given_rate"),
                     _cell(dev, "honest_false_flag_rate"), _cell(test, "honest_false_flag_rate"),
                     _cell(whole, "byzantine_claim_recall"), _cell(whole, "answer_accuracy"),
                     _cell(whole, "abstention_rate"), _cell(whole, "skipped")])
    return format_table(header, rows, markdown)


def targets_table(result: GenerationResult, markdown: bool = False) -> str:
    mark = {True: "met", False: "NOT MET", None: "n/a"}
    by_key: dict[tuple[str, str], dict[str, dict]] = {}
    for t in result.targets:
        by_key.setdefault((t["metric"], t["scope"]), {})[t["split"]] = t
    rows = []
    for (metric, scope), per_split in by_key.items():
        any_row = next(iter(per_split.values()))
        row = [metric, scope, any_row["target"]]
        for split in SPLITS:
            t = per_split.get(split)
            row += [cell(t["value"], metric), mark[t["met"]]] if t else ["-", "n/a"]
        rows.append(row)
    return format_table(["target", "scope", "needs", "dev", "dev status", "test", "test status"], rows, markdown)


def summary(result: GenerationResult, settings: Mapping[str, Any]) -> dict:
    return {
        "n_questions": result.n_questions,
        "by_profile": {p: dict(m) for p, m in result.by_profile.items()},
        "clean": dict(result.clean),
        "baseline": {p: dict(m) for p, m in result.baseline.items()},
        "splits": {s: dict(part) for s, part in result.splits.items()},
        "baseline_method": BASELINE_METHOD,
        "profiles": {p.name: {"lie": p.lie.value, "liars": p.liars, "honest": p.honest, "about": p.about}
                     for p in result.profiles},
        "pooled": dict(result.pooled),
        "targets": [dict(t) for t in result.targets],
        "targets_met": {split: all(t["met"] is not False for t in result.targets if t["split"] == split)
                        for split in SPLITS},
        "not_generation_faults": dict(NOT_GENERATION_FAULTS),
        "challenge_note": CHALLENGE_NOTE,
        "settings": dict(settings),
        "context": dict(result.context_sizes),
        "timings_s": dict(result.timings_s),
        "embedding": dict(result.embedding),
        "metric_definitions": dict(gm.LEGEND),
    }


def print_tables(result: GenerationResult, stream) -> None:
    stream.write(f"\ntrusted generation, questions: {result.n_questions} (honest: extractive, focused-passage, "
                 f"paraphrase; liars per profile; clean = the three honest)\n")
    stream.write(overview_table(result) + "\n")
    p50, p95 = (cell(result.pooled.get(f"verify_ms_per_claim_{q}"), "_ms_p50") for q in ("p50", "p95"))
    stream.write(f"pooled over every run: verify p50 {p50} ms, p95 {p95} ms over "
                 f"{result.pooled.get('verified_claims', 0)} verified claims\n")
    stream.write("\ntargets\n" + targets_table(result) + "\n")
    stream.flush()


def _short(text: str, n: int = 220) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _changes(row: gm.QuestionRow) -> str:
    return ", ".join(f"{c['old']} → {c['new']}" for c in row.lie_changes) or "nothing: true but irrelevant"


def _liar_claim(row: gm.QuestionRow) -> gm.ClaimRow | None:
    return next((c for c in row.claims if c.byzantine and c.agent == row.chosen_agent), None)


def example_lines(result: GenerationResult, questions: Mapping[str, str]) -> list[str]:
    """The cases behind each shortfall: lies given as answers, honest claims flagged (paraphrases first)."""
    lines = []
    for run in result.profile_names + (CLEAN,):
        rows = result.rows[run]
        block = []
        for r in [r for r in rows if r.byzantine_given][:EXAMPLES]:
            claim = _liar_claim(r)
            verdict = f"{claim.label}: {claim.reason}" if claim else "no claim checked"
            block += [f"- **lie given as the answer** `{r.id}` ({r.split}): {_short(questions.get(r.id, ''), 160)}",
                      f"  - true sentence: \"{_short(r.lie_source)}\"",
                      f"  - lie: \"{_short(r.lie_answer)}\" (changed: "
                      f"{_changes(r)})",
                      f"  - verifier: {verdict}; decision: {r.reason}"]
        flagged = sorted(((r, c) for r in rows for c in r.claims if c.flagged and not c.byzantine),
                         key=lambda rc: rc[1].role != "paraphrase")
        for r, c in flagged[:EXAMPLES]:
            source = r.reference
            block += [f"- **honest {c.role} claim flagged** `{r.id}` ({r.split}): "
                      f"{_short(questions.get(r.id, ''), 160)}",
                      f"  - claim: \"{_short(c.text)}\"" + (f" (from \"{_short(source)}\")"
                                                           if c.role == "paraphrase" and source else ""),
                      f"  - verifier: {c.label}: {c.reason}"]
        if run == CLEAN:
            block += [f"- abstained on `{r.id}`: {r.reason}" for r in rows if r.abstained][:EXAMPLES]
        if block:
            lines += [f"### {run}", ""] + block + [""]
    return lines


def write_outputs(result: GenerationResult, settings: Mapping[str, Any], json_path: Path,
                  questions: Mapping[str, str] | None = None, llm: Mapping[str, Any] | None = None) -> dict[str, Path]:
    """llm: the LLM generator's row (bench.evaluation.llm_row), as `llm` in the JSON with its cases beside."""
    questions = questions or {}
    data = summary(result, settings)
    if llm is not None:
        data["llm"] = dict(llm["summary"])
    paths = output_paths(json_path, data)

    groups = list(result.profile_names)
    series = [(f"{who} {split}", [(result.splits[split]["by_profile"][g] if who == "defence" else
                                   result.splits[split]["baseline"][g]).get("byzantine_answer_given_rate")
                                  for g in groups])
              for who in ("defence", "baseline") for split in SPLITS]
    title = f"liar's answer given: defence vs similarity majority, {result.n_questions} HotpotQA questions"
    write_grouped_bars(paths["svg"], groups, series, title=title, y_label="byzantine answer given rate",
                       x_label="lie kind")

    with paths["cases"].open("w", encoding="utf-8") as fh:
        for run, rows in result.rows.items():
            for row in rows:
                record = row.to_json()
                record["question"] = questions.get(row.id, "")
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            for skip in result.skips.get(run, ()):
                fh.write(json.dumps({"id": skip.id, "split": skip.split, "profile": skip.profile, "verdict": "skipped",
                                     "reason": skip.reason, "question": questions.get(skip.id, "")},
                                    ensure_ascii=False) + "\n")

    lines = [f"# Trusted-generation evaluation: {result.n_questions} questions", "",
             f"JSON: `{paths['json'].name}` · per-question rows: `{paths['cases'].name}`", "",
             "Per question: the context is the question's own HotpotQA paragraphs ranked by the dense retriever and "
             "cut to the top k. Honest generators: extractive (best sentence), focused-passage (best passage, then its "
             "best sentence) and paraphrase (the extractive sentence in other words); each lie profile puts its liars "
             "beside honest generators drawn from these three, ids shuffled per question; `adjudicate` decides. "
             "Clean: the three honest generators. A claim's truth comes from how it was made; answers are judged "
             "against the gold answer. Splits are by question id (bench/evaluation/splits.py): tune on dev, "
             "report test.", "",
             "## Targets", "", targets_table(result, markdown=True), "",
             "## Overview", "", overview_table(result, markdown=True), "",
             f"Baseline: {BASELINE_METHOD}.", ""]
    for profile in result.profiles:
        m = result.by_profile[profile.name]
        lines += [f"## {profile.name}", "", f"{profile.about} ({profile.liars} liar(s), {profile.honest} honest).", "",
                  lie_table(result, profile.name), "",
                  f"Skipped: {m['skipped']} " + (f"(`{json.dumps(m['skip_reasons'])}`)" if m["skipped"] else "") +
                  f"; honest false flags by generator `{json.dumps(m['honest_false_flag_rate_by_generator'])}`; "
                  f"answers by role `{json.dumps(m['answers_by_role'])}`; false claims' labels "
                  f"`{json.dumps(m['false_claims_labels'])}`"
                  + (f"; challenge replay for the liar `{json.dumps(m['challenge'])}`" if m.get("challenge") else "")
                  + ".", ""]
    lines += [f"## {CLEAN}", "", "Three honest generators, no liar.", "", lie_table(result, CLEAN), "",
              f"Honest false flags by generator `{json.dumps(result.clean['honest_false_flag_rate_by_generator'])}`; "
              f"abstentions `{json.dumps(result.clean['abstentions'])}`.", "",
              "## Challenge-response", "", CHALLENGE_NOTE, "",
              "## Chart", "", f"![liar's answer given, defence vs baseline, dev and test]({paths['svg'].name})", "",
              "## Examples", ""] + (example_lines(result, questions) or ["(nothing to show)", ""])
    if llm is not None:
        from .llm_row import markdown_lines
        lines += markdown_lines(llm["summary"])
        llm_cases = paths["json"].with_name(paths["json"].stem + ".llm.jsonl")
        with llm_cases.open("w", encoding="utf-8") as fh:
            for case in llm["cases"]:
                fh.write(json.dumps(case, ensure_ascii=False) + "\n")
        paths["llm_cases"] = llm_cases
    lines += ["## Metrics", ""] + [f"- **{key}**: {text}" for key, text in gm.LEGEND.items()]
    lines += ["", "## Settings", ""] + settings_lines(settings) + [
              "", f"Wall time: {', '.join(f'{k} {v} s' for k, v in result.timings_s.items())}", ""]
    paths["markdown"].write_text("\n".join(lines), encoding="utf-8")
    return paths
