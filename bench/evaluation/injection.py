"""`main.py eval injection`: the gateway as configured, and each of its scanners, on labelled injection
data, per channel and source, dev and test.

Records are JSON Lines `{text, label (1 injection, 0 benign), channel ("data" | "user"), source_short}`
(as ../shared/data/prompt_injections.jsonl). The split is the usual hash of the record id: the pattern
rules were written while reading dev rows, and the classifier is trained and both learned scanners are
calibrated on dev, so test is the figure (the top-level keys of the JSON are the test split).

- Each record goes through `Gateway.screen` in an envelope of its channel (DATA: an external passage;
  USER: the operator's question), with the scanners, order and thresholds of the engine settings, and
  the engine's embedder for the seed scanner (fresh, without its disk cache: the time is a cold one).
- A record is flagged when the gateway would hold it: a DATA score at or above data_block (or
  data_escalate, if lower); a USER score at or above user_escalate (the answer waits for a person).
  `--threshold` replaces both with one number.
- tpr: injections flagged; fpr: benign records flagged (per channel, per source, overall).
- by_scanner: the same with one scanner's own score (scanners the gateway skipped after an early block
  are run for this only, untimed).
- scan_ms_per_kb_p50: the median over records of the gateway's screening time divided by the record's
  size in KB (records under 10 bytes count as 10 bytes); p90 beside it.
- benign_traffic: false positives on benign tool output the project owns, through the DATA channel:
  resources/gateway/benign_agent_traffic.jsonl and a sample of resources/corpus passages; "held_out" is
  the half the classifier never trained on (the same id hash), "all" includes the half it did.
- scenarios: the issue's end-to-end scenarios, filled in by whoever runs them (the `scenarios`
  argument of `evaluate`); null means not run, never passed.
"""
from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

from engine.errors import ConfigError, InputError
from engine.gateway.scanners.base import Channel, Scanner
from .data import SHARED_DATA, read_jsonl_numbered
from .splits import DEV, TEST, split_of

DEFAULT_FILE = SHARED_DATA / "prompt_injections.jsonl"
SCENARIOS = ("retrieval_injection_blocked", "memory_rollback_ok", "matrix_enforced")
RULES_ONLY = ("invisible", "patterns")
CORPUS_SAMPLE = 200          # corpus passages in the benign-traffic line (the first by id hash)


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
    flagged: bool | None = None          # the gateway's own decision (None: compare score to a threshold)
    action: str = ""
    evidence: tuple[str, ...] = field(default=(), compare=False)


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


# --- scanners alone (kept for quick checks without an embedder) ----------------------------------------

def scanners(with_classifier: bool = True) -> list[Scanner]:
    from engine.gateway.scanners.classifier import InjectionClassifier
    from engine.gateway.scanners.invisible import InvisibleCharacters
    from engine.gateway.scanners.patterns import InstructionPatterns
    found: list[Scanner] = [InstructionPatterns(), InvisibleCharacters()]
    if with_classifier:
        try:
            found.append(InjectionClassifier())
        except ConfigError:
            pass          # no trained weights here: the rules alone are measured (the report says which ran)
    return found


def score(records: Sequence[Record], scanners: Sequence[Scanner]) -> list[Scored]:
    """Every scanner on every record; the score is the highest (compare it with a threshold)."""
    out = []
    for r in records:
        started = time.perf_counter()
        found = {s.name: s.scan(r.text, r.channel).score for s in scanners}
        out.append(Scored(r, split_of(r.id), max(found.values(), default=0.0), found,
                          _per_kb((time.perf_counter() - started) * 1000, r.text)))
    return out


# --- the gateway as configured -------------------------------------------------------------------------

def envelope(record: Record):
    from engine.gateway.envelope import Envelope, MessageKind
    from engine.types import TrustLevel
    if record.channel is Channel.USER:
        return Envelope("operator", "engine", record.text, TrustLevel.USER, MessageKind.QUESTION)
    return Envelope("eval", "generators", record.text, TrustLevel.EXTERNAL, MessageKind.PASSAGE,
                    meta={"record": record.id})


