"""`main.py eval retrieval-sweep`: secure retrieval's thresholds chosen again, on the dev split only.

Each threshold is varied alone around the current settings (a coordinate sweep), in passes: a pass
starts from the previous pass's choices, and passes repeat until one changes nothing (at most
MAX_PASSES), so the chosen values are also tried together. Every row's retriever lists are built once
and judged under each value, so each value sees the very same lists.
The choice per threshold is lexicographic, in the order an operator would ask:
  1. the fewest broken floors: an agent-attack row where the defence plants more than the better of
     union and majority (#29's target: never worse than a plain vote), clean answer accuracy more
     than 3 points below union's (#7's target), or answer accuracy under an agent attack on HotpotQA
     more than 3 points below union's clean accuracy (a Byzantine minority may cost no more answers
     than #7 allows; without this floor the sweep chose echo_similarity 0.7, which merged honest
     passages into echoes and cost 0.25 of test recall@5 under one Byzantine retriever of four);
     and (#50, written before its dev run) a corpus row with one or two planted texts, bare, where the
     defence's answer gives the planted answer more often than naive's or TrustRAG's code's does (answer_asr,
     on HotpotQA, NQ and MS MARCO);
  1b. the fewest floors broken by either grid neighbour: a value beside one that breaks a floor sits on
     an edge that ~50 dev questions a row cannot place, and may not hold on other questions;
  2. the lowest mean context_asr over the attack rows (rounded to 0.01: smaller gaps are noise on ~50
     questions);
  3. the highest share of edited copies flagged as such on the tamper rows (anomaly_tpr: a flag names
     the sender to the reputation book, even where the quorum would have kept the copy out anyway),
     within TAMPER_SLACK of the best (a couple of copies: a tolerance, so no rounding edge decides);
  4. the highest clean recall@5 (HotpotQA), then the lowest clean anomaly_fpr (HotpotQA and biogen);
  5. the configured value, then the value nearest it.
Only dev questions are run (their distractor passages may come from any question's paragraphs, as in
`eval retrieval`); `main.py eval retrieval` reports the choice on test afterwards.
"""
from __future__ import annotations

import dataclasses
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from engine.cli.exit_codes import ExitCode
from engine.config import RetrievalSettings

from .attacks import fleet
from .runner import DEFENCE, Evaluation, RunConfig

DEV = "dev"
TIE_DIGITS = 2      # context_asr gaps below 0.01 on ~50 questions are one question or less
ACCURACY_SLACK = 0.03   # #7: clean accuracy within 3 points of the union baseline
TAMPER_SLACK = 0.02     # edited copies flagged: ~150 dev copies on the tamper rows, so 0.02 is two or three
MAX_PASSES = 3


@dataclass(frozen=True)
class SweepRow:
    """One evaluation row of the sweep: its data set, its run, and what it stands for."""
    name: str
    dataset: str
    config: RunConfig
    attack: bool              # scored by context_asr (lower is better); else a clean row
    against_vote: bool = False   # an agent attack: the defence must plant no more than union or majority
    keeps_accuracy: bool = False # a clean row: answer accuracy within ACCURACY_SLACK of union's
    keeps_answers: bool = False  # an attack row: answer accuracy within ACCURACY_SLACK of union's on the clean row
    against_planted_answer: bool = False  # a corpus row: bare answer_asr no higher than naive's or TrustRAG's (#50)


