"""`main.py eval cascade`: CHARM measured as the paper measures it, on real multi-hop data.

Every record is run clean once and once per injected type (INJECTION_STAGE in cascade_inject);
clean trajectories carry no injection, so they give the false-positive rate. Each trajectory is
first run with the monitor watching only (its scores give detection, the ablation and the answer
without CHARM), then, where the monitor fired, again with mitigation.

Metrics (each counts one thing):
- cdr: injected trajectories (where the injection changed something) flagged at a stage ≤ injection stage + 1.
- cdd: mean stage number (1-based) of the first flag, over detected trajectories.
- fpr: clean trajectories flagged at any stage.
- epr: 1 − ErrEM(with CHARM and mitigation) / ErrEM(without). ErrEM is the share of injected
  trajectories whose error reaches the output: a final answer other than the clean run's, or for
  confidence inflation a final confidence ≥ 0.1 above the clean run's. A halted answer does not reach
  the output only when it went to the operator (the cascade outcome says halted, which is what sends
  it to the approval queue: engine.review.needs_review); a halt that reaches nobody counts as
  propagated. "halted" and "halted_escalated" are reported beside it.
- msr: of mitigated trajectories, the share whose mitigation resolved the cascade without a halt and
  gave back the clean run's output.
- overhead per stage: the monitors' own time at one stage boundary, as they ran in each record's first
  (clean) trajectory, in the product path: the record's passages and their sentences were embedded
  beforehand, as `main.py index` and the engine's start embed a corpus, and nothing else was (the CLI
  starts an empty embedding cache for it), so every statement, conclusion and injected text is embedded
  while the stage waits. Beside it: the same clean trajectories replayed on an empty cache with nothing
  indexed (`unindexed_overhead`), and the warm figure (mean ± sd over `runs` replays).
- output-level baseline: the final answer's claims checked against the consensus pool (what the
  two or more retrievers agreed on, the pool SFV checks against), and its confidence against the share of
  the question its claims answer (CPM's margin), once, with no stage boundaries.
"""
from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from engine.cascade.monitor import CascadeMonitor
from engine.cascade.monitors import Monitors
from engine.settings.cascade import CascadeSettings
from engine.settings.judge import JudgeSettings
from engine.cascade.trigger import trigger
from engine.cascade.types import StageScore
from engine.types import CascadeType
from engine.stages.model import Trajectory
from engine.types import ClaimLabel
from engine.ingest.corpus import embedding_texts
from engine.text import content_words
from engine.verify.verifier import EvidenceVerifier
from .cascade_data import CascadeRecord
from .cascade_inject import INJECTION_STAGE, Injection
from .cascade_queue import OperatorQueue
from .cascade_run import RecordRun, RunResult
from .splits import split_of
from .textmatch import contains_answer

ABLATIONS = {"sfv_only": (True, False, False), "csct_only": (False, True, False), "cpm_only": (False, False, True),
             "sfv_csct": (True, True, False), "sfv_cpm": (True, False, True), "csct_cpm": (False, True, True),
             "full": (True, True, True)}
CONFIDENCE_ERROR = 0.1

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Row:
    record_id: str
    dataset: str
    split: str
    shape: str
    injected: CascadeType | None
    took_effect: bool
    scores: tuple[StageScore, ...]            # the watching run
    propagated_without: bool
    propagated_with: bool
    halted_with: bool
    escalated_with: bool          # halted, and found pending in a real approval queue (cascade_queue)
    mitigated: bool
    mitigation_success: bool
    baseline_fired: bool
    gold_clean: bool
    gold_with: bool
    mitigation: str = ""


@dataclass
class Collected:
    rows: list[Row] = field(default_factory=list)
    trajectories: list[Trajectory] = field(default_factory=list)    # watching runs, for the timing replays
    clean: list[Trajectory] = field(default_factory=list)           # each record's clean run


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def escalated(result: RunResult) -> bool:
    """Halted and held for the operator: the cascade outcome's halted is what needs_review sends to the queue.
    What propagation counts; the "escalated" row counts what the real queue holds (cascade_queue)."""
    return result.halted and result.outcome is not None and result.outcome.halted


def _propagated(kind: CascadeType | None, result: RunResult, clean: RunResult) -> bool:
    if result.halted:
        return not escalated(result)
    if kind is CascadeType.CONFIDENCE_INFLATION:
        return result.confidence - clean.confidence >= CONFIDENCE_ERROR or _norm(result.answer) != _norm(clean.answer)
    return _norm(result.answer) != _norm(clean.answer)