def screen(records: Sequence[Record], gateway, progress: Callable[[str], None] | None = None) -> list[Scored]:
    """Every record through `gateway.screen` (timed), plus, untimed, any scanner it skipped after an
    early block, so each scanner has its own score on every record."""
    out = []
    for n, r in enumerate(records, start=1):
        started = time.perf_counter()
        screening = gateway.screen(envelope(r))
        ms = (time.perf_counter() - started) * 1000
        found = {f.scanner: f.score for f in screening.findings if f.scanner != "gateway"}
        for s in gateway.scanners:
            if s.name not in found:
                found[s.name] = s.scan(screening.text if r.channel is Channel.DATA else r.text, r.channel).score
        out.append(Scored(r, split_of(r.id), screening.score, found, _per_kb(ms, r.text),
                          flagged=screening.action.value in ("block", "escalate"), action=screening.action.value,
                          evidence=screening.evidence))
        if progress and (n % 100 == 0 or n == len(records)):
            progress(f"injection: {n}/{len(records)} records screened")
    return out


def _per_kb(ms: float, text: str) -> float:
    return ms / max(len(text.encode("utf-8")) / 1024, 10 / 1024)


def thresholds(settings) -> dict[Channel, float]:
    """The score at which the gateway holds a message, per channel (block or escalate)."""
    return {Channel.DATA: min(settings.data_block, settings.data_escalate),
            Channel.USER: min(settings.user_escalate, settings.user_block)}


def _is_flagged(row: Scored, threshold: float | Mapping[Channel, float] | None) -> bool:
    if threshold is None:
        return bool(row.flagged)
    if isinstance(threshold, Mapping):
        return row.score >= threshold[row.record.channel]
    return row.score >= threshold


def rates(rows: Sequence[Scored], threshold: float | Mapping[Channel, float] | None = None) -> dict:
    """threshold: a number, one per channel, or None for the gateway's own decision."""
    pos = [r for r in rows if r.record.label == 1]
    neg = [r for r in rows if r.record.label == 0]
    return {"n": len(rows), "n_injections": len(pos), "n_benign": len(neg),
            "tpr": _share(sum(_is_flagged(r, threshold) for r in pos), len(pos)),
            "fpr": _share(sum(_is_flagged(r, threshold) for r in neg), len(neg))}


def roc(rows: Sequence[Scored]) -> list[tuple[float, float, float]]:
    """(threshold, fpr, tpr) for every distinct score, highest threshold first."""
    out = []
    for threshold in sorted({r.score for r in rows} | {1.01}, reverse=True):
        found = rates(rows, threshold)
        out.append((threshold, found["fpr"] or 0.0, found["tpr"] or 0.0))
    return out


def summary(rows: Sequence[Scored], threshold: float | Mapping[Channel, float] | None = None,
            scenarios: Mapping[str, bool | None] | None = None,
            scanner_threshold: float | Mapping[Channel, float] | None = None) -> dict:
    """threshold: None uses each row's gateway decision; a number or a per-channel mapping compares scores.
    Each scanner's own score is compared with scanner_threshold (default: threshold, else the default
    gateway settings' per-channel thresholds)."""
    if scanner_threshold is None:
        from engine.settings.gateway import GatewaySettings
        scanner_threshold = threshold if threshold is not None else thresholds(GatewaySettings())
    out = rates(rows, threshold)
    out["by_channel"] = {c.value: rates([r for r in rows if r.record.channel is c], threshold) for c in Channel}
    out["by_source"] = {s: rates([r for r in rows if r.record.source == s], threshold)
                        for s in sorted({r.record.source for r in rows})}
    out["by_source_channel"] = {f"{s}/{c.value}": rates(part, threshold) for s in sorted({r.record.source for r in rows})
                                for c in Channel
                                if (part := [r for r in rows if r.record.source == s and r.record.channel is c])}
    out["by_scanner"] = {name: {c.value: rates([_only(r, name) for r in rows if r.record.channel is c],
                                               _scanner_threshold(scanner_threshold, c)) for c in Channel}
                         for name in sorted({n for r in rows for n in r.by_scanner})}
    times = sorted(r.ms_per_kb for r in rows)
    out["scan_ms_per_kb_p50"] = round(statistics.median(times), 3) if times else None
    out["scan_ms_per_kb_p90"] = round(times[int(0.9 * (len(times) - 1))], 3) if times else None
    out["scenarios"] = {name: (scenarios or {}).get(name) for name in SCENARIOS}
    return out


