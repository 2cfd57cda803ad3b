"""Asks every demo question on the built-in fleet and reports accuracy, verdicts and latency.

    .venv/bin/python bench/demo_questions.py [--fleet F] [--settings S] [--tier medium] [--out reports/demo_questions.json]

engine_ms is what the defence costs per question where users pay it: secure retrieval,
adjudication, the cascade monitor (cascade_ms) and the gateway's scanners (gateway_ms), in the product path (real agent processes, the engine's embedding cache warmed on the
corpus at start as the console does; a tampering agent's texts and new claims are embedded while
the question waits). The cost target: engine_ms p50 <= 150 ms with 5 retrievers x 10 chunks
(`--fleet bench/fleet_5x10.toml --settings bench/engine_5x10.toml`).

An answer counts as correct when it contains one of the question's gold strings; an abstention
counts separately (not correct, not wrong).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine import Engine, RiskTier, Verdict, load_fleet, load_settings  # noqa: E402


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


async def run(args) -> dict:
    questions = [json.loads(line) for line in (ROOT / "resources" / "demo_questions.jsonl").read_text().splitlines()
                 if line.strip()]
    workdir = Path(tempfile.mkdtemp(prefix="quorum-bench-"))
    engine = Engine(load_fleet(args.fleet), load_settings(args.settings), db_path=workdir / "bench.db",
                    cache_dir=args.cache_dir or workdir / "cache")
    started = time.perf_counter()
    rows = []
    async with engine:
        startup_s = time.perf_counter() - started
        for q in questions:
            tier = RiskTier(args.tier or q["tier"])
            answer = await engine.questions.ask(q["question"], tier)
            text = answer.answer.lower()
            correct = answer.verdict is Verdict.ANSWERED and any(g.lower() in text for g in q["answers"])
            total_ms = sum(answer.timings_ms.values())
            rows.append({"id": q["id"], "tier": tier.value, "verdict": answer.verdict.value, "correct": correct,
                         "answer": answer.answer, "gold": q["answers"], "ms": total_ms,
                         "engine_ms": answer.timings_ms.get("secure_retrieval", 0) + answer.timings_ms.get("adjudicate", 0)
                         + answer.timings_ms.get("cascade", 0) + answer.timings_ms.get("gateway", 0),
                         "gateway_ms": answer.timings_ms.get("gateway", 0),
                         "gateway_blocked": len(answer.gateway.blocked) if answer.gateway else 0,
                         "gateway_escalated": len(answer.gateway.escalated) if answer.gateway else 0,
                         "cascade_ms": answer.timings_ms.get("cascade", 0),
                         "secure_retrieval_ms": answer.timings_ms.get("secure_retrieval", 0),
                         "adjudicate_ms": answer.timings_ms.get("adjudicate", 0)})
            mark = "ok " if correct else ("abs" if answer.verdict is not Verdict.ANSWERED else "BAD")
            print(f"{mark} {q['id']} {tier.value:<6} {total_ms:7.0f} ms  {q['question'][:60]:<60} -> {answer.answer[:70]}")
    n = len(rows)
    answered = [r for r in rows if r["verdict"] == "answered"]
    summary = {
        "n_questions": n,
        "accuracy": round(sum(r["correct"] for r in rows) / n, 3),
        "answered_rate": round(len(answered) / n, 3),
        "wrong_answer_rate": round(sum(not r["correct"] for r in answered) / n, 3),
        "abstention_rate": round(sum(r["verdict"] == "abstained" for r in rows) / n, 3),
        "latency_ms_p50": round(statistics.median(r["ms"] for r in rows), 1),
        "latency_ms_p95": round(_pct([r["ms"] for r in rows], 0.95), 1),
        "engine_ms_p50": round(statistics.median(r["engine_ms"] for r in rows), 2),
        "engine_ms_p95": round(_pct([r["engine_ms"] for r in rows], 0.95), 2),
        "secure_retrieval_ms_p50": round(statistics.median(r["secure_retrieval_ms"] for r in rows), 2),
        "adjudicate_ms_p50": round(statistics.median(r["adjudicate_ms"] for r in rows), 2),
        "cascade_ms_p50": round(statistics.median(r["cascade_ms"] for r in rows), 2),
        "gateway_ms_p50": round(statistics.median(r["gateway_ms"] for r in rows), 2),
        "gateway_ms_p95": round(_pct([r["gateway_ms"] for r in rows], 0.95), 2),
        "gateway_blocked": sum(r["gateway_blocked"] for r in rows),
        "questions_escalated_by_gateway": sum(r["gateway_escalated"] > 0 for r in rows),
        "fleet_startup_s": round(startup_s, 1),
        "fleet": str(args.fleet or "config/fleet.toml"),
        "settings": str(args.settings or "config/engine.toml"),
    }
    return {"summary": summary, "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fleet", type=Path)
    parser.add_argument("--settings", type=Path, help="engine settings (default: config/engine.toml)")
    parser.add_argument("--tier", choices=["low", "medium", "high"], help="override every question's tier")
    parser.add_argument("--cache-dir", type=Path, help="reuse an embedding cache (default: a fresh one)")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "demo_questions.json")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result["summary"], indent=2))
    print(f"report: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
