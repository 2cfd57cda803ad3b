"""`main.py eval injection --leave-one-out`: the gateway on sources it was never trained or calibrated on.

The usual split (injection.py) is by record, so a test record may carry a dev record's attack string or
host document. Here each source family is held out whole, in turn:

- a unit is one family of records (UNITS below): the BIPIA text attacks with the e-mails and tables
  they were inserted into, the BIPIA code attacks with their code, the in-the-wild jailbreaks, the
  system-prompt extractions, RobustRAG's PIA passages, the HotpotQA texts, the PoisonedRAG questions;
- for each unit the classifier is fitted and calibrated (out of fold, bench/train/gateway.py) and the
  seed scanner's midpoints chosen on every other record, less any record that shares a text of 30 or
  more characters with the unit (RobustRAG's passages quote PoisonedRAG and HotpotQA questions), and
  less any attack seed that quotes the unit or paraphrases it (a seed's "paraphrases" field names the unit
  whose template it rewords: resources/gateway/attack_seeds.jsonl);
- the unit's records, and the held-out half of the project's benign tool output, then go through a
  gateway built with those scanners, as configured, and again without the pattern rules. The pattern
  rules cannot be held out: they were written while reading dev rows of every source, so "without
  patterns" is the figure that never saw the unit.

Targets (issue #29): on every unit with at least MIN_POSITIVES data-channel injections, tpr >= 0.80
with the fold's false-positive rate (its own benign records and the held-out benign tool output) at
most 0.02.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

from .injection import (DEFAULT_FILE, Record, Scored, benign_texts, benign_traffic, rates, screen, thresholds, _only,
                        _share)

MIN_POSITIVES = 30          # data-channel injections a unit needs for the target to apply
MIN_SHARED = 30             # characters: a text this long inside a held-out text (or around one) is shared
CALIBRATION_FOLDS = 3       # out-of-fold calibration inside each training set (5 in `gateway train`)
TARGET_TPR, TARGET_FPR = 0.80, 0.02
VARIANTS = ("gateway", "without_patterns")


def unit_of(row: dict) -> str:
    """The held-out unit of a record: its source, BIPIA and garak split by attack family."""
    source = str(row.get("source_short") or "unknown")
    category = str(row.get("category", "")).split("/")[0]
    if source == "bipia":
        return "bipia_code" if category.startswith("bipia_code") else "bipia_text"
    if source == "garak":
        return "garak_jailbreak" if "jailbreak" in category else "garak_sysprompt"
    return source


def shares_text(a: str, b: str) -> bool:
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= MIN_SHARED and short in long


def training_rows(rows: Sequence[dict], unit: str) -> tuple[list[dict], int]:
    """Every record outside `unit` that shares no text with it, and how many were dropped for sharing."""
    held = [r["text"] for r in rows if unit_of(r) == unit]
    keep, dropped = [], 0
    for r in rows:
        if unit_of(r) == unit:
            continue
        if any(shares_text(r["text"], h) for h in held):
            dropped += 1
            continue
        keep.append(r)
    return keep, dropped


@dataclass(frozen=True)
class Fold:
    unit: str
    records: tuple[Record, ...]
    train: tuple[dict, ...]
    dropped: int            # records outside the unit left out of training for sharing a text with it


def folds(rows: Sequence[dict], records: Sequence[Record]) -> list[Fold]:
    out = []
    for unit in sorted({unit_of(r) for r in rows}):
        train, dropped = training_rows(rows, unit)
        held = [rec for r, rec in zip(rows, records) if unit_of(r) == unit]
        out.append(Fold(unit, tuple(held), tuple(train), dropped))
    return out


def _project_for(fold: Fold, project: Sequence) -> tuple[list, int]:
    """The project's examples, less attack seeds that quote the held-out unit or paraphrase it (their
    `paraphrases` names the unit)."""
    held = [r.text for r in fold.records]
    keep = [e for e in project if not (e.origin == "attack_seeds" and (
        e.paraphrases == fold.unit or any(shares_text(e.text, h) for h in held)))]
    return keep, len(project) - len(keep)


class SeedReadings:
    """Every record's and every benign project text's seed pieces, embedded once for all folds."""

    def __init__(self, scanner, rows: Sequence[dict], project: Sequence, progress=None) -> None:
        from bench.train.gateway import seed_pieces, seed_texts
        from engine.gateway.scanners.base import Channel
        self.embedder_name = scanner._key[0]        # the key a calibration is filed under
        self.items = seed_texts(rows, project)      # per head: (text, label, row id or None)
        self.pieces = {}
        for head, items in self.items.items():
            if progress:
                progress(f"injection loso: seed pieces of {len(items)} {head} texts")
            self.pieces[head] = seed_pieces(scanner, [t for t, _, _ in items], Channel(head))

    def calibration(self, train_ids: set[str]) -> dict[str, dict[str, float]]:
        """The seed midpoints from the training records and the benign project texts only, filed under the
        embedder's name as SeedSimilarity reads them."""
        from bench.train.gateway import seed_midpoints
        out = {}
        for head, items in self.items.items():
            labels = [label if rid is None or rid in train_ids else None for _, label, rid in items]
            point = seed_midpoints(self.pieces[head], labels)
            out[head], out[f"{head}_cjk"] = point["latin"], point["cjk"]
        return {self.embedder_name: out}