def output_level_fires(result: RunResult, verifier: EvidenceVerifier, margin: float = 0.05) -> bool:
    """The baseline: what the final answer says and how sure it is, checked once at the output with no stage
    boundaries. It fires when a final claim is not supported by the consensus pool the monitors check
    against, or when the answer is surer than its claims answer the question: its confidence above the
    share of the question's content words its claims and their cited titles carry, by more than CPM's
    margin (the part of CPM's calibration an output-level check can see; the upstream ceiling needs stages)."""
    final = result.trajectory.stages[-1]
    evidence = list(result.trajectory.pool)
    if not final.claims:
        return False
    if any(verifier.judge_sync(c.text, evidence).label is not ClaimLabel.SUPPORTED for c in final.claims):
        return True
    titles = {chunk.id: chunk.title for chunk in (*evidence, *final.evidence)}
    return final.confidence - answered_share(result.trajectory.question, final.claims, titles) > margin


def answered_share(question: str, claims, titles: dict[str, str]) -> float:
    """Share of the question's content words that the claims and the titles of the passages they cite carry."""
    asked = set(content_words(question))
    if not asked:
        return 1.0
    said = {w for c in claims for w in content_words(c.text)}
    said |= {w for c in claims for cited in c.citations for w in content_words(titles.get(cited, ""))}
    return len(asked & said) / len(asked)


def collect(records: Sequence[CascadeRecord], embedder, settings: CascadeSettings, *,
            progress: Progress | None = None, seed: int = 0, variant: str = "standard",
            retriever_embedder=None, index: bool = True, judge=None,
            judge_settings: JudgeSettings = JudgeSettings()) -> Collected:
    """retriever_embedder: the dense retriever's (default: `embedder`). In the product the retrievers are
    other processes with their own models, so the CLI gives them their own and the monitors a cold one.
    index: embed each record's passages and their sentences into `embedder` before its first run, untimed,
    as the product indexes its corpus before any question. judge: SFV's reader of conclusions that are not the
    engine's own (engine.cascade.monitors.JudgeRead); None: the word checks alone."""
    with OperatorQueue() as queue:
        return _collect(records, embedder, settings, queue, progress=progress, seed=seed, variant=variant,
                        retriever_embedder=retriever_embedder, index=index, judge=judge, judge_settings=judge_settings)


def _collect(records: Sequence[CascadeRecord], embedder, settings: CascadeSettings, queue: OperatorQueue, *,
             progress: Progress | None, seed: int, variant: str, retriever_embedder, index: bool, judge,
             judge_settings: JudgeSettings) -> Collected:
    monitors = Monitors(embedder, settings, judge=judge, judge_settings=judge_settings)
    baseline = EvidenceVerifier(embedder, name="output-level")
    out = Collected()
    for n, record in enumerate(records, 1):
        if index:
            embedder.embed_passages(embedding_texts(record.paragraphs))
        run = RecordRun(record, retriever_embedder if retriever_embedder is not None else embedder)
        watch = CascadeMonitor(monitors, settings, mitigate=False)
        clean = run.run(None, watch)
        out.trajectories.append(clean.trajectory)
        out.clean.append(clean.trajectory)
        split = split_of(record.id)
        gold = lambda text: any(contains_answer(text, a) for a in record.answers)   # noqa: E731
        out.rows.append(Row(record.id, record.dataset, split, run.decomposition.shape.value, None, False,
                            tuple(watch.scores), False, False, False, False, False, False,
                            output_level_fires(clean, baseline, settings.confidence_margin), gold(clean.answer), gold(clean.answer)))
        for kind in CascadeType:
            injection = Injection(kind, seed, variant)
            watch = CascadeMonitor(monitors, settings, mitigate=False)
            watched = run.run(injection, watch)
            out.trajectories.append(watched.trajectory)
            fired = any(s.fired for s in watch.scores)
            if fired:
                acting = CascadeMonitor(monitors, settings)
                mitigated = run.run(injection, acting, max_reruns=settings.max_reruns)
                outcome = acting.outcome()
                mitigation = outcome.mitigation.value
            else:
                mitigated, mitigation = watched, ""
            without = _propagated(kind, watched, clean)
            with_charm = _propagated(kind, mitigated, clean)
            success = fired and not mitigated.halted and not with_charm
            reached = mitigated.halted and queue.reached(f"{record.id}/{kind.value}", record.question, mitigated)
            out.rows.append(Row(record.id, record.dataset, split, run.decomposition.shape.value, kind,
                                watched.injected, tuple(watch.scores), without, with_charm, mitigated.halted,
                                reached, fired, success, output_level_fires(watched, baseline, settings.confidence_margin), gold(clean.answer),
                                gold(mitigated.answer), mitigation))
        if progress:
            progress(n, len(records), record.id)
    return out


