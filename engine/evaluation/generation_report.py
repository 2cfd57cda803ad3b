"""Printing and writing a trusted-generation run: a text table, the JSON summary, a Markdown report
with the targets and an SVG chart, and the per-question rows (`<stem>.cases.jsonl`)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from . import generation_metrics as gm
from .generation import GenerationResult
from .plot import write_grouped_bars
from .report import cell, format_table, output_paths, settings_lines

COLUMNS = (("byzantine_claim_recall", "recall"), ("byzantine_false_claims", "false_claims"),
           ("byzantine_claim_precision", "precision"), ("honest_false_flag_rate", "honest_ffr"),
           ("byzantine_answer_chosen_rate", "byz_chosen"), ("answer_accuracy", "ans_acc"),
           ("abstention_rate", "abstain"), ("verify_ms_per_claim_p50", "verify_p50_ms"),
           ("verify_ms_per_claim_p95", "verify_p95_ms"))
EXAMPLES = 3


def _value(metrics: Mapping[str, Any] | None, key: str) -> str:
    if metrics is None or key not in metrics:
        return "-"
    return cell(metrics[key], "_ms_p50" if key.startswith("verify_ms") else key)


def table_rows(result: GenerationResult) -> list[list[str]]:
    """One row per profile, the clean run, then the baseline's rows (its columns only)."""
    rows = [[p] + [_value(result.by_profile[p], k) for k, _ in COLUMNS] for p in result.profiles]
    rows.append([gm.CLEAN] + [_value(result.clean, k) for k, _ in COLUMNS])
    for run in result.profiles + (gm.CLEAN,):
        rows.append([f"baseline:{run}"] + [_value(result.baseline[run], k) if k in gm.BASELINE_METRICS else "-"
                                           for k, _ in COLUMNS])
    return rows


def metrics_table(result: GenerationResult, markdown: bool = False) -> str:
    return format_table(["run"] + [short for _, short in COLUMNS], table_rows(result), markdown)


def targets_table(targets, markdown: bool = False) -> str:
    mark = {True: "met", False: "MISSED", None: "n/a"}
    rows = [[t["metric"], t["scope"], t["target"], cell(t["value"], "_ms_p50" if t["metric"].startswith("verify")
                                                        else t["metric"]), mark[t["met"]]] for t in targets]
    return format_table(["target", "scope", "needs", "value", "status"], rows, markdown)


def summary(result: GenerationResult, settings: Mapping[str, Any]) -> dict:
    return {
        "n_questions": result.n_questions,
        "by_profile": {p: dict(m) for p, m in result.by_profile.items()},
        "clean": dict(result.clean),
        "baseline": {p: dict(m) for p, m in result.baseline.items()},
        "baseline_method": ("majority by text similarity without evidence checks: the answer with the highest mean "
                            "token Jaccard to the other answers, no abstention"),
        "pooled": dict(result.pooled),
        "targets": [dict(t) for t in result.targets],
        "targets_met": all(t["met"] is not False for t in result.targets),
        "skipped_profiles": dict(gm.SKIPPED_PROFILES),
        "settings": dict(settings),
        "context": dict(result.context_sizes),
        "timings_s": dict(result.timings_s),
        "embedding": dict(result.embedding),
        "metric_definitions": dict(gm.LEGEND),
    }


def print_tables(result: GenerationResult, stream) -> None:
    stream.write(f"\ntrusted generation, questions: {result.n_questions} "
                 f"(2 honest extractive generators + 1 Byzantine per profile; clean = 3 honest)\n")
    stream.write(metrics_table(result) + "\n")
    stream.write(f"pooled over every run: verify p50 {cell(result.pooled.get('verify_ms_per_claim_p50'), '_ms_p50')} ms,"
                 f" p95 {cell(result.pooled.get('verify_ms_per_claim_p95'), '_ms_p50')} ms over "
                 f"{result.pooled.get('verified_claims', 0)} verified claims\n")
    stream.write("skipped: " + "; ".join(f"{k}: {v}" for k, v in gm.SKIPPED_PROFILES.items()) + "\n")
    stream.write("\ntargets\n" + targets_table(result.targets) + "\n")
    stream.flush()