def fold_scanners(names: Sequence[str], weights, embedder, seed_calibration: dict | None):
    """The gateway's scanners by name (engine/gateway/build.py), the learned ones with this fold's weights
    and seed midpoints."""
    from engine.gateway.build import FACTORIES
    from engine.gateway.scanners.classifier import InjectionClassifier
    from engine.gateway.scanners.seeds import SeedSimilarity
    learned = {"classifier": lambda: InjectionClassifier(weights),
               "seeds": lambda: SeedSimilarity(embedder, calibration=seed_calibration)}
    return [learned[name]() if name in learned else FACTORIES[name](embedder) for name in names]


def fold_weights(train: Sequence[dict], project: Sequence, *, l2: float, folds: int, progress=None):
    from bench.train import gateway as training
    from engine.gateway.scanners.classifier import Weights
    heads, points, _ = training.calibrated_heads(train, project, l2, folds, progress)
    (w, b), (wu, bu) = heads["data"], heads["user"]
    return Weights(w, b, wu, bu), points


def evaluate(path: Path = DEFAULT_FILE, *, settings_path: Path | None = None, project: Sequence | None = None,
             embedder=None, l2: float | None = None, calibration_folds: int = CALIBRATION_FOLDS,
             progress: Callable[[str], None] | None = None,
             benign_rows: dict[str, dict[str, list[Scored]]] | None = None,
             ) -> tuple[dict, dict[str, dict[str, list[Scored]]]]:
    """The report and, per variant and unit, every record scored by the fold that held it out.
    benign_rows: when given, filled per variant and unit with the held-out benign tool output, each text scored by
    that fold's gateway (the second stage, injection_judged.py, reads them).
    project: the project's training examples (default: bench.train.gateway.project_examples());
    embedder: the seed scanner's (default: the engine's); l2: the classifier's (default: its training's)."""
    from bench.train.gateway import L2, project_examples, read_rows
    from engine.config import load_settings
    from engine.gateway.gateway import Gateway
    from engine.verify.embedders import EMBEDDERS
    from .injection import load

    settings = load_settings(settings_path)
    gateway_settings = settings.gateway
    rows, records = read_rows(path), load(path)
    project = list(project_examples() if project is None else project)
    uses_seeds = "seeds" in gateway_settings.scanners
    if uses_seeds and embedder is None:
        embedder = EMBEDDERS[settings.retrieval.embedder]()
    readings = None
    if uses_seeds:
        from engine.gateway.scanners.seeds import SeedSimilarity
        readings = SeedReadings(SeedSimilarity(embedder, calibration={}), rows, project, progress)
    names = {"gateway": gateway_settings.scanners,
             "without_patterns": tuple(s for s in gateway_settings.scanners if s != "patterns")}
    operating = thresholds(gateway_settings)
    scored: dict[str, dict[str, list[Scored]]] = {v: {} for v in VARIANTS}
    benign = benign_texts()
    units: dict[str, dict] = {}
    for n, fold in enumerate(folds(rows, records), start=1):
        if progress:
            progress(f"injection loso: unit {n} {fold.unit}: fitting on {len(fold.train)} records")
        mine, seeds_dropped = _project_for(fold, project)
        weights, points = fold_weights(fold.train, mine, l2=L2 if l2 is None else l2, folds=calibration_folds,
                                       progress=progress)
        seed_points = readings.calibration({r["id"] for r in fold.train}) if readings else None
        unit: dict = {"records": len(fold.records), "training_records": len(fold.train),
                      "dropped_for_shared_text": fold.dropped, "seeds_dropped": seeds_dropped,
                      "operating_points": points,
                      "seed_midpoints": next(iter(seed_points.values())) if seed_points else None}
        for variant in VARIANTS:
            gateway = Gateway(replace(gateway_settings, scanners=names[variant]),
                              fold_scanners(names[variant], weights, embedder, seed_points))
            scored[variant][fold.unit] = screen(list(fold.records), gateway)
            if benign_rows is not None:
                benign_rows.setdefault(variant, {})[fold.unit] = screen(held_out_benign(benign), gateway)
            unit[variant] = _unit_rates(scored[variant][fold.unit], benign_traffic(gateway, texts=benign)["held_out"])
        unit["by_scanner"] = {name: {channel.value: rates([_only(r, name) for r in scored["gateway"][fold.unit]
                                                           if r.record.channel is channel], operating[channel])
                                     for channel in operating}
                              for name in gateway_settings.scanners}
        units[fold.unit] = unit
    data = {"file": str(path), "scanners": list(gateway_settings.scanners),
            "threshold": {c.value: t for c, t in operating.items()}, "units": units,
            "pooled": {v: {c.value: rates([r for rows_ in scored[v].values() for r in rows_ if r.record.channel is c])
                           for c in operating} for v in VARIANTS},
            "targets": {"tpr": TARGET_TPR, "fpr": TARGET_FPR, "min_positives": MIN_POSITIVES,
                        "met": {v: met(units, v) for v in VARIANTS}}}
    times = sorted(r.ms_per_kb for rows_ in scored["gateway"].values() for r in rows_)
    data["scan_ms_per_kb_p50"] = round(statistics.median(times), 3) if times else None
    return data, scored