def detected(scores: Sequence[StageScore], kind: CascadeType | None, settings: CascadeSettings,
             use: tuple[bool, bool, bool] = (True, True, True)) -> int | None:
    """The first stage index flagged (None: never), re-deciding the trigger with some monitors off."""
    for s in scores:
        if trigger(s.a_sfv, s.a_csct, s.a_cpm, s.stage, settings, use=use).fired:
            return s.index
    return None


def metrics(rows: Sequence[Row], settings: CascadeSettings, use=(True, True, True)) -> dict:
    injected = [r for r in rows if r.injected is not None and r.took_effect]
    clean = [r for r in rows if r.injected is None]
    hits, stages = 0, []
    by_type: dict[str, dict] = {}
    for kind in CascadeType:
        of_kind = [r for r in injected if r.injected is kind]
        found = [detected(r.scores, kind, settings, use) for r in of_kind]
        ok = [f for f in found if f is not None and f <= INJECTION_STAGE[kind] + 1]
        by_type[kind.value] = {"n": len(of_kind), "cdr": _share(len(ok), len(of_kind)),
                               "cdd": round(statistics.mean(f + 1 for f in ok), 2) if ok else None}
        hits += len(ok)
        stages += [f + 1 for f in ok]
    fp = sum(detected(r.scores, None, settings, use) is not None for r in clean)
    return {"n_injected": len(injected), "n_clean": len(clean), "by_type": by_type,
            "cdr": _share(hits, len(injected)), "fpr": _share(fp, len(clean)),
            "cdd": round(statistics.mean(stages), 2) if stages else None}


def propagation(rows: Sequence[Row]) -> dict:
    injected = [r for r in rows if r.injected is not None and r.took_effect]
    without = sum(r.propagated_without for r in injected)
    with_charm = sum(r.propagated_with for r in injected)
    mitigated = [r for r in injected if r.mitigated]
    base_with = sum(r.propagated_without and not r.baseline_fired for r in injected)
    return {"err_without": _share(without, len(injected)), "err_with": _share(with_charm, len(injected)),
            "epr": round(1 - with_charm / without, 3) if without else None,
            "halted": _share(sum(r.halted_with for r in injected), len(injected)),
            "halted_escalated": _share(sum(r.escalated_with for r in injected), len(injected)),
            "msr": _share(sum(r.mitigation_success for r in mitigated), len(mitigated)),
            "baseline_epr": round(1 - base_with / without, 3) if without else None}


def baseline(rows: Sequence[Row]) -> dict:
    injected = [r for r in rows if r.injected is not None and r.took_effect]
    clean = [r for r in rows if r.injected is None]
    return {"cdr": _share(sum(r.baseline_fired for r in injected), len(injected)),
            "fpr": _share(sum(r.baseline_fired for r in clean), len(clean)),
            "epr": propagation(rows)["baseline_epr"]}


def cold_overhead(rows: Sequence[Row], injected: bool = False) -> tuple[float | None, float | None]:
    """p50 and mean of the monitors' time per stage boundary as they first ran: in each record's clean run, or
    (injected) in its injected runs, where the injected texts are new to the monitors' cache."""
    return _p50_and_mean([s.elapsed_ms for r in rows if (r.injected is not None) is injected for s in r.scores])


def _p50_and_mean(times: Sequence[float]) -> tuple[float | None, float | None]:
    if not times:
        return None, None
    return round(statistics.median(times), 2), round(statistics.mean(times), 2)


def unindexed_overhead(trajectories: Sequence[Trajectory], embedder, settings: CascadeSettings
                       ) -> tuple[float | None, float | None]:
    """p50 and mean of the monitors' time per stage boundary over `trajectories` replayed once on
    `embedder`, which should start empty: nothing indexed, every passage embedded the first time a
    monitor reads it."""
    return _p50_and_mean(_replay_times(trajectories, Monitors(embedder, settings), settings))