ROWS: tuple[SweepRow, ...] = (
    SweepRow("clean", "hotpotqa", RunConfig(attack="none", forms=("bare",)), attack=False, keeps_accuracy=True),
    SweepRow("agent_1of4", "hotpotqa", RunConfig(attack="agent", retrievers=4, byzantine=1), True, True,
             keeps_answers=True),
    SweepRow("nq_agent_1of4", "nq", RunConfig(attack="agent", retrievers=4, byzantine=1), True, True),
    SweepRow("msmarco_agent_1of4", "msmarco", RunConfig(attack="agent", retrievers=4, byzantine=1), True, True),
    SweepRow("collude_2of5", "hotpotqa", RunConfig(attack="agent", collude=True, retrievers=5, byzantine=2),
             True, True, keeps_answers=True),
    SweepRow("corpus_p5", "hotpotqa", RunConfig(attack="corpus"), True),
    SweepRow("corpus_p3", "hotpotqa", RunConfig(attack="corpus", poison_count=3), True),
    # Two texts: the fewest an echo rule can see (echo_min_size 2); without this row the sweep cannot tell
    # what a pair rule buys.
    SweepRow("corpus_p2", "hotpotqa", RunConfig(attack="corpus", poison_count=2), True, against_planted_answer=True),
    # One and two planted texts, bare, on every data set with answers (#50's target): the defence's answer may
    # give the planted answer no more often than one undefended retriever (naive) or TrustRAG's code does.
    SweepRow("corpus_p1", "hotpotqa", RunConfig(attack="corpus", poison_count=1, forms=("bare",)), True,
             against_planted_answer=True),
    SweepRow("nq_corpus_p1", "nq", RunConfig(attack="corpus", poison_count=1, forms=("bare",)), True,
             against_planted_answer=True),
    SweepRow("nq_corpus_p2", "nq", RunConfig(attack="corpus", poison_count=2, forms=("bare",)), True,
             against_planted_answer=True),
    SweepRow("msmarco_corpus_p1", "msmarco", RunConfig(attack="corpus", poison_count=1, forms=("bare",)), True,
             against_planted_answer=True),
    SweepRow("msmarco_corpus_p2", "msmarco", RunConfig(attack="corpus", poison_count=2, forms=("bare",)), True,
             against_planted_answer=True),
    SweepRow("tamper_same_id", "hotpotqa", RunConfig(attack="tamper", variant="tamper-same-id", forms=("bare",)), True),
    SweepRow("tamper_new_id", "hotpotqa", RunConfig(attack="tamper", variant="tamper-new-id", forms=("bare",)), True),
    SweepRow("name_swap", "hotpotqa", RunConfig(attack="tamper", variant="name-swap", forms=("bare",)), True),
    SweepRow("biogen_clean", "biogen", RunConfig(attack="none", forms=("bare",)), attack=False),
    SweepRow("biogen_corpus", "biogen", RunConfig(attack="corpus", forms=("bare",)), True),
    SweepRow("nq_corpus", "nq", RunConfig(attack="corpus"), True),
)

# The thresholds secure retrieval's full mode reads, and the values tried around each. Strict mode's
# mirror_margin was already chosen on dev (configuration notes); k_per_agent and context_k are sizes.
GRID: Mapping[str, tuple[float, ...]] = {
    "quorum_share": (0.25, 0.3, 0.35, 0.4, 0.5),
    "rrf_k": (5, 10, 30, 60),
    "echo_similarity": (0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9),
    "echo_min_size": (2, 3, 4),
    "echo_margin": (0.0, 0.02, 0.05, 0.1),
    "corroboration": (0.7, 0.85, 0.95),
    "tamper_similarity": (0.85, 0.9, 0.93, 0.95, 0.97, 0.99),
    "min_cluster_size": (2, 3, 4),
    "echo_rouge": (0.25, 0.35, 0.5, 1.0),     # TrustRAG's n-gram test as an echo link (0.25: its code's value; 1: off)
}


@dataclass(frozen=True)
class Scores:
    """What one setting did on the dev split of every row (worst form where a row has two)."""
    context_asr: Mapping[str, float]          # attack rows
    vote_violations: tuple[str, ...]          # broken floors: agent rows worse than the better vote, clean accuracy
    clean_recall: float
    clean_fpr: float                          # mean of the clean rows' anomaly_fpr
    clean_accuracy: float = 0.0               # HotpotQA clean answer accuracy
    tamper_flagged: float = 0.0               # mean anomaly_tpr of the tamper rows (worst form)

    @property
    def mean_asr(self) -> float:
        values = list(self.context_asr.values())
        return round(sum(values) / len(values), TIE_DIGITS) if values else 0.0


def with_value(settings: RetrievalSettings, name: str, value: float) -> RetrievalSettings:
    kind = type(getattr(settings, name))
    return dataclasses.replace(settings, **{name: kind(value)})