def _scanner_threshold(threshold, channel: Channel) -> float:
    if isinstance(threshold, Mapping):
        return threshold[channel]
    return threshold


def _only(row: Scored, name: str) -> Scored:
    return replace(row, score=row.by_scanner.get(name, 0.0), flagged=None)


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


# --- benign agent traffic --------------------------------------------------------------------------

def benign_texts() -> list[tuple[str, str, str]]:
    """(origin, kind, text) of the project's benign tool output: the agent traffic and a corpus sample."""
    from engine.ingest.corpus import load_corpus
    from bench.train.gateway import BENIGN, CORPUS, content_id
    rows = [row for _, row in read_jsonl_numbered(BENIGN, BENIGN.name)]
    chunks = sorted(load_corpus(CORPUS).chunks, key=lambda c: content_id(c.text))
    texts = [("benign_agent_traffic", str(r.get("kind", "")), r["text"]) for r in rows]
    return texts + [("corpus", "passage", c.text) for c in chunks[:CORPUS_SAMPLE]]


def benign_traffic(gateway, threshold: float | None = None,
                   texts: Sequence[tuple[str, str, str]] | None = None) -> dict:
    """The project's benign tool output through the DATA channel: how much of it the gateway holds.
    texts: benign_texts(), when the caller screens them through several gateways."""
    from bench.train.gateway import content_id
    texts = benign_texts() if texts is None else texts
    out: dict = {"held_out": {}, "all": {}}
    flagged_examples = []
    results = []
    for origin, kind, text in texts:
        record = Record(content_id(text), text, 0, Channel.DATA, origin)
        started = time.perf_counter()
        screening = gateway.screen(envelope(record))
        ms = (time.perf_counter() - started) * 1000
        hit = screening.score >= threshold if threshold is not None else screening.action.value in ("block", "escalate")
        results.append((origin, kind, split_of(content_id(text)) == TEST, hit, _per_kb(ms, text)))
        if hit:
            flagged_examples.append({"origin": origin, "kind": kind, "held_out": split_of(content_id(text)) == TEST,
                                     "score": screening.score, "text": text[:160], "evidence": screening.evidence[:2]})
    for name, keep in (("held_out", lambda r: r[2]), ("all", lambda r: True)):
        for origin in ("benign_agent_traffic", "corpus"):
            part = [r for r in results if r[0] == origin and keep(r)]
            out[name][origin] = {"n": len(part), "fpr": _share(sum(r[3] for r in part), len(part))}
        part = [r for r in results if keep(r)]
        out[name]["n"], out[name]["n_flagged"] = len(part), sum(r[3] for r in part)
        out[name]["fpr"] = _share(out[name]["n_flagged"], len(part))
    out["flagged"] = flagged_examples
    out["scan_ms_per_kb_p50"] = round(statistics.median(r[4] for r in results), 3) if results else None
    return out


# --- the whole evaluation ------------------------------------------------------------------------------

def build(settings_path: Path | None = None, *, rules_only: bool = False):
    """The gateway as the engine settings configure it, with the engine's embedder (uncached). Returns
    (gateway, gateway settings, embedder name)."""
    from engine.config import load_settings
    from engine.gateway.build import build_gateway
    from engine.verify.embedders import EMBEDDERS
    settings = load_settings(settings_path)
    gateway_settings = settings.gateway
    if rules_only:
        gateway_settings = replace(gateway_settings,
                                   scanners=tuple(s for s in gateway_settings.scanners if s in RULES_ONLY))
    needs_embedder = "seeds" in gateway_settings.scanners
    embedder = EMBEDDERS[settings.retrieval.embedder]() if needs_embedder else None
    return build_gateway(gateway_settings, embedder), gateway_settings, settings.retrieval.embedder


