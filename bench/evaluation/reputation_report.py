"""Printing and writing a reputation run: text tables, the JSON summary, a Markdown report, an SVG plot
of every agent's score over the questions (the quarantine floor drawn), the score series
(`<stem>.scores.json`), and a summary over several runs (`python -m bench.evaluation.reputation_report
summary OUT.md RUN.json...`)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence
from xml.sax.saxutils import escape, quoteattr

from .reputation import (CONSTANT, FLAKY, INTERMITTENT, SLANDER_RETRIEVER, SLANDER_TARGET_GENERATOR,
                         SLANDER_TARGET_RETRIEVER, SLANDER_VERIFIER, SLEEPER, SUBTLE)
from .report import format_table, settings_lines

KIND_COLOURS = {
    CONSTANT: "#c44e52", INTERMITTENT: "#e07b39", SLEEPER: "#8172b2", SUBTLE: "#da8bc3",
    SLANDER_RETRIEVER: "#937860", SLANDER_VERIFIER: "#b8860b", FLAKY: "#17becf",
    SLANDER_TARGET_RETRIEVER: "#2ca02c", SLANDER_TARGET_GENERATOR: "#1f77b4",
}
HONEST_COLOUR = "#9a9a9a"


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def agents_table(data: Mapping[str, Any], markdown: bool = False) -> str:
    header = ["agent", "kind", "lying from", "quarantined at", "questions to quarantine", "lies told",
              "detected per question", "false flags (frozen)", "min score", "final score", "state"]
    rows = []
    order = sorted(data["agents"].items(), key=lambda kv: (not kv[1]["byzantine"], kv[1]["role"], kv[0]))
    for agent_id, d in order:
        rows.append([f"{agent_id} ({d['label']})", d["kind"], _fmt(d["lying_from"]), _fmt(d["quarantined_at"]),
                     _fmt(d["questions_to_quarantine"]), _fmt(d["lies_told"]), _fmt(d["per_question_detection"]),
                     _fmt(d["false_flag_rate_frozen"]), _fmt(d["min_score"]), _fmt(d["final_score"]),
                     d["final_state"]])
    return format_table(header, rows, markdown)


def targets_table(data: Mapping[str, Any], markdown: bool = False) -> str:
    rows = [[t["target"], t["agent"] or "-", _fmt(t["value"]), "met" if t["met"] else "NOT MET"]
            for t in data["targets"]]
    return format_table(["target", "agent", "value", ""], rows, markdown)


def headline(data: Mapping[str, Any]) -> list[str]:
    live, frozen = data["answers"]["live"], data["answers"]["frozen"]
    rep = data["repaired"]
    if rep["released_at"] is None:
        repaired = "the constant liar was not quarantined early enough to be released within the run"
    elif rep["questions_to_leave_probation"] is None:
        repaired = (f"released at question {rep['released_at']}, still on probation at the end "
                    f"({rep['questions_after_release']} questions later; it worked on {rep['questions_worked_on_probation']} "
                    f"of them; final score {rep['final_score']:.3f})")
    else:
        repaired = (f"released at question {rep['released_at']}, probation ended after "
                    f"{rep['questions_to_leave_probation']} questions (it worked on "
                    f"{rep['questions_worked_on_probation']} of them)")
    slandered = ", ".join(f"{a} {s:.3f}" for a, s in data["slandered_min_scores"].items())
    return [
        f"questions: {data['questions']} (seed {data['seed']}; {data['stream']['demo']} demo, "
        f"{data['stream']['hotpotqa']} HotpotQA, {data['stream']['unique_questions']} distinct)",
        f"answers given: live {live['given']}, frozen {frozen['given']}",
        f"answers_affected_rate: live {data['answers_affected_rate']:.4f} ({live['carried_a_lie']} answers), " +
        (f"frozen {data['answers_affected_rate_frozen']:.4f} ({frozen['carried_a_lie']} answers)"
         if data["answers_affected_rate_frozen"] is not None else "frozen run skipped"),
        f"honest agents quarantined: {data['honest_quarantined']} {data['honest_quarantined_agents'] or ''}".rstrip(),
        f"slandered agents' lowest score: {slandered}",
        f"repaired agent ({rep['agent']}): {repaired}",
    ]


def print_tables(data: Mapping[str, Any], stream=sys.stdout) -> None:
    print("reputation evaluation", file=stream)
    for line in headline(data):
        print("  " + line, file=stream)
    print("\n" + agents_table(data), file=stream)
    print("\n" + targets_table(data), file=stream)


# ---- the plot ----------------------------------------------------------------------------------

def score_plot(data: Mapping[str, Any], scores: Mapping[str, Sequence[float]], floor: float,
               title: str = "") -> str:
    """Every agent's score after each question (live book), the quarantine floor dashed, the
    slandered agents' 0.5 line dotted, the sleeper's turn and the repaired agent's release marked."""
    n = max((len(s) for s in scores.values()), default=1)
    left, right, top, bottom = 60, 330, 45, 55
    plot_w, plot_h = 760, 360
    width, height = left + plot_w + right, top + plot_h + bottom
    x_of = lambda i: left + (i / max(1, n - 1)) * plot_w     # noqa: E731
    y_of = lambda v: top + plot_h - min(max(v, 0.0), 1.0) * plot_h   # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left + plot_w / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">'
           f'{escape(title or "Reputation score of every agent (live book)")}</text>']
    for i in range(6):
        v = i / 5
        out.append(f'<line x1="{left}" y1="{y_of(v):.1f}" x2="{left + plot_w}" y2="{y_of(v):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{y_of(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
    step = max(1, int(round(n / 10, -2)) or 100)
    for q in range(0, n + 1, step):
        x = x_of(max(0, q - 1))
        out.append(f'<text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{q}</text>')
    out.append(f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="black"/>')
    out.append(f'<line class="axis" x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
               f'stroke="black"/>')
    out.append(f'<text x="16" y="{top + plot_h / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {top + plot_h / 2})">score</text>')
    out.append(f'<text x="{left + plot_w / 2}" y="{height - 14}" text-anchor="middle">question</text>')
    marks = []
    sleeper = next((d for d in data["agents"].values() if d["kind"] == SLEEPER), None)
    if sleeper and sleeper["lying_from"]:
        marks.append((sleeper["lying_from"], "sleeper turns"))
    if data["repaired"]["released_at"]:
        marks.append((data["repaired"]["released_at"], "repaired agent released"))
    for q, text in marks:
        x = x_of(q - 1)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" stroke="#555" '
                   f'stroke-dasharray="2,3"/>')
        out.append(f'<text x="{x + 3:.1f}" y="{top + 12}" font-size="10">{escape(text)}</text>')
    out.append(f'<line class="floor" x1="{left}" y1="{y_of(floor):.1f}" x2="{left + plot_w}" y2="{y_of(floor):.1f}" '
               f'stroke="black" stroke-width="1.5" stroke-dasharray="8,4"/>')
    out.append(f'<text x="{left + plot_w - 4}" y="{y_of(floor) - 4:.1f}" text-anchor="end" font-size="10">'
               f'quarantine floor {floor:g}</text>')
    out.append(f'<line x1="{left}" y1="{y_of(0.5):.1f}" x2="{left + plot_w}" y2="{y_of(0.5):.1f}" stroke="#1f77b4" '
               f'stroke-dasharray="1,3"/>')
    order = sorted(data["agents"].items(), key=lambda kv: (not kv[1]["byzantine"], kv[1]["kind"], kv[0]))
    legend_x = left + plot_w + 16
    out.append(f'<g class="legend"><text x="{legend_x}" y="{top}" font-weight="bold">Agents</text>')
    for row, (agent_id, d) in enumerate(order):
        colour = KIND_COLOURS.get(d["kind"], HONEST_COLOUR)
        series = scores.get(agent_id, [])
        stride = max(1, len(series) // 1000)
        points = " ".join(f"{x_of(i):.1f},{y_of(v):.1f}" for i, v in enumerate(series) if i % stride == 0
                          or i == len(series) - 1)
        dash = ' stroke-dasharray="5,2"' if d["kind"] in (SLANDER_RETRIEVER, SLANDER_VERIFIER) else ""
        out.append(f'<polyline class="score" data-agent={quoteattr(agent_id)} data-kind={quoteattr(d["kind"])} '
                   f'fill="none" stroke="{colour}" stroke-width="{1.8 if d["byzantine"] else 1.2}"{dash} '
                   f'points="{points}"><title>{escape(agent_id + " (" + d["kind"] + ")")}</title></polyline>')
        y = top + 14 + row * 17
        out.append(f'<line x1="{legend_x}" y1="{y + 5}" x2="{legend_x + 16}" y2="{y + 5}" stroke="{colour}" '
                   f'stroke-width="2"{dash}/>')
        q_at = f", quarantined at {d['quarantined_at']}" if d["quarantined_at"] else ""
        out.append(f'<text x="{legend_x + 22}" y="{y + 9}" font-size="11">{escape(agent_id)}: '
                   f'{escape(d["label"])}{escape(q_at)}</text>')
    out.append("</g></svg>")
    return "\n".join(out) + "\n"


# ---- files -------------------------------------------------------------------------------------

def markdown(data: Mapping[str, Any], run_settings: Mapping[str, Any], svg_name: str) -> str:
    lines = [f"# Reputation evaluation (seed {data['seed']}, {data['questions']} questions)", "",
             "The fleet answers the question stream on the real engine code (Pipeline.ask, SecureRetrieval, "
             "adjudicate with the EvidenceVerifier and the verifier agents voting, the challenge), once with the "
             "reputation book live (fed by ReputationKeeper.after_answer: answer_evidence.observations and "
             "observe_behaviour) and once with it frozen. How each agent behaves: bench/evaluation/reputation.py.",
             "", "## Headline", ""]
    lines += [f"- {line}" for line in headline(data)]
    lines += ["", "## Targets (issue #8)", "", targets_table(data, markdown=True), "",
              "## Agents", "",
              "Questions are numbered from 1. *questions to quarantine* counts from the first question the agent "
              "lied on (the sleeper: from its turn) to the one whose evidence quarantined it, both included. "
              "*detected per question*: the share of its lying questions (until quarantine) on which "
              "answer_evidence.observations held bad evidence about it, before any committee. *false flags "
              "(frozen)*: for an honest agent, the share of the questions it worked on in the frozen run with bad "
              "evidence about it.", "", agents_table(data, markdown=True), "",
              f"![scores]({svg_name})", "",
              "## Answers", "",
              "| run | given | carried a lie | rate | by | verdicts | tiers | seconds |", "|---|---|---|---|---|---|---|---|"]
    for mode in ("live", "frozen"):
        a = data["answers"][mode]
        rate = a["carried_a_lie"] / a["given"] if a["given"] else 0.0
        lines.append(f"| {mode} | {a['given']} | {a['carried_a_lie']} | {rate:.4f} | `{json.dumps(a['by'])}` | "
                     f"`{json.dumps(a['verdicts'])}` | `{json.dumps(a['tiers'])}` | {a['seconds']} |")
    lines += ["", "## Settings", ""] + settings_lines(run_settings)
    return "\n".join(lines) + "\n"


def write_outputs(data: Mapping[str, Any], scores: Mapping[str, Sequence[float]], run_settings: Mapping[str, Any],
                  json_path: Path, floor: float) -> dict[str, Path]:
    json_path = Path(json_path)
    json_path.parent.mkdir(parents=True, exist_ok=True)
    stem = json_path.with_suffix("")
    paths = {"json": json_path, "markdown": stem.with_suffix(".md"), "svg": stem.with_suffix(".svg"),
             "scores": Path(f"{stem}.scores.json")}
    json_path.write_text(json.dumps({**data, "settings": dict(run_settings)}, indent=2, ensure_ascii=False) + "\n",
                         encoding="utf-8")
    paths["svg"].write_text(score_plot(data, scores, floor, f"Reputation of every agent, seed {data['seed']} "
                                                            f"(live book)"), encoding="utf-8")
    paths["markdown"].write_text(markdown(data, run_settings, paths["svg"].name), encoding="utf-8")
    paths["scores"].write_text(json.dumps(scores) + "\n", encoding="utf-8")
    return paths


# ---- several runs ------------------------------------------------------------------------------

def summary_rows(runs: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[str]]:
    rows = []
    for name, data in runs:
        by_kind: dict[str, list] = {}
        for d in data["agents"].values():
            by_kind.setdefault(d["kind"], []).append(d["questions_to_quarantine"])
        q = lambda kind: "/".join(_fmt(v) for v in by_kind.get(kind, [])) or "-"   # noqa: E731
        met = sum(t["met"] for t in data["targets"])
        rows.append([name, str(data["seed"]), str(data["questions"]), q(CONSTANT), q(INTERMITTENT), q(SLEEPER),
                     q(SUBTLE), q(SLANDER_RETRIEVER), q(SLANDER_VERIFIER), str(data["honest_quarantined"]),
                     _fmt(data["slandered_min_score"]), f"{data['answers_affected_rate']:.4f}",
                     _fmt(data["answers_affected_rate_frozen"]),
                     _fmt(data["repaired"]["questions_to_leave_probation"]), f"{met}/{len(data['targets'])}"])
    return rows


SUMMARY_HEADER = ["run", "seed", "questions", "constant", "intermittent", "sleeper", "subtle", "slanderers (ret)",
                  "slanderers (ver)", "honest quarantined", "slandered min", "affected live", "affected frozen",
                  "probation left after", "targets met"]


def write_summary(paths: Sequence[Path], out: Path) -> Path:
    runs = [(Path(p).stem, json.loads(Path(p).read_text(encoding="utf-8"))) for p in paths]
    lines = ["# Reputation evaluation: every run", "",
             "Columns constant..slanderers: questions from the first lie to quarantine ('-': not quarantined).", "",
             format_table(SUMMARY_HEADER, summary_rows(runs), markdown=True), ""]
    for name, data in runs:
        missed = [f"{t['target']}" + (f" ({t['agent']})" if t["agent"] else "") + f": {_fmt(t['value'])}"
                  for t in data["targets"] if not t["met"]]
        lines.append(f"- {name}: " + ("every target met" if not missed else "not met: " + "; ".join(missed)))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":   # python -m bench.evaluation.reputation_report summary OUT.md RUN.json...
    if len(sys.argv) < 4 or sys.argv[1] != "summary":
        print("usage: python -m bench.evaluation.reputation_report summary OUT.md RUN.json...", file=sys.stderr)
        sys.exit(2)
    print(write_summary([Path(p) for p in sys.argv[3:]], Path(sys.argv[2])))
