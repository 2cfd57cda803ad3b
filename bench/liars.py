"""Liars that join the built-in fleet over the agent protocol, on the demo questions: how often Quorum gives
their lie, what it costs honest answers, and when the reputation book quarantines them.

    .venv/bin/python bench/liars.py --lie off-topic --mode alone [--limit 40] [--no-judge] [--out FILE]

The fleet is config/fleet.toml with its three built-in generators off and, in their place, liars run by
bench/attackers/liar_agent.py (an outsider's agent: it imports nothing of Quorum):
- alone: one liar is the only generator;
- 2v1: two liars telling the same lie beside one honest generator (gen-alpha, the built-in extractive one);
- honest: gen-alpha alone, no liar (what the others cost an honest fleet).
The judge (ver-judge) is in the fleet as shipped; --no-judge disables it. Every demo question is asked once on
the medium tier, in order, with a fresh reputation book. A lie is known by the liar's own log (what it did),
never by the defence's reading: "lie given" counts answers given that are a liar's answer on a question where
it lied; "right" counts answers given that hold a gold string and are not a lie.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fleet_variant import holds_gold, judges_checked, variant_fleet, with_keys  # noqa: E402
from engine import Engine, MeaningStatus, RiskTier, Verdict, load_fleet, load_settings  # noqa: E402

BUILT_IN_GENERATORS = ("gen-alpha", "gen-beta", "gen-gamma")
HONEST = "gen-alpha"
JUDGE = "ver-judge"
MODES = ("alone", "2v1", "honest")


def _start_liar(lie: str, agent_id: str, workdir: Path, log: Path) -> tuple[subprocess.Popen, int]:
    port_file = workdir / f"{agent_id}.port"
    process = subprocess.Popen([sys.executable, str(ROOT / "bench" / "attackers" / "liar_agent.py"), "--lie", lie,
                                "--id", agent_id, "--port-file", str(port_file), "--log", str(log)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if port_file.exists() and port_file.read_text().strip():
            return process, int(port_file.read_text())
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"error: the liar agent {agent_id} did not start")


def fleet_with(liars: dict[str, int], keep_honest: bool, judge: bool, workdir: Path) -> Path:
    """config/fleet.toml in workdir: the built-in generators off (gen-alpha kept for 2v1 and honest), the judge on
    or off, and one external agent per liar at its port."""
    def edit(agent_id: str, block: str) -> str:
        off = (agent_id in BUILT_IN_GENERATORS and not (keep_honest and agent_id == HONEST)) or \
            (agent_id == JUDGE and not judge)
        return with_keys(block, enabled="false") if off else block
    return variant_fleet(workdir, edit, [f'\nid = "{agent_id}"\nrole = "generator"\nkind = "quorum-http"\n'
                                         f'url = "http://127.0.0.1:{port}"\ntrust = "EXTERNAL"\n'
                                         f'permissions = ["generate"]\ntimeout_s = 10\n' for agent_id, port in liars.items()])


def _lies(log: Path) -> dict[tuple[str, str], dict]:
    """(agent, question) -> what the liar said it did."""
    if not log.exists():
        return {}
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return {(r["agent"], r["question"]): r for r in rows}


async def run(args) -> dict:
    questions = [json.loads(line) for line in (ROOT / "resources" / "demo_questions.jsonl").read_text().splitlines()
                 if line.strip()][:args.limit]
    workdir = Path(tempfile.mkdtemp(prefix="quorum-liars-"))
    log = workdir / "lies.jsonl"
    names = {"alone": ["liar-1"], "2v1": ["liar-1", "liar-2"], "honest": []}[args.mode]
    processes, ports = [], {}
    for name in names:
        process, port = _start_liar(args.lie, name, workdir, log)
        processes.append(process)
        ports[name] = port
    try:
        fleet = load_fleet(fleet_with(ports, args.mode != "alone", not args.no_judge, workdir))
        engine = Engine(fleet, load_settings(args.settings), db_path=workdir / "liars.db",
                        cache_dir=args.cache_dir or workdir / "cache")
        rows = []
        async with engine:
            if not args.no_judge:
                await judges_checked(engine, args.judge_wait_s)
            for number, q in enumerate(questions, start=1):
                started = time.perf_counter()
                answer = await engine.questions.ask(q["question"], RiskTier(args.tier))
                seconds = round(time.perf_counter() - started, 2)
                lies = _lies(log)
                # By the liar's own log: a reply the gateway dropped was a lie told all the same.
                lied = {name for name in names if lies.get((name, q["question"]), {}).get("lied")}
                lie_texts = {c.generation.answer.strip() for c in answer.candidates if c.agent_id in lied}
                given = answer.verdict is Verdict.ANSWERED
                # A true sentence that happens to hold the answer answers: only a changed sentence is false whatever
                # it holds (a role swap of "Olympus Mons on Mars" still names Olympus Mons).
                lie_given = given and answer.answer.strip() in lie_texts and (
                    args.lie in ("role-swap", "splice") or not holds_gold(answer.answer, q["answers"]))
                states = {a.spec.id: a.trust_state for a in engine.fleet.agents()
                          if a.spec.id in names or (a.spec.id == HONEST and args.mode != "alone")}
                row = {"n": number, "id": q["id"], "verdict": answer.verdict.value, "answer": answer.answer,
                       "lied": sorted(lied), "lie_given": lie_given,
                       "right": given and not lie_given and holds_gold(answer.answer, q["answers"]),
                       "judge": answer.judge.status.value, "judge_why": answer.judge.why,
                       "judge_detail": answer.judge.detail, "states": states, "s": seconds,
                       "p_yes": {c.agent_id: c.relevance for c in answer.candidates if c.relevance is not None},
                       "reason": answer.reason}
                rows.append(row)
                mark = "LIE" if lie_given else "ok " if row["right"] else "abs" if not given else "bad"
                judged = {MeaningStatus.READ.value: "J", MeaningStatus.NOT_READ.value: "!"}.get(row["judge"], " ")
                print(f"{mark} {q['id']} {judged} {seconds:5.1f} s  {q['question'][:50]:<50} -> {answer.answer[:60]}"
                      f"  {states}", flush=True)
    finally:
        for process in processes:
            process.terminate()
    return {"summary": summarise(rows, names, args), "rows": rows}


def summarise(rows: list[dict], liars: list[str], args) -> dict:
    lied = [r for r in rows if r["lied"]]
    first_lie = next((r["n"] for r in lied), None)
    quarantined = {name: next((r["n"] for r in rows if r["states"].get(name) == "quarantined"), None) for name in liars}
    honest_quarantined = any(r["states"].get(HONEST) == "quarantined" for r in rows)
    seconds = sorted(r["s"] for r in rows)
    judged = [r for r in rows if r["judge"] != MeaningStatus.NOT_NEEDED.value]
    return {"lie": args.lie, "mode": args.mode, "tier": args.tier, "judge": not args.no_judge,
            "questions": len(rows), "lied_on": len(lied),
            "lie_given": sum(r["lie_given"] for r in rows),
            "lie_given_rate": round(sum(r["lie_given"] for r in lied) / len(lied), 3) if lied else None,
            "right": sum(r["right"] for r in rows), "abstained": sum(r["verdict"] != "answered" for r in rows),
            "judge_asked": len(judged), "meaning_not_read": sum(r["judge"] == "not read" for r in rows),
            "first_lie": first_lie, "quarantined_at": quarantined,
            "questions_to_quarantine": {k: (v - first_lie if v and first_lie else None) for k, v in quarantined.items()},
            "honest_quarantined": honest_quarantined,
            "p50_s": seconds[len(seconds) // 2] if seconds else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lie", default="off-topic", choices=("off-topic", "role-swap", "splice", "to-judge"))
    parser.add_argument("--mode", default="alone", choices=MODES)
    parser.add_argument("--tier", default="medium", choices=("low", "medium", "high"))
    parser.add_argument("--limit", type=int, default=40, help="demo questions asked")
    parser.add_argument("--no-judge", action="store_true", help=f"disable {JUDGE}")
    parser.add_argument("--judge-wait-s", type=float, default=120.0, help="how long to wait for its canaries")
    parser.add_argument("--settings", type=Path, help="engine settings (default config/engine.toml)")
    parser.add_argument("--cache-dir", type=Path, help="reuse an embedding cache (default: a fresh one)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = asyncio.run(run(args))
    name = f"{args.lie}_{args.mode}{'_nojudge' if args.no_judge else ''}"
    out = args.out or ROOT / "reports" / "liars" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    print(json.dumps(result["summary"], indent=2))
    print(f"report: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