def evaluate(path: Path = DEFAULT_FILE, *, settings_path: Path | None = None, rules_only: bool = False,
             threshold: float | None = None,
             scenarios: Mapping[str, bool | None] | Callable[[], Mapping[str, bool | None]] | None = None,
             progress: Callable[[str], None] | None = None) -> tuple[dict, list[Scored]]:
    """The whole report as a dict (top-level keys: the test split) and the scored rows.
    scenarios: the end-to-end scenario results (or a function that runs them), reported as given."""
    gateway, gateway_settings, embedder_name = build(settings_path, rules_only=rules_only)
    records = load(path)
    rows = screen(records, gateway, progress)
    done = scenarios() if callable(scenarios) else scenarios
    operating = thresholds(gateway_settings)
    by_split = {split: summary([r for r in rows if r.split == split], threshold, done,
                               threshold if threshold is not None else operating) for split in (DEV, TEST)}
    data = {"file": str(path),
            "threshold": threshold if threshold is not None else {c.value: t for c, t in operating.items()},
            "scanners": [s.name for s in gateway.scanners], "embedder": embedder_name if "seeds" in
            gateway_settings.scanners else None,
            "settings": {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(gateway_settings).items()},
            **by_split[TEST], "splits": by_split}
    data["classifier_training"] = _training_meta() if "classifier" in gateway_settings.scanners else None
    if progress:
        progress("injection: benign agent traffic")
    data["benign_traffic"] = benign_traffic(gateway, threshold)
    return data, rows


def _training_meta() -> dict | None:
    """What the classifier's weights file says about its training (data, out-of-fold operating points)."""
    import numpy as np
    from engine.gateway.scanners.classifier import MODEL_PATH
    try:
        with np.load(MODEL_PATH) as weights:
            return json.loads(str(weights["meta"])) if "meta" in weights.files else None
    except (OSError, ValueError, KeyError):
        return None


