"""Printing and writing an evaluation run: a text table, the JSON summary, a Markdown report with
an SVG chart, and the per-question rows (`<stem>.cases.jsonl`) for inspecting failures."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from .baselines import SIMPLE_BASELINES
from .plot import write_grouped_bars
from .runner import DEFENCE, METHODS, RunResult
from .splits import SPLITS
from .variants import VARIANTS

COLUMNS = (("context_asr", "ctx_asr"), ("poison_share", "poison"), ("answer_asr", "ans_asr"),
           ("answer_asr_unnamed", "ans_asr*"),
           ("answer_accuracy", "ans_acc"), ("clean_recall_at_k", "recall@k"), ("anomaly_fpr", "anom_fpr"), ("anomaly_fpr_pooled", "fpr_pool"),
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
    "answer_accuracy": ("the extractive answer contains a correct answer (token match, word boundaries); "
                        "n/a where the corpus does not hold the correct answer (biogen, nq, msmarco)"),
    "clean_recall_at_k": ("share of the question's gold (supporting) passages in the final top K, averaged; "
                          "n/a without gold passages (biogen, nq, msmarco)"),
    "anomaly_fpr": ("defence only: per question, clean passages flagged as anomalies or kept out by the quorum "
                    "(below quorum with room in the context, or returned by a suspect) / clean passages it saw; "
                    "averaged over questions (a near-duplicate whose twin is in the context, and the passages of "
                    "an abstention, are not counted: that is abstention_rate)"),
    "anomaly_fpr_pooled": "defence only: the same count pooled over every clean passage of every question",
    "anomaly_tpr": "defence only: attack chunks with any anomaly flag / attack chunks in context + excluded",
    "suspect_precision": "defence only: suspects that are Byzantine retrievers / all suspects named (pooled)",
    "suspect_recall": "defence only: Byzantine retrievers named as suspects / Byzantine retrievers (pooled)",
    "abstention_rate": "defence abstained (abstain_reason set) or returned an empty context",
    "answer_from_attack": "the answer sentence was quoted from an attack chunk",
    "overhead_ms_p50": "median wall time of the method per question (defence: SecureRetrieval.run), ms",
    "overhead_ms_p95": "95th percentile of the same, ms",
}
NULL_NOTE = ("n/a: answer_asr, answer_asr* and ans_from_atk apply only to attacks carrying an incorrect answer "
             "(agent or corpus poison) on HotpotQA; tamper, omit and clean rows and the other data sets show n/a.")
METHOD_LEGEND = {
    "defense": "SecureRetrieval.run on all the retrievers' lists (engine/retrieval)",
    "naive": "one retriever picked at random per question: the exact expectation over the fleet (each list judged, "
             "averaged)",
    "union": "all lists merged, ranked by how many retrievers returned a text, then best rank",
    "majority": "only texts more than half of the retrievers returned",
    "trustrag": "TrustRAG-style K-means filter (cosine > 0.88 and ROUGE-L > 0.25) on each list, kept lists merged",
    "trustrag-pooled": "the same filter once over the merged lists",
}
HEADLINE = (("context_asr", "ctx_asr"), ("answer_asr", "ans_asr"), ("answer_accuracy", "ans_acc"),
            ("clean_recall_at_k", "recall@k"), ("anomaly_fpr", "anom_fpr"), ("abstention_rate", "abstain"))


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


def split_table(split_metrics: Mapping[str, Mapping[str, Mapping[str, Any]]], form: str,
                markdown: bool = False) -> str:
    """Methods × headline metrics, a dev and a test column for each."""
    splits = [s for s in SPLITS if s in split_metrics]
    header = ["method"] + [f"{short} {split}" for _, short in HEADLINE for split in splits]
    methods = [m for m in METHODS if m in split_metrics[splits[0]][form]] if splits else []
    rows = [[method] + [cell(split_metrics[split][form][method].get(key), key) for key, _ in HEADLINE
                        for split in splits] for method in methods]
    return format_table(header, rows, markdown)


def _split(metrics: Mapping[str, Mapping[str, Any]]) -> dict:
    return {"defense": dict(metrics[DEFENCE]),
            "baselines": {m: dict(v) for m, v in metrics.items() if m != DEFENCE}}


def summary(result: RunResult, settings: Mapping[str, Any]) -> dict:
    out: dict[str, Any] = {"n_questions": result.n_questions, "settings": dict(settings)}
    if len(result.metrics) == 1:
        out.update(_split(next(iter(result.metrics.values()))))
    out["forms"] = {form: _split(m) for form, m in result.metrics.items()}
    out["splits"] = {split: {form: _split(m) for form, m in by_form.items()}
                     for split, by_form in result.split_metrics.items()}
    out["split_sizes"] = dict(result.split_sizes)
    out["poison_pairwise_cosine"] = dict(result.poison_similarity)
    out["timings_s"] = dict(result.timings_s)
    out["embedding"] = dict(result.embedding)
    out["metric_definitions"] = dict(LEGEND)
    return out


def print_tables(result: RunResult, stream) -> None:
    for form, metrics in result.metrics.items():
        note = "" if result.form_applies else " (no poison text in this attack: the forms are the same run)"
        stream.write(f"\nform: {form}{note}  questions: {result.n_questions}\n")
        stream.write(metrics_table(metrics) + "\n")
        if result.split_metrics:
            stream.write(f"by split ({', '.join(f'{k} {v}' for k, v in result.split_sizes.items())} questions):\n")
            stream.write(split_table(result.split_metrics, form) + "\n")
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
    for form in result.metrics:
        suffix = f" ({form})" if len(result.metrics) > 1 else ""
        for key in ("context_asr", "answer_asr"):
            for split, by_form in result.split_metrics.items():
                values = [by_form[form][m][key] for m in methods]
                if any(v is not None for v in values):
                    series.append((f"{key} {split}{suffix}", values))
    title = (f"{settings.get('dataset', 'hotpotqa')} · variant {settings.get('variant', 'standard')} · "
             f"attack={settings.get('attack')}{' collude' if settings.get('collude') else ''}, "
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
    variant = VARIANTS.get(str(settings.get("variant", "standard")))
    if variant:
        lines += [f"Variant **{variant.name}**: {variant.description}.", ""]
    if result.poison_similarity:
        lines += ["Mean pairwise cosine of a question's attack texts (defence embedder): " + ", ".join(
            f"{form} {cell(v)}" for form, v in result.poison_similarity.items()), ""]
    for form, metrics in result.metrics.items():
        note = "" if result.form_applies else " (this attack puts no poison text in play: every form is one run)"
        lines += [f"## Form: {form}{note}", ""]
        if result.split_metrics:
            sizes = ", ".join(f"{k} {v}" for k, v in result.split_sizes.items())
            lines += [f"Dev and test ({sizes} questions; thresholds are tuned on dev only):", "",
                      split_table(result.split_metrics, form, markdown=True), ""]
        lines += ["All questions:", "", metrics_table(metrics, markdown=True), ""]
    lines += ["## Chart", "", f"![context_asr and answer_asr per method]({paths['svg'].name})", "",
              "## Methods", ""]
    lines += [f"- **{key}**: {text}" for key, text in METHOD_LEGEND.items()]
    lines += ["", "## Metrics", ""]
    lines += [f"- **{key}**: {text}" for key, text in LEGEND.items()]
    lines += ["", NULL_NOTE]
    lines += ["", "Abstentions count as neither an attack success nor a correct answer, and have recall 0. "
              "Baselines never abstain unless their context is empty.", ""]
    paths["markdown"].write_text("\n".join(lines), encoding="utf-8")
    return paths


# ---- the summary over many runs ---------------------------------------------------------------------
def headline_metric(data: Mapping[str, Any]) -> tuple[str, bool]:
    """(metric a row is judged by, lower is better): attack success where an attack text is in play,
    recall otherwise (omission and clean runs), anomaly_fpr where neither applies (clean biogen)."""
    attack = data["settings"].get("attack")
    if attack in ("agent", "corpus", "tamper"):
        return "context_asr", True
    block = data["forms"][_form_block(data)]["defense"]
    if block.get("clean_recall_at_k") is None:
        return "anomaly_fpr", True
    return "clean_recall_at_k", False


def _form_block(data: Mapping[str, Any]) -> str:
    forms = list(data.get("forms", {}))
    return "prefixed" if "prefixed" in forms else forms[0]


def summary_line(name: str, data: Mapping[str, Any]) -> list[str]:
    key, lower = headline_metric(data)
    form = _form_block(data)
    splits = data.get("splits", {})
    get = lambda split, method: (splits[split][form]["defense"] if method == DEFENCE   # noqa: E731
                                 else splits[split][form]["baselines"][method]).get(key)
    usable = [m for m in SIMPLE_BASELINES if "dev" in splits and get("dev", m) is not None]
    best = None
    if usable:   # chosen on dev, reported on dev and test
        best = (min if lower else max)(usable, key=lambda m: get("dev", m))
    value = lambda split, method: cell(get(split, method), key) if split in splits and method else "-"   # noqa
    fpr = lambda split: cell(splits[split][form]["defense"].get("anomaly_fpr")) if split in splits else "-"  # noqa
    # The answer side, dev / test: what the attack made the answerer say, and what it cost in right answers.
    pair = lambda metric: " / ".join(cell(splits[s][form]["defense"].get(metric)) if s in splits else "-"  # noqa
                                     for s in ("dev", "test"))
    return [name, data["settings"].get("dataset", "hotpotqa"), form, data["settings"].get("answerer", "extractive"),
            f"{key} ({'lower' if lower else 'higher'} is better)", value("dev", DEFENCE), value("test", DEFENCE),
            best or "-", value("dev", best), value("test", best), fpr("dev"), fpr("test"), pair("answer_asr"),
            pair("answer_accuracy"), pair("abstention_rate")]


def write_summary(json_paths: Sequence[Path], out: Path) -> Path:
    """reports/retrieval/summary.md: one line per run, the defence beside the best simple baseline
    (naive, union or majority, picked on dev) on dev and test."""
    rows = []
    for path in json_paths:
        path = Path(path)
        rows.append(summary_line(path.stem, json.loads(path.read_text(encoding="utf-8"))))
    header = ["row", "dataset", "form", "answerer", "judged by", "defence dev", "defence test", "best simple baseline",
              "baseline dev", "baseline test", "defence anom_fpr dev", "defence anom_fpr test",
              "defence ans_asr dev / test", "defence ans_acc dev / test", "defence abstain dev / test"]
    text = ["# Retrieval evaluation: summary", "",
            "One line per run. The best simple baseline is picked on dev (lowest attack success, or highest "
            "recall) among naive, union and majority; its test value is reported as it falls. Prefixed form "
            "where poison has two forms. Per-run tables are in `<row>.md`.", "",
            format_table(header, rows, markdown=True), "",
            f"- **context_asr**: {LEGEND['context_asr']}", f"- **clean_recall_at_k**: {LEGEND['clean_recall_at_k']}",
            f"- **anomaly_fpr**: {LEGEND['anomaly_fpr']}",
            "- **answerer**: extractive (the fleet's generator) or corroborated (answers only with a sentence a "
            "second passage carries, else abstains); every method of a row is answered the same way", ""]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(text), encoding="utf-8")
    return out


if __name__ == "__main__":   # python -m bench.evaluation.report summary OUT.md RUN.json...
    import sys
    if len(sys.argv) < 4 or sys.argv[1] != "summary":
        sys.exit("usage: python -m bench.evaluation.report summary OUT.md RUN.json [RUN.json ...]")
    print(write_summary([Path(p) for p in sys.argv[3:]], Path(sys.argv[2])))
