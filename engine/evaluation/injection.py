"""`main.py eval injection`: the gateway's scanners on labelled injection data, per channel and source.

Records are JSON Lines `{text, label (1 injection, 0 benign), channel ("data" | "user"), source_short}`
(as ../shared/data/prompt_injections.jsonl). The split is the usual hash of the record id: the pattern
rules were written while reading dev rows and the classifier is trained on dev, so test is the figure.
A record's score is the highest of the scanners' scores; it is flagged at score ≥ the threshold.
- tpr: injections flagged; fpr: benign records flagged (each per channel, per source, overall).
- scan_ms_per_kb_p50: the median over records of scanning time divided by the record's size.
The end-to-end scenarios of the issue are not built yet: they are reported as null, not as passed.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import ConfigError, InputError
from ..gateway.scanners.base import Channel, Scanner
from ..gateway.scanners.classifier import InjectionClassifier
from ..gateway.scanners.invisible import InvisibleCharacters
from ..gateway.scanners.patterns import InstructionPatterns
from .data import SHARED_DATA, read_jsonl_numbered
from .splits import split_of

DEFAULT_FILE = SHARED_DATA / "prompt_injections.jsonl"
SCENARIOS = ("retrieval_injection_blocked", "memory_rollback_ok", "matrix_enforced")


@dataclass(frozen=True)
class Record:
    id: str
    text: str
    label: int
    channel: Channel
    source: str


@dataclass(frozen=True)
class Scored:
    record: Record
    split: str
    score: float
    by_scanner: dict
    ms_per_kb: float


def load(path: Path) -> list[Record]:
    out = []
    for line, row in read_jsonl_numbered(path, "injection data"):
        where = f"{path}: line {line}"
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise InputError(f"{where}: expected an object with a string 'text'")
        if row.get("label") not in (0, 1):
            raise InputError(f"{where}: 'label' must be 0 or 1, found {row.get('label')!r}")
        if row.get("channel") not in ("data", "user"):
            raise InputError(f"{where}: 'channel' must be \"data\" or \"user\", found {row.get('channel')!r}")
        out.append(Record(str(row.get("id", f"line-{line}")), row["text"], int(row["label"]), Channel(row["channel"]),
                          str(row.get("source_short") or "unknown")))
    return out


def scanners(with_classifier: bool = True) -> list[Scanner]:
    found: list[Scanner] = [InstructionPatterns(), InvisibleCharacters()]
    if with_classifier:
        try:
            found.append(InjectionClassifier())
        except ConfigError:
            pass          # no trained weights here: the rules alone are measured (the report says which ran)
    return found


def score(records: Sequence[Record], scanners: Sequence[Scanner]) -> list[Scored]:
    out = []
    for r in records:
        started = time.perf_counter()
        found = {s.name: s.scan(r.text, r.channel).score for s in scanners}
        ms = (time.perf_counter() - started) * 1000
        out.append(Scored(r, split_of(r.id), max(found.values(), default=0.0), found,
                          ms / max(len(r.text.encode("utf-8")) / 1024, 0.01)))
    return out


def rates(rows: Sequence[Scored], threshold: float) -> dict:
    pos = [r for r in rows if r.record.label == 1]
    neg = [r for r in rows if r.record.label == 0]
    return {"n": len(rows), "n_injections": len(pos), "n_benign": len(neg),
            "tpr": _share(sum(r.score >= threshold for r in pos), len(pos)),
            "fpr": _share(sum(r.score >= threshold for r in neg), len(neg))}


def roc(rows: Sequence[Scored]) -> list[tuple[float, float, float]]:
    """(threshold, fpr, tpr) for every distinct score, highest threshold first."""
    out = []
    for threshold in sorted({r.score for r in rows} | {1.01}, reverse=True):
        found = rates(rows, threshold)
        out.append((threshold, found["fpr"] or 0.0, found["tpr"] or 0.0))
    return out


def summary(rows: Sequence[Scored], threshold: float) -> dict:
    out = rates(rows, threshold)
    out["by_channel"] = {c.value: rates([r for r in rows if r.record.channel is c], threshold) for c in Channel}
    out["by_source"] = {s: rates([r for r in rows if r.record.source == s], threshold)
                        for s in sorted({r.record.source for r in rows})}
    out["by_scanner"] = {name: rates([_only(r, name) for r in rows], threshold)
                         for name in sorted({n for r in rows for n in r.by_scanner})}
    out["scan_ms_per_kb_p50"] = round(statistics.median(r.ms_per_kb for r in rows), 3) if rows else None
    out["scenarios"] = {name: None for name in SCENARIOS}
    return out


def _only(row: Scored, name: str) -> Scored:
    return Scored(row.record, row.split, row.by_scanner.get(name, 0.0), row.by_scanner, row.ms_per_kb)


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def roc_svg(curves: dict[str, list[tuple[float, float, float]]], title: str) -> str:
    """ROC curves (false-positive rate on x, true-positive rate on y) as a standalone SVG."""
    from xml.sax.saxutils import escape
    from .plot import PALETTE
    size, left, top = 320, 60, 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + size + 200}" height="{top + size + 60}" '
           'font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left + size / 2}" y="22" text-anchor="middle" font-weight="bold">{escape(title)}</text>',
           f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="none" stroke="#888"/>']
    for i in range(6):
        v = i / 5
        out.append(f'<text x="{left + v * size}" y="{top + size + 16}" text-anchor="middle">{v:.1f}</text>')
        out.append(f'<text x="{left - 6}" y="{top + size - v * size + 4}" text-anchor="end">{v:.1f}</text>')
    out.append(f'<text x="{left + size / 2}" y="{top + size + 36}" text-anchor="middle">false-positive rate</text>')
    out.append(f'<text x="16" y="{top + size / 2}" transform="rotate(-90 16 {top + size / 2})" '
               'text-anchor="middle">true-positive rate</text>')
    for n, (name, points) in enumerate(curves.items()):
        colour = PALETTE[n % len(PALETTE)]
        path = " ".join(f"{left + f * size:.1f},{top + size - t * size:.1f}" for _, f, t in [(0, 0, 0), *points])
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<rect x="{left + size + 16}" y="{top + 10 + n * 18}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{left + size + 34}" y="{top + 20 + n * 18}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)