def markdown(data: dict) -> list[str]:
    t = data["threshold"]
    shown = t if not isinstance(t, dict) else ", ".join(f"{k} {v}" for k, v in t.items())
    lines = [f"# Injection gateway on {Path(data['file']).name}", "",
             f"Scanners, in order: {', '.join(data['scanners'])}"
             + (f" (seed embedder: {data['embedder']})" if data.get("embedder") else "")
             + f"; flagged at score ≥ {shown}. Headline: the test split (rules written on dev rows; the "
               "classifier trained and both learned scanners calibrated on dev).", "",
             "| split | channel | n | tpr | fpr |", "|---|---|---|---|---|"]
    for split, block in data["splits"].items():
        for channel, r in block["by_channel"].items():
            lines.append(f"| {split} | {channel} | {r['n']} | {r['tpr']} | {r['fpr']} |")
        lines.append(f"| {split} | all | {block['n']} | {block['tpr']} | {block['fpr']} |")
    trained = data.get("classifier_training") or {}
    if trained.get("operating_points"):
        lines += ["", "The dev rows above are in-sample for the classifier (trained on dev). Its out-of-fold dev figures "
                      "at the operating point (alone, 5 folds, from training): "
                  + "; ".join(f"{head} tpr {p['oof_tpr']} fpr {p['oof_fpr']}"
                              for head, p in trained["operating_points"].items()) + "."]
    lines += ["", "| split | source / channel | n | tpr | fpr |", "|---|---|---|---|---|"]
    for split, block in data["splits"].items():
        for source, r in block["by_source_channel"].items():
            lines.append(f"| {split} | {source} | {r['n']} | {r['tpr']} | {r['fpr']} |")
    lines += ["", "Each scanner alone (its own score against the same per-channel threshold):", "",
              "| split | scanner | data tpr | data fpr | user tpr | user fpr |", "|---|---|---|---|---|---|"]
    for split, block in data["splits"].items():
        for name, r in block["by_scanner"].items():
            lines.append(f"| {split} | {name} | {r['data']['tpr']} | {r['data']['fpr']} | {r['user']['tpr']} | "
                         f"{r['user']['fpr']} |")
    benign = data["benign_traffic"]
    held, every = benign["held_out"], benign["all"]
    lines += ["", "Benign agent traffic through the DATA channel (false positives):", "",
              "| texts | benign_agent_traffic | corpus passages | all |", "|---|---|---|---|"]
    for name, part in (("held out (never trained on)", held), ("all (half trained on)", every)):
        lines.append(f"| {name} | {part['benign_agent_traffic']['fpr']} (n={part['benign_agent_traffic']['n']}) | "
                     f"{part['corpus']['fpr']} (n={part['corpus']['n']}) | {part['fpr']} (n={part['n']}) |")
    for item in benign["flagged"][:12]:
        lines.append(f"- flagged {item['origin']}/{item['kind']}{' (held out)' if item['held_out'] else ''} "
                     f"{item['score']}: \"{' '.join(item['text'].split())[:100]}\"")
    lines += ["", f"Scan time: p50 {data['scan_ms_per_kb_p50']} ms per KB, p90 {data['scan_ms_per_kb_p90']} ms per KB "
                  "(test split, the whole gateway, cold embedder cache).", ""]
    scen = data["scenarios"]
    lines.append("End-to-end scenarios: " + ", ".join(f"{k} {'not run' if v is None else v}" for k, v in scen.items())
                 + ".")
    d = data.get("scenario_details")
    if d:
        lines += [f"- retrieval: {d['questions']} questions, {d['planted']} planted passages (test-split data-channel "
                  f"injections inside real passages), {d['planted_blocked']} blocked by the gateway, "
                  f"{d['planted_reached_generator']} in a generator's request",
                  f"- memory: {d['memory_writes']} poisoned writes by the agent, {d['memory_blocked']} blocked; "
                  f"slip-through drill (a test-split injection the gateway misses, written into another "
                  f"generator's memory): {'planted' if d['drill_planted'] else 'not planted'}; "
                  f"{d['memory_slipped']} stored entries in all, {d['memory_found']} found, read in "
                  f"{d['memory_spread_traces']} trace(s) before the rollback; namespaces clean after: "
                  f"{d['memory_rolled_back_clean']}; other namespaces touched: {d['other_namespaces_touched']}",
                  "- the carriers at the end: " + ", ".join(f"{a} {s}" for a, s in d.get("carriers", {}).items()),
                  f"- matrix: {d['overreach_requests']} requests outside the matrix, {d['overreach_refused_audited']} "
                  f"refused and audited, outbox rows {d['outbox_rows']}",
                  *(f"- {note}" for note in d.get("notes", []))]
    return lines


def write_outputs(data: dict, rows: Sequence[Scored], out: Path, lines: list[str]) -> list[Path]:
    curves = {}
    for split in (TEST, DEV):
        for c in Channel:
            part = [r for r in rows if r.split == split and r.record.channel is c]
            if part:
                curves[f"{split} {c.value}"] = roc(part)
    return write_report(data, curves, "Injection gateway: ROC of the combined score", out, lines)


def write_report(data: dict, curves: dict[str, list[tuple[float, float, float]]], title: str, out: Path,
                 lines: list[str]) -> list[Path]:
    """The JSON at `out`, the ROC plot beside it (.svg) and the markdown (.md) that shows it."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    svg = out.with_suffix(".svg")
    svg.write_text(roc_svg(curves, title), encoding="utf-8")
    md = out.with_suffix(".md")
    md.write_text("\n".join(lines + ["", f"![ROC]({svg.name})"]) + "\n", encoding="utf-8")
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    return [out, md, svg]


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
        dash = ' stroke-dasharray="5,3"' if name.startswith(DEV) else ""
        path = " ".join(f"{left + f * size:.1f},{top + size - t * size:.1f}" for _, f, t in [(0, 0, 0), *points])
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        out.append(f'<rect x="{left + size + 16}" y="{top + 10 + n * 18}" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{left + size + 34}" y="{top + 20 + n * 18}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)
