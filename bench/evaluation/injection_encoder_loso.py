"""`main.py eval injection --leave-one-out --encoder`: the injection encoder on sources it never saw.

The folds are injection_loso's: each family held out whole, training on every other record that shares no text
with it, less the attack seeds that quote or paraphrase it (injection_loso._project_for). Only the families the
target applies to are run (at least MIN_POSITIVES data-channel injections), since each fold fine-tunes its own
encoder (about 11 minutes on two cores). Per fold:

- the encoder is fine-tuned and its operating point chosen on the fold's training examples
  (bench/train/injection_encoder.fit_and_calibrate: the point on the fifth it set aside);
- the hashed classifier is fitted and calibrated on the same training rows (as in injection_loso);
- the family's data-channel records and the held-out half of the project's benign tool output are scored by
  both: the encoder alone, the classifier alone, and the two together (flagged when either flags, which is how
  the gateway combines scanners). No pattern rule is used: they were written reading every source.

The fold's fpr counts the family's own benign data records and the benign tool output, as in injection_loso.
"""
from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .injection import DEFAULT_FILE, benign_texts
from .splits import TEST, split_of
from bench.train.gateway import _rate

from .injection_loso import MIN_POSITIVES, TARGET_FPR, TARGET_TPR, _fmt, _project_for, folds

SCORERS = ("encoder", "classifier", "either")


@dataclass(frozen=True)
class Flags:
    label: int
    encoder: bool
    classifier: bool

    @property
    def either(self) -> bool:
        return self.encoder or self.classifier


def unit_figures(injections: Sequence[Flags], benign: Sequence[Flags]) -> dict:
    """Per scorer: tpr on the family's injections, fpr on the fold's benign texts, and the target."""
    out = {}
    for scorer in SCORERS:
        tpr = _rate([getattr(f, scorer) for f in injections])
        fpr = _rate([getattr(f, scorer) for f in benign])
        out[scorer] = {"tpr": tpr, "fpr": fpr,
                       "met": tpr is not None and fpr is not None and tpr >= TARGET_TPR and fpr <= TARGET_FPR}
    return out


def evaluate(path: Path = DEFAULT_FILE, *, options=None, units: Sequence[str] | None = None,
             progress: Callable[[str], None] | None = None) -> dict:
    from bench.train import gateway as training
    from bench.train import injection_encoder as encoder_training
    from engine.gateway.scanners.base import Channel
    from engine.gateway.scanners.classifier import InjectionClassifier
    from .injection import load
    from .injection_loso import fold_weights

    say = progress or (lambda message: None)
    options = options or encoder_training.EncoderOptions()
    rows, records = training.read_rows(path), load(path)
    project = training.project_examples()
    held_benign = [text for _, _, text in benign_texts() if split_of(training.content_id(text)) == TEST]
    out: dict = {"file": str(path), "options": dataclasses.asdict(options), "units": {}}
    for fold in folds(rows, records):
        data = [r for r in fold.records if r.channel is Channel.DATA]
        if sum(r.label for r in data) < MIN_POSITIVES or (units and fold.unit not in units):
            continue
        started = time.perf_counter()
        say(f"encoder loso: {fold.unit}: fine-tuning on {len(fold.train)} records")
        mine, _ = _project_for(fold, project)
        fitted = encoder_training.fit_and_calibrate(encoder_training.data_examples(fold.train, mine), options, say)
        weights, _ = fold_weights(fold.train, mine, l2=training.L2, folds=3)
        classifier = InjectionClassifier(weights)
        texts = [r.text for r in data] + held_benign
        labels = [r.label for r in data] + [0] * len(held_benign)
        scan_started = time.perf_counter()
        found = encoder_training.text_margins(fitted.tokenizer, fitted.model, texts, options.max_length)
        scan_ms = (time.perf_counter() - scan_started) * 1000
        flags = [Flags(y, m >= fitted.threshold, classifier.scan(t, Channel.DATA).score >= 0.5)
                 for t, y, m in zip(texts, labels, found)]
        kb = sum(len(t.encode("utf-8")) for t in texts) / 1024
        out["units"][fold.unit] = {
            "records": len(data), "injections": sum(labels), "benign": len(labels) - sum(labels),
            "training_records": len(fold.train), "operating_margin": round(fitted.threshold, 4),
            "set_aside": fitted.calibration, **unit_figures([f for f in flags if f.label], [f for f in flags if not f.label]),
            "encoder_ms_per_kb_batched": round(scan_ms / kb, 2) if kb else None,
            "wall_time_s": round(time.perf_counter() - started, 1)}
        say(f"encoder loso: {fold.unit}: {out['units'][fold.unit]['encoder']}, either {out['units'][fold.unit]['either']}")
    out["targets"] = {"tpr": TARGET_TPR, "fpr": TARGET_FPR, "min_positives": MIN_POSITIVES}
    return out


def markdown(data: dict) -> list[str]:
    lines = ["# Injection encoder, leave one source out", "",
             f"Data: `{data['file']}`. Each family held out whole; the encoder fine-tuned and calibrated, and the "
             "hashed classifier fitted, on the rest. No pattern rules. Target: tpr ≥ "
             f"{data['targets']['tpr']} at fold fpr ≤ {data['targets']['fpr']}.", "",
             "| held-out family | injections | benign | scorer | tpr | fold fpr | target |", "|---|---|---|---|---|---|---|"]
    for name, unit in data["units"].items():
        for scorer in SCORERS:
            found = unit[scorer]
            lines.append(f"| {name} | {unit['injections']} | {unit['benign']} | {scorer} | {_fmt(found['tpr'])} | "
                         f"{_fmt(found['fpr'])} | {'met' if found['met'] else 'missed'} |")
    times = [u["encoder_ms_per_kb_batched"] for u in data["units"].values() if u["encoder_ms_per_kb_batched"]]
    if times:
        lines += ["", f"Encoder scoring, batched over a fold's texts: {statistics.median(times)} ms per KB."]
    return lines