def dev_metrics(result, method: str) -> list[dict]:
    """The dev split's metrics of one method, one dict per form."""
    return [by_method[method] for by_method in result.split_metrics.get(DEV, {}).values()]


def bare_metric(result, method: str, metric: str) -> float:
    """One method's dev metric on the bare form (a planted text without the question before it)."""
    return result.split_metrics.get(DEV, {}).get("bare", {}).get(method, {}).get(metric) or 0.0


def score(defence: Mapping[str, list[dict]], votes: Mapping[str, float],
          union_accuracy: Mapping[str, float] | None = None, rows: Sequence[SweepRow] = ROWS,
          planted: Mapping[str, float] | None = None, defence_planted: Mapping[str, float] | None = None) -> Scores:
    """defence: row → its dev metrics per form; votes: agent row → the better vote's context_asr;
    union_accuracy: clean row → union's answer accuracy; planted: corpus row → the lower bare answer_asr of naive
    and TrustRAG; defence_planted: corpus row → the defence's bare answer_asr."""
    union_accuracy, planted, defence_planted = union_accuracy or {}, planted or {}, defence_planted or {}
    asr, violations, recall, fprs, clean_accuracy, flagged = {}, [], 0.0, [], 0.0, []
    for row in rows:
        metrics = defence.get(row.name)
        if not metrics:
            continue
        if row.attack:
            asr[row.name] = max(m["context_asr"] for m in metrics)
            if row.config.attack == "tamper":
                flagged.append(min(m.get("anomaly_tpr") or 0.0 for m in metrics))
            if row.against_vote and asr[row.name] > votes.get(row.name, math.inf) + 1e-9:
                violations.append(row.name)
            if row.against_planted_answer and row.name in defence_planted and \
                    defence_planted[row.name] > planted.get(row.name, math.inf) + 1e-9:
                violations.append(f"{row.name} answer_asr")
            if row.keeps_answers and "clean" in union_accuracy and \
                    min(m["answer_accuracy"] or 0.0 for m in metrics) < union_accuracy["clean"] - ACCURACY_SLACK - 1e-9:
                violations.append(f"{row.name} accuracy")
        else:
            fprs.append(max(m["anomaly_fpr"] or 0.0 for m in metrics))
            accuracy = min(m["answer_accuracy"] or 0.0 for m in metrics)
            if row.keeps_accuracy and accuracy < union_accuracy.get(row.name, 0.0) - ACCURACY_SLACK - 1e-9:
                violations.append(f"{row.name} accuracy")
            if row.name == "clean":
                recall = min(m["clean_recall_at_k"] or 0.0 for m in metrics)
                clean_accuracy = accuracy
    return Scores(asr, tuple(violations), round(recall, 4), round(sum(fprs) / len(fprs), 4) if fprs else 0.0,
                  round(clean_accuracy, 4), round(sum(flagged) / len(flagged), 4) if flagged else 0.0)


def choose(values: Sequence[float], scores: Mapping[float, Scores], current: float) -> float:
    """The module docstring's rule."""
    ordered = sorted(values)

    def neighbours_broken(value: float) -> int:
        at = ordered.index(value)
        around = ordered[max(0, at - 1):at] + ordered[at + 1:at + 2]
        return max((len(scores[v].vote_violations) for v in around), default=0)

    def safety(value: float):
        s = scores[value]
        return len(s.vote_violations), neighbours_broken(value), s.mean_asr

    safeties = {v: safety(v) for v in values}
    safest = min(safeties.values())
    candidates = [v for v in values if safeties[v] == safest]
    best_flagged = max(scores[v].tamper_flagged for v in candidates)
    candidates = [v for v in candidates if scores[v].tamper_flagged >= best_flagged - TAMPER_SLACK - 1e-9]

    def rest(value: float):
        s = scores[value]
        return (-round(s.clean_recall, TIE_DIGITS), round(s.clean_fpr, TIE_DIGITS),
                value != current, abs(value - current))
    return min(candidates, key=rest)


