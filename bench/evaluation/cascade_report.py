"""The cascade evaluation's tables (stdout and Markdown) and its plot (SVG)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from .plot import grouped_bars

TYPES = ("retrieval", "inference", "context_poisoning", "confidence_inflation")
DEFINITIONS = (
    "cdr: injected trajectories flagged at a stage ≤ injection stage + 1 (retrieval and context poisoning are "
    "injected at stage 2, retrieve; inference and confidence inflation at stage 3, reason; stages numbered from 1).",
    "fpr: clean trajectories (nothing injected) flagged at any stage.",
    "epr: 1 − ErrEM(with CHARM and mitigation) / ErrEM(without); ErrEM = injected trajectories whose error reaches "
    "the output (an answer other than the clean run's; for confidence inflation also a final confidence ≥ 0.1 above "
    "it). A halted answer waits for review and does not reach the output: 'halted' gives their share.",
    "msr: mitigated trajectories resolved without a halt and giving back the clean run's output.",
    "cdd: mean stage number of the first flag over detected trajectories.",
    "overhead: the monitors' own time per stage boundary on this machine's CPU. Cold: each record's clean run, its "
    "passages indexed beforehand as the product indexes its corpus, everything the stages said embedded while it "
    "waited; unindexed: the same runs replayed on an empty cache; warm: mean ± sd over replays.",
    "Ablation rows switch monitors off; the weights of those left are scaled to sum to 1 (a lone monitor can fire).",
    "Output-level baseline: once, at the output: the final answer's claims against the consensus pool the monitors "
    "check against, and its confidence against the share of the question its claims and cited titles answer (CPM's "
    "margin); its cdr counts a flag at any stage, which flatters it.",
)


def _f(value) -> str:
    return "—" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))


def _rows(data: dict) -> list[tuple[str, dict]]:
    return [("all", data)] + list(data.get("groups", {}).items())


def markdown(data: dict) -> str:
    lines = ["# CHARM cascade evaluation", "", f"Command: `{data.get('command', '')}`", "",
             f"Attacker: {data.get('variant', 'standard')}", "",
             "Tuned on hotpotqa/dev only; hotpotqa/test and musique are reported as they came out.", "",
             "| group | n injected | n clean | cdr | fpr | epr | msr | halted | cdd | "
             "baseline cdr | baseline fpr | baseline epr |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, g in _rows(data):
        b = g["output_level_baseline"]
        lines.append(f"| {name} | {g['n_injected']} | {g['n_clean']} | {_f(g['cdr'])} | {_f(g['fpr'])} | "
                     f"{_f(g['epr'])} | {_f(g['msr'])} | {_f(g['halted'])} | {_f(g['cdd'])} | {_f(b['cdr'])} | "
                     f"{_f(b['fpr'])} | {_f(b['epr'])} |")
    lines += ["", "## Detection by injected type", "", "| group | " + " | ".join(TYPES) + " |",
              "|---|" + "---|" * len(TYPES)]
    for name, g in _rows(data):
        lines.append(f"| {name} | " + " | ".join(f"{_f(g['by_type'][t]['cdr'])} (n {g['by_type'][t]['n']})"
                                                 for t in TYPES) + " |")
    lines += ["", "## Ablation (cdr / fpr)", "", "| group | " + " | ".join(data["ablation"]) + " |",
              "|---|" + "---|" * len(data["ablation"])]
    for name, g in _rows(data):
        lines.append(f"| {name} | " + " | ".join(f"{_f(v['cdr'])} / {_f(v['fpr'])}" for v in g["ablation"].values())
                     + " |")
    lines += ["", f"Overhead per stage: {overhead_line(data)}",
              "", "![detection by type](" + Path(data.get("_svg", "cascade.svg")).name + ")", ""]
    swept = data.get("sweep_hotpotqa_dev")
    if swept:
        lines += ["## Calibration sweep (hotpotqa/dev, where θ and the gate were chosen)", "",
                  "| θ | " + " | ".join(swept["theta"]) + " |", "|---|" + "---|" * len(swept["theta"]),
                  "| cdr / fpr | " + " | ".join(f"{_f(v['cdr'])} / {_f(v['fpr'])}" for v in swept["theta"].values())
                  + " |", "",
                  "| confidence gate | " + " | ".join(swept["cpm_gate"]) + " |",
                  "|---|" + "---|" * len(swept["cpm_gate"]),
                  "| cdr / fpr / confidence-inflation cdr | " + " | ".join(
                      f"{_f(v['cdr'])} / {_f(v['fpr'])} / {_f(v['confidence_inflation_cdr'])}"
                      for v in swept["cpm_gate"].values()) + " |", ""]
    if data.get("decomposition_markdown"):
        lines += ["## Query formulation (decomposition against gold)", "", data["decomposition_markdown"], ""]
    lines += ["## What each figure counts", ""] + [f"- {d}" for d in DEFINITIONS] + [""]
    return "\n".join(lines)


def print_tables(data: dict, out: TextIO) -> None:
    out.write(f"{'group':18s} {'inj':>5s} {'clean':>5s} {'cdr':>6s} {'fpr':>6s} {'epr':>6s} {'msr':>6s} "
              f"{'halted':>6s}   baseline cdr/fpr/epr\n")
    for name, g in _rows(data):
        b = g["output_level_baseline"]
        out.write(f"{name:18s} {g['n_injected']:5d} {g['n_clean']:5d} {_f(g['cdr']):>6s} {_f(g['fpr']):>6s} "
                  f"{_f(g['epr']):>6s} {_f(g['msr']):>6s} {_f(g['halted']):>6s}   "
                  f"{_f(b['cdr'])}/{_f(b['fpr'])}/{_f(b['epr'])}\n")
    out.write("by type (cdr): " + ", ".join(f"{t} {_f(data['by_type'][t]['cdr'])}" for t in TYPES) + "\n")
    out.write("ablation (cdr/fpr): " + ", ".join(f"{k} {_f(v['cdr'])}/{_f(v['fpr'])}"
                                                 for k, v in data["ablation"].items()) + "\n")
    out.write(f"overhead per stage: {overhead_line(data)}\n")


def overhead_line(data: dict) -> str:
    """The three overhead figures (cold in the product path, unindexed, warm) as one line."""
    def ms(key: str) -> str:
        return _f(data.get(f"overhead_ms_per_stage_{key}"))
    return (f"cold (corpus indexed) p50 {ms('cold_p50')} ms, mean {ms('cold_mean')}; cold on injected trajectories "
            f"p50 {ms('cold_injected_p50')} ms, mean {ms('cold_injected_mean')}; unindexed p50 "
            f"{ms('unindexed_p50')} ms, mean {ms('unindexed_mean')}; warm {ms('mean')} ± {ms('sd')} ms")


def write_outputs(data: dict, path: Path) -> list[Path]:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    svg = path.with_suffix(".svg")
    md = path.with_suffix(".md")
    groups = [name for name, _ in _rows(data)]
    series = [(t, [g["by_type"][t]["cdr"] for _, g in _rows(data)]) for t in TYPES]
    series.append(("false positives", [g["fpr"] for _, g in _rows(data)]))
    series.append(("output-level cdr", [g["output_level_baseline"]["cdr"] for _, g in _rows(data)]))
    svg.write_text(grouped_bars(groups, series, title="CHARM: cascade detection by type, false positives, baseline",
                                y_label="share", x_label="data set / split"), encoding="utf-8")
    data = {**data, "_svg": str(svg)}
    md.write_text(markdown(data), encoding="utf-8")
    path.write_text(json.dumps({k: v for k, v in data.items() if k != "_svg"}, indent=1), encoding="utf-8")
    return [path, md, svg]
