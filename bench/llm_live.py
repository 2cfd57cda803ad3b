"""An honest LLM as the only generator, live: Qwen2.5-Coder-1.5B (the judge's model file) behind a real
OpenAI-compatible server that this evaluation starts (llama.cpp's own server, through xllamacpp, on 127.0.0.1),
joined as `gen-llm` (kind openai-chat), asked every demo question with the judge in the fleet as shipped.

    .venv/bin/python bench/llm_live.py [--limit 40] [--tier medium] [--deadline-s 240] [--out FILE]

Deadlines are those a user with a CPU model would set: the tier's deadline and the generator's timeout_s are
--deadline-s (240 s by default; the shipped 30 s is for the extractive fleet). Reports, per question, whether the
model's own answer holds a gold string (it answered rightly), whether Quorum gave it, and whether CHARM fired;
and the generator's standing at the end. "Right answers given" is the share of the questions it answered
rightly on which Quorum gave its answer; "given but wrong" the share of given answers that hold no gold string.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fleet_variant import holds_gold, judges_checked, variant_fleet, with_keys  # noqa: E402
from engine import Engine, RiskTier, Verdict, default_cache_dir, load_fleet, load_settings  # noqa: E402

BUILT_IN_GENERATORS = ("gen-alpha", "gen-beta", "gen-gamma")
LLM = "gen-llm"


def start_server(context_tokens: int = 8192):
    """llama.cpp's server in this process, listening on a loopback port: the model a user would run."""
    import xllamacpp
    from engine.verify.judge_model import judge_model_path
    params = xllamacpp.CommonParams()
    params.model.path = str(judge_model_path(default_cache_dir()))
    params.n_ctx = context_tokens
    params.n_parallel = 1
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = 2
    params.verbosity = -1
    params.warmup = False
    server = xllamacpp.Server(params)
    return server, server.listening_address


def fleet_with(url: str, deadline_s: float, workdir: Path) -> tuple[Path, Path]:
    """The fleet with the built-in generators off and gen-llm on at the server's url; the settings with the medium
    and high tiers' deadline at deadline_s."""
    def edit(agent_id: str, block: str) -> str:
        if agent_id in BUILT_IN_GENERATORS:
            return with_keys(block, enabled="false")
        if agent_id == LLM:
            return with_keys(block, url=f'"{url}"', model='"qwen2.5-coder-1.5b"', dialect='"json-schema"',
                             enabled="true", timeout_s=str(deadline_s))
        return block
    fleet = variant_fleet(workdir, edit)
    settings = (ROOT / "config" / "engine.toml").read_text()
    settings = re.sub(r"(\[tiers\.(medium|high)\][^\[]*?deadline_s = )\d+", rf"\g<1>{int(deadline_s)}", settings)
    path = fleet.parent / "engine.toml"
    path.write_text(settings)
    return fleet, path


async def run(args) -> dict:
    questions = [json.loads(line) for line in (ROOT / "resources" / "demo_questions.jsonl").read_text().splitlines()
                 if line.strip()][:args.limit]
    workdir = Path(tempfile.mkdtemp(prefix="quorum-llm-live-"))
    server, url = start_server()
    fleet_path, settings_path = fleet_with(url, args.deadline_s, workdir)
    engine = Engine(load_fleet(fleet_path), load_settings(settings_path), db_path=workdir / "llm.db",
                    cache_dir=args.cache_dir or workdir / "cache")
    rows = []
    rows_path = args.out.with_suffix(".rows.jsonl")
    rows_path.parent.mkdir(parents=True, exist_ok=True)
    rows_path.write_text("")
    async with engine:
        await judges_checked(engine, 180)
        for q in questions:
            started = time.perf_counter()
            answer = await engine.questions.ask(q["question"], RiskTier(args.tier))
            mine = next((c for c in answer.candidates if c.agent_id == LLM), None)
            own = mine.generation.answer if mine else ""
            call = next((a for a in answer.agents if a.agent_id == LLM), None)
            given = answer.verdict is Verdict.ANSWERED
            state = next(a for a in engine.fleet.agents() if a.spec.id == LLM)
            row = {"id": q["id"], "question": q["question"], "llm_answer": own,
                   "llm_status": call.status.value if call else "not asked",
                   "llm_right": holds_gold(own, q["answers"]), "given": given, "answer": answer.answer,
                   "given_wrong": given and not holds_gold(answer.answer, q["answers"]),
                   "cascade_fired": bool(answer.cascade and answer.cascade.fired),
                   "cascade": answer.cascade.reason if answer.cascade and answer.cascade.fired else "",
                   "judge": answer.judge.status.value, "reason": answer.reason,
                   "claims": [{"text": k.claim.text, "label": k.label.value, "reason": k.reason,
                               "citations": list(k.claim.citations)} for k in (mine.checks if mine else ())],
                   "confidence": mine.generation.confidence if mine else None,
                   "state": state.trust_state, "score": state.trust_score, "s": round(time.perf_counter() - started, 1)}
            rows.append(row)
            mark = "ok " if row["llm_right"] and given else "ref" if row["llm_right"] else "wrg" if given else "abs"
            with rows_path.open("a") as out:      # row by row, so a long run can be read while it goes
                out.write(json.dumps(row) + "\n")
            print(f"{mark} {q['id']} {row['s']:6.1f} s {'C' if row['cascade_fired'] else ' '} {row['state']:<11} "
                  f"{q['question'][:45]:<45} -> {own[:70]}", flush=True)
    del server
    right = [r for r in rows if r["llm_right"]]
    given = [r for r in rows if r["given"]]
    honest_fired = [r for r in rows if r["cascade_fired"] and r["llm_right"]]
    summary = {"questions": len(rows), "deadline_s": args.deadline_s, "tier": args.tier,
               "llm_replied": sum(r["llm_status"] == "ok" for r in rows), "llm_right": len(right),
               "right_given": sum(r["given"] for r in right),
               "right_given_rate": round(sum(r["given"] for r in right) / len(right), 3) if right else None,
               "given": len(given), "given_wrong": sum(r["given_wrong"] for r in given),
               "given_wrong_rate": round(sum(r["given_wrong"] for r in given) / len(given), 3) if given else None,
               "cascade_fired_on_right": len(honest_fired),
               "cascade_fired_rate_on_right": round(len(honest_fired) / len(right), 3) if right else None,
               "state_at_end": rows[-1]["state"] if rows else None, "score_at_end": rows[-1]["score"] if rows else None,
               "p50_s": sorted(r["s"] for r in rows)[len(rows) // 2] if rows else None}
    return {"summary": summary, "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--tier", default="medium", choices=("medium", "high"))
    parser.add_argument("--deadline-s", type=float, default=240.0)
    parser.add_argument("--cache-dir", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "llm" / "qwen_live.json")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    print(json.dumps(result["summary"], indent=2))
    print(f"report: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
