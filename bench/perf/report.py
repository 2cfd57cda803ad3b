"""The benchmarks' files: the JSON as measured, a Markdown report beside it and an SVG plot."""
from __future__ import annotations

import json
from pathlib import Path

from bench.evaluation.plot import write_grouped_bars

from .paths import PATHS

STAGE_ORDER = ("agents_retriever", "retrieve", "gateway_passages", "secure_retrieval", "agents_generator",
               "generate", "adjudicate", "challenge", "cascade", "gateway")


def write_json(path: Path, result: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def write_paths_report(json_path: Path, result: dict, command: str) -> tuple[Path, Path]:
    """Writes PATH.md and PATH.svg (latency p50 and p95 per path) beside the JSON."""
    plot = write_grouped_bars(
        json_path.with_suffix(".svg"), list(PATHS),
        [("p50 ms", [result[p]["p50_ms"] for p in PATHS]), ("p95 ms", [result[p]["p95_ms"] for p in PATHS])],
        title="Latency per question, naive RAG beside Quorum's paths", y_label="ms", x_label="path",
        y_max=_nice_max(max(result[p]["p95_ms"] for p in PATHS)))
    lines = [
        "# Quorum beside naive RAG: latency, throughput, memory",
        "",
        f"Command: `{command}` · {result['questions']} questions × {result['rounds']} rounds on every path · "
        f"fleet `{Path(result['fleet']).name}` · {result['machine']['cpus']} CPUs",
        "",
        f"![latency per path]({plot.name})",
        "",
        "| path | p50 ms | p95 ms | overhead (p50 / naive p50) | target | answered | correct |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in PATHS:
        s = result[p]
        ratio = "1.00" if p == "naive" else f"{result[f'overhead_ratio_{p}']:.2f}"
        target = result["targets"].get(f"overhead_ratio_{p}")
        lines.append(f"| {p} | {s['p50_ms']:.0f} | {s['p95_ms']:.0f} | {ratio} | "
                     f"{'≤ %.1f' % target if target else '—'} | {s['answered_rate']:.0%} | {s['accuracy']:.0%} |")
    lines += ["", "Where the time goes (p50 ms per stage; `agents_*` is the slowest agent call of that role, "
                  "the rest is the engine's own work):", ""]
    stages = [s for s in STAGE_ORDER if any(s in result[p]["stages_p50_ms"] for p in PATHS)]
    stages += sorted({s for p in PATHS for s in result[p]["stages_p50_ms"]} - set(stages))
    lines += ["| stage | " + " | ".join(PATHS) + " |", "|---|" + "---|" * len(PATHS)]
    for stage in stages:
        cells = [result[p]["stages_p50_ms"].get(stage) for p in PATHS]
        lines.append(f"| {stage} | " + " | ".join("—" if c is None else f"{c:.1f}" for c in cells) + " |")
    lines += ["", "The judge (its reading of the answers, per path: how often it was asked, its time per question and per "
                  "text read, and the p50 of the questions that asked it beside those that did not):", "",
              "| path | asked | meaning not read | read p50 / p95 ms | per text p50 / p95 ms | p50 asked / not asked ms |",
              "|---|---|---|---|---|---|"]
    sat = result["saturation"]
    for name, judge in [(p, result[p].get("judge")) for p in PATHS if p != "naive"] + [
            (f"standard, {sat['standard']['concurrency']} at once", sat["standard"].get("judge"))]:
        if not judge or judge["asked_share"] is None:
            continue
        lines.append(f"| {name} | {judge['asked_share']:.0%} | {judge['not_read']} | {judge['read_ms_p50']:.0f} / "
                     f"{judge['read_ms_p95']:.0f} | {judge['per_text_ms_p50']:.0f} / {judge['per_text_ms_p95']:.0f} | "
                     f"{judge['p50_ms_asked']:.0f} / {judge['p50_ms_not_asked']:.0f} |")
    mem = result["memory"]
    hit_rate = "—" if result["cache_hit_rate"] is None else f"{result['cache_hit_rate']:.1%}"
    lines += [
        "",
        f"Saturation ({sat['standard']['concurrency']} questions at once, every question once): standard "
        f"{sat['standard']['qps']} questions/s (p50 {sat['standard']['p50_ms']:.0f} ms under load), naive "
        f"{sat['naive']['qps']} questions/s.",
        "",
        f"Engine embedding cache hit rate during the timed runs: {hit_rate} of {result['cache_lookups']} "
        "passage lookups.",
        "",
        f"Memory at the end: engine {mem['engine_rss_mb']:.0f} MB resident; agents {mem['agents_rss_mb_total']:.0f} MB "
        f"in all ({', '.join(f'{a} {mb:.0f}' for a, mb in sorted(mem['agents_rss_mb'].items()))}).",
        "",
        "Each question is asked on every path in a rotating order; naive takes the next (retriever, generator) pair "
        "of the fleet for each question. Latency is wall time in the engine's process, embeddings of texts the "
        "engine has not seen included.",
    ]
    md = json_path.with_suffix(".md")
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return md, plot


def _nice_max(value: float) -> float:
    """A round upper bound for a plot's axis."""
    step = 10 ** max(0, len(str(int(max(value, 1)))) - 1)
    return float((int(value // step) + 1) * step)