def _short(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "…"


def example_lines(result: GenerationResult) -> list[str]:
    """A few cases behind each shortfall, so a reader sees which check missed which kind of claim."""
    lines = []
    for run in result.profiles + (gm.CLEAN,):
        rows = result.rows[run]
        missed = [(r, c) for r in rows for c in r.claims if c.false and not c.flagged]
        honest_flags = [(r, c) for r in rows for c in r.claims if c.flagged and not c.false]
        chosen = [r for r in rows if r.byzantine_chosen]
        abstained = [r for r in rows if r.abstained]
        block = []
        for r, c in missed[:EXAMPLES]:
            block.append(f"- missed false claim ({c.origin}) in `{r.id}`: \"{_short(c.text)}\" — {c.label}: {c.reason}")
        for r, c in honest_flags[:EXAMPLES]:
            who = "Byzantine's true" if c.byzantine else "honest"
            block.append(f"- flagged {who} claim ({c.origin}) in `{r.id}`: \"{_short(c.text)}\" — {c.label}: "
                         f"{c.reason}")
        for r in chosen[:EXAMPLES]:
            block.append(f"- Byzantine answer chosen in `{r.id}`: \"{_short(r.chosen_answer)}\" over the honest "
                         f"\"{_short(r.honest_answer, 100)}\" ({r.reason})")
        if run == gm.CLEAN:
            for r in abstained[:EXAMPLES]:
                block.append(f"- abstained on `{r.id}`: {r.reason}")
        if block:
            lines += [f"### {run}", ""] + block + [""]
    return lines


def write_outputs(result: GenerationResult, settings: Mapping[str, Any], json_path: Path,
                  questions: Mapping[str, str] | None = None) -> dict[str, Path]:
    data = summary(result, settings)
    paths = output_paths(json_path, data)

    groups = list(result.profiles) + [gm.CLEAN]
    metrics = {**result.by_profile, gm.CLEAN: result.clean}
    series = [(key, [metrics[g].get(key) for g in groups])
              for key in ("byzantine_claim_recall", "honest_false_flag_rate", "byzantine_answer_chosen_rate")]
    title = f"trusted generation: 2 honest + 1 Byzantine generator, {result.n_questions} HotpotQA questions"
    write_grouped_bars(paths["svg"], groups, series, title=title, y_label="rate", x_label="fault profile")

    with paths["cases"].open("w", encoding="utf-8") as fh:
        for run, rows in result.rows.items():
            for row in rows:
                record = row.to_json()
                if questions:
                    record["question"] = questions.get(row.id, "")
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")

    lines = [f"# Trusted-generation evaluation: {result.n_questions} questions", "",
             f"JSON: `{paths['json'].name}` · per-question rows: `{paths['cases'].name}`", "",
             "Per question: the context is the question's own HotpotQA paragraphs ranked by the dense retriever and "
             "cut to the top k; two honest extractive generators and one Byzantine generator (its id drawn per "
             "question) answer; `adjudicate` decides. Clean: three honest generators.", "",
             "## Targets", "", targets_table(result.targets, markdown=True), "",
             "## Results", "", metrics_table(result, markdown=True), "",
             f"Pooled over every run: verify p50 {cell(result.pooled.get('verify_ms_per_claim_p50'), '_ms_p50')} ms, "
             f"p95 {cell(result.pooled.get('verify_ms_per_claim_p95'), '_ms_p50')} ms over "
             f"{result.pooled.get('verified_claims', 0)} verified claims.", "",
             "Baseline rows: " + data["baseline_method"] + ".", "",
             "Skipped profiles: " + "; ".join(f"**{k}**: {v}" for k, v in gm.SKIPPED_PROFILES.items()) + ".", "",
             "## Chart", "", f"![recall, honest false-flag rate and Byzantine-answer-chosen rate]({paths['svg'].name})",
             "", "## Breakdowns", "", "| run | false claims by origin | missed by origin | honest flags by label | "
             "abstentions | Byzantine answer = honest | Byzantine tied at top |", "|---|---|---|---|---|---|---|"]
    for run, m in list(result.by_profile.items()) + [(gm.CLEAN, result.clean)]:
        lines.append(f"| {run} | `{json.dumps(m['false_claims_by_origin'])}` | "
                     f"`{json.dumps(m['missed_false_claims_by_origin'])}` | `{json.dumps(m['honest_flags_by_label'])}` | "
                     f"`{json.dumps(m['abstentions'])}` | {cell(m['byzantine_answer_same_as_honest'])} | "
                     f"{cell(m['byzantine_tied_at_top'])} |")
    lines += ["", "## Examples", ""] + (example_lines(result) or ["(nothing missed)", ""])
    lines += ["## Metrics", ""] + [f"- **{key}**: {text}" for key, text in gm.LEGEND.items()]
    lines += ["", "A claim of the Byzantine generator is false when it is neither a verbatim sentence of the context "
              "(nor a piece of one between semicolons, as the engine splits answers) nor identical to an honest generator's "
              "claim; flagged means its check is not `supported`.", "",
              "## Settings", ""] + settings_lines(settings) + [
              "", f"Wall time: {', '.join(f'{k} {v} s' for k, v in result.timings_s.items())}", ""]
    paths["markdown"].write_text("\n".join(lines), encoding="utf-8")
    return paths
