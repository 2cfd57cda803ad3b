"""Printing and writing an evaluation run: a text table, the JSON summary, a Markdown report with
an SVG chart, and the per-question rows (`<stem>.cases.jsonl`) for inspecting failures."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from .plot import write_grouped_bars
from .runner import DEFENCE, METHODS, RunResult

COLUMNS = (("context_asr", "ctx_asr"), ("poison_share", "poison"), ("answer_asr", "ans_asr"),
           ("answer_asr_unnamed", "ans_asr*"),
           ("answer_accuracy", "ans_acc"), ("clean_recall_at_k", "recall@k"), ("anomaly_fpr", "anom_fpr"),
           ("anomaly_tpr", "anom_tpr"), ("abstention_rate", "abstain"),
           ("answer_from_attack", "ans_from_atk"),
           ("suspect_precision", "susp_prec"), ("suspect_recall", "susp_rec"),
           ("overhead_ms_p50", "p50_ms"), ("overhead_ms_p95", "p95_ms"))
LEGEND = {
    "context_asr": "share of questions with any attack text (poison or tampered) in the final top K",
    "poison_share": "attack chunks / context chunks, averaged over questions",
    "answer_asr": "the extractive answer on the final context contains the incorrect (target) answer",
    "answer_asr_unnamed": ("answer_asr over the questions that do not name the incorrect answer themselves "
                           "(a sentence answering 'A or B?' names both, attack or not)"),
    "answer_accuracy": "the extractive answer contains a correct answer (token match, word boundaries)",
    "clean_recall_at_k": "share of the question's gold (supporting) passages in the final top K, averaged",
    "anomaly_fpr": ("defence only: clean chunks with any anomaly flag / clean chunks in context + excluded "
                    "(pooled)"),
    "anomaly_tpr": "defence only: attack chunks with any anomaly flag / attack chunks in context + excluded",
    "suspect_precision": "defence only: suspects that are Byzantine retrievers / all suspects named (pooled)",
    "suspect_recall": "defence only: Byzantine retrievers named as suspects / Byzantine retrievers (pooled)",
    "abstention_rate": "defence abstained (abstain_reason set) or returned an empty context",
    "answer_from_attack": "the answer sentence was quoted from an attack chunk",
    "overhead_ms_p50": "median wall time of the method per question (defence: SecureRetrieval.run), ms",
    "overhead_ms_p95": "95th percentile of the same, ms",
}


def cell(value: Any, key: str = "") -> str:
    """One table cell: '-' for None, 4 decimals for rates, 2 for millisecond percentiles."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}" if key.endswith("_ms_p50") or key.endswith("_ms_p95") else f"{value:.4f}"
    return str(value)



def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], markdown: bool = False) -> str:
    """A text table (first column left-aligned, the others right-aligned) or a Markdown table."""
    header, rows = list(header), [list(r) for r in rows]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def settings_lines(settings: Mapping[str, Any]) -> list[str]:
    """A Markdown table of run settings (nested values as inline JSON)."""
    lines = ["| setting | value |", "|---|---|"]
    for key, value in settings.items():
        shown = json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else str(value)
        lines.append(f"| {key} | `{shown}` |")
    return lines


def metrics_table(metrics: Mapping[str, Mapping[str, Any]], markdown: bool = False) -> str:
    header = ["method"] + [short for _, short in COLUMNS]
    rows = [[method] + [cell(metrics[method].get(key), key) for key, _ in COLUMNS] for method in METHODS
            if method in metrics]
    return format_table(header, rows, markdown)


def _split(metrics: Mapping[str, Mapping[str, Any]]) -> dict:
    return {"defense": dict(metrics[DEFENCE]),
            "baselines": {m: dict(v) for m, v in metrics.items() if m != DEFENCE}}


def summary(result: RunResult, settings: Mapping[str, Any]) -> dict:
    out: dict[str, Any] = {"n_questions": result.n_questions, "settings": dict(settings)}
    if len(result.metrics) == 1:
        out.update(_split(next(iter(result.metrics.values()))))
    else:
        out["forms"] = {form: _split(m) for form, m in result.metrics.items()}
    out["timings_s"] = dict(result.timings_s)
    out["embedding"] = dict(result.embedding)
    out["metric_definitions"] = dict(LEGEND)
    return out


def print_tables(result: RunResult, stream) -> None:
    for form, metrics in result.metrics.items():
        note = "" if result.form_applies else " (no poison text in this attack: the forms are the same run)"
        stream.write(f"\nform: {form}{note}  questions: {result.n_questions}\n")
        stream.write(metrics_table(metrics) + "\n")
    stream.flush()


def output_paths(json_path: Path, data: Mapping[str, Any]) -> dict[str, Path]:
    """Writes the JSON summary and names the report, plot and per-question files beside it."""
    json_path = Path(json_path)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    stem = json_path.with_suffix("")
    json_path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return {"json": json_path, "markdown": stem.with_suffix(".md"), "svg": stem.with_suffix(".svg"),
            "cases": Path(f"{stem}.cases.jsonl")}


def write_outputs(result: RunResult, settings: Mapping[str, Any], json_path: Path,
                  questions: Mapping[str, str] | None = None) -> dict[str, Path]:
    data = summary(result, settings)
    paths = output_paths(json_path, data)

    methods = [m for m in METHODS if m in next(iter(result.metrics.values()))]
    series = []
    for form, metrics in result.metrics.items():
        suffix = f" ({form})" if len(result.metrics) > 1 else ""
        for key in ("context_asr", "answer_asr"):
            series.append((f"{key}{suffix}", [metrics[m][key] for m in methods]))
    title = (f"attack={settings.get('attack')}{' collude' if settings.get('collude') else ''}, "
             f"{settings.get('retrievers')} retrievers, {settings.get('byzantine')} Byzantine, "
             f"{result.n_questions} questions")
    write_grouped_bars(paths["svg"], methods, series, title=title, y_label="attack success rate",
                       x_label="method")

    with paths["cases"].open("w", encoding="utf-8") as fh:
        for form, by_method in result.rows.items():
            for method, rows in by_method.items():
                for row in rows:
                    record = {"form": form, **row.to_json()}
                    if questions:
                        record["question"] = questions.get(row.id, "")
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")

    lines = [f"# Retrieval evaluation: {title}", "",
             f"JSON: `{paths['json'].name}` · per-question rows: `{paths['cases'].name}`", "", "## Settings", ""]
    lines += settings_lines(settings)
    lines += ["", f"Wall time: {', '.join(f'{k} {v} s' for k, v in result.timings_s.items())}", ""]
    for form, metrics in result.metrics.items():
        note = "" if result.form_applies else " (this attack puts no poison text in play: every form is one run)"
        lines += [f"## Form: {form}{note}", "", metrics_table(metrics, markdown=True), ""]
    lines += ["## Chart", "", f"![context_asr and answer_asr per method]({paths['svg'].name})", "",
              "## Metrics", ""]
    lines += [f"- **{key}**: {text}" for key, text in LEGEND.items()]
    lines += ["", "Abstentions count as neither an attack success nor a correct answer, and have recall 0. "
              "Baselines never abstain unless their context is empty.", ""]
    paths["markdown"].write_text("\n".join(lines), encoding="utf-8")
    return paths