def _replay_times(trajectories: Sequence[Trajectory], monitors: Monitors, settings: CascadeSettings) -> list[float]:
    times = []
    for trajectory in trajectories:
        monitor = CascadeMonitor(monitors, settings, mitigate=False)
        for i, stage in enumerate(trajectory.stages):
            started = time.perf_counter()
            monitor.on_stage(trajectory.upto(i + 1), stage)
            times.append((time.perf_counter() - started) * 1000)
    return times


def overhead(trajectories: Sequence[Trajectory], embedder, settings: CascadeSettings, runs: int) -> tuple[float, float]:
    """Mean and sd over `runs` replays of the monitors' time per stage boundary (mitigation off)."""
    monitors = Monitors(embedder, settings)
    means = []
    for _ in range(max(1, runs)):
        times = _replay_times(trajectories, monitors, settings)
        means.append(statistics.mean(times) if times else 0.0)
    return round(statistics.mean(means), 2), round(statistics.stdev(means), 2) if len(means) > 1 else 0.0


def summary(rows: Sequence[Row], settings: CascadeSettings, timing: tuple[float, float]) -> dict:
    """The issue's JSON shape, for one group of rows."""
    found = metrics(rows, settings)
    spread = propagation(rows)
    cold = cold_overhead(rows)
    cold_injected = cold_overhead(rows, injected=True)
    return {"n_injected": found["n_injected"], "n_clean": found["n_clean"], "by_type": found["by_type"],
            "cdr": found["cdr"], "fpr": found["fpr"], "cdd": found["cdd"], "epr": spread["epr"],
            "msr": spread["msr"], "err_without": spread["err_without"], "err_with": spread["err_with"],
            "halted": spread["halted"], "halted_escalated": spread["halted_escalated"],
            "overhead_ms_per_stage_cold_p50": cold[0], "overhead_ms_per_stage_cold_mean": cold[1],
            "overhead_ms_per_stage_cold_injected_p50": cold_injected[0],
            "overhead_ms_per_stage_cold_injected_mean": cold_injected[1],
            "overhead_ms_per_stage_mean": timing[0], "overhead_ms_per_stage_sd": timing[1],
            "ablation": {name: {k: v for k, v in metrics(rows, settings, use).items() if k in ("cdr", "fpr")}
                         for name, use in ABLATIONS.items()},
            "output_level_baseline": baseline(rows),
            "gold_in_answer": {"clean": _share(sum(r.gold_clean for r in rows if r.injected is None),
                                                sum(r.injected is None for r in rows))}}


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


THETAS = (0.35, 0.45, 0.5, 0.55, 0.6, 0.65, 0.75)
GATES = (0.2, 0.3, 0.5, 0.7, 1.01)


def sweep(rows: Sequence[Row], settings: CascadeSettings) -> dict:
    """Detection and false positives as θ and the confidence gate move (the other held at its setting);
    a gate of 1.01 never fires, which is the paper's trigger alone."""
    out = {"theta": {}, "cpm_gate": {}}
    for theta in THETAS:
        found = metrics(rows, dataclasses.replace(settings, theta=theta))
        out["theta"][str(theta)] = {"cdr": found["cdr"], "fpr": found["fpr"]}
    for gate in GATES:
        found = metrics(rows, dataclasses.replace(settings, cpm_gate=gate))
        out["cpm_gate"][str(gate)] = {"cdr": found["cdr"], "fpr": found["fpr"],
                                      "confidence_inflation_cdr": found["by_type"]["confidence_inflation"]["cdr"]}
    return out


def groups(rows: Sequence[Row], settings: CascadeSettings, timing: tuple[float, float]) -> dict:
    """The issue's JSON for all rows, then per data set and split (HotpotQA dev is where it was tuned)."""
    out = summary(rows, settings, timing)
    out["sweep_hotpotqa_dev"] = sweep([r for r in rows if r.dataset == "hotpotqa" and r.split == "dev"], settings)
    out["groups"] = {}
    for dataset in sorted({r.dataset for r in rows}):
        for split in ("dev", "test"):
            chosen = [r for r in rows if r.dataset == dataset and r.split == split]
            if chosen:
                out["groups"][f"{dataset}/{split}"] = summary(chosen, settings, timing)
    return out