def sweep(evaluations: Mapping[str, tuple[Evaluation, Sequence]], base: RetrievalSettings, *,
          grid: Mapping[str, Sequence[float]] = GRID, rows: Sequence[SweepRow] = ROWS,
          progress: Callable[[str], None] = print) -> dict:
    """evaluations: data set → (its Evaluation, its dev cases). Returns the report."""
    prepared, votes, union_accuracy, planted = {}, {}, {}, {}
    for row in rows:
        evaluation, cases = evaluations[row.dataset]
        started = time.perf_counter()
        run = evaluation.prepare_run(cases, dataclasses.replace(row.config, split=DEV))
        prepared[row.name] = (evaluation, run)
        if row.against_vote:
            result = evaluation.judge_run(run, base, methods=(DEFENCE, "union", "majority"))
            votes[row.name] = min(max(m["context_asr"] for m in dev_metrics(result, name))
                                  for name in ("union", "majority"))
        if row.against_planted_answer:
            result = evaluation.judge_run(run, base, methods=(DEFENCE, "naive", "trustrag"))
            planted[row.name] = min(bare_metric(result, name, "answer_asr") for name in ("naive", "trustrag"))
        if row.keeps_accuracy:
            result = evaluation.judge_run(run, base, methods=(DEFENCE, "union"))
            union_accuracy[row.name] = min(m["answer_accuracy"] or 0.0 for m in dev_metrics(result, "union"))
        progress(f"prepared {row.name} ({len(run.cases)} dev questions, {time.perf_counter() - started:.1f} s)")

    def measure(settings: RetrievalSettings) -> Scores:
        results = {name: evaluation.judge_run(run, settings, methods=(DEFENCE,))
                   for name, (evaluation, run) in prepared.items()}
        defence = {name: dev_metrics(result, DEFENCE) for name, result in results.items()}
        defence_planted = {name: bare_metric(results[name], DEFENCE, "answer_asr") for name in planted}
        return score(defence, votes, union_accuracy, rows, planted, defence_planted)

    configured = measure(base)
    passes, current_settings, current_scores = [], base, configured
    for number in range(1, MAX_PASSES + 1):
        thresholds, changed = {}, []
        for name, values in grid.items():
            current = getattr(current_settings, name)
            values = tuple(sorted(set(values) | {current}))
            scores = {}
            for value in values:
                started = time.perf_counter()
                scores[value] = current_scores if value == current else \
                    measure(with_value(current_settings, name, value))
                progress(f"pass {number}: {name} = {value}: mean context_asr {scores[value].mean_asr:.2f}, clean "
                         f"accuracy {scores[value].clean_accuracy:.3f}, tamper flagged "
                         f"{scores[value].tamper_flagged:.2f}, recall@5 {scores[value].clean_recall:.3f}, clean anomaly_fpr {scores[value].clean_fpr:.3f}, "
                         f"floors broken: {list(scores[value].vote_violations) or 'none'} "
                         f"({time.perf_counter() - started:.1f} s)")
            chosen = type(current)(choose(values, scores, current))
            thresholds[name] = {"current": current, "chosen": chosen,
                                "values": {str(v): _scores_json(s) for v, s in scores.items()}}
            if chosen != current:
                changed.append(name)
                current_settings, current_scores = with_value(current_settings, name, chosen), scores[chosen]
        passes.append({"pass": number, "changed": changed, "thresholds": thresholds})
        if not changed:
            break
    chosen = {name: getattr(current_settings, name) for name in grid}
    return {"split": DEV, "rows": [dataclasses.asdict(r) | {"config": _config_json(r.config)} for r in rows],
            "votes": votes, "union_accuracy": union_accuracy, "planted_baselines": planted, "configured": _scores_json(configured), "chosen": chosen,
            "chosen_scores": _scores_json(current_scores),
            "changed": {name: {"was": getattr(base, name), "now": value}
                        for name, value in chosen.items() if value != getattr(base, name)},
            "passes": passes}


def _scores_json(s: Scores) -> dict:
    return {"context_asr": dict(s.context_asr), "mean_context_asr": s.mean_asr, "vote_violations": list(s.vote_violations),
            "clean_accuracy": s.clean_accuracy, "tamper_flagged": s.tamper_flagged, "clean_recall_at_5": s.clean_recall, "clean_anomaly_fpr": s.clean_fpr}