def held_out_benign(texts: Sequence[tuple[str, str, str]]) -> list[Record]:
    """The held-out half of the project's benign tool output (benign_texts()) as data-channel records."""
    from bench.train.gateway import content_id
    from engine.gateway.scanners.base import Channel
    from .injection import TEST, split_of
    return [Record(content_id(text), text, 0, Channel.DATA, origin) for origin, _kind, text in texts
            if split_of(content_id(text)) == TEST]


def _unit_rates(rows: Sequence[Scored], benign: dict) -> dict:
    out = {c: rates([r for r in rows if r.record.channel.value == c]) for c in ("data", "user")}
    neg = [r for r in rows if r.record.label == 0 and r.record.channel.value == "data"]
    flagged = sum(bool(r.flagged) for r in neg) + benign.get("n_flagged", 0)
    out["benign_traffic_fpr"] = benign.get("fpr")
    out["fold_data_fpr"] = _share(flagged, len(neg) + benign.get("n", 0))
    return out


def met(units: dict, variant: str) -> dict[str, bool]:
    """Per unit with at least MIN_POSITIVES data-channel injections: the target met or not."""
    out = {}
    for name, unit in units.items():
        found = unit[variant]
        if (found["data"]["n_injections"] or 0) < MIN_POSITIVES:
            continue
        out[name] = (found["data"]["tpr"] or 0.0) >= TARGET_TPR and (found["fold_data_fpr"] or 0.0) <= TARGET_FPR
    return out


def markdown(data: dict) -> list[str]:
    lines = ["# Injection gateway, leave one source out", "",
             f"Data: `{data['file']}`. Scanners: {', '.join(data['scanners'])}. Each unit held out whole; the "
             "classifier and the seed midpoints fitted on the rest (less records sharing a text with the unit). "
             "The pattern rules were written reading every source: **without patterns** is the held-out figure.",
             "", "| unit | variant | data inj | data tpr | user inj | user tpr | unit benign fpr (data) | "
             "benign tool output fpr | fold data fpr | target |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, unit in data["units"].items():
        for variant in VARIANTS:
            found = unit[variant]
            target = data["targets"]["met"][variant].get(name)
            lines.append(f"| {name} | {variant} | {found['data']['n_injections']} | {_fmt(found['data']['tpr'])} | "
                         f"{found['user']['n_injections']} | {_fmt(found['user']['tpr'])} | {_fmt(found['data']['fpr'])} | "
                         f"{_fmt(found['benign_traffic_fpr'])} | {_fmt(found['fold_data_fpr'])} | "
                         f"{'-' if target is None else 'met' if target else 'missed'} |")
    lines += ["", "Pooled over the units (each record scored by the fold that held it out):", ""]
    for variant in VARIANTS:
        for channel, found in data["pooled"][variant].items():
            lines.append(f"- {variant}, {channel}: tpr {_fmt(found['tpr'])} of {found['n_injections']}, "
                         f"fpr {_fmt(found['fpr'])} of {found['n_benign']}")
    lines += ["", "Per scanner alone (gateway variant, at its operating point):", ""]
    for name, unit in data["units"].items():
        parts = [f"{s} {_fmt(v['data']['tpr'])}/{_fmt(v['user']['tpr'])}" for s, v in unit["by_scanner"].items()]
        lines.append(f"- {name} (tpr data/user): " + ", ".join(parts))
    lines += ["", f"Scan time p50: {data['scan_ms_per_kb_p50']} ms per KB."]
    return lines


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def write_outputs(data: dict, scored: dict[str, dict[str, list[Scored]]], out: Path, lines: list[str]) -> list[Path]:
    """The JSON, the markdown and a ROC per unit (data channel, without patterns: the unit's injections
    against every benign data record, each scored by the fold that held it out)."""
    from .injection import roc, write_report
    data_rows = {unit: [r for r in rows if r.record.channel.value == "data"]
                 for unit, rows in scored["without_patterns"].items()}
    benign = [r for rows in data_rows.values() for r in rows if r.record.label == 0]
    curves = {unit: roc(mine + benign) for unit, rows in data_rows.items()
              if (mine := [r for r in rows if r.record.label == 1])}
    return write_report(data, curves, "Held-out sources, without patterns: ROC (data channel)", out, lines)
