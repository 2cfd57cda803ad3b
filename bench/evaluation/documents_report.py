"""`eval documents`' outputs: the JSON summary, the judged questions as JSON Lines, and a Markdown report with
the failures an operator would want to see (answers judged wrong, answers with markup, questions abstained on)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

CORPORA = ("demo", "packages", "hotpotqa")
EXAMPLES = 8


def write_outputs(result: Mapping[str, Any], json_path: Path) -> tuple[Path, Path, Path]:
    json_path = Path(json_path)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    cases, md = json_path.with_suffix(".cases.jsonl"), json_path.with_suffix(".md")
    summary = {k: v for k, v in result.items() if k != "rows"}
    json_path.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    cases.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in result.get("rows", ())),
                     encoding="utf-8")
    md.write_text(markdown(result), encoding="utf-8")
    return json_path, cases, md


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}" if value < 10 else f"{value:,.0f}"
    return str(value)


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def table(result: Mapping[str, Any]) -> list[str]:
    lines = ["| corpus | files | passages | questions | right | markup | abstained | p50 cold ms | p50 warm ms "
             "| p95 warm ms | warm / demo | index s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ratios = result.get("warm_p50_ratio_to_demo", {})
    for name in CORPORA:
        if name not in result:
            continue
        c = result[name]
        right = c.get("answer_ok_rate", c.get("accuracy"))
        lines.append(f"| {name} | {c['files']} | {c['passages']} | {c['n']} | {_cell(right)} | "
                     f"{_cell(c['markup_rate'])} | {_cell(c['abstention_rate'])} | {_cell(c['p50_ms_cold'])} | "
                     f"{_cell(c['p50_ms_warm'])} | {_cell(c['p95_ms_warm'])} | {_cell(ratios.get(name, 1.0))} | "
                     f"{_cell(c['index_s'])} |")
    return lines


def split_lines(result: Mapping[str, Any]) -> list[str]:
    """The judged rates on the dev and the test split, per corpus."""
    lines = []
    for name in CORPORA:
        splits = result.get(name, {}).get("by_split", {})
        if splits:
            key = "answer_ok_rate" if name == "packages" else "accuracy"
            parts = " · ".join(f"{split} {_cell(v.get(key))} (n {v['n']}, markup {_cell(v.get('markup_rate'))}, "
                               f"abstained {_cell(v.get('abstention_rate'))})" for split, v in splits.items())
            lines.append(f"- {name}, {key.replace('_', ' ')}: {parts}")
    return lines


def _examples(title: str, rows: Sequence[Mapping[str, Any]], gold_label: str) -> list[str]:
    if not rows:
        return []
    lines = ["", f"### {title} ({len(rows)})", "", f"| question | {gold_label} | verdict | answer |", "|---|---|---|---|"]
    lines += [f"| {_clip(r['question'], 60)} | {_clip(r['gold'], 80)} | {r['verdict']} | {_clip(r['answer'])} |"
              for r in rows[:EXAMPLES]]
    return lines


def markdown(result: Mapping[str, Any]) -> str:
    rows = result.get("rows", ())
    packages = [r for r in rows if r["corpus"] == "packages"]
    hotpot = [r for r in rows if r["corpus"] == "hotpotqa"]
    p = result.get("packages", {})
    lines = ["# Your own documents: `main.py eval documents`", "",
             "Each corpus indexed into an unused cache, the built-in fleet started on it, every question asked "
             "twice (cold, then warm). Packages: the Markdown README of every installed distribution, asked "
             "\"What is <name> for?\", judged against its one-line Summary.", ""]
    lines += table(result)
    lines += [""] + split_lines(result)
    lines += ["", f"Packages: answer ok {_cell(p.get('answer_ok_rate'))} (by the Summary's content words "
                  f"{_cell(p.get('overlap_ok_rate'))}, by the nearest Summary {_cell(p.get('nearest_summary_rate'))}; "
                  f"mean similarity {_cell(p.get('mean_similarity'))}). Run {result.get('seconds', '–')} s."]
    lines += _examples("Packages answered but judged wrong",
                       [r for r in packages if r["verdict"] == "answered" and not r["answer_ok"]], "Summary")
    lines += _examples("Packages abstained on", [r for r in packages if r["verdict"] != "answered"], "Summary")
    lines += _examples("Answers with markup", [r for r in rows if r["markup"]], "gold")
    lines += _examples("HotpotQA answered wrong", [r for r in hotpot if r["verdict"] == "answered" and not r["correct"]],
                       "gold")
    blocked = [(name, result[name]) for name in CORPORA if result.get(name, {}).get("corpus_passages_blocked")]
    if blocked:
        lines += ["", "### The corpus's own passages the gateway blocked (read as instructions; no agent blamed)", ""]
        lines += [f"- {name}: {len(c['corpus_passages_blocked'])} passages, on "
                  f"{_cell(c['corpus_blocked_question_rate'])} of its questions: "
                  f"{', '.join(_clip(i, 60) for i in c['corpus_passages_blocked'][:EXAMPLES])}" for name, c in blocked]
    skipped = [s for name in CORPORA for s in result.get(name, {}).get("skipped", ())]
    if skipped:
        lines += ["", "### Files skipped", ""] + [f"- {_clip(s['path'], 80)}: {_clip(s['reason'], 120)}" for s in skipped]
    return "\n".join(lines) + "\n"


def print_summary(result: Mapping[str, Any], stream: TextIO) -> None:
    stream.write("\n".join(table(result) + split_lines(result)) + "\n")
    p = result.get("packages", {})
    stream.write(f"packages: answer_ok_rate {_cell(p.get('answer_ok_rate'))} (content words "
                 f"{_cell(p.get('overlap_ok_rate'))}, nearest Summary {_cell(p.get('nearest_summary_rate'))}), "
                 f"markup_rate {_cell(p.get('markup_rate'))}\n")