def _config_json(config: RunConfig) -> dict:
    out = dataclasses.asdict(config)
    out["mode"] = config.mode.value
    return out


def markdown(report: Mapping) -> str:
    rows = [r["name"] for r in report["rows"] if r["attack"]]
    changed = ", ".join(f"{k} {v['was']} → {v['now']}" for k, v in report["changed"].items()) or "none"
    lines = ["# Secure retrieval thresholds, chosen on the dev split", "",
             "Each threshold varied alone around the current settings, in passes until one changes nothing; "
             "context_asr per attack row (worst form), clean recall@5 (HotpotQA), clean anomaly_fpr (mean of "
             "HotpotQA and biogen). Chosen by bench/evaluation/retrieval_sweep.py's rule.", "",
             "Better vote (union or majority), dev context_asr: "
             + ", ".join(f"{k} {v:.2f}" for k, v in report["votes"].items())
             + "; union's clean answer accuracy: " + ", ".join(f"{k} {v:.3f}" for k, v in report["union_accuracy"].items()),
             "",
             f"Changed: {changed}. Configured: {_summary(report['configured'])}; chosen: "
             f"{_summary(report['chosen_scores'])}.", ""]
    header = ["threshold", "value", *rows, "mean asr", "tamper flagged", "accuracy", "recall@5", "anom fpr",
              "floors broken"]
    for number in report["passes"]:
        lines += [f"## Pass {number['pass']} (changed: {', '.join(number['changed']) or 'nothing'})", "",
                  "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for name, entry in number["thresholds"].items():
            for value, s in entry["values"].items():
                mark = (" **chosen**" if float(value) == float(entry["chosen"]) else "") + \
                       (" (current)" if float(value) == float(entry["current"]) else "")
                cells = [name, value + mark, *(f"{s['context_asr'].get(r, float('nan')):.2f}" for r in rows),
                         f"{s['mean_context_asr']:.2f}", f"{s['tamper_flagged']:.2f}", f"{s['clean_accuracy']:.3f}", f"{s['clean_recall_at_5']:.3f}",
                         f"{s['clean_anomaly_fpr']:.3f}", ", ".join(s["vote_violations"]) or "none"]
                lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _summary(s: Mapping) -> str:
    return (f"mean context_asr {s['mean_context_asr']:.2f}, clean accuracy {s['clean_accuracy']:.3f}, recall@5 {s['clean_recall_at_5']:.3f}, "
            f"clean anomaly_fpr {s['clean_anomaly_fpr']:.3f}")


def run(args) -> int:
    from engine.config import load_settings
    from engine.engine import default_cache_dir
    from .datasets import load_dataset
    from .runner import Progress, real_embedders
    from .splits import split_of

    started = time.perf_counter()
    base = load_settings(args.settings).retrieval
    cache_dir = Path(args.cache_dir) if args.cache_dir else default_cache_dir() / "eval"
    kinds = [kind for _, kind in fleet(max(r.config.retrievers for r in ROWS))] + [base.embedder]
    embedders = real_embedders(kinds, cache_dir)
    try:
        evaluations = {}
        for dataset in dict.fromkeys(r.dataset for r in ROWS):
            cases, _, _ = load_dataset(dataset)
            dev = [c for c in cases if split_of(c.id) == DEV]   # test questions never reach the sweep
            evaluations[dataset] = (Evaluation(base, embedders, progress=Progress()), dev)
        report = sweep(evaluations, base)
    finally:
        for embedder in embedders.values():
            embedder.close()
    report["wall_time_s"] = round(time.perf_counter() - started, 1)
    print()
    for name, value in report["chosen"].items():
        was = getattr(base, name)
        print(f"{name}: {value} ({'kept' if value == was else f'was {was}'})")
    print(f"wall time {report['wall_time_s']} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))
        args.json.with_suffix(".md").write_text(markdown(report))
        print(f"wrote {args.json} and {args.json.with_suffix('.md')}")
    return ExitCode.OK
